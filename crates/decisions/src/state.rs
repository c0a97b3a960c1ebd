//! The vocabulary of a comparison: the five per-decision states (D-2), the continuity health
//! that adds `continuity_evidence_missing` (D-4), the safe default action each implies, the
//! reason codes, and the pass/review/blocked outcome the CLI maps to exit codes (§9.1).
//!
//! Precedence (D-2): the defect that changes what the agent may do wins —
//! `conflicting` > `dropped` > `unverified` > `approved_change` > `preserved`.
//! `continuity_evidence_missing` never occurs together with the others (it means there is no
//! snapshot to compare), and ranks between `dropped` and `unverified`: it restricts
//! consequential work like a dropped decision but is honest uncertainty, not a found defect.

use serde::{Deserialize, Serialize};

/// The class of one decision after a boundary (D-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionState {
    /// Same digest, freshly observed after the boundary, with provenance.
    Preserved,
    /// The digest changed and a chain of human approvals links the old revision to the new.
    ApprovedChange,
    /// Present but not freshly observed, without provenance, not comparable, or not observed
    /// at all yet.
    Unverified,
    /// Freshly observed to be absent after the boundary.
    Dropped,
    /// Changed without an approval linking the two revisions, or observed with two
    /// contradictory values at once.
    Conflicting,
}

impl DecisionState {
    /// Every state, from the least to the most severe.
    pub const ALL: [Self; 5] = [
        Self::Preserved,
        Self::ApprovedChange,
        Self::Unverified,
        Self::Dropped,
        Self::Conflicting,
    ];

    /// The precedence rank: higher wins when several decisions are combined.
    #[must_use]
    pub const fn rank(self) -> u8 {
        ContinuityHealth::from_state(self).rank()
    }

    /// The text form.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        ContinuityHealth::from_state(self).as_str()
    }

    /// The safe default action for this state.
    #[must_use]
    pub const fn action(self) -> SafeAction {
        ContinuityHealth::from_state(self).action()
    }
}

/// Continuity health: the five states, plus `continuity_evidence_missing` when there is no
/// usable pre-boundary snapshot (D-4). Reported beside, never merged with, activity health
/// (D-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinuityHealth {
    /// Every decision preserved.
    Preserved,
    /// At least one approved change, nothing worse.
    ApprovedChange,
    /// At least one decision unverified, nothing worse.
    Unverified,
    /// No pre-boundary snapshot: nothing can be compared.
    ContinuityEvidenceMissing,
    /// At least one decision dropped, none conflicting.
    Dropped,
    /// At least one decision conflicting.
    Conflicting,
}

impl ContinuityHealth {
    /// Every health state, from the least to the most severe.
    pub const ALL: [Self; 6] = [
        Self::Preserved,
        Self::ApprovedChange,
        Self::Unverified,
        Self::ContinuityEvidenceMissing,
        Self::Dropped,
        Self::Conflicting,
    ];

    /// The health a single decision state amounts to.
    #[must_use]
    pub const fn from_state(state: DecisionState) -> Self {
        match state {
            DecisionState::Preserved => Self::Preserved,
            DecisionState::ApprovedChange => Self::ApprovedChange,
            DecisionState::Unverified => Self::Unverified,
            DecisionState::Dropped => Self::Dropped,
            DecisionState::Conflicting => Self::Conflicting,
        }
    }

    /// The precedence rank: higher wins.
    #[must_use]
    pub const fn rank(self) -> u8 {
        match self {
            Self::Preserved => 0,
            Self::ApprovedChange => 1,
            Self::Unverified => 2,
            Self::ContinuityEvidenceMissing => 3,
            Self::Dropped => 4,
            Self::Conflicting => 5,
        }
    }

    /// The text form.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Preserved => "preserved",
            Self::ApprovedChange => "approved_change",
            Self::Unverified => "unverified",
            Self::ContinuityEvidenceMissing => "continuity_evidence_missing",
            Self::Dropped => "dropped",
            Self::Conflicting => "conflicting",
        }
    }

    /// The smallest safe response (seed 004's table; D-2, D-4).
    #[must_use]
    pub const fn action(self) -> SafeAction {
        match self {
            Self::Preserved => SafeAction::Continue,
            Self::ApprovedChange => SafeAction::ContinueWithNewRevision,
            Self::Dropped => SafeAction::PauseConsequential,
            Self::Conflicting => SafeAction::StopAndAsk,
            Self::Unverified | Self::ContinuityEvidenceMissing => SafeAction::ReObserve,
        }
    }

    /// Whether consequential actions (writes, sends, deploys) must wait: the one answer the
    /// CLI's `decisions status`, the comparison's JSON and the hooks' gate all use.
    ///
    /// `dropped` and `conflicting` are found defects (D-2), and `continuity_evidence_missing`
    /// restricts them until a safe re-observation (D-4). `unverified` (nobody re-observed a
    /// decision within the window) is reported and asks for a re-observation, but does not
    /// restrict: the observation that clears it can only come from a person, and refusing
    /// every consequential call after every automatic compaction until then would stall every
    /// session.
    #[must_use]
    pub const fn restricts_consequential(self) -> bool {
        matches!(
            self,
            Self::Dropped | Self::Conflicting | Self::ContinuityEvidenceMissing
        )
    }

    /// The outcome the CLI maps to an exit code (SPEC §9.1): [`CheckOutcome::Pass`] → `0`,
    /// [`CheckOutcome::ReviewRequired`] → `3`, [`CheckOutcome::Blocked`] → `4`.
    ///
    /// `unverified` and `continuity_evidence_missing` are uncertainty (re-observe);
    /// `dropped` and `conflicting` are found defects that stop consequential work.
    #[must_use]
    pub const fn outcome(self) -> CheckOutcome {
        match self {
            Self::Preserved | Self::ApprovedChange => CheckOutcome::Pass,
            Self::Unverified | Self::ContinuityEvidenceMissing => CheckOutcome::ReviewRequired,
            Self::Dropped | Self::Conflicting => CheckOutcome::Blocked,
        }
    }
}

impl From<DecisionState> for ContinuityHealth {
    fn from(state: DecisionState) -> Self {
        Self::from_state(state)
    }
}

/// The safe default action of a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafeAction {
    /// Continue and keep the comparison as a receipt.
    Continue,
    /// Continue under the new revision, keeping the approval link for audit.
    ContinueWithNewRevision,
    /// Pause consequential work; restore the missing decision or ask for it.
    PauseConsequential,
    /// Stop at the next reversible point and ask a human.
    StopAndAsk,
    /// Re-observe the decisions; do not infer health from the model's prose.
    ReObserve,
}

impl SafeAction {
    /// The text form.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::ContinueWithNewRevision => "continue_with_new_revision",
            Self::PauseConsequential => "pause_consequential",
            Self::StopAndAsk => "stop_and_ask",
            Self::ReObserve => "re_observe",
        }
    }
}

/// Pass, review or blocked: what the CLI turns into an exit code (§9.1: 0, 3, 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    /// Continuity validated (exit 0).
    Pass,
    /// Uncertain: re-observe before consequential work (exit 3, like `unverified`).
    ReviewRequired,
    /// A defect was found (exit 4, `continuity_validation_failed`).
    Blocked,
}

/// Why a decision (or the whole comparison) got its state; a stable `snake_case` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// `preserved`: the fresh observation has the snapshot's digest.
    DigestMatches,
    /// `approved_change`: approvals link the snapshot's revision to the observed one.
    ApprovedLink,
    /// `dropped`: a fresh observation found the decision absent.
    AbsentAfterBoundary,
    /// `conflicting`: the digest changed and no approval exists for this decision.
    ChangedWithoutApproval,
    /// `conflicting`: approvals exist for this decision but none links these two revisions.
    ApprovalLinksOtherRevisions,
    /// `conflicting`: the latest fresh observations disagree with each other.
    ContradictoryObservations,
    /// `unverified`: observed, but not after the boundary (at the boundary instant counts
    /// as not after).
    ObservationNotFresh,
    /// `unverified`: observed at an instant later than the comparison's `now`.
    ObservationInFuture,
    /// `unverified`: observed without a provenance (`source`).
    NoProvenance,
    /// `unverified`: the observation's digest uses another HMAC key or normaliser.
    IncomparableDigest,
    /// `unverified`: not observed yet, and the observation window is still open.
    AwaitingObservation,
    /// `unverified`: not observed within the observation window (D-4).
    NoObservationWithinWindow,
    /// `continuity_evidence_missing`: no pre-boundary snapshot (D-4).
    NoSnapshot,
    /// `unverified`: no boundary has been snapshotted yet, so there is nothing to compare
    /// with (issue 34, 6): nothing restricts consequential calls until a boundary — as the
    /// hooks, which compare only after a compaction, decide.
    NoBoundaryYet,
    /// `continuity_evidence_missing`: the only snapshot was taken after the boundary.
    SnapshotAfterBoundary,
}

impl Reason {
    /// The stable code.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::DigestMatches => "digest_matches",
            Self::ApprovedLink => "approved_link",
            Self::AbsentAfterBoundary => "absent_after_boundary",
            Self::ChangedWithoutApproval => "changed_without_approval",
            Self::ApprovalLinksOtherRevisions => "approval_links_other_revisions",
            Self::ContradictoryObservations => "contradictory_observations",
            Self::ObservationNotFresh => "observation_not_fresh",
            Self::ObservationInFuture => "observation_in_future",
            Self::NoProvenance => "no_provenance",
            Self::IncomparableDigest => "incomparable_digest",
            Self::AwaitingObservation => "awaiting_observation",
            Self::NoObservationWithinWindow => "no_observation_within_window",
            Self::NoSnapshot => "no_snapshot",
            Self::NoBoundaryYet => "no_boundary_yet",
            Self::SnapshotAfterBoundary => "snapshot_after_boundary",
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn text_forms_match_serde() {
        for state in ContinuityHealth::ALL {
            let json = serde_json::to_value(state).unwrap();
            assert_eq!(json.as_str(), Some(state.as_str()));
            let action = serde_json::to_value(state.action()).unwrap();
            assert_eq!(action.as_str(), Some(state.action().as_str()));
        }
        for state in DecisionState::ALL {
            assert_eq!(
                serde_json::to_value(state).unwrap().as_str(),
                Some(state.as_str())
            );
        }
        let reason = serde_json::to_value(Reason::NoObservationWithinWindow).unwrap();
        assert_eq!(
            reason.as_str(),
            Some(Reason::NoObservationWithinWindow.code())
        );
    }

    #[test]
    fn ranks_follow_the_d2_precedence() {
        let ranks: Vec<u8> = DecisionState::ALL.iter().map(|s| s.rank()).collect();
        assert!(ranks.windows(2).all(|w| w.first() < w.get(1)), "{ranks:?}");
        assert!(DecisionState::Conflicting.rank() > DecisionState::Dropped.rank());
        assert!(DecisionState::Dropped.rank() > DecisionState::Unverified.rank());
        assert!(DecisionState::Unverified.rank() > DecisionState::ApprovedChange.rank());
    }
}
