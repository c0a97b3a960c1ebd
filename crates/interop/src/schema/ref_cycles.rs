//! Schemas that judge one instance in a cycle, which [`crate::schema::compile`] refuses.
//!
//! `$ref` and the in-place applicators (`allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`, `else`,
//! `dependentSchemas`) judge the same instance again with another subschema. When they lead
//! from a subschema back to itself (`{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}}`),
//! judging any instance never ends: the `jsonschema` crate overflows its stack, which aborts the
//! process. Recursion through `properties`, `items` and the other keywords that judge a member
//! or an item is fine — each step goes one level into the instance — and is not a cycle.
//!
//! References are followed when they point into the same document: `#`, `#/json/pointer`
//! (percent- and `~`-escaped), `#anchor` (`$anchor`), and those forms after the root's own
//! `$id`. Other references — to other documents, or made inside a subschema with its own
//! `$id` (whose `#` is that subschema, not the document) — are not followed, so a cycle
//! through them goes unseen here; none is ever reported that is not there.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Keywords whose value is one subschema that judges a member or item of the instance, or the
/// same instance.
const ONE: [&str; 10] = [
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is an array of subschemas.
const LIST: [&str; 4] = ["prefixItems", "allOf", "anyOf", "oneOf"];

/// Keywords whose value is an object of subschemas.
const NAMED: [&str; 5] = [
    "$defs",
    "definitions",
    "properties",
    "patternProperties",
    "dependentSchemas",
];

/// The keywords above whose subschemas judge the same instance.
const SAME_INSTANCE: [&str; 8] = [
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
];

/// The JSON pointer (as a URI fragment, without `#`) of a subschema of `schema` that judges
/// the same instance again through a cycle of subschemas; `None` when there is no cycle.
pub(crate) fn find_cycle(schema: &Value) -> Option<String> {
    let subschemas = subschemas(schema);
    let at: HashMap<&str, usize> = subschemas
        .iter()
        .enumerate()
        .map(|(index, (pointer, _, _))| (pointer.as_str(), index))
        .collect();
    let anchors: HashMap<&str, usize> = subschemas
        .iter()
        .enumerate()
        .filter_map(|(index, (_, map, _))| Some((map.get("$anchor")?.as_str()?, index)))
        .collect();
    let base = schema.get("$id").and_then(Value::as_str);
    let next: Vec<Vec<usize>> = subschemas
        .iter()
        .map(|(pointer, map, nested)| {
            let mut next = Vec::new();
            for (keyword, value) in *map {
                let keyword = keyword.as_str();
                if keyword == "$ref" || keyword == "$dynamicRef" {
                    if *nested {
                        continue;
                    }
                    let target = value.as_str().and_then(|r| resolve(r, base, &at, &anchors));
                    next.extend(target);
                } else if SAME_INSTANCE.contains(&keyword) {
                    let children = children(pointer, keyword, value);
                    next.extend(children.filter_map(|(child, _)| at.get(child.as_str())));
                }
            }
            next
        })
        .collect();
    let on_circle = in_cycle(next.len(), |node| {
        next.get(node).into_iter().flatten().copied()
    })?;
    subschemas
        .get(on_circle)
        .map(|(pointer, _, _)| pointer.clone())
}

/// A node of the graph of `count` nodes, whose edges from node `n` are `next(n)` (targets
/// outside `0..count` ignored), that lies on a cycle; `None` when the graph has none.
pub(crate) fn in_cycle<I: IntoIterator<Item = usize>>(
    count: usize,
    next: impl Fn(usize) -> I,
) -> Option<usize> {
    let edges = |node: usize| next(node).into_iter().filter(move |&target| target < count);
    // Kahn's order, backwards: a node is settled once every node it leads to is. Those on a
    // cycle, or leading into one, never are.
    let mut unsettled_targets = vec![0_usize; count];
    let mut leading_to: Vec<Vec<usize>> = vec![Vec::new(); count];
    for node in 0..count {
        for target in edges(node) {
            if let Some(waiting) = unsettled_targets.get_mut(node) {
                *waiting += 1;
            }
            if let Some(sources) = leading_to.get_mut(target) {
                sources.push(node);
            }
        }
    }
    let mut ready: Vec<usize> = (0..count)
        .filter(|&node| unsettled_targets.get(node) == Some(&0))
        .collect();
    let mut settled = vec![false; count];
    while let Some(node) = ready.pop() {
        if let Some(done) = settled.get_mut(node) {
            *done = true;
        }
        for &source in leading_to.get(node).into_iter().flatten() {
            if let Some(waiting) = unsettled_targets.get_mut(source) {
                *waiting -= 1;
                if *waiting == 0 {
                    ready.push(source);
                }
            }
        }
    }
    // From an unsettled node an unsettled target always follows: `count` steps end on a cycle.
    let mut node = settled.iter().position(|done| !done)?;
    for _ in 0..count {
        node = edges(node).find(|&target| settled.get(target) == Some(&false))?;
    }
    Some(node)
}

/// Every subschema object of `schema` (the root included) with its JSON pointer, and whether
/// it lies in a subschema other than the root that has its own `$id`.
fn subschemas(schema: &Value) -> Vec<(String, &Map<String, Value>, bool)> {
    let mut found = Vec::new();
    let mut pending = vec![(String::new(), schema, false)];
    while let Some((pointer, value, nested)) = pending.pop() {
        let Value::Object(map) = value else {
            continue;
        };
        let nested = nested || (!pointer.is_empty() && map.contains_key("$id"));
        for (keyword, value) in map {
            let inner = children(&pointer, keyword, value);
            pending.extend(inner.map(|(child, value)| (child, value, nested)));
        }
        found.push((pointer, map, nested));
    }
    found
}

/// The subschemas the keyword `keyword` of the subschema at `pointer` holds in `value`.
fn children<'v>(
    pointer: &str,
    keyword: &str,
    value: &'v Value,
) -> Box<dyn Iterator<Item = (String, &'v Value)> + 'v> {
    let here = format!("{pointer}/{}", escape(keyword));
    if ONE.contains(&keyword) {
        return Box::new(std::iter::once((here, value)));
    }
    match value {
        Value::Array(items) if LIST.contains(&keyword) => Box::new(
            items
                .iter()
                .enumerate()
                .map(move |(index, item)| (format!("{here}/{index}"), item)),
        ),
        Value::Object(members) if NAMED.contains(&keyword) => Box::new(
            members
                .iter()
                .map(move |(name, member)| (format!("{here}/{}", escape(name)), member)),
        ),
        _ => Box::new(std::iter::empty()),
    }
}

/// `name` as a JSON pointer token: `~` as `~0`, `/` as `~1`.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The subschema a `$ref` of this document points to, if it points into it.
fn resolve(
    reference: &str,
    base: Option<&str>,
    at: &HashMap<&str, usize>,
    anchors: &HashMap<&str, usize>,
) -> Option<usize> {
    let local = base
        .and_then(|base| reference.strip_prefix(base.trim_end_matches('#')))
        .unwrap_or(reference);
    let fragment = percent_decoded(local.strip_prefix('#')?)?;
    if fragment.is_empty() || fragment.starts_with('/') {
        at.get(fragment.as_str()).copied()
    } else {
        anchors.get(fragment.as_str()).copied()
    }
}

/// `text` with its `%XX` escapes decoded; `None` when that is not UTF-8 or an escape is cut.
fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = tail.get(2..)?;
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn circles_of_references_and_in_place_subschemas_are_found() {
        for (schema, on) in [
            (
                json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                       "properties": {"x": {"$ref": "#/$defs/a"}}}),
                ["/$defs/a", "/$defs/b"].as_slice(),
            ),
            (
                json!({"allOf": [{"$ref": "#"}]}),
                ["", "/allOf/0"].as_slice(),
            ),
            (
                json!({"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}},
                       "items": {"$ref": "#/$defs/a"}}),
                ["/$defs/a", "/$defs/a/anyOf/1"].as_slice(),
            ),
            (
                json!({"$id": "https://example.com/s.json",
                       "$defs": {"a b": {"not": {"$ref": "https://example.com/s.json#/$defs/a%20b"}}}}),
                ["/$defs/a b", "/$defs/a b/not"].as_slice(),
            ),
            (
                json!({"$defs": {"x/y": {"$anchor": "here", "if": {"$ref": "#here"}}}}),
                ["/$defs/x~1y", "/$defs/x~1y/if"].as_slice(),
            ),
            (
                json!({"dependentSchemas": {"a": {"$dynamicRef": "#"}}}),
                ["", "/dependentSchemas/a"].as_slice(),
            ),
        ] {
            let found = find_cycle(&schema);
            assert!(
                found.as_deref().is_some_and(|p| on.contains(&p)),
                "{schema}: {found:?}"
            );
        }
    }

    #[test]
    fn circles_are_found_in_long_graphs_and_a_node_on_them_named() {
        const LONG: usize = 200_000;
        let chain = |closed: bool| {
            move |node: usize| {
                let next = node + 1;
                (next < LONG || closed).then_some(next % LONG)
            }
        };
        assert_eq!(in_cycle(LONG, chain(false)), None);
        assert!(in_cycle(LONG, chain(true)).is_some_and(|node| node < LONG));
        // Leading into a cycle is not being on it: 0 -> 1 -> 2 -> 1.
        let tail = |node: usize| match node {
            0 => Some(1),
            1 => Some(2),
            2 => Some(1),
            _ => None,
        };
        assert!(matches!(in_cycle(4, tail), Some(1 | 2)));
        // Edges out of the graph are ignored.
        assert_eq!(in_cycle(2, |node: usize| Some(node + 2)), None);
    }

    #[test]
    fn recursion_into_members_and_items_is_not_a_circle() {
        for schema in [
            json!({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}),
            json!({"properties": {"child": {"$ref": "#"}}, "additionalProperties": {"$ref": "#"}}),
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "string"}},
                   "anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]}),
            // Not subschemas: a `const` or an example may hold anything.
            json!({"const": {"allOf": [{"$ref": "#"}]}, "examples": [{"$ref": "#"}]}),
            // References this module does not follow: to another document, to nothing, and
            // inside a subschema with its own `$id` (where `#` is that subschema).
            json!({"allOf": [{"$ref": "other.json#"}, {"$ref": "#/nowhere"}]}),
            json!({"$defs": {"inner": {"$id": "https://example.com/inner.json",
                                       "allOf": [{"$ref": "#/$defs/inner"}]}}}),
            json!(true),
        ] {
            assert_eq!(find_cycle(&schema), None, "{schema}");
        }
    }
}
