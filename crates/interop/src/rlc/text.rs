//! Small helpers that keep finding messages uniform: user values in backticks, cut to a
//! readable length and kept on one line (`crate::schema::push_bounded`), lists joined with commas.

use std::fmt::Write as _;

use crate::schema::{BoundedText, push_bounded};
use serde_json::Value;

/// The longest user value quoted in a message, in characters; longer values are cut with `…`
/// so that a hostile document cannot make a report arbitrarily large per finding.
const MAX_QUOTED_CHARS: usize = 120;

/// `text` in backticks, cut to [`MAX_QUOTED_CHARS`].
pub(crate) fn tick(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_QUOTED_CHARS * 4) + 2);
    out.push('`');
    push_bounded(&mut out, text, MAX_QUOTED_CHARS);
    out.push('`');
    out
}

/// A JSON value in backticks: a string without its quotes, anything else as compact JSON.
pub(crate) fn tick_value(value: Option<&Value>) -> String {
    match value {
        None => String::from("(absent)"),
        Some(Value::String(text)) => tick(text),
        Some(other) => {
            let mut out = String::from("`");
            let mut cut = BoundedText::new(&mut out, MAX_QUOTED_CHARS);
            // An error only means the value was cut, which `finish` marks.
            let _ = write!(cut, "{other}");
            cut.finish();
            out.push('`');
            out
        }
    }
}

/// Each item in backticks, joined with `, `.
pub(crate) fn tick_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (index, item) in items.into_iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        out.push_str(&tick(item));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_stay_on_one_line_and_short() {
        assert_eq!(tick("a\nb\u{1b}"), "`a\\nb\\u{1b}`");
        let long = "é".repeat(MAX_QUOTED_CHARS + 5);
        let quoted = tick(&long);
        assert_eq!(quoted.chars().count(), MAX_QUOTED_CHARS + 3);
        assert!(quoted.ends_with("…`"));
        assert_eq!(tick_list(["a", "b"]), "`a`, `b`");
    }
}
