//! The comparison after a boundary (D-2, D-4): each decision of the pre-boundary snapshot is
//! classified against the post-boundary observations and the approvals, and the whole set
//! gets the state of its most severe decision.
//!
//! # Rules, per decision
//!
//! 1. Observations of the decision that are not *evidence* are set aside: without a source
//!    (`no_provenance`), not strictly after the boundary (`observation_not_fresh` — an
//!    observation at the boundary instant is not fresh), or after `now`
//!    (`observation_in_future`). If nothing is left, the decision is `unverified` with the
//!    reason of the latest set-aside observation; if there was no observation at all, it is
//!    `unverified` with `awaiting_observation` while `now <= boundary_at + window` and
//!    `no_observation_within_window` after that (D-4).
//! 2. Of the evidence, the latest observations count. If they disagree with each other the
//!    decision is `conflicting` (`contradictory_observations`).
//! 3. Absent → `dropped`. A digest under another HMAC key or normaliser → `unverified`
//!    (`incomparable_digest`: a different key is no evidence of a different value). The
//!    snapshot's digest → `preserved`. Another digest → `approved_change` when a chain of
//!    approvals recorded no later than `now` links the snapshot's revision and digest to the
//!    observed revision and digest, else `conflicting` (`approval_links_other_revisions` when
//!    approvals for this decision exist but link other revisions, `changed_without_approval`
//!    otherwise).
//!
//! A stale observation with a different digest is `unverified`, not `conflicting`: evidence
//! that is not fresh proves nothing either way, and re-observing settles it.
//!
//! # Precedence, for the whole set
//!
//! The most severe state wins: `conflicting` > `dropped` > `unverified` > `approved_change` >
//! `preserved` (the defect that changes what the agent may do wins). Among decisions in that
//! state, the *determining* decision is the one whose kind most directly bounds what the agent
//! may do — `approval_boundary`, `scope`, `constraint`, `target`, `acceptance_test`, custom
//! kinds — then by key. So a dropped `approval_boundary` together with an unverified
//! `acceptance_test` is `dropped` (state first), and a scope conflict is `conflicting` however
//! healthy every other decision and the activity look.
//!
//! Without a pre-boundary snapshot, or with one taken after the boundary, the state is
//! `continuity_evidence_missing` (D-4) and consequential actions stay restricted.
//!
//! # JSON form
//!
//! ```json
//! {"schema_version": "cairn.decision-comparison/v1",
//!  "state": "conflicting", "reason": "changed_without_approval", "determining_key": "scope",
//!  "action": "stop_and_ask", "restricts_consequential": true,
//!  "boundary_at": "2026-03-02T10:00:00Z", "compared_at": "2026-03-02T10:05:00Z",
//!  "observation_deadline": "2026-03-02T10:10:00Z",
//!  "snapshot_digest": "sha256:…",
//!  "decisions": [
//!    {"key": "scope", "state": "conflicting", "reason": "changed_without_approval",
//!     "action": "stop_and_ask",
//!     "before": {"revision": 1, "value_digest": {…}},
//!     "after": {"key": "scope", "status": "present", "revision": 2, "value_digest": {…},
//!               "observed_at": "2026-03-02T10:01:00Z", "source": "hook:claude-code/PostToolUse"},
//!     "approval_refs": []}, …],
//!  "unmatched_observations": []}
//! ```

use cairn_core::canonical::jcs_digest;
use cairn_core::{Digest, Timestamp};
use jiff::SignedDuration;
use serde::Serialize;

use crate::entry::{ApprovedChange, DecisionEntry, RevisionRef};
use crate::kind::DecisionKind;
use crate::observation::{Observation, Seen};
use crate::snapshot::Snapshot;
use crate::state::{ContinuityHealth, DecisionState, Reason, SafeAction};

/// The comparison's schema tag.
pub const COMPARISON_SCHEMA_VERSION: &str = "cairn.decision-comparison/v1";

/// The classification of one decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionResult {
    key: DecisionKind,
    state: DecisionState,
    reason: Reason,
    action: SafeAction,
    before: RevisionRef,
    after: Option<Observation>,
    approval_refs: Vec<String>,
}

impl DecisionResult {
    /// The decision.
    #[must_use]
    pub fn key(&self) -> &DecisionKind {
        &self.key
    }

    /// Its state.
    #[must_use]
    pub fn state(&self) -> DecisionState {
        self.state
    }

    /// Why.
    #[must_use]
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The safe default action for this decision.
    #[must_use]
    pub fn action(&self) -> SafeAction {
        self.action
    }

    /// The revision in the snapshot.
    #[must_use]
    pub fn before(&self) -> &RevisionRef {
        &self.before
    }

    /// The observation the classification rests on, if any.
    #[must_use]
    pub fn after(&self) -> Option<&Observation> {
        self.after.as_ref()
    }

    /// For `approved_change`, the approval references of the linking chain, in order.
    #[must_use]
    pub fn approval_refs(&self) -> &[String] {
        &self.approval_refs
    }
}

/// The result of [`compare`]. Only `compare` builds one: it is a result, not an input, so it
/// serialises but does not deserialise (recompute it from the snapshot and observations).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    schema_version: &'static str,
    state: ContinuityHealth,
    reason: Reason,
    determining_key: Option<DecisionKind>,
    action: SafeAction,
    restricts_consequential: bool,
    boundary_at: Timestamp,
    compared_at: Timestamp,
    observation_deadline: Timestamp,
    snapshot_digest: Option<Digest>,
    decisions: Vec<DecisionResult>,
    unmatched_observations: Vec<DecisionKind>,
}

impl Comparison {
    /// The continuity health of the whole set.
    #[must_use]
    pub fn state(&self) -> ContinuityHealth {
        self.state
    }

    /// The determining decision's reason (or `no_snapshot` / `snapshot_after_boundary`).
    #[must_use]
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The decision that set the state (`None` when every decision is preserved or there is
    /// no snapshot).
    #[must_use]
    pub fn determining_key(&self) -> Option<&DecisionKind> {
        self.determining_key.as_ref()
    }

    /// The safe default action.
    #[must_use]
    pub fn action(&self) -> SafeAction {
        self.action
    }

    /// Whether consequential actions must wait.
    #[must_use]
    pub fn restricts_consequential(&self) -> bool {
        self.restricts_consequential
    }

    /// The boundary instant compared against.
    #[must_use]
    pub fn boundary_at(&self) -> Timestamp {
        self.boundary_at
    }

    /// The `now` of the comparison.
    #[must_use]
    pub fn compared_at(&self) -> Timestamp {
        self.compared_at
    }

    /// `boundary_at + window`: after it, a decision never observed is overdue.
    #[must_use]
    pub fn observation_deadline(&self) -> Timestamp {
        self.observation_deadline
    }

    /// The digest of the snapshot compared against.
    #[must_use]
    pub fn snapshot_digest(&self) -> Option<Digest> {
        self.snapshot_digest
    }

    /// One result per snapshot decision, in the snapshot's (key) order.
    #[must_use]
    pub fn decisions(&self) -> &[DecisionResult] {
        &self.decisions
    }

    /// The result for decision `key`.
    #[must_use]
    pub fn decision(&self, key: &DecisionKind) -> Option<&DecisionResult> {
        self.decisions.iter().find(|d| &d.key == key)
    }

    /// Keys observed after the boundary that the snapshot does not hold (reported, no effect
    /// on the state: the invariant set is the snapshot's).
    #[must_use]
    pub fn unmatched_observations(&self) -> &[DecisionKind] {
        &self.unmatched_observations
    }

    /// How many decisions are in `state`.
    #[must_use]
    pub fn count(&self, state: DecisionState) -> usize {
        self.decisions.iter().filter(|d| d.state == state).count()
    }

    /// SHA-256 over the JCS form of this comparison: the receipt's digest.
    ///
    /// # Errors
    /// [`cairn_core::CoreError`] if canonicalisation fails (it does not for this type).
    pub fn receipt_digest(&self) -> Result<Digest, cairn_core::CoreError> {
        jcs_digest(self)
    }
}

/// The instants a comparison is judged at.
#[derive(Debug, Clone, Copy)]
struct Clock {
    boundary_at: Timestamp,
    now: Timestamp,
    deadline: Timestamp,
}

/// Compares the pre-boundary snapshot with the post-boundary observations (see the module
/// documentation for the rules and their precedence).
///
/// `window` is how long after `boundary_at` an observation may take to arrive before a
/// decision never observed is overdue (a negative window counts as zero). The function is
/// total: every input gives a comparison, never an error or a panic.
#[must_use]
pub fn compare(
    before: Option<&Snapshot>,
    after: &[Observation],
    approvals: &[ApprovedChange],
    boundary_at: Timestamp,
    now: Timestamp,
    window: SignedDuration,
) -> Comparison {
    let window = window.max(SignedDuration::ZERO);
    let clock = Clock {
        boundary_at,
        now,
        deadline: boundary_at.saturating_add(window),
    };
    let mut unmatched: Vec<DecisionKind> = after
        .iter()
        .map(|o| o.key().clone())
        .filter(|key| before.is_none_or(|s| s.get(key).is_none()))
        .collect();
    unmatched.sort();
    unmatched.dedup();
    let base = Comparison {
        schema_version: COMPARISON_SCHEMA_VERSION,
        state: ContinuityHealth::ContinuityEvidenceMissing,
        reason: Reason::NoSnapshot,
        determining_key: None,
        action: ContinuityHealth::ContinuityEvidenceMissing.action(),
        restricts_consequential: true,
        boundary_at,
        compared_at: now,
        observation_deadline: clock.deadline,
        snapshot_digest: before.map(Snapshot::digest),
        decisions: Vec::new(),
        unmatched_observations: unmatched,
    };
    let Some(snapshot) = before else {
        return base;
    };
    if snapshot.taken_at() > boundary_at {
        return Comparison {
            reason: Reason::SnapshotAfterBoundary,
            ..base
        };
    }
    let decisions: Vec<DecisionResult> = snapshot
        .decisions()
        .iter()
        .map(|entry| classify(entry, after, approvals, clock))
        .collect();
    let worst = decisions.iter().max_by(|a, b| {
        a.state
            .rank()
            .cmp(&b.state.rank())
            .then_with(|| b.key.priority().cmp(&a.key.priority()))
            .then_with(|| b.key.cmp(&a.key))
    });
    let (state, reason, determining_key) = match worst {
        Some(d) if d.state != DecisionState::Preserved => {
            (d.state.into(), d.reason, Some(d.key.clone()))
        }
        _ => (ContinuityHealth::Preserved, Reason::DigestMatches, None),
    };
    Comparison {
        state,
        reason,
        determining_key,
        action: state.action(),
        restricts_consequential: state.restricts_consequential(),
        decisions,
        ..base
    }
}

/// The comparison before any boundary was snapshotted (no snapshot of any name): nothing to
/// compare with, so `unverified` (`no_boundary_yet`), which restricts nothing — the same
/// answer the hooks give, which compare only after a compaction. After a boundary, a missing
/// snapshot is [`compare`]'s `continuity_evidence_missing` (`no_snapshot`), which restricts.
#[must_use]
pub fn before_any_boundary(
    after: &[Observation],
    now: Timestamp,
    window: SignedDuration,
) -> Comparison {
    let state = ContinuityHealth::Unverified;
    Comparison {
        state,
        reason: Reason::NoBoundaryYet,
        action: state.action(),
        restricts_consequential: state.restricts_consequential(),
        ..compare(None, after, &[], now, now, window)
    }
}

/// Classifies one snapshot decision.
fn classify(
    entry: &DecisionEntry,
    after: &[Observation],
    approvals: &[ApprovedChange],
    clock: Clock,
) -> DecisionResult {
    let before = entry.revision_ref();
    let result = |state: DecisionState, reason, after: Option<&Observation>, refs| DecisionResult {
        key: entry.key().clone(),
        state,
        reason,
        action: state.action(),
        before: before.clone(),
        after: after.cloned(),
        approval_refs: refs,
    };
    let seen: Vec<&Observation> = after.iter().filter(|o| o.key() == entry.key()).collect();
    let evidence: Vec<&Observation> = seen
        .iter()
        .copied()
        .filter(|o| not_evidence(o, clock).is_none())
        .collect();
    let Some(latest_at) = evidence.iter().map(|o| o.observed_at()).max() else {
        let latest = seen.iter().copied().max_by_key(|o| o.observed_at());
        let reason = match latest.and_then(|o| not_evidence(o, clock)) {
            Some(reason) => reason,
            None if clock.now > clock.deadline => Reason::NoObservationWithinWindow,
            None => Reason::AwaitingObservation,
        };
        return result(DecisionState::Unverified, reason, latest, Vec::new());
    };
    let latest: Vec<&Observation> = evidence
        .into_iter()
        .filter(|o| o.observed_at() == latest_at)
        .collect();
    let Some(observation) = latest.first().copied() else {
        return result(
            DecisionState::Unverified,
            Reason::AwaitingObservation,
            None,
            Vec::new(),
        );
    };
    if latest.iter().any(|o| o.seen() != observation.seen()) {
        return result(
            DecisionState::Conflicting,
            Reason::ContradictoryObservations,
            Some(observation),
            Vec::new(),
        );
    }
    let Seen::Present(observed) = observation.seen() else {
        return result(
            DecisionState::Dropped,
            Reason::AbsentAfterBoundary,
            Some(observation),
            Vec::new(),
        );
    };
    let (state, reason, refs) = judge_value(entry.key(), &before, observed, approvals, clock.now);
    result(state, reason, Some(observation), refs)
}

/// Why an observation is not evidence, or `None` when it is.
fn not_evidence(observation: &Observation, clock: Clock) -> Option<Reason> {
    if observation.source().is_none() {
        Some(Reason::NoProvenance)
    } else if observation.observed_at() <= clock.boundary_at {
        // INVARIANT: an observation at the boundary instant is not fresh.
        Some(Reason::ObservationNotFresh)
    } else if observation.observed_at() > clock.now {
        Some(Reason::ObservationInFuture)
    } else {
        None
    }
}

/// Classifies a present, fresh observation against the snapshot's revision.
fn judge_value(
    key: &DecisionKind,
    before: &RevisionRef,
    after: &RevisionRef,
    approvals: &[ApprovedChange],
    now: Timestamp,
) -> (DecisionState, Reason, Vec<String>) {
    let comparable = before.key_id() == after.key_id()
        && before.value_digest.normalizer() == after.value_digest.normalizer();
    if !comparable {
        return (
            DecisionState::Unverified,
            Reason::IncomparableDigest,
            Vec::new(),
        );
    }
    if before.value_digest == after.value_digest {
        return (DecisionState::Preserved, Reason::DigestMatches, Vec::new());
    }
    let links: Vec<&ApprovedChange> = approvals
        .iter()
        .filter(|a| a.key() == key && a.approved_at() <= now)
        .collect();
    if let Some(refs) = approval_chain(before, after, &links) {
        return (DecisionState::ApprovedChange, Reason::ApprovedLink, refs);
    }
    let reason = if links.is_empty() {
        Reason::ChangedWithoutApproval
    } else {
        Reason::ApprovalLinksOtherRevisions
    };
    (DecisionState::Conflicting, reason, Vec::new())
}

/// A chain of approvals from `from` to `to` (revision and digest must match at every step),
/// as its approval references; `None` when there is none. Links only go forward in revision,
/// so the search ends; each link is used at most once.
fn approval_chain(
    from: &RevisionRef,
    to: &RevisionRef,
    links: &[&ApprovedChange],
) -> Option<Vec<String>> {
    let mut used = vec![false; links.len()];
    let mut paths: Vec<(&RevisionRef, Vec<String>)> = vec![(from, Vec::new())];
    while let Some((at, refs)) = paths.pop() {
        if at == to {
            return Some(refs);
        }
        for (link, used) in links.iter().zip(used.iter_mut()) {
            if !*used && link.from() == at {
                *used = true;
                let mut next = refs.clone();
                next.push(link.approval_ref().to_owned());
                paths.push((link.to(), next));
            }
        }
    }
    None
}
