//! The `uniqueItems` keyword with the meaning Python's `jsonschema` gives it (`_utils.uniq`
//! over `_utils.equal`): objects are equal when they have the same members in any order,
//! `1 == 1.0`, and a boolean equals only the same boolean, at any depth.
//!
//! The `jsonschema` crate's own keyword hashes objects member by member in the order they are
//! stored, so where `serde_json` keeps document order (its `preserve_order` feature, which
//! the `cairn` binary's build turns on) two objects that differ only in key order counted as
//! distinct: a VCE envelope with the same evidence check twice got past its schema.
//!
//! Python's sort-then-compare-neighbours shortcut is not reproduced: on the arrays the
//! published schemas mark unique (strings, and objects of strings), it finds exactly the pairs
//! a comparison of every pair finds.

use crate::lookup::field;
use serde_json::{Number, Value};

use crate::schema::keywords::PyKeyword;

/// Arrays longer than this are checked by sorting when every item is a string; shorter ones
/// (and all others) pair by pair.
const PAIRWISE_LIMIT: usize = 32;

/// The `uniqueItems` keyword, registered by [`crate::schema::compile`] in place of the crate's own.
pub(crate) struct UniqueItems {
    on: bool,
}

impl UniqueItems {
    /// `uniqueItems: true`.
    pub(crate) const fn on() -> Self {
        Self { on: true }
    }
}

impl PyKeyword for UniqueItems {
    fn parse(value: &Value) -> Result<Self, String> {
        value
            .as_bool()
            .map(|on| Self { on })
            .ok_or_else(|| format!("uniqueItems must be a boolean, not {value}"))
    }

    fn is_valid(&self, instance: &Value) -> bool {
        match instance {
            Value::Array(items) if self.on => all_distinct(items),
            _ => true,
        }
    }

    /// The `jsonschema` crate's own wording.
    fn message(&self, instance: &Value) -> String {
        format!("{instance} has non-unique elements")
    }
}

/// No two of `items` are equal under [`py_equal`].
fn all_distinct(items: &[Value]) -> bool {
    if items.len() > PAIRWISE_LIMIT {
        let texts: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
        if let Some(mut texts) = texts {
            texts.sort_unstable();
            return texts.windows(2).all(|pair| pair.first() != pair.get(1));
        }
    }
    items
        .iter()
        .enumerate()
        .all(|(position, a)| items.iter().skip(position + 1).all(|b| !py_equal(a, b)))
}

/// `jsonschema._utils.equal`: structural equality where object member order does not count,
/// numbers compare by value, and booleans are not numbers. Depth is bounded by the parser
/// that made the values.
pub(crate) fn py_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| py_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| field(y, key).is_some_and(|y| py_equal(x, y)))
        }
        _ => false,
    }
}

/// Python's `==` between two numbers `json.loads` made: integers exactly, an integer and a
/// float by value (so `2**53 + 1 != 2.0**53`), floats as floats. The one place both formats'
/// validators compare numbers as Python does.
#[must_use]
pub fn numbers_equal(x: &Number, y: &Number) -> bool {
    match (integer(x), integer(y)) {
        (Some(a), Some(b)) => a == b,
        (Some(i), None) => integer_equals_float(i, y.as_f64()),
        (None, Some(i)) => integer_equals_float(i, x.as_f64()),
        (None, None) => x.as_f64() == y.as_f64(),
    }
}

fn integer(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn integer_equals_float(i: i128, f: Option<f64>) -> bool {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "only integral floats far inside i128's range get here, which convert exactly"
    )]
    f.is_some_and(|f| f.fract() == 0.0 && f.abs() < 1e38 && f as i128 == i)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn unique(items: Value) -> bool {
        UniqueItems { on: true }.is_valid(&items)
    }

    #[test]
    fn objects_with_the_same_members_in_another_order_are_equal() {
        let a: Value = serde_json::from_str(r#"{"check_id": "c1", "method": "sha256"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"method": "sha256", "check_id": "c1"}"#).unwrap();
        assert!(!unique(Value::Array(vec![a.clone(), b])));
        assert!(unique(json!([a, {"check_id": "c2", "method": "sha256"}])));
    }

    #[test]
    fn numbers_compare_by_value_and_booleans_are_not_numbers() {
        assert!(!unique(json!([1, 1.0])));
        assert!(!unique(json!([{"a": [1]}, {"a": [1.0]}])));
        assert!(unique(json!([1, true])));
        assert!(unique(json!([[0], [false]])));
        assert!(!unique(json!([true, true])));
        assert!(unique(json!([
            9_007_199_254_740_993_u64,
            9_007_199_254_740_992.0
        ])));
        assert!(unique(json!([null, 0, "", [], {}])));
    }

    #[test]
    fn long_string_arrays_and_switched_off_keyword() {
        let mut texts: Vec<Value> = (0..100).map(|i| json!(format!("ref-{i}"))).collect();
        assert!(unique(Value::Array(texts.clone())));
        texts.push(json!("ref-7"));
        assert!(!unique(Value::Array(texts)));
        assert!(UniqueItems { on: false }.is_valid(&json!([1, 1])));
        assert!(unique(json!("not an array")));
    }
}
