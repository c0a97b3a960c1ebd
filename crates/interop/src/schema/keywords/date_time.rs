//! The `format` keyword, which the references assert with a `FormatChecker`: only `date-time`
//! is supported, with the meaning `rfc3339_validator.validate_rfc3339(value.upper())` gives
//! it — Cairn's one rule for date-times, [`cairn_core::rfc3339::is_date_time`].
//!
//! That differs from the `jsonschema` crate's `date-time` in ways that change decisions: `t`
//! and `z` may be lower case, leap seconds (`:60`) are refused, year `0000` is refused, and,
//! because the validator's regular expression ends in `$`, one trailing line feed is accepted.

use cairn_core::rfc3339::is_date_time;
use serde_json::Value;

use crate::schema::keywords::PyKeyword;

/// The `format` keyword, registered by [`crate::schema::compile`] in place of the crate's own.
pub(crate) struct DateTimeFormat;

impl PyKeyword for DateTimeFormat {
    fn parse(value: &Value) -> Result<Self, String> {
        if value.as_str() == Some("date-time") {
            Ok(Self)
        } else {
            Err(format!(
                "format {value} is not supported; only \"date-time\" has the reference's meaning here"
            ))
        }
    }

    fn is_valid(&self, instance: &Value) -> bool {
        instance.as_str().is_none_or(is_date_time)
    }

    /// The `jsonschema` crate's own wording for a format error.
    fn message(&self, instance: &Value) -> String {
        format!("{instance} is not a \"date-time\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_date_time_strings_are_judged() {
        let keyword = DateTimeFormat;
        assert!(keyword.is_valid(&serde_json::json!(7)));
        assert!(keyword.is_valid(&serde_json::json!("2026-06-30T04:30:00Z")));
        assert!(!keyword.is_valid(&serde_json::json!("yesterday")));
    }
}
