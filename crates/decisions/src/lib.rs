//! Decision invariants across a boundary (SPEC §8, seed 004).
//!
//! A task decision is kept as a keyed digest of its normalised value:
//!
//! ```
//! use cairn_core::HmacKey;
//! use cairn_decisions::{DecisionKind, digest_value};
//! use serde_json::json;
//!
//! let key = HmacKey::new("example", b"kept outside the agent's reach".to_vec())?;
//! let scope = DecisionKind::Scope;
//! let before = digest_value(&scope, &json!({"repo": "acme/api", "paths": ["src"]}), &key)?;
//! let after = digest_value(&scope, &json!({"paths": ["src"], "repo": "acme/api"}), &key)?;
//! // The same decision however it is written; only the keyed digest is ever kept.
//! assert_eq!(before, after);
//! assert!(before.is_keyed() && before.digest().starts_with("hmac-sha256:example:"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Before a compaction, reset or handoff, a [`Snapshot`] records 3–7 task decisions —
//! `scope`, `approval_boundary`, `target`, `acceptance_test`, `constraint` or custom kinds —
//! each as a keyed digest of its normalised value, with its revision, when it was observed
//! and its approval reference. After the boundary, [`compare()`] classifies each decision
//! against fresh [`Observation`]s and the [`ApprovedChange`]s as `preserved`,
//! `approved_change`, `dropped`, `conflicting` or `unverified`, and the whole set by the D-2
//! precedence, with the safe default action; no snapshot gives
//! `continuity_evidence_missing` (D-4). A [`Status`] reports that continuity health beside
//! the caller's [`ActivityHealth`], never merged (D-3).
//!
//! - [`kind`]: decision kinds and their priority.
//! - [`entry`]: ledger entries, revisions, approvals and [`digest_value`], the one place a
//!   raw value is normalised and digested.
//! - [`book`]: the [`DecisionBook`] — `set`, `approve_change`, `snapshot`, `observations`.
//! - [`snapshot`], [`observation`], [`compare`](mod@compare), [`status`]: the documents and
//!   the comparison; [`state`]: states, actions, reasons, outcomes.
//!
//! # Architecture invariants
//!
//! - Pure: no I/O, no clock, no randomness — times, keys and documents are passed in.
//! - No type that serialises holds a raw decision value, a prompt, a transcript path or a
//!   private path: values live only as `hmac-sha256:<key_id>:<hex>` digests, and references
//!   that look like absolute paths are refused.
//! - It knows no hook, CLI, file or store; those adapt to it.

pub mod book;
pub mod compare;
pub mod entry;
pub mod error;
pub mod kind;
pub mod observation;
mod refs;
pub mod snapshot;
pub mod state;
pub mod status;

pub use book::{BOOK_SCHEMA_VERSION, DecisionBook, SetOutcome};
pub use compare::{
    COMPARISON_SCHEMA_VERSION, Comparison, DecisionResult, before_any_boundary, compare,
};
pub use entry::{ApprovedChange, DecisionEntry, RevisionRef, digest_value};
pub use error::DecisionError;
pub use kind::{CustomKind, DecisionKind};
pub use observation::{Observation, Seen, parse_observations};
pub use refs::MAX_REF_LEN;
pub use snapshot::{MAX_DECISIONS, MIN_DECISIONS, SNAPSHOT_SCHEMA_VERSION, Snapshot};
pub use state::{CheckOutcome, ContinuityHealth, DecisionState, Reason, SafeAction};
pub use status::{ActivityHealth, STATUS_SCHEMA_VERSION, Status};

/// The largest document (snapshot, book, observation list) this crate parses, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;
