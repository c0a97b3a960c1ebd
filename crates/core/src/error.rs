//! The core error type and the `ErrorCode` trait every crate's error implements.
//!
//! A stable code is what scripts, hook hosts and HTTP clients match on; the message is for
//! people. Each boundary (CLI exit code, HTTP status, hook answer) maps the code once.

use thiserror::Error;

/// Implemented by every Cairn error type: a stable, machine-matchable code.
pub trait ErrorCode {
    /// A short `snake_case` code that never changes once published.
    fn code(&self) -> &'static str;
}

/// Errors raised by the pure core (parsing identifiers, digests, times; canonicalisation).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A digest string is not of the form `sha256:<64 lowercase hex>`.
    #[error("invalid digest `{value}`: {reason}")]
    InvalidDigest {
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An identifier is empty, too long or has characters outside the allowed set.
    #[error("invalid {kind} `{value}`: {reason}")]
    InvalidId {
        /// Which kind of identifier (`tenant_id`, `run_id`, ...).
        kind: &'static str,
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A timestamp is not RFC 3339 with an offset.
    #[error("invalid timestamp `{value}`: {reason}")]
    InvalidTimestamp {
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value cannot be put in canonical form (for example a non-finite number).
    #[error("cannot canonicalise value: {reason}")]
    Canonicalization {
        /// Why canonicalisation failed.
        reason: String,
    },
}

impl ErrorCode for CoreError {
    fn code(&self) -> &'static str {
        match self {
            Self::InvalidDigest { .. } => "invalid_digest",
            Self::InvalidId { .. } => "invalid_id",
            Self::InvalidTimestamp { .. } => "invalid_timestamp",
            Self::Canonicalization { .. } => "canonicalization_failed",
        }
    }
}

/// Shortens user-supplied text before it is echoed in an error message, so a hostile input
/// cannot flood logs and an accidental secret is not repeated in full.
#[must_use]
pub fn excerpt(value: &str) -> String {
    const MAX: usize = 80;
    if value.chars().count() <= MAX {
        value.to_owned()
    } else {
        let mut out: String = value.chars().take(MAX).collect();
        out.push('…');
        out
    }
}
