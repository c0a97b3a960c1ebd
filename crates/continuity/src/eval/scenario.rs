//! The scenario model: what a scenario file says (see the module docs of `eval` for the file
//! format), as types.

use std::fmt;

use cairn_core::Timestamp;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::state::ContinuityState;
use crate::types::SideEffectStatus;

/// The eight properties of E-6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// A negative user constraint still applies.
    NegativeConstraint,
    /// An expired or revoked approval is not reused.
    ApprovalReuse,
    /// A policy or capability version change forces a new decision.
    VersionChange,
    /// `side_effect_unknown` never becomes an automatic retry.
    UnknownSideEffect,
    /// Tenant and principal do not change.
    Identity,
    /// Instructions injected into the summary stay untrusted data.
    SummaryInjection,
    /// A pending obligation stays visible.
    PendingObligation,
    /// The trace links evidence from before the boundary to after it.
    EvidenceLink,
}

impl Property {
    /// Every property, in the order E-6 lists them.
    pub const ALL: [Self; 8] = [
        Self::NegativeConstraint,
        Self::ApprovalReuse,
        Self::VersionChange,
        Self::UnknownSideEffect,
        Self::Identity,
        Self::SummaryInjection,
        Self::PendingObligation,
        Self::EvidenceLink,
    ];

    /// The `snake_case` name used in scenario files.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NegativeConstraint => "negative_constraint",
            Self::ApprovalReuse => "approval_reuse",
            Self::VersionChange => "version_change",
            Self::UnknownSideEffect => "unknown_side_effect",
            Self::Identity => "identity",
            Self::SummaryInjection => "summary_injection",
            Self::PendingObligation => "pending_obligation",
            Self::EvidenceLink => "evidence_link",
        }
    }

    /// Parses the `snake_case` name.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a scenario expects of its compacted path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// The compacted path is the same or stricter than the full history.
    Pass,
    /// The compaction is deliberately lossy and the harness must flag it.
    Caught,
}

impl Expectation {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Caught => "caught",
        }
    }
}

/// How strict a safety decision is, from least to most strict. `Allow` means the call goes
/// to the policy gate as usual — continuity itself never authorises anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    /// Nothing stands in the way; the gate decides the call as usual.
    #[default]
    Allow,
    /// Earlier authority (admission, approval) is void: decide afresh before the call.
    Reauthorize,
    /// A person must approve or answer first.
    AskHuman,
    /// The call must not be made.
    Block,
}

impl Strictness {
    /// Every level, least strict first.
    pub const ALL: [Self; 4] = [Self::Allow, Self::Reauthorize, Self::AskHuman, Self::Block];

    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Reauthorize => "reauthorize",
            Self::AskHuman => "ask_human",
            Self::Block => "block",
        }
    }

    /// Parses the `snake_case` name.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Strictness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call a user forbade: the tool, and argument values that must all match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbid {
    /// The forbidden tool.
    pub tool: String,
    /// Argument values that, when all equal, make a call forbidden (empty: every call).
    pub args: Map<String, Value>,
}

impl Forbid {
    pub(super) fn matches(&self, action: &NextAction) -> bool {
        self.tool == action.tool
            && self
                .args
                .iter()
                .all(|(key, value)| action.args.get(key) == Some(value))
    }
}

/// What one history event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// The run's identity.
    RunStarted {
        /// The tenant.
        tenant_id: String,
        /// The principal.
        principal_id: String,
    },
    /// A negative user constraint.
    UserConstraint {
        /// What it forbids.
        forbid: Forbid,
    },
    /// The policy-set version in force from here on.
    PolicyVersion {
        /// The version.
        policy_version: String,
    },
    /// A capability's version in force from here on.
    CapabilityVersion {
        /// The capability.
        capability: String,
        /// Its version.
        version: String,
    },
    /// A human approval of one tool's call.
    ApprovalGranted {
        /// The approval.
        approval_id: String,
        /// The tool it approves.
        tool: String,
        /// When it stops being usable.
        expires_at: Timestamp,
        /// The policy version it was granted under, if recorded.
        policy_version: Option<String>,
    },
    /// An approval withdrawn.
    ApprovalRevoked {
        /// The approval.
        approval_id: String,
    },
    /// A dispatched tool call and what is known of its effect.
    ToolCall {
        /// The tool.
        tool: String,
        /// The key it was sent under.
        idempotency_key: String,
        /// Its side-effect state (E-2).
        outcome: SideEffectStatus,
    },
    /// A reconciliation of an unknown effect (E-5).
    Reconciliation {
        /// The key reconciled.
        idempotency_key: String,
        /// The observed outcome.
        outcome: SideEffectStatus,
    },
    /// Work the run now owes.
    ObligationOpened {
        /// The obligation.
        obligation: String,
    },
    /// Work no longer owed.
    ObligationClosed {
        /// The obligation.
        obligation: String,
    },
    /// A piece of evidence (a lookup, a search result), addressed by the event id.
    Evidence {
        /// An earlier evidence id this one replaces.
        supersedes: Option<String>,
    },
    /// Untrusted content the model saw; no decision reads it.
    Observation,
}

/// One durable history event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its unique id (what envelope references point at).
    pub id: String,
    /// What it says.
    pub kind: EventKind,
}

/// What the agent wants to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextAction {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Map<String, Value>,
    /// The capability version the call would use, if stated.
    pub capability_version: Option<String>,
    /// The idempotency key the call would be sent under.
    pub idempotency_key: Option<String>,
    /// The approval the call relies on.
    pub approval_id: Option<String>,
    /// Whether policy requires a human approval for the call.
    pub requires_approval: bool,
    /// Evidence the call relies on.
    pub evidence_refs: Vec<String>,
    /// Whether the call ends the task.
    pub ends_task: bool,
    /// On whose tenant the call would act, if stated.
    pub tenant_id: Option<String>,
    /// On whose behalf the call would act, if stated.
    pub principal_id: Option<String>,
}

/// One deliberate edit of the compacted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LossyEdit {
    /// Remove a constraint reference from the envelope and the selection.
    DropConstraintRef(String),
    /// Remove a pending obligation from the envelope and its events from the selection.
    DropObligation(String),
    /// Remove an evidence reference from the envelope and the selection.
    DropEvidenceRef(String),
    /// Remove an event from the selection.
    DropEvent(String),
    /// Record an effect as applied in the envelope and the kept events (never in the
    /// durable state).
    MarkSideEffectApplied(String),
    /// Append an instruction to the summary; with `rebind`, the envelope binds its digest.
    InjectInstruction {
        /// The injected text.
        text: String,
        /// Whether the compactor bound the new summary's digest.
        rebind: bool,
    },
    /// Keep an event that is not in the history (a record made up by the compactor).
    AddEvent(Event),
    /// Overwrite one envelope field.
    SetEnvelopeField {
        /// The field.
        field: String,
        /// Its new value.
        value: Value,
    },
}

/// How the compacted path is made.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The derived summary.
    pub summary: String,
    /// The history event ids the compaction kept.
    pub selected_events: Vec<String>,
    /// Overrides of the derived envelope's fields (the state at the boundary).
    pub envelope: Map<String, Value>,
    /// Deliberate losses, applied in order.
    pub lossy_edits: Vec<LossyEdit>,
}

/// One evaluation scenario (see the module docs for the file format).
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// The property it exercises.
    pub property: Property,
    /// Free text.
    pub description: Option<String>,
    /// What the compacted path should do.
    pub expect: Expectation,
    /// The full path's decision, when pinned.
    pub expect_full: Option<Strictness>,
    /// The compacted path's decision, when pinned.
    pub expect_compacted: Option<Strictness>,
    /// The instant both paths decide at.
    pub now: Timestamp,
    /// The durable history up to the boundary.
    pub history: Vec<Event>,
    /// The durable state at resumption.
    pub current: ContinuityState,
    /// The compaction.
    pub compaction: Compaction,
    /// What the agent wants to do next.
    pub next_action: NextAction,
}
