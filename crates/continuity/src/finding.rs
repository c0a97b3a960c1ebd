//! Findings: one defect of an envelope or a state document, with a stable code and the JSON
//! path of the offending field.
//!
//! Validation reports every finding it can see rather than stopping at the first, so that a
//! person repairing a document sees the whole list at once. Findings are ordered by the
//! position of the field in the format's declaration, then unknown fields sorted by name, so
//! the list is the same for the same input whatever the order of its keys.

use std::fmt;

use serde::{Serialize, Serializer};

/// The stable code of a finding. Codes never change once published; new ones may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FindingCode {
    /// The input text is larger than [`crate::MAX_INPUT_BYTES`].
    InputTooLarge,
    /// The input text is not JSON.
    InvalidJson,
    /// A value has the wrong JSON type (for example a number where a string is expected).
    WrongType,
    /// A field of the format is absent (nullable fields must be present as `null`).
    MissingField,
    /// A field the format does not define.
    UnknownField,
    /// A string that must not be empty is empty (or only whitespace).
    EmptyValue,
    /// A string is longer than the format allows.
    ValueTooLong,
    /// A string holds control characters.
    BadText,
    /// An identifier is outside the allowed alphabet (`tenant_id`).
    BadIdentifier,
    /// A digest is not `sha256:` followed by 64 lowercase hex digits.
    BadDigest,
    /// A time is not RFC 3339 with an offset.
    BadTimestamp,
    /// The schema tag is not the one this format expects.
    BadSchemaVersion,
    /// A side-effect state outside the four states of E-2 and their aliases.
    BadSideEffectStatus,
    /// An authorisation mode outside `platform_owned | user_delegated | human_approved`.
    BadAuthorizationMode,
    /// An approval status outside the known set.
    BadApprovalStatus,
    /// A number that is negative, fractional or too large.
    BadNumber,
    /// `user_delegated` without `delegated_principal_id` and `delegated_scope`.
    DelegationIncomplete,
    /// Some, but not all, of `approval_id`, `action_digest`, `approval_expires_at` are set.
    ApprovalIncomplete,
    /// `human_approved` without an approval.
    ApprovalRequired,
    /// A side effect other than `not_executed` without the idempotency key it happened under.
    IdempotencyKeyRequired,
    /// `requires_reauthorization` is not `true`.
    ReauthorizationDisabled,
}

impl FindingCode {
    /// The `snake_case` code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InputTooLarge => "input_too_large",
            Self::InvalidJson => "invalid_json",
            Self::WrongType => "wrong_type",
            Self::MissingField => "missing_field",
            Self::UnknownField => "unknown_field",
            Self::EmptyValue => "empty_value",
            Self::ValueTooLong => "value_too_long",
            Self::BadText => "bad_text",
            Self::BadIdentifier => "bad_identifier",
            Self::BadDigest => "bad_digest",
            Self::BadTimestamp => "bad_timestamp",
            Self::BadSchemaVersion => "bad_schema_version",
            Self::BadSideEffectStatus => "bad_side_effect_status",
            Self::BadAuthorizationMode => "bad_authorization_mode",
            Self::BadApprovalStatus => "bad_approval_status",
            Self::BadNumber => "bad_number",
            Self::DelegationIncomplete => "delegation_incomplete",
            Self::ApprovalIncomplete => "approval_incomplete",
            Self::ApprovalRequired => "approval_required",
            Self::IdempotencyKeyRequired => "idempotency_key_required",
            Self::ReauthorizationDisabled => "reauthorization_disabled",
        }
    }
}

impl fmt::Display for FindingCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One defect: what is wrong (`code`), where (`path`, a JSON path such as `$.tenant_id` or
/// `$.continuity_envelope.evidence_refs[2]`), and a lowercase message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The stable code.
    pub code: FindingCode,
    /// The JSON path of the offending value (`$` is the whole document).
    pub path: String,
    /// A lowercase message naming the path; user input is quoted in backticks and shortened.
    pub message: String,
}

impl Finding {
    /// A finding with `code` at `path`.
    #[must_use]
    pub fn new(code: FindingCode, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Appends the member `key` to the JSON path `base`: `$.key` for plain names, otherwise the
/// bracketed form with the name JSON-quoted and shortened (unknown keys come from the input).
#[must_use]
pub(crate) fn member_path(base: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= 64;
    if plain {
        format!("{base}.{key}")
    } else {
        let short = cairn_core::error::excerpt(key);
        let quoted = serde_json::to_string(&short).unwrap_or_else(|_| String::from("\"?\""));
        format!("{base}[{quoted}]")
    }
}

/// Appends the array index `index` to the JSON path `base`.
#[must_use]
pub(crate) fn index_path(base: &str, index: usize) -> String {
    format!("{base}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_use_dots_and_others_are_quoted() {
        assert_eq!(member_path("$", "tenant_id"), "$.tenant_id");
        assert_eq!(member_path("$", "a b"), "$[\"a b\"]");
        assert_eq!(member_path("$", ""), "$[\"\"]");
        assert_eq!(member_path("$", "9x"), "$[\"9x\"]");
        assert_eq!(index_path("$.evidence_refs", 2), "$.evidence_refs[2]");
    }
}
