//! The crate's error type: a document that could not be read, with every finding.

use cairn_core::py_json::{self, StandInKind};
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
/// [`MAX_INPUT_BYTES`]. The text is read by [`cairn_core::py_json`], the one reader of every
/// document Cairn judges, so a continuity document nests as deep (up to
/// [`cairn_core::py_json::MAX_DEPTH`] levels) and is refused for the same things as a VCE or
/// RLC document. What that reader holds only as a stand-in is a finding here: a number JSON
/// cannot carry (`NaN`, `Infinity`, `1e400`) is `bad_number`, a lone surrogate is `bad_text`,
/// each at its path. Step two is [`crate::validate_envelope`] or
/// [`crate::ContinuityState::from_value`].
///
/// # Errors
/// An `input_too_large` or `invalid_json` finding at `$`, or every stand-in's finding.
pub fn parse_json(text: &str) -> Result<Value, Vec<Finding>> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(vec![Finding::new(
            FindingCode::InputTooLarge,
            "$",
            format!(
                "`$` is {} bytes, more than the limit of {MAX_INPUT_BYTES}",
                text.len()
            ),
        )]);
    }
    let read = py_json::parse(text).map_err(|e| {
        vec![Finding::new(
            FindingCode::InvalidJson,
            "$",
            format!("`$` is not json: {e}"),
        )]
    })?;
    if read.stand_ins.is_empty() {
        return Ok(read.value);
    }
    Err(read
        .stand_ins
        .iter()
        .map(|stand_in| {
            let code = match stand_in.kind {
                StandInKind::NonFiniteNumber => FindingCode::BadNumber,
                StandInKind::LoneSurrogate => FindingCode::BadText,
            };
            Finding::new(code, stand_in.path.clone(), stand_in.to_string())
        })
        .collect())
}

/// Reads and validates an envelope from JSON text (both steps).
///
/// # Errors
/// [`ContinuityError::InvalidEnvelope`] with every finding.
pub fn parse_envelope(text: &str) -> Result<crate::ValidatedEnvelope, ContinuityError> {
    let value =
        parse_json(text).map_err(|findings| ContinuityError::InvalidEnvelope { findings })?;
    crate::validate_envelope(&value)
        .map_err(|findings| ContinuityError::InvalidEnvelope { findings })
}
