//! JSON values seen the way the published Python reference sees them: Python truthiness,
//! Python equality (`1 == 1.0 == True`, a missing key equal to `null`), and short renderings of
//! user values for finding messages.
//!
//! The reference compares with `==` and tests with `not x`; reproducing those two operators
//! exactly is what keeps this validator's decisions equal to the reference's on inputs of
//! unexpected types, not only on the well-typed ones the schemas admit.

use std::fmt::Write as _;

use crate::lookup::field;
use crate::schema::BoundedText;
use serde_json::{Map, Number, Value};

/// The longest rendering of a user value put into a message, in characters (then `…`).
const SHOWN_MAX: usize = 120;

/// Python's `bool(x)` for `x = mapping.get(key)`: `None`, `null`, `false`, `0`, `0.0`, `""`,
/// `[]` and `{}` are false.
pub(super) fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// Python's `a == b` where each side is `mapping.get(key)`: an absent key is `None`, the same
/// as JSON `null`.
pub(super) fn py_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    py_eq_value(a.unwrap_or(&Value::Null), b.unwrap_or(&Value::Null))
}

/// Python's `==` on two values `json.loads` produced.
pub(super) fn py_eq_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => objects_equal(x, y),
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            match (as_py_number(a), as_py_number(b)) {
                (Some(x), Some(y)) => crate::schema::keywords::unique_items::numbers_equal(&x, &y),
                _ => false,
            }
        }
        _ => false,
    }
}

fn objects_equal(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(key, p)| field(y, key).is_some_and(|q| py_eq_value(p, q)))
}

/// A Python number: `bool` is a subclass of `int`.
fn as_py_number(value: &Value) -> Option<Number> {
    match value {
        Value::Bool(b) => Some(Number::from(u8::from(*b))),
        Value::Number(n) => Some(n.clone()),
        _ => None,
    }
}

/// `value` is the string `text`.
pub(super) fn is_str(value: Option<&Value>, text: &str) -> bool {
    matches!(value, Some(Value::String(s)) if s == text)
}

/// A user value for a message, meant to go between backticks: a string as it is, anything
/// else as compact JSON, an absent value as `<missing>`; at most [`SHOWN_MAX`] characters, on
/// one line (see [`BoundedText`]).
pub(super) fn shown(value: Option<&Value>) -> String {
    let mut out = String::new();
    push_shown(&mut out, value);
    out
}

/// Appends [`shown`]`(value)` to `out`.
pub(super) fn push_shown(out: &mut String, value: Option<&Value>) {
    let mut cut = BoundedText::new(out, SHOWN_MAX);
    // An error only means the text was cut, which `finish` marks.
    let _ = match value {
        None => cut.write_str("<missing>"),
        Some(Value::String(s)) => cut.write_str(s),
        Some(Value::Array(items)) if items.iter().all(is_plain_str) => {
            // Compact JSON without the serializer: each item needs no escape.
            write_plain_strings(&mut cut, items)
        }
        Some(other) => write!(cut, "{other}"),
    };
    cut.finish();
}

/// A string JSON writes as it is between quotes.
fn is_plain_str(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| !s.bytes().any(crate::sort_keys::needs_escape))
}

/// `["a","b"]` for items that are all [`is_plain_str`].
fn write_plain_strings(cut: &mut BoundedText<'_>, items: &[Value]) -> std::fmt::Result {
    cut.write_str("[")?;
    for (position, item) in items.iter().enumerate() {
        if position > 0 {
            cut.write_str(",")?;
        }
        cut.write_str("\"")?;
        cut.write_str(item.as_str().unwrap_or_default())?;
        cut.write_str("\"")?;
    }
    cut.write_str("]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness_follows_python() {
        for falsy in [
            json!(null),
            json!(false),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(Some(&falsy)), "{falsy}");
        }
        assert!(!truthy(None));
        for truthy_value in [
            json!(true),
            json!(1),
            json!(-0.5),
            json!("x"),
            json!([0]),
            json!({"a": 0}),
        ] {
            assert!(truthy(Some(&truthy_value)), "{truthy_value}");
        }
    }

    #[test]
    fn equality_follows_python() {
        assert!(py_eq(None, Some(&json!(null))));
        assert!(py_eq_value(&json!(1), &json!(1.0)));
        assert!(py_eq_value(&json!(true), &json!(1)));
        assert!(py_eq_value(&json!(false), &json!(0.0)));
        assert!(!py_eq_value(
            &json!(9_007_199_254_740_993_u64),
            &json!(9_007_199_254_740_992.0)
        ));
        assert!(py_eq_value(
            &json!({"a": [1, "x"]}),
            &json!({"a": [1.0, "x"]})
        ));
        assert!(!py_eq_value(&json!("1"), &json!(1)));
        assert!(!py_eq_value(&json!(null), &json!(false)));
    }

    #[test]
    fn shown_values_are_bounded_and_on_one_line() {
        let long = Value::String("é".repeat(200));
        let text = shown(Some(&long));
        assert!(text.ends_with('…') && text.chars().count() == SHOWN_MAX + 1);
        assert_eq!(shown(Some(&json!([1, 2]))), "[1,2]");
        assert_eq!(shown(Some(&json!("a\nb"))), "a\\nb");
        assert_eq!(shown(None), "<missing>");
        // Arrays of plain strings skip the serializer and read the same.
        for value in [
            json!(["a", "b c", "é"]),
            json!([]),
            json!(["a\"b", "c"]),
            json!(["a\nb"]),
            json!(["x", 1]),
            json!([["x"]]),
        ] {
            assert_eq!(shown(Some(&value)), value.to_string(), "{value}");
        }
        let long = json!(vec!["abcdefghij"; 20]);
        let text = shown(Some(&long));
        assert!(text.ends_with('…') && text.chars().count() == SHOWN_MAX + 1);
        assert!(long.to_string().starts_with(text.trim_end_matches('…')));
    }
}
