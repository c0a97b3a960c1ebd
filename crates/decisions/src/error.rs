//! The crate's one error type. Every variant has a stable `code()` that the CLI, the hook
//! adapters and the HTTP API map once to an exit code, a hook answer or a status.
//!
//! Classifying a decision as `dropped`, `conflicting` or `unverified` is never an error: those
//! are results of [`crate::compare()`]. Errors are for input that cannot be used at all (a
//! malformed document, an unknown revision, a value that cannot be normalised) and for a
//! snapshot that may not be taken (fewer than three or more than seven decisions).

use cairn_core::{Code, CodedFinding, CoreError, ErrorCode, Timestamp};
use thiserror::Error;

/// Everything that can go wrong in this crate.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecisionError {
    /// A decision kind is not one of the built-in kinds nor a valid `snake_case` id.
    #[error("invalid decision kind `{value}`: {reason}")]
    InvalidKind {
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An approval or provenance reference is empty, too long, has control characters or
    /// looks like a private absolute path.
    #[error("invalid `{field}` `{value}`: {reason}")]
    InvalidRef {
        /// The field (`approval_ref`, `source`).
        field: &'static str,
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A decision value cannot be normalised and digested (see `cairn_core::normalize`).
    #[error("cannot normalise the value of decision `{key}`: {source}")]
    Normalize {
        /// The decision.
        key: String,
        /// Why the normaliser refused it.
        source: CoreError,
    },
    /// The book holds no decision with this key.
    #[error("unknown decision `{key}`")]
    UnknownDecision {
        /// The decision.
        key: String,
    },
    /// The decision has no such revision.
    #[error("decision `{key}` has no revision {revision}")]
    UnknownRevision {
        /// The decision.
        key: String,
        /// The revision asked for.
        revision: u32,
    },
    /// An approval must link an earlier revision to a later one.
    #[error(
        "an approval of `{key}` must link an earlier revision to a later one, got {from} -> {to}"
    )]
    ApprovalNotForward {
        /// The decision.
        key: String,
        /// The revision approved from.
        from: u32,
        /// The revision approved to.
        to: u32,
    },
    /// The two revisions an approval links have the same value digest: nothing to approve.
    #[error(
        "revisions {from} and {to} of `{key}` have the same value digest, there is no change to approve"
    )]
    ApprovalWithoutChange {
        /// The decision.
        key: String,
        /// The revision approved from.
        from: u32,
        /// The revision approved to.
        to: u32,
    },
    /// The decision's revision counter is exhausted.
    #[error("decision `{key}` cannot take another revision")]
    RevisionOverflow {
        /// The decision.
        key: String,
    },
    /// A value was digested with a different HMAC key than the decision's earlier revisions:
    /// the digests could not be compared, so the change would look like drift.
    #[error("decision `{key}` is digested with key `{expected}`, got key `{got}`")]
    KeyMismatch {
        /// The decision.
        key: String,
        /// The key id of the decision's revisions.
        expected: String,
        /// The key id given.
        got: String,
    },
    /// A decision was observed at an instant earlier than its last observation.
    #[error(
        "`observed_at` `{at}` of decision `{key}` is earlier than its last observation `{last}`"
    )]
    ObservedAtRegressed {
        /// The decision.
        key: String,
        /// The instant given.
        at: Timestamp,
        /// The last recorded observation.
        last: Timestamp,
    },
    /// A snapshot may not be taken; every reason is listed (`too_few_decisions`,
    /// `too_many_decisions`, `duplicate_decision`, `observed_after_snapshot`).
    #[error("snapshot refused: {}", summarize(findings))]
    SnapshotRefused {
        /// Every reason, each with a stable code.
        findings: Vec<CodedFinding>,
    },
    /// A decision snapshot document is malformed.
    #[error("invalid decision snapshot at `{path}`: {reason}")]
    InvalidSnapshot {
        /// The offending field.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A snapshot's recorded digest differs from the digest of its content.
    #[error(
        "snapshot digest mismatch at `$.snapshot_digest`: recorded `{recorded}`, computed `{computed}`"
    )]
    SnapshotDigestMismatch {
        /// The digest written in the document.
        recorded: String,
        /// The digest of the content.
        computed: String,
    },
    /// An observation document is malformed.
    #[error("invalid decision observation at `{path}`: {reason}")]
    InvalidObservation {
        /// The offending field.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A decision book document (or the entries and approvals it is rebuilt from) is malformed.
    #[error("invalid decision book at `{path}`: {reason}")]
    InvalidBook {
        /// The offending field.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An approved change is malformed.
    #[error("invalid approved change at `{path}`: {reason}")]
    InvalidApproval {
        /// The offending field.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value digest is a plain SHA-256: decision values are always keyed (C-1, D-1)
    /// because a plain digest of a low-entropy value can be reversed by guessing.
    #[error(
        "value digest at `{path}` is not keyed: decision values use `hmac-sha256:<key_id>:<hex>`"
    )]
    UnkeyedDigest {
        /// The offending field.
        path: String,
    },
    /// A document is larger than this crate accepts.
    #[error("decision document is {size} bytes, the limit is {limit}")]
    DocumentTooLarge {
        /// The document's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
}

cairn_core::error_codes! {
    DecisionError {
        /// A decision kind outside the allowed form.
        INVALID_KIND = Invalid("invalid_decision_kind");
        /// A reference outside the allowed form.
        INVALID_REF = Invalid("invalid_ref");
        /// A value with no normal form.
        NOT_NORMALIZABLE = Invalid("decision_value_not_normalizable");
        /// No decision of that key.
        UNKNOWN_DECISION = Invalid("unknown_decision");
        /// No revision of that number.
        UNKNOWN_REVISION = Invalid("unknown_revision");
        /// An approval that does not move forward.
        APPROVAL_NOT_FORWARD = Invalid("approval_not_forward");
        /// An approval with nothing to approve.
        APPROVAL_WITHOUT_CHANGE = Invalid("approval_without_change");
        /// No revision number is left.
        REVISION_OVERFLOW = Invalid("revision_overflow");
        /// A digest made with another key.
        HMAC_KEY_MISMATCH = Invalid("hmac_key_mismatch");
        /// An observation older than the one before.
        OBSERVED_AT_REGRESSED = Invalid("observed_at_regressed");
        /// A snapshot the book refuses.
        SNAPSHOT_REFUSED = Invalid("snapshot_refused");
        /// A snapshot document that fails validation.
        INVALID_SNAPSHOT = Invalid("invalid_decision_snapshot");
        /// A snapshot whose digest does not match.
        SNAPSHOT_DIGEST_MISMATCH = Invalid("snapshot_digest_mismatch");
        /// An observation document that fails validation.
        INVALID_OBSERVATION = Invalid("invalid_decision_observation");
        /// A decision book that fails validation.
        INVALID_BOOK = Invalid("invalid_decision_book");
        /// An approved change that fails validation.
        INVALID_APPROVAL = Invalid("invalid_approved_change");
        /// A digest without its key.
        UNKEYED_DIGEST = Invalid("unkeyed_decision_digest");
        /// A document over the size limit.
        DOCUMENT_TOO_LARGE = Invalid("decision_document_too_large");
    }
}

impl ErrorCode for DecisionError {
    fn error_code(&self) -> Code {
        match self {
            Self::InvalidKind { .. } => Self::INVALID_KIND,
            Self::InvalidRef { .. } => Self::INVALID_REF,
            Self::Normalize { .. } => Self::NOT_NORMALIZABLE,
            Self::UnknownDecision { .. } => Self::UNKNOWN_DECISION,
            Self::UnknownRevision { .. } => Self::UNKNOWN_REVISION,
            Self::ApprovalNotForward { .. } => Self::APPROVAL_NOT_FORWARD,
            Self::ApprovalWithoutChange { .. } => Self::APPROVAL_WITHOUT_CHANGE,
            Self::RevisionOverflow { .. } => Self::REVISION_OVERFLOW,
            Self::KeyMismatch { .. } => Self::HMAC_KEY_MISMATCH,
            Self::ObservedAtRegressed { .. } => Self::OBSERVED_AT_REGRESSED,
            Self::SnapshotRefused { .. } => Self::SNAPSHOT_REFUSED,
            Self::InvalidSnapshot { .. } => Self::INVALID_SNAPSHOT,
            Self::SnapshotDigestMismatch { .. } => Self::SNAPSHOT_DIGEST_MISMATCH,
            Self::InvalidObservation { .. } => Self::INVALID_OBSERVATION,
            Self::InvalidBook { .. } => Self::INVALID_BOOK,
            Self::InvalidApproval { .. } => Self::INVALID_APPROVAL,
            Self::UnkeyedDigest { .. } => Self::UNKEYED_DIGEST,
            Self::DocumentTooLarge { .. } => Self::DOCUMENT_TOO_LARGE,
        }
    }
}

impl DecisionError {
    /// The findings of a refused snapshot (empty for every other error).
    #[must_use]
    pub fn findings(&self) -> &[CodedFinding] {
        match self {
            Self::SnapshotRefused { findings } => findings,
            _ => &[],
        }
    }
}

fn summarize(findings: &[CodedFinding]) -> String {
    findings
        .iter()
        .map(|f| format!("{} ({})", f.message, f.code))
        .collect::<Vec<_>>()
        .join("; ")
}
