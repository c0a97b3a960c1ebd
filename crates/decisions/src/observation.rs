//! Observations after a boundary: what was re-observed for one decision — its revision and
//! keyed digest, or that it is absent — when, and from which source (its provenance).
//!
//! # JSON form
//!
//! ```json
//! {"key": "scope", "status": "present", "revision": 1,
//!  "value_digest": {"normalizer": "cairn-normalize/v1", "digest": "hmac-sha256:decisions-1:3f…"},
//!  "observed_at": "2026-03-02T10:01:30Z", "source": "hook:claude-code/SessionStart"}
//! {"key": "approval_boundary", "status": "absent",
//!  "observed_at": "2026-03-02T10:01:30Z", "source": "hook:claude-code/SessionStart"}
//! ```
//!
//! `source` may be `null` (or left out): such an observation has no provenance and makes its
//! decision `unverified`. An absent observation is positive evidence of absence and is what
//! makes a decision `dropped`; a decision with no observation at all is `unverified`.

use cairn_core::normalize::NormalizedDigest;
use cairn_core::{HmacKey, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::entry::{DecisionEntry, Doc, RevisionRef, digest_value};
use crate::error::DecisionError;
use crate::kind::DecisionKind;
use crate::refs::check_ref;

/// What was seen for a decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seen {
    /// The decision is present at this revision with this digest.
    Present(RevisionRef),
    /// The decision was looked for and is absent.
    Absent,
}

/// One post-boundary observation of one decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawObservation", into = "RawObservation")]
pub struct Observation {
    key: DecisionKind,
    seen: Seen,
    observed_at: Timestamp,
    source: Option<String>,
}

impl Observation {
    /// An observation of a raw value: normalised, digested with `hmac`, and dropped.
    ///
    /// # Errors
    /// [`DecisionError::Normalize`] for a value that cannot be normalised,
    /// [`DecisionError::InvalidObservation`] for revision 0, [`DecisionError::InvalidRef`]
    /// for a malformed source.
    pub fn of_value(
        key: DecisionKind,
        value: &Value,
        revision: u32,
        observed_at: Timestamp,
        source: Option<&str>,
        hmac: &HmacKey,
    ) -> Result<Self, DecisionError> {
        let value_digest = digest_value(&key, value, hmac)?;
        Self::of_revision(
            key,
            RevisionRef {
                revision,
                value_digest,
            },
            observed_at,
            source,
        )
    }

    /// An observation of a revision whose digest is already known.
    ///
    /// # Errors
    /// [`DecisionError::UnkeyedDigest`] for a plain digest, otherwise as [`Self::of_value`].
    pub fn of_revision(
        key: DecisionKind,
        at: RevisionRef,
        observed_at: Timestamp,
        source: Option<&str>,
    ) -> Result<Self, DecisionError> {
        at.check(Doc::Observation, "$")?;
        Self::build(key, Seen::Present(at), observed_at, source)
    }

    /// An observation that the decision is absent.
    ///
    /// # Errors
    /// [`DecisionError::InvalidRef`] for a malformed source.
    pub fn absent(
        key: DecisionKind,
        observed_at: Timestamp,
        source: Option<&str>,
    ) -> Result<Self, DecisionError> {
        Self::build(key, Seen::Absent, observed_at, source)
    }

    /// The observation a ledger entry amounts to: its revision, its last `observed_at` and
    /// its source. An entry not re-asserted since the boundary is therefore not fresh.
    #[must_use]
    pub fn from_entry(entry: &DecisionEntry) -> Self {
        Self {
            key: entry.key().clone(),
            seen: Seen::Present(entry.revision_ref()),
            observed_at: entry.observed_at(),
            source: entry.source().map(str::to_owned),
        }
    }

    fn build(
        key: DecisionKind,
        seen: Seen,
        observed_at: Timestamp,
        source: Option<&str>,
    ) -> Result<Self, DecisionError> {
        if let Some(source) = source {
            check_ref("source", source)?;
        }
        Ok(Self {
            key,
            seen,
            observed_at,
            source: source.map(str::to_owned),
        })
    }

    /// The decision.
    #[must_use]
    pub fn key(&self) -> &DecisionKind {
        &self.key
    }

    /// What was seen.
    #[must_use]
    pub fn seen(&self) -> &Seen {
        &self.seen
    }

    /// The revision and digest seen, `None` when absent.
    #[must_use]
    pub fn revision_ref(&self) -> Option<&RevisionRef> {
        match &self.seen {
            Seen::Present(at) => Some(at),
            Seen::Absent => None,
        }
    }

    /// When it was observed.
    #[must_use]
    pub fn observed_at(&self) -> Timestamp {
        self.observed_at
    }

    /// Where the observation came from; `None` means no provenance.
    #[must_use]
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }
}

/// Parses a JSON array of observations, naming the offending element's path on error.
///
/// # Errors
/// [`DecisionError::DocumentTooLarge`] beyond [`crate::MAX_DOCUMENT_BYTES`];
/// [`DecisionError::InvalidObservation`] (and the codes of [`Observation::of_revision`]) for
/// a malformed element.
pub fn parse_observations(text: &str) -> Result<Vec<Observation>, DecisionError> {
    let items: Vec<Value> = Doc::Observation.read(text, "expected a json array: ")?;
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let path = format!("$[{index}]");
            let raw: RawObservation = serde_json::from_value(item)
                .map_err(|e| Doc::Observation.error(path.as_str(), e.to_string()))?;
            raw.validate(&path)
        })
        .collect()
}

/// Whether the observation says the decision is present or absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Present,
    Absent,
}

/// The wire form of [`Observation`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObservation {
    key: DecisionKind,
    status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revision: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value_digest: Option<NormalizedDigest>,
    observed_at: Timestamp,
    #[serde(default)]
    source: Option<String>,
}

impl RawObservation {
    fn validate(self, path: &str) -> Result<Observation, DecisionError> {
        let source = self.source.as_deref();
        match (self.status, self.revision, self.value_digest) {
            (Status::Present, Some(revision), Some(value_digest)) => {
                let at = RevisionRef {
                    revision,
                    value_digest,
                };
                at.check(Doc::Observation, path)?;
                Observation::build(self.key, Seen::Present(at), self.observed_at, source)
            }
            (Status::Present, _, _) => Err(Doc::Observation.error(
                path,
                "a present observation needs `revision` and `value_digest`",
            )),
            (Status::Absent, None, None) => Observation::absent(self.key, self.observed_at, source),
            (Status::Absent, _, _) => Err(Doc::Observation.error(
                path,
                "an absent observation has no `revision` or `value_digest`",
            )),
        }
    }
}

impl TryFrom<RawObservation> for Observation {
    type Error = DecisionError;

    fn try_from(raw: RawObservation) -> Result<Self, Self::Error> {
        raw.validate("$")
    }
}

impl From<Observation> for RawObservation {
    fn from(observation: Observation) -> Self {
        let (status, revision, value_digest) = match observation.seen {
            Seen::Present(at) => (Status::Present, Some(at.revision), Some(at.value_digest)),
            Seen::Absent => (Status::Absent, None, None),
        };
        Self {
            key: observation.key,
            status,
            revision,
            value_digest,
            observed_at: observation.observed_at,
            source: observation.source,
        }
    }
}
