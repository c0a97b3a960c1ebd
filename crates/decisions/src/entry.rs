//! The records of the durable decision ledger: a [`DecisionEntry`] (one revision of one
//! decision, as a keyed digest of its normalised value) and an [`ApprovedChange`] (a human
//! approval linking two revisions).
//!
//! # JSON forms
//!
//! A decision entry — never the raw value, only its keyed digest and the normaliser:
//!
//! ```json
//! {"key": "scope", "revision": 1,
//!  "value_digest": {"normalizer": "cairn-normalize/v1", "digest": "hmac-sha256:decisions-1:3f…"},
//!  "observed_at": "2026-03-02T09:58:00Z", "approval_ref": null, "source": "cli:decisions-set"}
//! ```
//!
//! An approved change:
//!
//! ```json
//! {"key": "acceptance_test",
//!  "from": {"revision": 1, "value_digest": {"normalizer": "cairn-normalize/v1", "digest": "hmac-sha256:decisions-1:9a…"}},
//!  "to": {"revision": 2, "value_digest": {"normalizer": "cairn-normalize/v1", "digest": "hmac-sha256:decisions-1:c4…"}},
//!  "approval_ref": "review:PR-42#approve", "approved_at": "2026-03-02T10:02:00Z"}
//! ```
//!
//! The key id of a keyed digest is the `<key_id>` part of its text; it is not repeated in a
//! second field that could disagree with it.

use cairn_core::Timestamp;
use cairn_core::normalize::NormalizedDigest;
use serde::{Deserialize, Serialize};

use crate::error::DecisionError;
use crate::kind::DecisionKind;
use crate::refs::{check_keyed, check_ref};

/// Which document a validation error belongs to, so that it gets that document's code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Doc {
    Snapshot,
    Book,
    Observation,
    Approval,
}

impl Doc {
    /// Reads `text` as this document's JSON into `T`: refused past
    /// [`crate::MAX_DOCUMENT_BYTES`] (`document_too_large`), and as this document's error at
    /// `$` (`what`, then the parser's words) when it does not parse.
    pub(crate) fn read<T: serde::de::DeserializeOwned>(
        self,
        text: &str,
        what: &str,
    ) -> Result<T, DecisionError> {
        if text.len() > crate::MAX_DOCUMENT_BYTES {
            return Err(DecisionError::DocumentTooLarge {
                size: text.len(),
                limit: crate::MAX_DOCUMENT_BYTES,
            });
        }
        serde_json::from_str(text).map_err(|e| self.error("$", format!("{what}{e}")))
    }

    pub(crate) fn error(self, path: impl Into<String>, reason: impl Into<String>) -> DecisionError {
        let (path, reason) = (path.into(), reason.into());
        match self {
            Self::Snapshot => DecisionError::InvalidSnapshot { path, reason },
            Self::Book => DecisionError::InvalidBook { path, reason },
            Self::Observation => DecisionError::InvalidObservation { path, reason },
            Self::Approval => DecisionError::InvalidApproval { path, reason },
        }
    }
}

/// One revision of one decision value: its number and the keyed digest of its normalised
/// value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionRef {
    /// The revision, from 1.
    pub revision: u32,
    /// The keyed digest of the normalised value.
    pub value_digest: NormalizedDigest,
}

impl RevisionRef {
    /// Checks that the revision is at least 1 and the digest is keyed.
    pub(crate) fn check(&self, doc: Doc, path: &str) -> Result<(), DecisionError> {
        if self.revision == 0 {
            return Err(doc.error(format!("{path}.revision"), "revisions start at 1"));
        }
        check_keyed(&self.value_digest, &format!("{path}.value_digest"))?;
        Ok(())
    }

    /// The HMAC key id of the digest.
    #[must_use]
    pub fn key_id(&self) -> Option<&str> {
        crate::refs::key_id(&self.value_digest)
    }
}

/// One revision of one decision, as the durable ledger stores it.
///
/// It holds the keyed digest of the normalised value and never the value itself. Built only
/// by [`crate::DecisionBook::set`] or by validated deserialisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawEntry")]
pub struct DecisionEntry {
    key: DecisionKind,
    revision: u32,
    value_digest: NormalizedDigest,
    observed_at: Timestamp,
    approval_ref: Option<String>,
    source: Option<String>,
}

impl DecisionEntry {
    pub(crate) fn new(
        key: DecisionKind,
        at: RevisionRef,
        observed_at: Timestamp,
        approval_ref: Option<String>,
        source: Option<String>,
    ) -> Self {
        Self {
            key,
            revision: at.revision,
            value_digest: at.value_digest,
            observed_at,
            approval_ref,
            source,
        }
    }

    /// The decision's key (its kind).
    #[must_use]
    pub fn key(&self) -> &DecisionKind {
        &self.key
    }

    /// The revision, from 1, one more per change of value.
    #[must_use]
    pub fn revision(&self) -> u32 {
        self.revision
    }

    /// The keyed digest of the normalised value, with the normaliser's name.
    #[must_use]
    pub fn value_digest(&self) -> &NormalizedDigest {
        &self.value_digest
    }

    /// The last time this revision was observed (set or re-asserted).
    #[must_use]
    pub fn observed_at(&self) -> Timestamp {
        self.observed_at
    }

    /// The human approval under which this revision was adopted, if any.
    #[must_use]
    pub fn approval_ref(&self) -> Option<&str> {
        self.approval_ref.as_deref()
    }

    /// Who asserted the last observation of this revision (its provenance), if known.
    #[must_use]
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// The revision and its digest.
    #[must_use]
    pub fn revision_ref(&self) -> RevisionRef {
        RevisionRef {
            revision: self.revision,
            value_digest: self.value_digest.clone(),
        }
    }

    pub(crate) fn reobserve(
        &mut self,
        at: Timestamp,
        source: Option<String>,
        approval: Option<String>,
    ) {
        self.observed_at = at;
        self.source = source;
        if self.approval_ref.is_none() {
            self.approval_ref = approval;
        }
    }
}

/// The unchecked wire form of [`DecisionEntry`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEntry {
    key: DecisionKind,
    revision: u32,
    value_digest: NormalizedDigest,
    observed_at: Timestamp,
    #[serde(default)]
    approval_ref: Option<String>,
    #[serde(default)]
    source: Option<String>,
}

impl RawEntry {
    pub(crate) fn validate(self, doc: Doc, path: &str) -> Result<DecisionEntry, DecisionError> {
        let at = RevisionRef {
            revision: self.revision,
            value_digest: self.value_digest,
        };
        at.check(doc, path)?;
        if let Some(approval) = &self.approval_ref {
            check_ref("approval_ref", approval)?;
        }
        if let Some(source) = &self.source {
            check_ref("source", source)?;
        }
        Ok(DecisionEntry::new(
            self.key,
            at,
            self.observed_at,
            self.approval_ref,
            self.source,
        ))
    }
}

impl TryFrom<RawEntry> for DecisionEntry {
    type Error = DecisionError;

    fn try_from(raw: RawEntry) -> Result<Self, Self::Error> {
        raw.validate(Doc::Book, "$")
    }
}

/// An explicit, human-approved link from one revision of a decision to a later one (D-2).
///
/// A changed digest is `approved_change` only when a chain of these links the revision in the
/// pre-boundary snapshot to the revision observed after it, digests included — an approval
/// cannot be replayed onto a different value that happens to reuse a revision number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawApproval")]
pub struct ApprovedChange {
    key: DecisionKind,
    from: RevisionRef,
    to: RevisionRef,
    approval_ref: String,
    approved_at: Timestamp,
}

impl ApprovedChange {
    /// Builds an approval from its parts. [`crate::DecisionBook::approve_change`] builds one
    /// from revisions the book holds; this constructor is for approvals imported from
    /// elsewhere (a review system, a test).
    ///
    /// # Errors
    /// [`DecisionError::ApprovalNotForward`] unless `from.revision < to.revision`;
    /// [`DecisionError::ApprovalWithoutChange`] when both digests are equal;
    /// [`DecisionError::UnkeyedDigest`], [`DecisionError::InvalidApproval`] (revision 0) and
    /// [`DecisionError::InvalidRef`] for malformed parts.
    pub fn new(
        key: DecisionKind,
        from: RevisionRef,
        to: RevisionRef,
        approval_ref: &str,
        approved_at: Timestamp,
    ) -> Result<Self, DecisionError> {
        from.check(Doc::Approval, "$.from")?;
        to.check(Doc::Approval, "$.to")?;
        check_ref("approval_ref", approval_ref)?;
        if from.revision >= to.revision {
            return Err(DecisionError::ApprovalNotForward {
                key: key.to_string(),
                from: from.revision,
                to: to.revision,
            });
        }
        if from.value_digest == to.value_digest {
            return Err(DecisionError::ApprovalWithoutChange {
                key: key.to_string(),
                from: from.revision,
                to: to.revision,
            });
        }
        Ok(Self {
            key,
            from,
            to,
            approval_ref: approval_ref.to_owned(),
            approved_at,
        })
    }

    /// The decision.
    #[must_use]
    pub fn key(&self) -> &DecisionKind {
        &self.key
    }

    /// The revision approved from.
    #[must_use]
    pub fn from(&self) -> &RevisionRef {
        &self.from
    }

    /// The revision approved to.
    #[must_use]
    pub fn to(&self) -> &RevisionRef {
        &self.to
    }

    /// The reference to the human approval.
    #[must_use]
    pub fn approval_ref(&self) -> &str {
        &self.approval_ref
    }

    /// When the approval was recorded.
    #[must_use]
    pub fn approved_at(&self) -> Timestamp {
        self.approved_at
    }
}

/// The unchecked wire form of [`ApprovedChange`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApproval {
    key: DecisionKind,
    from: RevisionRef,
    to: RevisionRef,
    approval_ref: String,
    approved_at: Timestamp,
}

impl TryFrom<RawApproval> for ApprovedChange {
    type Error = DecisionError;

    fn try_from(raw: RawApproval) -> Result<Self, Self::Error> {
        Self::new(
            raw.key,
            raw.from,
            raw.to,
            &raw.approval_ref,
            raw.approved_at,
        )
    }
}

/// Normalises `value` with `cairn-normalize/v1` and digests it with `hmac`: the only way a
/// raw decision value enters this crate. The value is borrowed and never kept.
///
/// # Errors
/// [`DecisionError::Normalize`] when two keys of one object are equal after NFC, or the value
/// cannot be canonicalised.
pub fn digest_value(
    key: &DecisionKind,
    value: &serde_json::Value,
    hmac: &cairn_core::HmacKey,
) -> Result<NormalizedDigest, DecisionError> {
    cairn_core::normalize::normalized_keyed_digest(value, hmac).map_err(|source| {
        DecisionError::Normalize {
            key: key.to_string(),
            source,
        }
    })
}
