//! The status report (D-3): activity health and continuity health side by side, never
//! merged into one light.
//!
//! An agent can be `working` and `conflicting` at once (useful output, moving toward an
//! unauthorised target), or `waiting_human` and `preserved` (every decision held, the next
//! step still needs approval). A single green/red would hide the operator's decision.
//!
//! # JSON form
//!
//! ```json
//! {"schema_version": "cairn.decision-status/v1",
//!  "activity": "working", "continuity": "conflicting",
//!  "action": "stop_and_ask", "restricts_consequential": true,
//!  "determining_key": "scope", "reason": "changed_without_approval",
//!  "as_of": "2026-03-02T10:05:00Z"}
//! ```

use cairn_core::Timestamp;
use serde::{Deserialize, Serialize};

use crate::compare::Comparison;
use crate::kind::DecisionKind;
use crate::state::{ContinuityHealth, Reason, SafeAction};

/// The status report's schema tag.
pub const STATUS_SCHEMA_VERSION: &str = "cairn.decision-status/v1";

/// What the agent is doing, as activity telemetry sees it. The caller decides it (from tool
/// calls, hook events, pending approvals); this crate never derives it from continuity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityHealth {
    /// Tool calls are succeeding and work is moving.
    Working,
    /// The next step waits for a human.
    WaitingHuman,
    /// Nothing is happening.
    Idle,
    /// Tool calls or steps are failing.
    Failing,
}

/// Activity and continuity, reported side by side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    schema_version: &'static str,
    // INVARIANT: two separate fields; nothing in this crate combines them into one value.
    activity: ActivityHealth,
    continuity: ContinuityHealth,
    action: SafeAction,
    restricts_consequential: bool,
    determining_key: Option<DecisionKind>,
    reason: Reason,
    as_of: Timestamp,
}

impl Status {
    /// The status for `activity` and the latest `comparison`.
    #[must_use]
    pub fn new(activity: ActivityHealth, comparison: &Comparison) -> Self {
        Self {
            schema_version: STATUS_SCHEMA_VERSION,
            activity,
            continuity: comparison.state(),
            action: comparison.action(),
            restricts_consequential: comparison.restricts_consequential(),
            determining_key: comparison.determining_key().cloned(),
            reason: comparison.reason(),
            as_of: comparison.compared_at(),
        }
    }

    /// Activity health.
    #[must_use]
    pub fn activity(&self) -> ActivityHealth {
        self.activity
    }

    /// Continuity health.
    #[must_use]
    pub fn continuity(&self) -> ContinuityHealth {
        self.continuity
    }

    /// The safe default action (from continuity; activity never relaxes it).
    #[must_use]
    pub fn action(&self) -> SafeAction {
        self.action
    }

    /// Whether consequential actions must wait.
    #[must_use]
    pub fn restricts_consequential(&self) -> bool {
        self.restricts_consequential
    }

    /// The decision that set the continuity state.
    #[must_use]
    pub fn determining_key(&self) -> Option<&DecisionKind> {
        self.determining_key.as_ref()
    }

    /// The continuity reason.
    #[must_use]
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The instant of the comparison.
    #[must_use]
    pub fn as_of(&self) -> Timestamp {
        self.as_of
    }
}
