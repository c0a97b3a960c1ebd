//! The crate's error type: a document that could not be read, with every finding.

use cairn_core::{Code, ErrorCode};
use serde_json::Value;
use thiserror::Error;

use crate::finding::{Finding, FindingCode};

/// The largest envelope or state document accepted, in bytes (1 MiB).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Errors of the continuity crate. Decisions are not errors: a failed continuity check is a
/// [`crate::ContinuityDecision`]; these are documents that cannot be used at all.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ContinuityError {
    /// The envelope is invalid.
    #[error("invalid continuity envelope: {}", summarize(findings))]
    InvalidEnvelope {
        /// Every finding.
        findings: Vec<Finding>,
    },
    /// The state document is invalid.
    #[error("invalid continuity state: {}", summarize(findings))]
    InvalidState {
        /// Every finding.
        findings: Vec<Finding>,
    },
}

impl ContinuityError {
    /// The findings behind the error.
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        match self {
            Self::InvalidEnvelope { findings } | Self::InvalidState { findings } => findings,
        }
    }
}

cairn_core::error_codes! {
    ContinuityError {
        /// An envelope that fails validation.
        INVALID_ENVELOPE = Invalid("invalid_continuity_envelope");
        /// A continuity state that fails validation.
        INVALID_STATE = Invalid("invalid_continuity_state");
    }
}

impl ErrorCode for ContinuityError {
    fn error_code(&self) -> Code {
        match self {
            Self::InvalidEnvelope { .. } => Self::INVALID_ENVELOPE,
            Self::InvalidState { .. } => Self::INVALID_STATE,
        }
    }
}

/// The first finding's message and how many more there are.
fn summarize(findings: &[Finding]) -> String {
    match findings {
        [] => String::from("no findings"),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

/// Step one of reading a document: JSON text to a raw value, refusing text larger than
/// [`MAX_INPUT_BYTES`]. Step two is [`crate::validate_envelope`] or
/// [`crate::ContinuityState::from_value`].
///
/// # Errors
/// An `input_too_large` or `invalid_json` finding at `$`.
pub fn parse_json(text: &str) -> Result<Value, Finding> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(Finding::new(
            FindingCode::InputTooLarge,
            "$",
            format!(
                "`$` is {} bytes, more than the limit of {MAX_INPUT_BYTES}",
                text.len()
            ),
        ));
    }
    // serde_json bounds nesting depth (128), so hostile nesting is an error, not a crash.
    serde_json::from_str(text).map_err(|e| {
        Finding::new(
            FindingCode::InvalidJson,
            "$",
            format!("`$` is not json: {e}"),
        )
    })
}

/// Reads and validates an envelope from JSON text (both steps).
///
/// # Errors
/// [`ContinuityError::InvalidEnvelope`] with every finding.
pub fn parse_envelope(text: &str) -> Result<crate::ValidatedEnvelope, ContinuityError> {
    let value = parse_json(text).map_err(|finding| ContinuityError::InvalidEnvelope {
        findings: vec![finding],
    })?;
    crate::validate_envelope(&value)
        .map_err(|findings| ContinuityError::InvalidEnvelope { findings })
}
