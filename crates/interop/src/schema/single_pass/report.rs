//! Every error of a document, found by the single-pass node table itself — the same errors, with
//! the same messages, that the `jsonschema` crate's validator gives — so that a process
//! checking one invalid document need not build that validator (tens of milliseconds and
//! megabytes: the crate first compiles its draft's meta-schema).
//!
//! Each keyword is judged on its own, as the crate judges it: a value of the wrong type gets
//! the `type` error and whatever else fails on it (an `enum`, a `const`), but no error from
//! keywords that judge only other types; `properties`, `additionalProperties`, `items` and
//! `prefixItems` report the errors of the members and items they judge; `$ref` those of its
//! target; `anyOf` one error when no branch is valid. Validity here is exact (a float with no
//! fraction is an integer, `uniqueItems` compares with Python's equality), never "not sure".
//! A test holds these errors equal to the crate's over every case document and thousands of
//! mutations of them (`single_pass::tests`).

use std::fmt::Write as _;

use crate::lookup::same_text;
use serde_json::{Map, Value};

use super::{Additional, ArrayCheck, Kind, NodeId, ObjectCheck, SinglePass, TextCheck};
use crate::schema::keywords::PyKeyword;
use crate::schema::keywords::unique_items::UniqueItems;

/// One error: the JSON pointer of the instance (`/a/0`) and the crate's message.
pub(crate) type Found = (String, String);

/// How deep the walk goes before it gives up (the caller then asks the crate).
const MAX_DEPTH: usize = super::MAX_DEPTH;

impl SinglePass {
    /// Every error of `instance`, or `None` where this walk gives up (too deep, or a node
    /// missing), in which case the caller asks the crate's validator.
    pub(crate) fn errors(&self, instance: &Value) -> Option<Vec<Found>> {
        let mut found = Vec::new();
        let mut pointer = String::new();
        self.node_errors(self.root, instance, &mut pointer, 0, &mut found)?;
        Some(found)
    }

    /// Whether `instance` satisfies node `id` exactly (no error), or `None` on giving up.
    fn satisfies(&self, id: NodeId, instance: &Value, depth: usize) -> Option<bool> {
        let mut found = Vec::new();
        self.node_errors(id, instance, &mut String::new(), depth, &mut found)?;
        Some(found.is_empty())
    }

    fn node_errors(
        &self,
        id: NodeId,
        instance: &Value,
        pointer: &mut String,
        depth: usize,
        found: &mut Vec<Found>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let node = self.nodes.get(id)?;
        let at = pointer.clone();
        let mut push = |message: String| found.push((at.clone(), message));
        if node.never {
            push(format!("False schema does not allow {instance}"));
        }
        if let Some(kinds) = node.types
            && !is_of(kinds, instance)
        {
            push(type_message(kinds, instance));
        }
        if let Some(constant) = &node.constant {
            let equal = match (&constant.value, instance) {
                (Value::String(want), Value::String(text)) => same_text(want, text),
                (want, _) => crate::schema::keywords::unique_items::py_equal(want, instance),
            };
            if !equal {
                push(format!("{} was expected", constant.value));
            }
        }
        if let Some(options) = &node.options {
            let listed = instance
                .as_str()
                .is_some_and(|text| options.iter().any(|o| same_text(&o.value, text)));
            if !listed {
                push(enum_message(instance, options.iter().map(|o| &o.value)));
            }
        }
        if let Value::String(_) = instance {
            for check in &node.text {
                let message = match check {
                    TextCheck::MinLength(k) => (!k.is_valid(instance)).then(|| k.message(instance)),
                    TextCheck::Pattern(k) => (!k.is_valid(instance)).then(|| k.message(instance)),
                    TextCheck::DateTime(k) => (!k.is_valid(instance)).then(|| k.message(instance)),
                };
                if let Some(message) = message {
                    push(message);
                }
            }
        }
        if let (Some(object), Value::Object(map)) = (&node.object, instance) {
            self.object_errors(object, map, instance, pointer, depth + 1, found)?;
        }
        if let (Some(array), Value::Array(items)) = (&node.array, instance) {
            self.array_errors(array, items, instance, pointer, depth + 1, found)?;
        }
        if !node.any_of.is_empty() {
            let mut any = false;
            for &branch in &*node.any_of {
                if self.satisfies(branch, instance, depth + 1)? {
                    any = true;
                    break;
                }
            }
            if !any {
                found.push((
                    pointer.clone(),
                    format!(
                        "{instance} is not valid under any of the schemas listed in the 'anyOf' keyword"
                    ),
                ));
            }
        }
        if let Some(target) = node.reference {
            self.node_errors(target, instance, pointer, depth + 1, found)?;
        }
        Some(())
    }

    fn object_errors(
        &self,
        object: &ObjectCheck,
        map: &Map<String, Value>,
        instance: &Value,
        pointer: &mut String,
        depth: usize,
        found: &mut Vec<Found>,
    ) -> Option<()> {
        let mut unexpected = Vec::new();
        for (key, value) in map {
            let declared = object.known.iter().find(|k| same_text(&k.name, key));
            let node = match (declared, &object.additional) {
                (Some(property), _) => Some(property.node),
                (None, Additional::Any) => None,
                (None, Additional::Never) => {
                    unexpected.push(key.as_str());
                    None
                }
                (None, Additional::Schema(id)) => Some(*id),
            };
            if let Some(node) = node {
                let mark = pointer.len();
                push_segment(pointer, key);
                self.node_errors(node, value, pointer, depth, found)?;
                pointer.truncate(mark);
            }
        }
        if !unexpected.is_empty() {
            let mut message = String::from("Additional properties are not allowed (");
            for (i, key) in unexpected.iter().enumerate() {
                let _ = write!(message, "{}'{key}'", if i == 0 { "" } else { ", " });
            }
            message.push_str(if unexpected.len() == 1 {
                " was unexpected)"
            } else {
                " were unexpected)"
            });
            found.push((pointer.clone(), message));
        }
        if let Some(required) = &object.all_required
            && !required.is_valid(instance)
        {
            found.push((pointer.clone(), required.message(instance)));
        }
        Some(())
    }

    fn array_errors(
        &self,
        array: &ArrayCheck,
        items: &[Value],
        instance: &Value,
        pointer: &mut String,
        depth: usize,
        found: &mut Vec<Found>,
    ) -> Option<()> {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        if items.len() < array.min {
            found.push((
                pointer.clone(),
                format!(
                    "{instance} has less than {} item{}",
                    array.min,
                    plural(array.min)
                ),
            ));
        }
        if let Some(max) = array.max
            && items.len() > max
        {
            found.push((
                pointer.clone(),
                format!("{instance} has more than {max} item{}", plural(max)),
            ));
        }
        for (position, item) in items.iter().enumerate() {
            if let Some(id) = array.prefix.get(position).copied().or(array.rest) {
                let mark = pointer.len();
                let _ = write!(pointer, "/{position}");
                self.node_errors(id, item, pointer, depth, found)?;
                pointer.truncate(mark);
            }
        }
        let unique = UniqueItems::on();
        if array.unique && !unique.is_valid(instance) {
            found.push((pointer.clone(), unique.message(instance)));
        }
        Some(())
    }
}

/// A member name as a JSON pointer segment (`~` → `~0`, `/` → `~1`).
fn push_segment(pointer: &mut String, key: &str) {
    pointer.push('/');
    for c in key.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// `instance` is of one of `kinds`, as the crate judges it: a number with no fraction is an
/// integer.
fn is_of(kinds: u8, instance: &Value) -> bool {
    match instance {
        Value::Number(n) => {
            let integer = n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
            kinds & Kind::NUMBER != 0 || (integer && kinds & Kind::INTEGER != 0)
        }
        other => kinds & Kind::of(other) != 0,
    }
}

/// The crate's `type` message: one type, or several in its own order of type names.
fn type_message(kinds: u8, instance: &Value) -> String {
    // The crate's order: array, boolean, integer, null, number, object, string.
    let names: Vec<&str> = [
        (Kind::ARRAY, "array"),
        (Kind::BOOLEAN, "boolean"),
        (Kind::INTEGER, "integer"),
        (Kind::NULL, "null"),
        (Kind::NUMBER, "number"),
        (Kind::OBJECT, "object"),
        (Kind::STRING, "string"),
    ]
    .into_iter()
    .filter(|(bit, _)| kinds & bit != 0)
    .map(|(_, name)| name)
    .collect();
    match names.as_slice() {
        [one] => format!("{instance} is not of type \"{one}\""),
        several => {
            let quoted: Vec<String> = several.iter().map(|n| format!("\"{n}\"")).collect();
            format!("{instance} is not of types {}", quoted.join(", "))
        }
    }
}

/// The crate's `enum` message: up to three options (`a, b or c`), else two and a count.
fn enum_message<'o>(
    instance: &Value,
    options: impl ExactSizeIterator<Item = &'o String>,
) -> String {
    let options: Vec<String> = options
        .map(|o| Value::from(o.as_str()).to_string())
        .collect();
    let mut message = format!("{instance} is not one of ");
    if options.len() <= 3 {
        for (i, option) in options.iter().enumerate() {
            let sep = if i == 0 {
                ""
            } else if i == options.len() - 1 {
                " or "
            } else {
                ", "
            };
            let _ = write!(message, "{sep}{option}");
        }
    } else {
        let _ = write!(
            message,
            "{} or {} other candidates",
            options.get(..2).unwrap_or_default().join(", "),
            options.len() - 2
        );
    }
    message
}
