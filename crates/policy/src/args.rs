//! A call's arguments as the gate sees them: read strictly from the very bytes the intent
//! record digests, or not at all.
//!
//! The gate must judge exactly what was recorded. Arguments a lenient reader would drop or
//! reinterpret — a lone surrogate escape, a duplicate key (digested whole, judged by its last
//! value), nesting past the documented limit, a number no double holds — would otherwise
//! reach the policies as *no* arguments, and every `forbid … when { context.args.… }` would
//! be silent. So [`Arguments`] can only be made by [`Arguments::read`], which uses
//! `cairn_core::strict_json`; a [`crate::GateRequest`] needs one; and a call whose arguments
//! do not read is denied by the built-in rule [`ARGS_UNREADABLE_RULE`], which no policy can
//! override ([`crate::PolicyGate::refuse_unreadable`]).

use std::fmt;

use cairn_core::strict_json::{self, StrictJsonError};
use serde_json::Value;
use serde_json::value::RawValue;

/// The built-in rule that denies a call whose arguments are not strict JSON.
pub const ARGS_UNREADABLE_RULE: &str = "cairn.args-unreadable";

/// A call's arguments, read strictly from the bytes the record digests.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments<'a> {
    raw: &'a [u8],
    value: Value,
}

impl<'a> Arguments<'a> {
    /// Reads `raw`, the arguments exactly as submitted. Empty bytes (or surrounding
    /// whitespace only) mean no arguments.
    ///
    /// # Errors
    /// [`UnreadableArguments`] when `raw` is not one strict JSON document (see
    /// `cairn_core::strict_json`), naming the offending value's path.
    pub fn read(raw: &'a [u8]) -> Result<Self, UnreadableArguments> {
        if raw.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self {
                raw,
                value: Value::Null,
            });
        }
        strict_json::parse(raw)
            .map(|value| Self { raw, value })
            .map_err(UnreadableArguments)
    }

    /// No arguments at all.
    #[must_use]
    pub const fn none() -> Self {
        Self {
            raw: b"",
            value: Value::Null,
        }
    }

    /// The parsed arguments (`null` for none).
    #[must_use]
    pub const fn value(&self) -> &Value {
        &self.value
    }

    /// The bytes they were read from.
    #[must_use]
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The literal text of top-level member `name`, when the arguments are an object that
    /// has it (duplicate keys were refused when reading, so there is at most one).
    pub(crate) fn member_literal(&self, name: &str) -> Option<String> {
        let members: std::collections::BTreeMap<String, &RawValue> =
            serde_json::from_slice(self.raw).ok()?;
        members.get(name).map(|raw| raw.get().to_owned())
    }
}

/// Why a call's arguments could not be read: the call is denied by [`ARGS_UNREADABLE_RULE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableArguments(pub StrictJsonError);

impl UnreadableArguments {
    /// The JSON path of the offending value (`$.memo`).
    #[must_use]
    pub fn path(&self) -> &str {
        &self.0.path
    }

    /// The strict reader's stable code (`json_invalid`, `json_duplicate_key`,
    /// `json_too_deep`).
    #[must_use]
    pub fn code(&self) -> &'static str {
        cairn_core::ErrorCode::code(&self.0)
    }
}

impl fmt::Display for UnreadableArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the arguments are not strict JSON ({}): {}",
            self.code(),
            self.0
        )
    }
}

impl std::error::Error for UnreadableArguments {}

/// The `Long` a JSON number literal stands for: an integer literal (no fraction, no
/// exponent) in the signed 64-bit range. `-0` is the integer 0; `25000.0` and `2.5e4` are not
/// integer literals, and a literal outside the range is refused rather than rounded.
pub(crate) fn long_literal(literal: &str) -> Option<i64> {
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    literal.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn only_strict_json_reads() {
        assert!(Arguments::read(br#"{"amount": 25000, "memo": "\udead"}"#).is_err());
        assert!(Arguments::read(br#"{"amount": 25000, "amount": 5}"#).is_err());
        assert!(Arguments::read(br#"{"amount": 1e400}"#).is_err());
        assert_eq!(Arguments::read(b"  ").unwrap().value(), &Value::Null);
        let err = Arguments::read(br#"{"a": 1, "a": 2}"#).unwrap_err();
        assert_eq!((err.path(), err.code()), ("$.a", "json_duplicate_key"));
    }

    #[test]
    fn integer_literals_are_longs_and_nothing_else_is() {
        assert_eq!(long_literal("-0"), Some(0));
        assert_eq!(long_literal("9223372036854775807"), Some(i64::MAX));
        assert_eq!(long_literal("-9223372036854775808"), Some(i64::MIN));
        for not in [
            "9223372036854775808",
            "25000.0",
            "2.5e4",
            "-",
            "",
            "1e3",
            " 1",
        ] {
            assert_eq!(long_literal(not), None, "{not}");
        }
    }
}
