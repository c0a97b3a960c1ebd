//! A single-pass validity check that lets [`crate::schema::Schema`] skip the `jsonschema` crate for the
//! documents that matter most: the valid ones.
//!
//! The crate's validator walks keyword objects behind trait calls and looks every property
//! name up by comparing it with each declared name in turn; for the published VCE 0.1
//! envelope that was about a third of a whole decision. [`SinglePass`] compiles the same schema
//! into a flat table of nodes and checks an instance in one pass: declared properties are
//! searched from where the previous one was found (documents list them in schema order),
//! comparing lengths before bytes.
//!
//! It only ever answers "surely valid" (`true`) or "not sure" (`false`), never "invalid":
//! a `false` sends the document to the full validator, which decides and explains. So
//! everything subtle answers `false` — a float where an integer is wanted, `uniqueItems` over
//! values it cannot tell apart for certain, nesting deeper than [`MAX_DEPTH`] — and the
//! soundness rule is one line: **`SinglePass` says valid only if the full validator does.** A test
//! holds it to that over every conformance document of both formats and thousands of
//! mutations of them.
//!
//! Only the keywords of the published schemas are compiled (see [`Builder::compile_node`]); a schema
//! with any other keyword, or whose `$ref`s and `anyOf`s lead in a cycle, has no single-pass check,
//! and every document goes to the full validator.
//!
//! The walk hands the instance to a [`Sink`] as it goes (see the `sink` module): nothing for a
//! plain check, or its `json-sort-keys-utf8-v1` form ([`CanonicalWriter`]) for a caller that also
//! digests the document, which then walks it once instead of twice.

use std::collections::HashMap;

use crate::lookup::{field, same_bytes, same_text};
use crate::sort_keys::word;
use serde_json::{Map, Value};

use crate::schema::keywords::PyKeyword;
use crate::schema::keywords::date_time::DateTimeFormat;
use crate::schema::keywords::pattern::PythonPattern;
use crate::schema::keywords::required_min_length::{MinLength, Required};

mod report;
mod sink;

use sink::Nothing;
pub(crate) use sink::{CanonicalHasher, CanonicalWriter, MarkedCanonicalWriter, Sink};
pub use sink::{MarkedItem, SortKeysMarks};

/// Deeper instances are left to the full validator.
const MAX_DEPTH: usize = 64;

/// `uniqueItems` over up to this many items compares them pairwise (no allocation); over
/// more, only all-string arrays are judged here, by sorting.
const PAIRWISE_LIMIT: usize = 64;

type NodeId = usize;

/// A schema compiled for [`SinglePass::is_valid`].
pub(crate) struct SinglePass {
    nodes: Vec<Node>,
    root: NodeId,
}

/// One schema object, its keywords grouped by the kind of instance they judge, so that
/// checking a value is one match on its kind. Kept small (the rarer parts boxed) so that a
/// whole schema's nodes stay in the first-level cache.
#[derive(Default)]
struct Node {
    /// The `false` schema.
    never: bool,
    /// `type`, as a set of [`Kind`] bits; `None` for any type.
    types: Option<u8>,
    /// `const` of a string, a boolean or `null` (which equal only themselves).
    constant: Option<Box<Literal<Value>>>,
    /// `enum` of strings.
    options: Option<Box<[Literal<String>]>>,
    /// `minLength`, `pattern` and `format`.
    text: Box<[TextCheck]>,
    /// `properties`, `additionalProperties` and `required`.
    object: Option<Box<ObjectCheck>>,
    /// `prefixItems`, `items`, `minItems`, `maxItems` and `uniqueItems`.
    array: Option<Box<ArrayCheck>>,
    /// `anyOf`.
    any_of: Box<[NodeId]>,
    /// `$ref`.
    reference: Option<NodeId>,
    /// Which of the simple shapes most values meet the node has, if any.
    shape: JudgedAs,
}

/// The simple shapes of node that most values of the published documents meet, judged
/// without the general walk of [`SinglePass::valid_node`] (which for them would pass through every
/// keyword group to find nothing there): in a VCE 0.1 envelope nine values in ten.
#[derive(Default, Clone, Copy)]
enum JudgedAs {
    /// Anything else: the general walk.
    #[default]
    General,
    /// Only `$ref`: the target's judgement.
    Alias(NodeId),
    /// Only `type` naming strings (and perhaps `null`), and perhaps `minLength`.
    Text { min: MinLength, null: bool },
    /// Only `const` or only `enum`: the instance is one of the schema's literals.
    Literal,
    /// Only `type` `object` and the object keywords.
    Object,
    /// Only `type` `array` and the array keywords.
    Array,
}

impl JudgedAs {
    fn of(node: &Node) -> Self {
        let Node {
            never,
            types,
            constant,
            options,
            text,
            object,
            array,
            any_of,
            reference,
            shape: _,
        } = node;
        if *never || !any_of.is_empty() {
            return Self::General;
        }
        let plain =
            constant.is_none() && options.is_none() && text.is_empty() && reference.is_none();
        match (types, object, array) {
            (Some(Kind::OBJECT), Some(_), None) if plain => return Self::Object,
            (Some(Kind::ARRAY), None, Some(_)) if plain => return Self::Array,
            (_, None, None) => {}
            _ => return Self::General,
        }
        let texts_only =
            |kinds: u8| kinds & Kind::STRING != 0 && kinds & !(Kind::STRING | Kind::NULL) == 0;
        match (types, constant, options, &**text, reference) {
            (None, None, None, [], Some(target)) => Self::Alias(*target),
            (Some(kinds), None, None, [], None) if texts_only(*kinds) => Self::Text {
                min: MinLength::NONE,
                null: kinds & Kind::NULL != 0,
            },
            (Some(kinds), None, None, [TextCheck::MinLength(min)], None) if texts_only(*kinds) => {
                Self::Text {
                    min: *min,
                    null: kinds & Kind::NULL != 0,
                }
            }
            (None, Some(_), None, [], None) | (None, None, Some(_), [], None) => Self::Literal,
            _ => Self::General,
        }
    }
}

/// A value named by the schema (`const`, `enum`), with its `json-sort-keys-utf8-v1` form
/// for [`CanonicalWriter`], which an instance equal to it writes instead of escaping itself again.
struct Literal<T> {
    value: T,
    written: Box<[u8]>,
}

impl<T> Literal<T> {
    fn new(value: T, of: &Value) -> Option<Self> {
        let mut written = Vec::new();
        crate::sort_keys::write_value(&mut written, of, 0).ok()?;
        Some(Self {
            value,
            written: written.into_boxed_slice(),
        })
    }
}

/// A keyword that judges strings only.
enum TextCheck {
    MinLength(MinLength),
    Pattern(PythonPattern),
    DateTime(DateTimeFormat),
}

/// The object keywords of a node.
#[derive(Default)]
struct ObjectCheck {
    /// `properties`, each marked when `required` names it (counted as the members are
    /// walked, so no name is looked up twice).
    known: Vec<Known>,
    /// How many of `known` are required.
    required: usize,
    /// `required` names that are not among `known`.
    other_required: Option<Required>,
    /// `additionalProperties`.
    additional: Additional,
    /// `required` as written (order and all), for the errors of [`SinglePass::errors`].
    all_required: Option<Required>,
}

/// A member named in `properties`.
struct Known {
    name: String,
    /// `,"name":` as `json-sort-keys-utf8-v1` writes it before the member's value, for
    /// [`CanonicalWriter`] (the leading comma left out before an object's first member).
    written: Box<[u8]>,
    /// [`head`] of `name`.
    head: u64,
    /// Where `name` comes among the declared names in key order.
    rank: usize,
    node: NodeId,
    /// `required` names it too.
    required: bool,
}

/// What `additionalProperties` asks of a member not in `properties`.
#[derive(Default)]
enum Additional {
    #[default]
    Any,
    Never,
    Schema(NodeId),
}

/// The array keywords of a node.
#[derive(Default)]
struct ArrayCheck {
    prefix: Vec<NodeId>,
    rest: Option<NodeId>,
    min: usize,
    max: Option<usize>,
    unique: bool,
}

/// The bits of [`Node::types`].
struct Kind;

impl Kind {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 1 << 1;
    const INTEGER: u8 = 1 << 2;
    const NUMBER: u8 = 1 << 3;
    const STRING: u8 = 1 << 4;
    const ARRAY: u8 = 1 << 5;
    const OBJECT: u8 = 1 << 6;

    fn parse(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => return None,
        })
    }

    /// The bit of `instance`'s kind; a number is [`Kind::NUMBER`] (whether it is also an
    /// integer is for the caller to judge).
    fn of(instance: &Value) -> u8 {
        match instance {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }
}

impl SinglePass {
    /// The single-pass check of `schema`, or `None` when it uses anything this module does not
    /// compile.
    pub(crate) fn compile(schema: &Value) -> Option<Self> {
        let mut builder = Builder {
            nodes: Vec::new(),
            defs: schema.get("$defs").and_then(Value::as_object),
            def_ids: HashMap::new(),
        };
        let root = builder.reserve();
        builder.fill(root, schema, true)?;
        let walk = Self {
            nodes: builder.nodes,
            root,
        };
        (!walk.judges_in_cycles()).then_some(walk)
    }

    /// Some node leads back to itself through `$ref` and `anyOf` alone, which judge the same
    /// instance again: walking that would never end, so such a schema has no single-pass check.
    fn judges_in_cycles(&self) -> bool {
        let next = |id: NodeId| {
            self.nodes
                .get(id)
                .into_iter()
                .flat_map(|node| node.reference.iter().chain(node.any_of.iter()).copied())
        };
        crate::schema::ref_cycles::in_cycle(self.nodes.len(), next).is_some()
    }

    /// `true` only if `instance` surely satisfies the schema; `false` when it may not.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        self.valid(self.root, instance, 0, &mut Nothing)
    }

    /// [`SinglePass::is_valid`], handing `instance` to `sink` as it is walked; what `sink` got is
    /// complete only when the answer is `true`.
    pub(crate) fn is_valid_into(&self, instance: &Value, sink: &mut impl Sink) -> bool {
        self.valid(self.root, instance, 0, sink)
    }

    /// Checks `instance` against node `id`, handing it to `sink` exactly once: through this
    /// node's own object or array keywords when they walk its members, else through its
    /// `$ref`, else whole. `anyOf` branches (and a `$ref` beside walking keywords) are only
    /// checked. The simple shapes of node ([`JudgedAs`]) are judged here, inlined into the walk of
    /// their container; the rest by [`SinglePass::valid_node`].
    #[inline]
    fn valid<S: Sink>(&self, id: NodeId, instance: &Value, depth: usize, sink: &mut S) -> bool {
        let mut id = id;
        // Aliases never lead in cycles (see `judges_in_cycles`); the bound is a second guard.
        for _ in 0..=self.nodes.len() {
            let Some(node) = self.nodes.get(id) else {
                return false;
            };
            if depth > MAX_DEPTH {
                return false;
            }
            match node.shape {
                JudgedAs::Alias(target) => id = target,
                JudgedAs::Text { min, null } => {
                    let valid = match instance {
                        Value::String(text) => min.long_enough(text),
                        Value::Null => null,
                        _ => false,
                    };
                    if valid {
                        sink.whole(instance, depth);
                    }
                    return valid;
                }
                JudgedAs::Literal => {
                    return match literal(node, instance) {
                        Some(Some(written)) => {
                            sink.literal(written);
                            true
                        }
                        _ => false,
                    };
                }
                JudgedAs::Object => {
                    return match (instance, &node.object) {
                        (Value::Object(map), Some(object)) => {
                            self.object_valid(object, map, depth + 1, sink)
                        }
                        _ => false,
                    };
                }
                JudgedAs::Array => {
                    return match (instance, &node.array) {
                        (Value::Array(items), Some(array)) => {
                            self.array_valid(array, items, depth + 1, sink)
                        }
                        _ => false,
                    };
                }
                JudgedAs::General => return self.valid_node(node, instance, depth, sink),
            }
        }
        false
    }

    /// [`SinglePass::valid`] for a node of no simple [`JudgedAs`].
    #[inline(never)]
    fn valid_node<S: Sink>(
        &self,
        node: &Node,
        instance: &Value,
        depth: usize,
        sink: &mut S,
    ) -> bool {
        if node.never {
            return false;
        }
        if node.types.is_some_and(|kinds| !has_type(kinds, instance)) {
            return false;
        }
        // The written form of the schema's own literal the instance equals, if any.
        let Some(literal) = literal(node, instance) else {
            return false;
        };
        let next = depth + 1;
        let (own, walked) = match instance {
            Value::String(_) => (
                node.text.iter().all(|check| match check {
                    TextCheck::MinLength(keyword) => keyword.is_valid(instance),
                    TextCheck::Pattern(keyword) => keyword.is_valid(instance),
                    TextCheck::DateTime(keyword) => keyword.is_valid(instance),
                }),
                false,
            ),
            Value::Object(map) => match &node.object {
                Some(object) => (self.object_valid(object, map, next, sink), true),
                None => (true, false),
            },
            Value::Array(items) => match &node.array {
                Some(array) => (self.array_valid(array, items, next, sink), true),
                None => (true, false),
            },
            Value::Null | Value::Bool(_) | Value::Number(_) => (true, false),
        };
        if !own {
            return false;
        }
        if !node.any_of.is_empty()
            && !node
                .any_of
                .iter()
                .any(|&id| self.valid(id, instance, depth, &mut Nothing))
        {
            return false;
        }
        match node.reference {
            Some(id) if !walked => self.valid(id, instance, depth, sink),
            Some(id) => self.valid(id, instance, depth, &mut Nothing),
            None => {
                if !walked {
                    match literal {
                        Some(written) => sink.literal(written),
                        None => sink.whole(instance, depth),
                    }
                }
                true
            }
        }
    }

    fn object_valid<S: Sink>(
        &self,
        object: &ObjectCheck,
        map: &Map<String, Value>,
        depth: usize,
        sink: &mut S,
    ) -> bool {
        // A sink that writes members in key order gets them so; validity does not depend on
        // the order members are seen in. Maps iterate in key order unless `serde_json`'s
        // `preserve_order` is on: then each member is looked up in the map's own order (the
        // search cursor hits at once where that follows the schema's) and the members are put in
        // key order by the rank of their property, an integer; a map with undeclared members
        // (or of an object declaring more than `RANKED_LIMIT`) is sorted by name.
        if !S::IN_KEY_ORDER || crate::sort_keys::maps_iterate_in_key_order() {
            return self.members_valid(object, map, declared(object, map.iter()), depth, sink);
        }
        let ranked = declared_in_key_order(object, map, |members| {
            self.members_valid(object, map, members, depth, sink)
        });
        if let Some(valid) = ranked {
            return valid;
        }
        let members = declared(object, crate::sort_keys::sorted_members(map));
        self.members_valid(object, map, members, depth, sink)
    }

    /// [`SinglePass::object_valid`] over the members of `map` in the order `members` gives them,
    /// each with its declared property, if any.
    fn members_valid<'v, 'k, S: Sink>(
        &self,
        object: &'k ObjectCheck,
        map: &Map<String, Value>,
        members: impl Iterator<Item = Member<'v, 'k>>,
        depth: usize,
        sink: &mut S,
    ) -> bool {
        sink.open_object();
        let mut required = 0;
        let mut first = true;
        for (key, value, property) in members {
            let (node, written) = match property {
                Some(property) => {
                    required += usize::from(property.required);
                    (Some(property.node), Some(&*property.written))
                }
                None => match object.additional {
                    Additional::Any => (None, None),
                    Additional::Never => return false,
                    Additional::Schema(id) => (Some(id), None),
                },
            };
            let valid = if sink.skips(key, depth) {
                node.is_none_or(|id| self.valid(id, value, depth, &mut Nothing))
            } else {
                sink.member(first, key, written);
                first = false;
                match node {
                    Some(id) => self.valid(id, value, depth, sink),
                    None => {
                        sink.whole(value, depth);
                        true
                    }
                }
            };
            if !valid {
                return false;
            }
        }
        sink.close_object();
        required == object.required
            && object
                .other_required
                .as_ref()
                .is_none_or(|names| names.has_all(map))
    }

    fn array_valid<S: Sink>(
        &self,
        array: &ArrayCheck,
        items: &[Value],
        depth: usize,
        sink: &mut S,
    ) -> bool {
        if items.len() < array.min || array.max.is_some_and(|max| items.len() > max) {
            return false;
        }
        sink.open_array();
        for (position, item) in items.iter().enumerate() {
            sink.item(position == 0);
            let valid = match array.prefix.get(position).copied().or(array.rest) {
                Some(id) => self.valid(id, item, depth, sink),
                None => {
                    sink.whole(item, depth);
                    true
                }
            };
            if !valid {
                return false;
            }
        }
        sink.close_array();
        !array.unique || surely_unique(items)
    }
}

/// The `json-sort-keys-utf8-v1` form of the literal of `node` (`const`, or one of `enum`)
/// that `instance` equals: `Some(None)` when the node names no literal, `None` when the
/// instance is not the one it names.
fn literal<'n>(node: &'n Node, instance: &Value) -> Option<Option<&'n [u8]>> {
    let mut literal = None;
    if let Some(want) = &node.constant {
        let equal = match (&want.value, instance) {
            (Value::String(want), Value::String(text)) => same_text(want, text),
            (want, _) => instance == want,
        };
        if !equal {
            return None;
        }
        literal = Some(&*want.written);
    }
    if let Some(options) = &node.options {
        let text = instance.as_str()?;
        let option = options
            .iter()
            .find(|option| same_text(&option.value, text))?;
        literal = Some(&*option.written);
    }
    Some(literal)
}

/// A member of an instance object with the property that declares it, if any.
type Member<'v, 'k> = (&'v String, &'v Value, Option<&'k Known>);

/// `members` each with the property of `object` that declares it, if any, looked up in the
/// order they come.
fn declared<'v, 'k>(
    object: &'k ObjectCheck,
    members: impl Iterator<Item = (&'v String, &'v Value)>,
) -> impl Iterator<Item = Member<'v, 'k>> {
    let mut cursor = 0;
    members.map(move |(key, value)| (key, value, find(&object.known, key, &mut cursor)))
}

/// The most declared properties an object may have for [`SinglePass::object_valid`] to put its
/// members in key order by rank, without allocating.
const RANKED_LIMIT: usize = 32;

/// Calls `walk` with the members of `map` in key order when every one is a declared property
/// and `object` declares at most [`RANKED_LIMIT`] of them; `None` when not. Each member goes
/// to the slot of its property's [`Known::rank`], so the order costs no comparison.
fn declared_in_key_order<'v, 'k: 'v>(
    object: &'k ObjectCheck,
    map: &'v Map<String, Value>,
    walk: impl FnOnce(&mut dyn Iterator<Item = Member<'v, 'k>>) -> bool,
) -> Option<bool> {
    if object.known.len() > RANKED_LIMIT {
        return None;
    }
    // The property's name stands for the member's (they are equal), which keeps slots small.
    let mut slots: [Option<(&'v Value, &'k Known)>; RANKED_LIMIT] = [None; RANKED_LIMIT];
    let mut cursor = 0;
    for (key, value) in map {
        let property = find(&object.known, key, &mut cursor)?;
        *slots.get_mut(property.rank)? = Some((value, property));
    }
    let slots = slots.get(..object.known.len())?;
    Some(walk(&mut slots.iter().flatten().map(
        |&(value, property)| (&property.name, value, Some(property)),
    )))
}

/// The declared property `key`, searching from `cursor` onwards and then from the start;
/// `cursor` moves past a found property. Documents mostly list members in the order they are
/// looked for, so the property at the cursor is tried first, by a plain comparison, before
/// the search that compares precomputed heads (3% of a VCE 0.1 decision).
fn find<'k>(known: &'k [Known], key: &str, cursor: &mut usize) -> Option<&'k Known> {
    let start = (*cursor).min(known.len());
    if let Some(property) = known.get(start).filter(|p| same_text(&p.name, key)) {
        *cursor = start + 1;
        return Some(property);
    }
    let (before, after) = known.split_at(start);
    let key_head = head(key);
    // Length and first eight bytes decide almost every comparison.
    let same = |property: &&Known| {
        property.head == key_head
            && property.name.len() == key.len()
            && same_tail(&property.name, key)
    };
    let (offset, found) = match after.iter().position(|p| same(&p)) {
        Some(at) => (start + at, after.get(at)),
        None => {
            let at = before.iter().position(|p| same(&p))?;
            (at, before.get(at))
        }
    };
    *cursor = offset + 1;
    found
}

/// The first eight bytes of `text` as one word (see [`word`]); texts of equal length and
/// head agree in those bytes.
fn head(text: &str) -> u64 {
    word(text.as_bytes())
}

/// The bytes of `a` and `b`, of equal length, after their first eight are equal.
#[inline]
fn same_tail(a: &str, b: &str) -> bool {
    match (a.as_bytes().get(8..), b.as_bytes().get(8..)) {
        (Some(a), Some(b)) => same_bytes(a, b),
        _ => true,
    }
}

fn has_type(kinds: u8, instance: &Value) -> bool {
    match (instance, Kind::of(instance)) {
        // A float with no fraction is an integer to the reference; leave it to the exact
        // judgement (`report`) rather than decide here.
        (Value::Number(number), _) => {
            kinds & Kind::NUMBER != 0
                || (kinds & Kind::INTEGER != 0 && (number.is_i64() || number.is_u64()))
        }
        (_, kind) => kinds & kind != 0,
    }
}

/// No two items can be equal under the reference's equality (`1 == 1.0`, `true != 1`, objects
/// and arrays compared member by member); `false` when that is not certain.
fn surely_unique(items: &[Value]) -> bool {
    if items.len() > PAIRWISE_LIMIT {
        // Only strings are sorted to find repeats; anything else is left to the full validator.
        let texts: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
        return texts.is_some_and(|mut texts| {
            texts.sort_unstable();
            texts.windows(2).all(|pair| pair.first() != pair.get(1))
        });
    }
    items.iter().enumerate().all(|(position, a)| {
        items
            .iter()
            .skip(position + 1)
            .all(|b| surely_differ(a, b, 0))
    })
}

/// `a` and `b` are certainly not equal under the reference's equality.
fn surely_differ(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => !same_text(x, y),
        (Value::Bool(x), Value::Bool(y)) => x != y,
        (Value::Null, Value::Null) => false,
        // Integers compare exactly; anything with a float is left undecided.
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x != y,
            _ => matches!((x.as_u64(), y.as_u64()), (Some(x), Some(y)) if x != y),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() != y.len() || x.iter().zip(y).any(|(x, y)| surely_differ(x, y, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() != y.len()
                || x.iter()
                    .any(|(key, x)| field(y, key).is_none_or(|y| surely_differ(x, y, depth + 1)))
        }
        // Different kinds: a number never equals a boolean (the reference "unbools" them),
        // a string or a container anything else.
        _ => true,
    }
}

/// Compiles schema nodes into [`SinglePass::nodes`]; `$ref`s into `$defs` share one node each.
struct Builder<'s> {
    nodes: Vec<Node>,
    defs: Option<&'s Map<String, Value>>,
    def_ids: HashMap<&'s str, NodeId>,
}

impl<'s> Builder<'s> {
    fn reserve(&mut self) -> NodeId {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    fn node(&mut self, schema: &'s Value) -> Option<NodeId> {
        let id = self.reserve();
        self.fill(id, schema, false)?;
        Some(id)
    }

    fn nodes(&mut self, schemas: &'s Value) -> Option<Vec<NodeId>> {
        schemas
            .as_array()?
            .iter()
            .map(|schema| self.node(schema))
            .collect()
    }

    fn fill(&mut self, id: NodeId, schema: &'s Value, root: bool) -> Option<()> {
        let node = match schema {
            Value::Bool(true) => Node::default(),
            Value::Bool(false) => Node {
                never: true,
                ..Node::default()
            },
            Value::Object(map) => self.compile_node(map, root)?,
            _ => return None,
        };
        *self.nodes.get_mut(id)? = node;
        Some(())
    }

    /// The node for `#/$defs/NAME`, compiled on first use (a recursive definition finds its
    /// own id already reserved).
    fn reference(&mut self, target: &str) -> Option<NodeId> {
        let name = target.strip_prefix("#/$defs/")?;
        if name.contains(['/', '~', '%']) {
            return None;
        }
        if let Some(&id) = self.def_ids.get(name) {
            return Some(id);
        }
        let (name, schema) = self.defs?.get_key_value(name)?;
        let id = self.reserve();
        self.def_ids.insert(name.as_str(), id);
        self.fill(id, schema, false)?;
        Some(id)
    }

    /// One schema object; `None` for any keyword outside the published schemas' set, or a
    /// value of a form this module does not compile.
    fn compile_node(&mut self, map: &'s Map<String, Value>, root: bool) -> Option<Node> {
        let mut node = Node::default();
        let mut text = Vec::new();
        let mut array: Option<ArrayCheck> = None;
        let mut object = false;
        for (keyword, value) in map {
            match keyword.as_str() {
                "title" | "description" | "$comment" | "examples" | "default" | "deprecated"
                | "readOnly" | "writeOnly" => {}
                "$schema" | "$id" | "$defs" if root => {}
                "properties" | "additionalProperties" | "required" => object = true,
                "prefixItems" => array.get_or_insert_default().prefix = self.nodes(value)?,
                "items" => array.get_or_insert_default().rest = Some(self.node(value)?),
                "minItems" => {
                    array.get_or_insert_default().min = usize::try_from(value.as_u64()?).ok()?;
                }
                "maxItems" => {
                    array.get_or_insert_default().max =
                        Some(usize::try_from(value.as_u64()?).ok()?);
                }
                "uniqueItems" => array.get_or_insert_default().unique = value.as_bool()?,
                "type" => node.types = Some(types(value)?),
                "const" => match value {
                    Value::String(_) | Value::Bool(_) | Value::Null => {
                        node.constant = Some(Box::new(Literal::new(value.clone(), value)?));
                    }
                    _ => return None,
                },
                "enum" => {
                    let options = strings(value)?
                        .into_iter()
                        .map(|text| {
                            let of = Value::String(text.clone());
                            Literal::new(text, &of)
                        })
                        .collect::<Option<Box<[_]>>>()?;
                    node.options = Some(options);
                }
                "minLength" => text.push(TextCheck::MinLength(MinLength::parse(value).ok()?)),
                "pattern" => text.push(TextCheck::Pattern(PythonPattern::parse(value).ok()?)),
                "format" => text.push(TextCheck::DateTime(DateTimeFormat::parse(value).ok()?)),
                "anyOf" => node.any_of = self.nodes(value)?.into_boxed_slice(),
                "$ref" => node.reference = Some(self.reference(value.as_str()?)?),
                _ => return None,
            }
        }
        node.text = text.into_boxed_slice();
        node.array = array.map(Box::new);
        if object {
            node.object = Some(Box::new(self.object(map)?));
        }
        node.shape = JudgedAs::of(&node);
        Some(node)
    }

    /// `properties`, `additionalProperties` and `required` of one schema object.
    fn object(&mut self, map: &'s Map<String, Value>) -> Option<ObjectCheck> {
        let mut required = match map.get("required") {
            Some(names) => strings(names)?,
            None => Vec::new(),
        };
        required.sort_unstable();
        required.dedup();
        let mut known = Vec::new();
        if let Some(properties) = map.get("properties") {
            for (name, schema) in properties.as_object()? {
                let node = self.node(schema)?;
                let at = required.iter().position(|r| r == name);
                if let Some(at) = at {
                    required.remove(at);
                }
                let mut written = vec![b','];
                crate::sort_keys::write_string(&mut written, name);
                written.push(b':');
                known.push(Known {
                    name: name.clone(),
                    written: written.into_boxed_slice(),
                    head: head(name),
                    rank: 0,
                    node,
                    required: at.is_some(),
                });
            }
        }
        let additional = match map.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Additional::Any,
            Some(Value::Bool(false)) => Additional::Never,
            Some(schema) => Additional::Schema(self.node(schema)?),
        };
        let other_required = if required.is_empty() {
            None
        } else {
            Some(Required::parse(&Value::from(required)).ok()?)
        };
        let mut names: Vec<String> = known.iter().map(|k| k.name.clone()).collect();
        names.sort_unstable();
        for property in &mut known {
            property.rank = names.binary_search(&property.name).unwrap_or_default();
        }
        // Members are looked for in the order maps iterate: by name, unless `serde_json`'s
        // `preserve_order` is on, when documents usually follow the schema's order.
        if crate::sort_keys::maps_iterate_in_key_order() {
            known.sort_by_key(|property| property.rank);
        }
        let all_required = match map.get("required") {
            Some(names) => Some(Required::parse(names).ok()?),
            None => None,
        };
        Some(ObjectCheck {
            required: known.iter().filter(|k| k.required).count(),
            known,
            other_required,
            additional,
            all_required,
        })
    }
}

fn types(value: &Value) -> Option<u8> {
    match value {
        Value::String(name) => Kind::parse(name),
        Value::Array(names) => names
            .iter()
            .try_fold(0, |kinds, name| Some(kinds | Kind::parse(name.as_str()?)?)),
        _ => None,
    }
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests;
