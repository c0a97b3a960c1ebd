//! The crate's one error type. Every variant has a stable `code()` that the CLI, the hook
//! adapters and the HTTP API map once to an exit code, a hook answer or a status.
//!
//! Classifying a decision as `dropped`, `conflicting` or `unverified` is never an error: those
//! are results of [`crate::compare()`]. Errors are for input that cannot be used at all (a
//! malformed document, an unknown revision, a value that cannot be normalised) and for a
//! snapshot that may not be taken (fewer than three or more than seven decisions).

use cairn_core::{CodedFinding, CoreError, ErrorCode, Timestamp};
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

impl ErrorCode for DecisionError {
    fn code(&self) -> &'static str {
        match self {
            Self::InvalidKind { .. } => "invalid_decision_kind",
            Self::InvalidRef { .. } => "invalid_ref",
            Self::Normalize { .. } => "decision_value_not_normalizable",
            Self::UnknownDecision { .. } => "unknown_decision",
            Self::UnknownRevision { .. } => "unknown_revision",
            Self::ApprovalNotForward { .. } => "approval_not_forward",
            Self::ApprovalWithoutChange { .. } => "approval_without_change",
            Self::RevisionOverflow { .. } => "revision_overflow",
            Self::KeyMismatch { .. } => "hmac_key_mismatch",
            Self::ObservedAtRegressed { .. } => "observed_at_regressed",
            Self::SnapshotRefused { .. } => "snapshot_refused",
            Self::InvalidSnapshot { .. } => "invalid_decision_snapshot",
            Self::SnapshotDigestMismatch { .. } => "snapshot_digest_mismatch",
            Self::InvalidObservation { .. } => "invalid_decision_observation",
            Self::InvalidBook { .. } => "invalid_decision_book",
            Self::InvalidApproval { .. } => "invalid_approved_change",
            Self::UnkeyedDigest { .. } => "unkeyed_decision_digest",
            Self::DocumentTooLarge { .. } => "decision_document_too_large",
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
