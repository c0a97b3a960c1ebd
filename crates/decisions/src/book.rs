//! The decision book: the task's current decisions with every revision as a keyed digest,
//! and the human approvals linking revisions (`cairn.decision-book/v1`).
//!
//! `set` is the only door for a raw value: it is normalised, digested with the caller's HMAC
//! key (kept outside the agent's context) and dropped. Setting the value a decision already
//! has is a *re-observation*: it refreshes `observed_at` and `source` and keeps the revision.
//! Setting a different value adds a revision; with an approval reference it also records the
//! approved link from the previous revision, otherwise the change stays unapproved until
//! [`DecisionBook::approve_change`] links it.
//!
//! # JSON form
//!
//! ```json
//! {"schema_version": "cairn.decision-book/v1",
//!  "decisions": [ <entry>, … ],   // every revision, sorted by key then revision
//!  "approvals": [ <approved change>, … ]}
//! ```
//!
//! (Entries and approved changes as in [`crate::entry`].) A book is rebuilt from its entries
//! and approvals with [`DecisionBook::from_parts`], which checks the same rules `set` keeps.

use std::collections::BTreeMap;

use cairn_core::{HmacKey, Timestamp};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::entry::{ApprovedChange, DecisionEntry, Doc, RawEntry, RevisionRef, digest_value};
use crate::error::DecisionError;
use crate::kind::DecisionKind;
use crate::observation::Observation;
use crate::refs::check_ref;
use crate::snapshot::Snapshot;

/// The book's schema tag.
pub const BOOK_SCHEMA_VERSION: &str = "cairn.decision-book/v1";

/// The current decisions, their revision history (digests only) and the approvals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawBook")]
pub struct DecisionBook {
    /// Per key, revisions 1..=n in order.
    history: BTreeMap<DecisionKind, Vec<DecisionEntry>>,
    approvals: Vec<ApprovedChange>,
}

/// What a [`DecisionBook::set`] did; serialised with an `outcome` tag
/// (`created | reobserved | revised`) for the CLI's `--json` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SetOutcome {
    /// A new decision at revision 1.
    Created {
        /// The new entry.
        entry: DecisionEntry,
    },
    /// The same value again: `observed_at` and `source` refreshed, revision kept.
    Reobserved {
        /// The refreshed entry.
        entry: DecisionEntry,
    },
    /// A different value: a new revision.
    Revised {
        /// The new entry.
        entry: DecisionEntry,
        /// The revision it replaced.
        previous_revision: u32,
        /// The approved link, when an approval reference was given.
        approval: Option<ApprovedChange>,
    },
}

impl SetOutcome {
    /// The entry written or refreshed.
    #[must_use]
    pub fn entry(&self) -> &DecisionEntry {
        match self {
            Self::Created { entry } | Self::Reobserved { entry } | Self::Revised { entry, .. } => {
                entry
            }
        }
    }
}

impl DecisionBook {
    /// An empty book.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets decision `key` to `value`, observed at `now` by `source`.
    ///
    /// The value is normalised (`cairn-normalize/v1`), digested with `hmac` and dropped. See
    /// the module documentation for what happens to the revision and the approval. On a
    /// re-observation an `approval_ref` is recorded only if the revision had none: the
    /// approval under which a revision was adopted does not change afterwards.
    ///
    /// # Errors
    /// [`DecisionError::InvalidRef`] for a malformed `approval_ref` or `source`;
    /// [`DecisionError::Normalize`] for a value that cannot be normalised;
    /// [`DecisionError::KeyMismatch`] when `hmac` is not the key of the decision's earlier
    /// revisions; [`DecisionError::ObservedAtRegressed`] when `now` is before the last
    /// observation; [`DecisionError::RevisionOverflow`].
    pub fn set(
        &mut self,
        key: DecisionKind,
        value: &Value,
        approval_ref: Option<&str>,
        source: Option<&str>,
        now: Timestamp,
        hmac: &HmacKey,
    ) -> Result<SetOutcome, DecisionError> {
        if let Some(approval) = approval_ref {
            check_ref("approval_ref", approval)?;
        }
        if let Some(source) = source {
            check_ref("source", source)?;
        }
        let value_digest = digest_value(&key, value, hmac)?;
        let approval_ref = approval_ref.map(str::to_owned);
        let source = source.map(str::to_owned);
        let Some(current) = self.history.get_mut(&key).and_then(|h| h.last_mut()) else {
            let at = RevisionRef {
                revision: 1,
                value_digest,
            };
            let entry = DecisionEntry::new(key.clone(), at, now, approval_ref, source);
            self.history.insert(key, vec![entry.clone()]);
            return Ok(SetOutcome::Created { entry });
        };
        let previous = current.revision_ref();
        if previous.key_id() != Some(hmac.id()) {
            return Err(DecisionError::KeyMismatch {
                key: key.to_string(),
                expected: previous.key_id().unwrap_or_default().to_owned(),
                got: hmac.id().to_owned(),
            });
        }
        if now < current.observed_at() {
            return Err(DecisionError::ObservedAtRegressed {
                key: key.to_string(),
                at: now,
                last: current.observed_at(),
            });
        }
        if previous.value_digest == value_digest {
            current.reobserve(now, source, approval_ref);
            return Ok(SetOutcome::Reobserved {
                entry: current.clone(),
            });
        }
        let revision =
            previous
                .revision
                .checked_add(1)
                .ok_or_else(|| DecisionError::RevisionOverflow {
                    key: key.to_string(),
                })?;
        let at = RevisionRef {
            revision,
            value_digest,
        };
        let approval = approval_ref
            .as_deref()
            .map(|r| ApprovedChange::new(key.clone(), previous.clone(), at.clone(), r, now))
            .transpose()?;
        let entry = DecisionEntry::new(key.clone(), at, now, approval_ref, source);
        self.history.entry(key).or_default().push(entry.clone());
        if let Some(approval) = &approval {
            self.approvals.push(approval.clone());
        }
        Ok(SetOutcome::Revised {
            entry,
            previous_revision: previous.revision,
            approval,
        })
    }

    /// Records a human approval linking revision `from` of `key` to the later revision `to`.
    /// Recording the same approval twice keeps one.
    ///
    /// # Errors
    /// [`DecisionError::UnknownDecision`], [`DecisionError::UnknownRevision`],
    /// [`DecisionError::ApprovalNotForward`], [`DecisionError::ApprovalWithoutChange`],
    /// [`DecisionError::InvalidRef`].
    pub fn approve_change(
        &mut self,
        key: &DecisionKind,
        from: u32,
        to: u32,
        approval_ref: &str,
        now: Timestamp,
    ) -> Result<ApprovedChange, DecisionError> {
        let from_ref = self.revision(key, from)?.revision_ref();
        let to_ref = self.revision(key, to)?.revision_ref();
        let approval = ApprovedChange::new(key.clone(), from_ref, to_ref, approval_ref, now)?;
        let duplicate = self.approvals.iter().any(|a| {
            a.key() == approval.key()
                && a.from() == approval.from()
                && a.to() == approval.to()
                && a.approval_ref() == approval.approval_ref()
        });
        if !duplicate {
            self.approvals.push(approval.clone());
        }
        Ok(approval)
    }

    /// Revision `revision` of decision `key`.
    ///
    /// # Errors
    /// [`DecisionError::UnknownDecision`], [`DecisionError::UnknownRevision`].
    pub fn revision(
        &self,
        key: &DecisionKind,
        revision: u32,
    ) -> Result<&DecisionEntry, DecisionError> {
        let history = self
            .history
            .get(key)
            .ok_or_else(|| DecisionError::UnknownDecision {
                key: key.to_string(),
            })?;
        history
            .iter()
            .find(|entry| entry.revision() == revision)
            .ok_or_else(|| DecisionError::UnknownRevision {
                key: key.to_string(),
                revision,
            })
    }

    /// The current revision of decision `key`.
    #[must_use]
    pub fn get(&self, key: &DecisionKind) -> Option<&DecisionEntry> {
        self.history.get(key).and_then(|h| h.last())
    }

    /// The current revision of every decision, sorted by key.
    pub fn current(&self) -> impl Iterator<Item = &DecisionEntry> {
        self.history.values().filter_map(|h| h.last())
    }

    /// Every revision of decision `key`, oldest first (empty when unknown).
    #[must_use]
    pub fn history(&self, key: &DecisionKind) -> &[DecisionEntry] {
        self.history.get(key).map_or(&[], Vec::as_slice)
    }

    /// Every recorded approval, in the order recorded.
    #[must_use]
    pub fn approvals(&self) -> &[ApprovedChange] {
        &self.approvals
    }

    /// How many decisions the book holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.history.len()
    }

    /// Whether the book holds no decision.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.history.is_empty()
    }

    /// A snapshot of the current decisions at `taken_at` (D-1).
    ///
    /// # Errors
    /// [`DecisionError::SnapshotRefused`] with every finding (3–7 decisions; none observed
    /// after `taken_at`). Never a panic: the caller records `continuity_evidence_missing`.
    pub fn snapshot(&self, taken_at: Timestamp) -> Result<Snapshot, DecisionError> {
        Snapshot::from_entries(self.current().cloned().collect(), taken_at)
    }

    /// The current decisions as observations: each with its last `observed_at` and `source`.
    /// A decision not set again since the boundary is thus not fresh (`unverified`).
    #[must_use]
    pub fn observations(&self) -> Vec<Observation> {
        self.current().map(Observation::from_entry).collect()
    }

    /// Rebuilds a book from ledger entries (every revision of every decision, each key's in
    /// revision order) and approvals.
    ///
    /// # Errors
    /// [`DecisionError::InvalidBook`] naming the entry or approval: revisions not 1, 2, …;
    /// two consecutive revisions with the same digest; another HMAC key than the earlier
    /// revisions'; `observed_at` going back; an approval of a revision the book does not
    /// hold, or with other digests.
    pub fn from_parts(
        entries: Vec<DecisionEntry>,
        approvals: Vec<ApprovedChange>,
    ) -> Result<Self, DecisionError> {
        let mut history: BTreeMap<DecisionKind, Vec<DecisionEntry>> = BTreeMap::new();
        for (index, entry) in entries.into_iter().enumerate() {
            let path = format!("$.decisions[{index}]");
            let revisions = history.entry(entry.key().clone()).or_default();
            check_next(revisions.last(), &entry, &path)?;
            revisions.push(entry);
        }
        let book = Self {
            history,
            approvals: Vec::new(),
        };
        for (index, approval) in approvals.iter().enumerate() {
            let path = format!("$.approvals[{index}]");
            for (side, at) in [("from", approval.from()), ("to", approval.to())] {
                let held = book
                    .revision(approval.key(), at.revision)
                    .map_err(|e| Doc::Book.error(format!("{path}.{side}"), e.to_string()))?;
                if held.value_digest() != &at.value_digest {
                    return Err(Doc::Book.error(
                        format!("{path}.{side}.value_digest"),
                        "differs from the digest of that revision",
                    ));
                }
            }
        }
        Ok(Self { approvals, ..book })
    }

    /// Parses a book document.
    ///
    /// # Errors
    /// [`DecisionError::DocumentTooLarge`], [`DecisionError::InvalidBook`] and the entry
    /// codes, naming the offending field.
    pub fn from_json(text: &str) -> Result<Self, DecisionError> {
        let raw: RawDocument = Doc::Book.read(text, "")?;
        check_schema(&raw.schema_version)?;
        let mut entries = Vec::with_capacity(raw.decisions.len());
        for (index, item) in raw.decisions.into_iter().enumerate() {
            let path = format!("$.decisions[{index}]");
            let entry: RawEntry = serde_json::from_value(item)
                .map_err(|e| Doc::Book.error(path.as_str(), e.to_string()))?;
            entries.push(entry.validate(Doc::Book, &path)?);
        }
        let mut approvals = Vec::with_capacity(raw.approvals.len());
        for (index, item) in raw.approvals.into_iter().enumerate() {
            let approval: ApprovedChange = serde_json::from_value(item)
                .map_err(|e| Doc::Book.error(format!("$.approvals[{index}]"), e.to_string()))?;
            approvals.push(approval);
        }
        Self::from_parts(entries, approvals)
    }
}

/// Checks that `entry` may follow `last` in one decision's history.
fn check_next(
    last: Option<&DecisionEntry>,
    entry: &DecisionEntry,
    path: &str,
) -> Result<(), DecisionError> {
    let Some(last) = last else {
        if entry.revision() != 1 {
            return Err(Doc::Book.error(
                format!("{path}.revision"),
                "the first revision of a decision is 1",
            ));
        }
        return Ok(());
    };
    if Some(entry.revision()) != last.revision().checked_add(1) {
        return Err(Doc::Book.error(
            format!("{path}.revision"),
            format!(
                "expected revision {} after {}",
                last.revision().saturating_add(1),
                last.revision()
            ),
        ));
    }
    if entry.value_digest() == last.value_digest() {
        return Err(Doc::Book.error(
            format!("{path}.value_digest"),
            "a new revision must change the value; the same value is a re-observation",
        ));
    }
    if entry.revision_ref().key_id() != last.revision_ref().key_id() {
        return Err(Doc::Book.error(
            format!("{path}.value_digest"),
            "digested with another hmac key than the earlier revisions",
        ));
    }
    if entry.observed_at() < last.observed_at() {
        return Err(Doc::Book.error(
            format!("{path}.observed_at"),
            "earlier than the previous revision's",
        ));
    }
    Ok(())
}

fn check_schema(version: &str) -> Result<(), DecisionError> {
    if version == BOOK_SCHEMA_VERSION {
        Ok(())
    } else {
        Err(Doc::Book.error(
            "$.schema_version",
            format!("expected `{BOOK_SCHEMA_VERSION}`"),
        ))
    }
}

impl Serialize for DecisionBook {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Document<'a> {
            schema_version: &'static str,
            decisions: Vec<&'a DecisionEntry>,
            approvals: &'a [ApprovedChange],
        }
        Document {
            schema_version: BOOK_SCHEMA_VERSION,
            decisions: self.history.values().flatten().collect(),
            approvals: &self.approvals,
        }
        .serialize(serializer)
    }
}

/// The document as read, before its parts are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDocument {
    schema_version: String,
    decisions: Vec<Value>,
    #[serde(default)]
    approvals: Vec<Value>,
}

/// The document with checked parts, for `Deserialize`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBook {
    schema_version: String,
    decisions: Vec<DecisionEntry>,
    #[serde(default)]
    approvals: Vec<ApprovedChange>,
}

impl TryFrom<RawBook> for DecisionBook {
    type Error = DecisionError;

    fn try_from(raw: RawBook) -> Result<Self, Self::Error> {
        check_schema(&raw.schema_version)?;
        Self::from_parts(raw.decisions, raw.approvals)
    }
}
