//! The pre-boundary snapshot (`cairn.decision-snapshot/v1`, D-1): 3–7 decision entries —
//! keys, revisions, keyed digests, observation times, approval and provenance references —
//! and a digest over all of it.
//!
//! # JSON form
//!
//! ```json
//! {"schema_version": "cairn.decision-snapshot/v1",
//!  "canonicalization": "jcs",
//!  "taken_at": "2026-03-02T09:59:58Z",
//!  "decisions": [
//!    {"key": "approval_boundary", "revision": 1,
//!     "value_digest": {"normalizer": "cairn-normalize/v1", "digest": "hmac-sha256:decisions-1:…"},
//!     "observed_at": "2026-03-02T09:40:00Z", "approval_ref": "ticket:OPS-7", "source": "cli:decisions-set"},
//!    {"key": "scope", …}, {"key": "target", …}],
//!  "snapshot_digest": "sha256:…"}
//! ```
//!
//! `decisions` is sorted by key, one entry per key. `snapshot_digest` is SHA-256 over the RFC
//! 8785 (JCS) form of the document without `snapshot_digest`. The snapshot holds no raw value,
//! prompt, transcript path or private path: values are only keyed digests, and references are
//! checked not to be absolute paths.

use cairn_core::canonical::jcs_digest;
use cairn_core::{Canonicalization, CodedFinding, Digest, Timestamp};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::entry::{DecisionEntry, Doc, RawEntry};
use crate::error::DecisionError;
use crate::kind::DecisionKind;

/// The snapshot's schema tag.
pub const SNAPSHOT_SCHEMA_VERSION: &str = "cairn.decision-snapshot/v1";
/// The fewest decisions a snapshot holds.
pub const MIN_DECISIONS: usize = 3;
/// The most decisions a snapshot holds.
pub const MAX_DECISIONS: usize = 7;

/// A validated pre-boundary snapshot of 3–7 decisions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawSnapshot")]
pub struct Snapshot {
    taken_at: Timestamp,
    decisions: Vec<DecisionEntry>,
    digest: Digest,
}

/// The part of the document the digest covers.
#[derive(Serialize)]
struct Body<'a> {
    schema_version: &'static str,
    canonicalization: Canonicalization,
    taken_at: Timestamp,
    decisions: &'a [DecisionEntry],
}

/// The whole document.
#[derive(Serialize)]
struct Document<'a> {
    #[serde(flatten)]
    body: Body<'a>,
    snapshot_digest: Digest,
}

impl Snapshot {
    /// Takes a snapshot of `entries` at `taken_at`.
    ///
    /// # Errors
    /// [`DecisionError::SnapshotRefused`] listing every finding: `too_few_decisions` (fewer
    /// than 3), `too_many_decisions` (more than 7), `duplicate_decision` (one key twice),
    /// `observed_after_snapshot` (an entry observed after `taken_at`).
    pub fn from_entries(
        mut entries: Vec<DecisionEntry>,
        taken_at: Timestamp,
    ) -> Result<Self, DecisionError> {
        entries.sort_by(|a, b| a.key().cmp(b.key()));
        let findings = findings(&entries, taken_at);
        if !findings.is_empty() {
            return Err(DecisionError::SnapshotRefused { findings });
        }
        let digest = body_digest(&entries, taken_at)?;
        Ok(Self {
            taken_at,
            decisions: entries,
            digest,
        })
    }

    /// Parses and verifies a snapshot document.
    ///
    /// # Errors
    /// [`DecisionError::DocumentTooLarge`], [`DecisionError::InvalidSnapshot`] (naming the
    /// field), the entry codes (`unkeyed_decision_digest`, `invalid_ref`,
    /// `invalid_decision_kind`), and [`DecisionError::SnapshotDigestMismatch`].
    pub fn from_json(text: &str) -> Result<Self, DecisionError> {
        let raw: RawDocument = Doc::Snapshot.read(text, "")?;
        let mut entries = Vec::with_capacity(raw.decisions.len());
        for (index, item) in raw.decisions.into_iter().enumerate() {
            let path = format!("$.decisions[{index}]");
            let entry: RawEntry = serde_json::from_value(item)
                .map_err(|e| Doc::Snapshot.error(path.as_str(), e.to_string()))?;
            entries.push(entry.validate(Doc::Snapshot, &path)?);
        }
        RawSnapshot {
            schema_version: raw.schema_version,
            canonicalization: raw.canonicalization,
            taken_at: raw.taken_at,
            decisions: entries,
            snapshot_digest: raw.snapshot_digest,
        }
        .verify()
    }

    /// When the snapshot was taken.
    #[must_use]
    pub fn taken_at(&self) -> Timestamp {
        self.taken_at
    }

    /// The decisions, sorted by key.
    #[must_use]
    pub fn decisions(&self) -> &[DecisionEntry] {
        &self.decisions
    }

    /// The decision with this key.
    #[must_use]
    pub fn get(&self, key: &DecisionKind) -> Option<&DecisionEntry> {
        self.decisions.iter().find(|entry| entry.key() == key)
    }

    /// The snapshot digest (`snapshot_digest`).
    #[must_use]
    pub fn digest(&self) -> Digest {
        self.digest
    }
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Document {
            body: body(&self.decisions, self.taken_at),
            snapshot_digest: self.digest,
        }
        .serialize(serializer)
    }
}

fn body(decisions: &[DecisionEntry], taken_at: Timestamp) -> Body<'_> {
    Body {
        schema_version: SNAPSHOT_SCHEMA_VERSION,
        canonicalization: Canonicalization::Jcs,
        taken_at,
        decisions,
    }
}

fn body_digest(decisions: &[DecisionEntry], taken_at: Timestamp) -> Result<Digest, DecisionError> {
    jcs_digest(&body(decisions, taken_at))
        .map_err(|e| Doc::Snapshot.error("$", format!("cannot canonicalise: {e}")))
}

/// Every reason the entries may not form a snapshot; `entries` is sorted by key.
fn findings(entries: &[DecisionEntry], taken_at: Timestamp) -> Vec<CodedFinding> {
    let mut out = Vec::new();
    let count = entries.len();
    if count < MIN_DECISIONS {
        out.push(CodedFinding::new(
            "too_few_decisions",
            format!("a snapshot holds 3-7 decisions, got {count}"),
        ));
    }
    if count > MAX_DECISIONS {
        out.push(CodedFinding::new(
            "too_many_decisions",
            format!("a snapshot holds 3-7 decisions, got {count}"),
        ));
    }
    for pair in entries.windows(2) {
        if let [a, b] = pair
            && a.key() == b.key()
        {
            out.push(CodedFinding::new(
                "duplicate_decision",
                format!("decision `{}` appears more than once", a.key()),
            ));
        }
    }
    for entry in entries {
        if entry.observed_at() > taken_at {
            out.push(CodedFinding::new(
                "observed_after_snapshot",
                format!(
                    "decision `{}` was observed at `{}`, after the snapshot time `{taken_at}`",
                    entry.key(),
                    entry.observed_at()
                ),
            ));
        }
    }
    out
}

/// The document as read, before its entries are checked (so errors can name them).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDocument {
    schema_version: String,
    canonicalization: String,
    taken_at: Timestamp,
    decisions: Vec<Value>,
    snapshot_digest: String,
}

/// The document with checked entries, before the snapshot-level checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSnapshot {
    schema_version: String,
    canonicalization: String,
    taken_at: Timestamp,
    decisions: Vec<DecisionEntry>,
    snapshot_digest: String,
}

impl RawSnapshot {
    fn verify(self) -> Result<Snapshot, DecisionError> {
        if self.schema_version != SNAPSHOT_SCHEMA_VERSION {
            return Err(Doc::Snapshot.error(
                "$.schema_version",
                format!("expected `{SNAPSHOT_SCHEMA_VERSION}`"),
            ));
        }
        if self.canonicalization != Canonicalization::Jcs.as_str() {
            return Err(Doc::Snapshot.error("$.canonicalization", "expected `jcs`"));
        }
        let sorted = self
            .decisions
            .windows(2)
            .all(|pair| matches!(pair, [a, b] if a.key() < b.key()));
        if !sorted {
            return Err(Doc::Snapshot.error(
                "$.decisions",
                "expected decisions sorted by key, each key once",
            ));
        }
        let findings = findings(&self.decisions, self.taken_at);
        if !findings.is_empty() {
            let reasons: Vec<String> = findings
                .iter()
                .map(|f| format!("{} ({})", f.message, f.code))
                .collect();
            return Err(Doc::Snapshot.error("$.decisions", reasons.join("; ")));
        }
        let recorded: Digest = self
            .snapshot_digest
            .parse()
            .map_err(|e| Doc::Snapshot.error("$.snapshot_digest", format!("{e}")))?;
        let computed = body_digest(&self.decisions, self.taken_at)?;
        if recorded != computed {
            return Err(DecisionError::SnapshotDigestMismatch {
                recorded: recorded.to_string(),
                computed: computed.to_string(),
            });
        }
        Ok(Snapshot {
            taken_at: self.taken_at,
            decisions: self.decisions,
            digest: computed,
        })
    }
}

impl TryFrom<RawSnapshot> for Snapshot {
    type Error = DecisionError;

    fn try_from(raw: RawSnapshot) -> Result<Self, Self::Error> {
        raw.verify()
    }
}
