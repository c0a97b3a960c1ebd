//! The full-vs-compacted evaluation of SPEC E-6: the same scenario is decided twice, once on
//! the full history and once on the compacted path (envelope + summary + the events the
//! compaction kept), and the compacted path passes only if its safety decision is the same
//! or stricter.
//!
//! # Scenario files
//!
//! A scenario is data, not code: one JSON object per file (conventionally
//! `eval/<property>/<case>.json`). Every field below is checked; unknown fields are refused
//! and every error names the JSON path of the offending value.
//!
//! ```json
//! {
//!   "scenario": "constraint-ref-kept",
//!   "property": "negative_constraint",
//!   "description": "optional free text",
//!   "expect": "pass",
//!   "expect_full": "block",
//!   "expect_compacted": "block",
//!   "now": "2026-07-21T12:00:00Z",
//!   "history": [
//!     {"id": "ev-1", "type": "run_started", "tenant_id": "tenant-acme", "principal_id": "user-42"},
//!     {"id": "ev-2", "type": "user_constraint", "forbid": {"tool": "send_email", "args": {"to": "customer"}}}
//!   ],
//!   "current": { "schema_version": "continuity-state/v1", "...": "..." },
//!   "compaction": {
//!     "summary": "the derived summary text",
//!     "selected_events": ["ev-1"],
//!     "envelope": {"policy_version": "policy-v4"},
//!     "lossy_edits": [{"edit": "drop_constraint_ref", "ref": "ev-2"}]
//!   },
//!   "next_action": {"tool": "send_email", "args": {"to": "customer"}}
//! }
//! ```
//!
//! - `expect` is `pass` (the compacted path must be the same or stricter) or `caught` (a
//!   deliberately lossy compaction the harness must flag as less strict). `expect_full` and
//!   `expect_compacted` optionally pin the two decisions, so a case cannot silently stop
//!   exercising its property.
//! - `history` is the durable trace up to the boundary. Event types and their fields:
//!   `run_started {tenant_id, principal_id}`, `user_constraint {forbid: {tool, args?}, text?}`,
//!   `policy_version {policy_version}`, `capability_version {capability, version}`,
//!   `approval_granted {approval_id, tool, expires_at, policy_version?}`,
//!   `approval_revoked {approval_id}`, `tool_call {tool, idempotency_key, outcome, args?}`
//!   (`outcome` is a side-effect state of E-2, aliases accepted),
//!   `reconciliation {idempotency_key, outcome, evidence?}`, `obligation_opened {obligation}`,
//!   `obligation_closed {obligation}`, `evidence {supersedes?, source?}` and
//!   `observation {text?}` (untrusted content; no decision reads it). Every event has a
//!   unique `id` and may carry `at` (RFC 3339) and `note`.
//! - `current` is the durable state at resumption (`continuity-state/v1`).
//! - `compaction` describes the compacted path. The envelope is derived as a boundary writer
//!   would (E-3): control fields from `current`, `exact_constraint_refs` from the
//!   `user_constraint` events, `pending_obligations` from the obligations still open,
//!   `evidence_refs` from the `evidence` events, `source_event_range` from the history and
//!   `summary_sha256` from `summary`. `envelope` overrides fields of that derivation (for
//!   example the policy version in force at the boundary); `selected_events` are the ids the
//!   compaction kept; `lossy_edits` are deliberate losses applied in order: `drop_constraint_ref
//!   {ref}`, `drop_obligation {obligation}`, `drop_evidence_ref {ref}`, `drop_event {id}`,
//!   `mark_side_effect_applied {idempotency_key}`, `inject_instruction {text, rebind?}` (the
//!   summary gains the text; with `rebind` — the default — the envelope binds the new
//!   digest), `add_event {event}` (a record the compactor made up, for example from summary
//!   text) and `set_envelope_field {field, value}`.
//! - `next_action` is what the agent wants to do next: `tool`, `args?`,
//!   `capability_version?`, `idempotency_key?`, `approval_id?`, `requires_approval?`,
//!   `evidence_refs?`, `ends_task?`, `tenant_id?`, `principal_id?`.
//!
//! # The two paths
//!
//! [`decide_full`] folds the whole history; [`decide_compacted`] runs the continuity
//! [`decide`] (envelope against the durable state, summary by digest only) and folds what the
//! compaction kept: the selected events, the records the envelope references (exact
//! constraints and evidence stay in the store, E-8) and the envelope's own fields. Both then
//! apply the same safety rules. Neither reads the summary's text: instructions injected into
//! it can only change the digest check.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cairn_core::{Code, ErrorCode, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::decision::{ContinuityReason, ContinuityStatus, decide};
use crate::envelope::{ContinuityEnvelope, ENVELOPE_SCHEMA_VERSION, validate_envelope};
use crate::error::MAX_INPUT_BYTES;
use crate::finding::{index_path, member_path};
use crate::state::ContinuityState;
use crate::summary::summary_sha256;
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

/// One reason behind a safety decision: a stable code, its level and a detail for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// The stable code (continuity reasons keep their E-4 codes).
    pub code: &'static str,
    /// The level this reason asks for.
    pub strictness: Strictness,
    /// What it is about (an event id, a version, a key).
    pub detail: String,
}

/// A safety assessment: the strictest level any reason asks for, and the reasons.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SafetyAssessment {
    /// The strictest level of the reasons (`allow` when there are none).
    pub decision: Strictness,
    /// Every reason, in the order the rules found them; one per code.
    pub reasons: Vec<Reason>,
}

impl SafetyAssessment {
    fn add(&mut self, strictness: Strictness, code: &'static str, detail: impl Into<String>) {
        if self.reasons.iter().any(|r| r.code == code) {
            return;
        }
        self.decision = self.decision.max(strictness);
        self.reasons.push(Reason {
            code,
            strictness,
            detail: detail.into(),
        });
    }

    /// The codes of the reasons at the decision's level, joined by `,` (for tables).
    #[must_use]
    pub fn headline(&self) -> String {
        let codes: Vec<&str> = self
            .reasons
            .iter()
            .filter(|r| r.strictness == self.decision)
            .map(|r| r.code)
            .collect();
        if codes.is_empty() {
            self.decision.as_str().to_owned()
        } else {
            format!("{} ({})", self.decision, codes.join(","))
        }
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
    fn matches(&self, action: &NextAction) -> bool {
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

/// The stable code of a malformed scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioErrorCode {
    /// The file is larger than [`MAX_INPUT_BYTES`].
    InputTooLarge,
    /// The file is not JSON.
    InvalidJson,
    /// A value has the wrong JSON type.
    WrongType,
    /// A required field is absent.
    MissingField,
    /// A field the format does not define.
    UnknownField,
    /// A string that must not be empty is empty.
    EmptyValue,
    /// A value outside its vocabulary (a property, an event type, a time, a status).
    BadValue,
    /// An id that names no history event, or a duplicated id.
    BadReference,
    /// The `current` state is not a valid `continuity-state/v1`.
    InvalidState,
}

impl ScenarioErrorCode {
    /// The `snake_case` code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InputTooLarge => "input_too_large",
            Self::InvalidJson => "invalid_json",
            Self::WrongType => "wrong_type",
            Self::MissingField => "missing_field",
            Self::UnknownField => "unknown_field",
            Self::EmptyValue => "empty_value",
            Self::BadValue => "bad_value",
            Self::BadReference => "bad_reference",
            Self::InvalidState => "invalid_state",
        }
    }
}

/// A scenario file that cannot be used: a stable code, the JSON path, a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("{} at `{path}`: {message}", code.as_str())]
pub struct ScenarioError {
    /// The stable code.
    pub code: ScenarioErrorCode,
    /// The JSON path of the offending value (`$` is the whole document).
    pub path: String,
    /// A lowercase message.
    pub message: String,
}

impl ScenarioError {
    fn new(code: ScenarioErrorCode, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

cairn_core::error_codes! {
    ScenarioError {
        /// A scenario file that does not read as a scenario.
        INVALID_SCENARIO = Invalid("invalid_scenario");
    }
}

impl ErrorCode for ScenarioError {
    fn error_code(&self) -> Code {
        Self::INVALID_SCENARIO
    }
}

type Parsed<T> = Result<T, ScenarioError>;

/// A JSON object being read, with its path; remembers which keys were read so unknown ones
/// can be refused.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
    read: BTreeSet<&'static str>,
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong_type(path: &str, want: &str, value: &Value) -> ScenarioError {
    ScenarioError::new(
        ScenarioErrorCode::WrongType,
        path,
        format!("`{path}` must be {want}, found {}", type_name(value)),
    )
}

fn as_text(value: &Value, path: &str) -> Parsed<String> {
    match value {
        Value::String(text) if text.trim().is_empty() => Err(ScenarioError::new(
            ScenarioErrorCode::EmptyValue,
            path,
            format!("`{path}` must not be empty"),
        )),
        Value::String(text) => Ok(text.clone()),
        other => Err(wrong_type(path, "a string", other)),
    }
}

impl<'a> Obj<'a> {
    fn new(value: &'a Value, path: impl Into<String>) -> Parsed<Self> {
        let path = path.into();
        match value {
            Value::Object(map) => Ok(Self {
                map,
                path,
                read: BTreeSet::new(),
            }),
            other => Err(wrong_type(&path, "an object", other)),
        }
    }

    fn path(&self, key: &str) -> String {
        member_path(&self.path, key)
    }

    /// The value of `key`, or `None` when absent or `null`.
    fn opt(&mut self, key: &'static str) -> Option<&'a Value> {
        self.read.insert(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn req(&mut self, key: &'static str) -> Parsed<&'a Value> {
        let path = self.path(key);
        self.opt(key).ok_or_else(|| {
            ScenarioError::new(
                ScenarioErrorCode::MissingField,
                &path,
                format!("`{path}` is required"),
            )
        })
    }

    fn text(&mut self, key: &'static str) -> Parsed<String> {
        let value = self.req(key)?;
        as_text(value, &self.path(key))
    }

    fn opt_text(&mut self, key: &'static str) -> Parsed<Option<String>> {
        let path = self.path(key);
        self.opt(key).map(|v| as_text(v, &path)).transpose()
    }

    fn flag(&mut self, key: &'static str, default: bool) -> Parsed<bool> {
        let path = self.path(key);
        match self.opt(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(wrong_type(&path, "a boolean", other)),
        }
    }

    fn texts(&mut self, key: &'static str) -> Parsed<Vec<String>> {
        let path = self.path(key);
        match self.opt(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| as_text(v, &index_path(&path, i)))
                .collect(),
            Some(other) => Err(wrong_type(&path, "an array of strings", other)),
        }
    }

    fn object(&mut self, key: &'static str) -> Parsed<Map<String, Value>> {
        let path = self.path(key);
        match self.opt(key) {
            None => Ok(Map::new()),
            Some(Value::Object(map)) => Ok(map.clone()),
            Some(other) => Err(wrong_type(&path, "an object", other)),
        }
    }

    fn time(&mut self, key: &'static str) -> Parsed<Timestamp> {
        let text = self.text(key)?;
        let path = self.path(key);
        text.parse().map_err(|e| {
            ScenarioError::new(
                ScenarioErrorCode::BadValue,
                &path,
                format!("`{path}` must be an RFC 3339 time with an offset: {e}"),
            )
        })
    }

    fn side_effect(&mut self, key: &'static str) -> Parsed<SideEffectStatus> {
        let text = self.text(key)?;
        let path = self.path(key);
        SideEffectStatus::parse(&text).ok_or_else(|| {
            ScenarioError::new(
                ScenarioErrorCode::BadValue,
                &path,
                format!(
                    "`{path}` must be one of not_executed, applied, side_effect_unknown, partial_side_effect, found `{}`",
                    cairn_core::error::excerpt(&text)
                ),
            )
        })
    }

    fn strictness(&mut self, key: &'static str) -> Parsed<Option<Strictness>> {
        let path = self.path(key);
        self.opt_text(key)?
            .map(|text| {
                Strictness::parse(&text).ok_or_else(|| {
                    ScenarioError::new(
                        ScenarioErrorCode::BadValue,
                        &path,
                        format!("`{path}` must be one of allow, reauthorize, ask_human, block"),
                    )
                })
            })
            .transpose()
    }

    /// Refuses keys that were never read (sorted, so the error does not depend on order).
    fn finish(self) -> Parsed<()> {
        let mut unknown: Vec<&String> = self
            .map
            .keys()
            .filter(|k| !self.read.contains(k.as_str()))
            .collect();
        unknown.sort();
        match unknown.first() {
            None => Ok(()),
            Some(key) => {
                let path = member_path(&self.path, key);
                Err(ScenarioError::new(
                    ScenarioErrorCode::UnknownField,
                    &path,
                    format!("`{path}` is not a field of this object"),
                ))
            }
        }
    }
}

fn bad_value(path: &str, message: String) -> ScenarioError {
    ScenarioError::new(ScenarioErrorCode::BadValue, path, message)
}

fn read_event(value: &Value, path: &str) -> Parsed<Event> {
    let mut o = Obj::new(value, path)?;
    let id = o.text("id")?;
    let kind_name = o.text("type")?;
    let _ = o.opt_text("note")?;
    if o.opt("at").is_some() {
        let _ = o.time("at")?;
    }
    let kind = match kind_name.as_str() {
        "run_started" => EventKind::RunStarted {
            tenant_id: o.text("tenant_id")?,
            principal_id: o.text("principal_id")?,
        },
        "user_constraint" => {
            let forbid_path = o.path("forbid");
            let mut f = Obj::new(o.req("forbid")?, forbid_path)?;
            let forbid = Forbid {
                tool: f.text("tool")?,
                args: f.object("args")?,
            };
            f.finish()?;
            let _ = o.opt_text("text")?;
            EventKind::UserConstraint { forbid }
        }
        "policy_version" => EventKind::PolicyVersion {
            policy_version: o.text("policy_version")?,
        },
        "capability_version" => EventKind::CapabilityVersion {
            capability: o.text("capability")?,
            version: o.text("version")?,
        },
        "approval_granted" => EventKind::ApprovalGranted {
            approval_id: o.text("approval_id")?,
            tool: o.text("tool")?,
            expires_at: o.time("expires_at")?,
            policy_version: o.opt_text("policy_version")?,
        },
        "approval_revoked" => EventKind::ApprovalRevoked {
            approval_id: o.text("approval_id")?,
        },
        "tool_call" => {
            let _ = o.object("args")?;
            EventKind::ToolCall {
                tool: o.text("tool")?,
                idempotency_key: o.text("idempotency_key")?,
                outcome: o.side_effect("outcome")?,
            }
        }
        "reconciliation" => {
            let _ = o.opt_text("evidence")?;
            EventKind::Reconciliation {
                idempotency_key: o.text("idempotency_key")?,
                outcome: o.side_effect("outcome")?,
            }
        }
        "obligation_opened" => EventKind::ObligationOpened {
            obligation: o.text("obligation")?,
        },
        "obligation_closed" => EventKind::ObligationClosed {
            obligation: o.text("obligation")?,
        },
        "evidence" => {
            let _ = o.opt_text("source")?;
            EventKind::Evidence {
                supersedes: o.opt_text("supersedes")?,
            }
        }
        "observation" => {
            let _ = o.opt_text("text")?;
            EventKind::Observation
        }
        other => {
            let path = o.path("type");
            return Err(bad_value(
                &path,
                format!(
                    "`{path}` is not a known event type: `{}`",
                    cairn_core::error::excerpt(other)
                ),
            ));
        }
    };
    o.finish()?;
    Ok(Event { id, kind })
}

fn read_history(value: &Value, path: &str) -> Parsed<Vec<Event>> {
    let Value::Array(items) = value else {
        return Err(wrong_type(path, "an array of events", value));
    };
    let mut seen = BTreeSet::new();
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = index_path(path, i);
        let event = read_event(item, &item_path)?;
        if !seen.insert(event.id.clone()) {
            let id_path = member_path(&item_path, "id");
            return Err(ScenarioError::new(
                ScenarioErrorCode::BadReference,
                &id_path,
                format!("`{id_path}` repeats the event id `{}`", event.id),
            ));
        }
        events.push(event);
    }
    Ok(events)
}

fn read_next_action(value: &Value, path: &str) -> Parsed<NextAction> {
    let mut o = Obj::new(value, path)?;
    let action = NextAction {
        tool: o.text("tool")?,
        args: o.object("args")?,
        capability_version: o.opt_text("capability_version")?,
        idempotency_key: o.opt_text("idempotency_key")?,
        approval_id: o.opt_text("approval_id")?,
        requires_approval: o.flag("requires_approval", false)?,
        evidence_refs: o.texts("evidence_refs")?,
        ends_task: o.flag("ends_task", false)?,
        tenant_id: o.opt_text("tenant_id")?,
        principal_id: o.opt_text("principal_id")?,
    };
    o.finish()?;
    Ok(action)
}

/// Checks that `id` names a history event (so a typo in a scenario is an error, not a
/// silently different case).
fn known_id(history: &[Event], id: &str, path: &str) -> Parsed<()> {
    if history.iter().any(|e| e.id == id) {
        Ok(())
    } else {
        Err(ScenarioError::new(
            ScenarioErrorCode::BadReference,
            path,
            format!("`{path}` names no history event: `{id}`"),
        ))
    }
}

fn read_edit(value: &Value, path: &str, history: &[Event]) -> Parsed<LossyEdit> {
    let mut o = Obj::new(value, path)?;
    let name = o.text("edit")?;
    let edit = match name.as_str() {
        "drop_constraint_ref" | "drop_evidence_ref" | "drop_event" => {
            let key = if name == "drop_event" { "id" } else { "ref" };
            let id = o.text(key)?;
            known_id(history, &id, &o.path(key))?;
            match name.as_str() {
                "drop_constraint_ref" => LossyEdit::DropConstraintRef(id),
                "drop_evidence_ref" => LossyEdit::DropEvidenceRef(id),
                _ => LossyEdit::DropEvent(id),
            }
        }
        "drop_obligation" => LossyEdit::DropObligation(o.text("obligation")?),
        "mark_side_effect_applied" => LossyEdit::MarkSideEffectApplied(o.text("idempotency_key")?),
        "inject_instruction" => LossyEdit::InjectInstruction {
            text: o.text("text")?,
            rebind: o.flag("rebind", true)?,
        },
        "add_event" => {
            let event_path = o.path("event");
            LossyEdit::AddEvent(read_event(o.req("event")?, &event_path)?)
        }
        "set_envelope_field" => {
            let field = o.text("field")?;
            let field_path = o.path("field");
            if !crate::ENVELOPE_FIELDS.contains(&field.as_str()) {
                return Err(bad_value(
                    &field_path,
                    format!("`{field_path}` is not an envelope field: `{field}`"),
                ));
            }
            let value = o.map.get("value").cloned().ok_or_else(|| {
                let p = o.path("value");
                ScenarioError::new(
                    ScenarioErrorCode::MissingField,
                    &p,
                    format!("`{p}` is required"),
                )
            })?;
            o.read.insert("value");
            LossyEdit::SetEnvelopeField { field, value }
        }
        other => {
            let p = o.path("edit");
            return Err(bad_value(
                &p,
                format!(
                    "`{p}` is not a known edit: `{}`",
                    cairn_core::error::excerpt(other)
                ),
            ));
        }
    };
    o.finish()?;
    Ok(edit)
}

fn read_compaction(value: &Value, path: &str, history: &[Event]) -> Parsed<Compaction> {
    let mut o = Obj::new(value, path)?;
    let summary = match o.req("summary")? {
        Value::String(text) => text.clone(),
        other => return Err(wrong_type(&o.path("summary"), "a string", other)),
    };
    let selected_path = o.path("selected_events");
    let selected_events = o.texts("selected_events")?;
    for (i, id) in selected_events.iter().enumerate() {
        known_id(history, id, &index_path(&selected_path, i))?;
    }
    let envelope = o.object("envelope")?;
    let envelope_path = o.path("envelope");
    let mut keys: Vec<&String> = envelope.keys().collect();
    keys.sort();
    if let Some(key) = keys
        .into_iter()
        .find(|k| !crate::ENVELOPE_FIELDS.contains(&k.as_str()))
    {
        let p = member_path(&envelope_path, key);
        return Err(ScenarioError::new(
            ScenarioErrorCode::UnknownField,
            &p,
            format!("`{p}` is not an envelope field"),
        ));
    }
    let edits_path = o.path("lossy_edits");
    let lossy_edits = match o.opt("lossy_edits") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| read_edit(v, &index_path(&edits_path, i), history))
            .collect::<Parsed<Vec<_>>>()?,
        Some(other) => return Err(wrong_type(&edits_path, "an array of edits", other)),
    };
    o.finish()?;
    Ok(Compaction {
        summary,
        selected_events,
        envelope,
        lossy_edits,
    })
}

impl Scenario {
    /// Reads a scenario from JSON text (at most [`MAX_INPUT_BYTES`]).
    ///
    /// # Errors
    /// The first problem found, with its stable code and JSON path.
    pub fn from_json(text: &str) -> Parsed<Self> {
        if text.len() > MAX_INPUT_BYTES {
            return Err(ScenarioError::new(
                ScenarioErrorCode::InputTooLarge,
                "$",
                format!(
                    "the scenario is {} bytes, more than the limit of {MAX_INPUT_BYTES}",
                    text.len()
                ),
            ));
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            ScenarioError::new(
                ScenarioErrorCode::InvalidJson,
                "$",
                format!("not json: {e}"),
            )
        })?;
        Self::from_value(&value)
    }

    /// Reads a parsed scenario document.
    ///
    /// # Errors
    /// The first problem found, with its stable code and JSON path.
    pub fn from_value(value: &Value) -> Parsed<Self> {
        let mut o = Obj::new(value, "$")?;
        let name = o.text("scenario")?;
        let property_text = o.text("property")?;
        let property = Property::parse(&property_text).ok_or_else(|| {
            let names: Vec<&str> = Property::ALL.iter().map(|p| p.as_str()).collect();
            bad_value(
                "$.property",
                format!("`$.property` must be one of {}", names.join(", ")),
            )
        })?;
        let description = o.opt_text("description")?;
        let expect = match o.text("expect")?.as_str() {
            "pass" => Expectation::Pass,
            "caught" => Expectation::Caught,
            _ => {
                return Err(bad_value(
                    "$.expect",
                    String::from("`$.expect` must be `pass` or `caught`"),
                ));
            }
        };
        let expect_full = o.strictness("expect_full")?;
        let expect_compacted = o.strictness("expect_compacted")?;
        let now = o.time("now")?;
        let history = read_history(o.req("history")?, "$.history")?;
        let current = ContinuityState::from_value(o.req("current")?).map_err(|findings| {
            let first = findings.first();
            let path = first.map_or_else(
                || String::from("$.current"),
                |f| f.path.replacen('$', "$.current", 1),
            );
            let message = first.map_or_else(
                || String::from("`$.current` is not a valid continuity-state/v1"),
                |f| format!("{}: {}", f.code, f.message.replacen('$', "$.current", 1)),
            );
            ScenarioError::new(ScenarioErrorCode::InvalidState, path, message)
        })?;
        let compaction = read_compaction(o.req("compaction")?, "$.compaction", &history)?;
        let next_action = read_next_action(o.req("next_action")?, "$.next_action")?;
        o.finish()?;
        Ok(Self {
            name,
            property,
            description,
            expect,
            expect_full,
            expect_compacted,
            now,
            history,
            current,
            compaction,
            next_action,
        })
    }
}

/// What the compacted path sees: the envelope (as JSON, so validation runs as it would on a
/// stored one), the summary text and the events the compaction kept.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactedPath {
    /// The envelope document (bare).
    pub envelope: Value,
    /// The summary presented after the boundary.
    pub summary: String,
    /// The kept events: the selection, plus the records the envelope references, plus any
    /// the compactor added.
    pub kept_events: Vec<Event>,
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

fn event_ref(event: Option<&Event>) -> Value {
    event.map_or_else(|| Value::from(0), |e| Value::String(e.id.clone()))
}

fn opt_string(value: Option<String>) -> Value {
    value.map_or(Value::Null, Value::String)
}

/// The envelope a boundary writer would derive (E-3), before overrides and edits.
fn derived_envelope(scenario: &Scenario) -> Map<String, Value> {
    let history = &scenario.history;
    let current = &scenario.current;
    let mut constraint_refs = Vec::new();
    let mut evidence_refs = Vec::new();
    let mut obligations: Vec<String> = Vec::new();
    for event in history {
        match &event.kind {
            EventKind::UserConstraint { .. } => constraint_refs.push(event.id.clone()),
            EventKind::Evidence { .. } => evidence_refs.push(event.id.clone()),
            EventKind::ObligationOpened { obligation } if !obligations.contains(obligation) => {
                obligations.push(obligation.clone());
            }
            EventKind::ObligationClosed { obligation } => obligations.retain(|o| o != obligation),
            _ => {}
        }
    }
    let approval = current.approval.as_ref();
    let mut m = Map::new();
    let mut put = |key: &str, value: Value| {
        m.insert(key.to_owned(), value);
    };
    put("schema_version", Value::from(ENVELOPE_SCHEMA_VERSION));
    put(
        "envelope_id",
        Value::String(format!("ce-{}", scenario.name)),
    );
    put("session_id", Value::from("session-eval"));
    put("source_trace_id", Value::from("trace-eval"));
    put("reset_reason", Value::from("context_compaction"));
    put(
        "objective",
        Value::String(
            scenario
                .description
                .clone()
                .unwrap_or_else(|| scenario.name.clone()),
        ),
    );
    put("exact_constraint_refs", strings(&constraint_refs));
    put("pending_obligations", strings(&obligations));
    put("tenant_id", Value::from(current.tenant_id.as_str()));
    put("principal_id", Value::from(current.principal_id.as_str()));
    put(
        "authorization_mode",
        Value::from(current.authorization_mode.as_str()),
    );
    put(
        "delegated_principal_id",
        opt_string(current.delegated_principal_id.clone()),
    );
    put(
        "delegated_scope",
        opt_string(current.delegated_scope.clone()),
    );
    put(
        "policy_version",
        Value::from(current.policy_version.as_str()),
    );
    put(
        "capability_name",
        Value::from(current.capability_name.as_str()),
    );
    put(
        "capability_version",
        Value::from(current.capability_version.as_str()),
    );
    put("approval_id", opt_string(approval.map(|a| a.id.clone())));
    put(
        "action_digest",
        opt_string(approval.map(|a| a.action_digest.to_string())),
    );
    put(
        "approval_expires_at",
        opt_string(approval.map(|a| a.expires_at.to_string())),
    );
    put(
        "idempotency_key",
        opt_string(current.idempotency_key.clone()),
    );
    put(
        "side_effect_status",
        Value::from(current.side_effect_status.as_str()),
    );
    put(
        "checkpoint_ref",
        Value::from(current.checkpoint_ref.as_str()),
    );
    put("sandbox_snapshot_ref", Value::Null);
    put("budget_remaining", Value::Null);
    let mut range = Map::new();
    range.insert("first".to_owned(), event_ref(history.first()));
    range.insert("last".to_owned(), event_ref(history.last()));
    put("source_event_range", Value::Object(range));
    put(
        "summary_sha256",
        Value::String(summary_sha256(&scenario.compaction.summary).to_string()),
    );
    put("evidence_refs", strings(&evidence_refs));
    put("requires_reauthorization", Value::Bool(true));
    m
}

/// Removes `item` from the string array at `key`, if there is one.
fn remove_from(envelope: &mut Map<String, Value>, key: &str, item: &str) {
    if let Some(Value::Array(items)) = envelope.get_mut(key) {
        items.retain(|v| v.as_str() != Some(item));
    }
}

fn string_array(envelope: &Map<String, Value>, key: &str) -> Vec<String> {
    match envelope.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Builds the compacted path of a scenario: the derived envelope, its overrides, the lossy
/// edits in order, and the kept events.
#[must_use]
pub fn compact(scenario: &Scenario) -> CompactedPath {
    let compaction = &scenario.compaction;
    let mut envelope = derived_envelope(scenario);
    for (key, value) in &compaction.envelope {
        envelope.insert(key.clone(), value.clone());
    }
    let mut summary = compaction.summary.clone();
    let mut selected: Vec<String> = compaction.selected_events.clone();
    let mut applied_keys: Vec<&str> = Vec::new();
    let mut added: Vec<Event> = Vec::new();
    for edit in &compaction.lossy_edits {
        match edit {
            LossyEdit::DropConstraintRef(id) => {
                remove_from(&mut envelope, "exact_constraint_refs", id);
                selected.retain(|s| s != id);
            }
            LossyEdit::DropEvidenceRef(id) => {
                remove_from(&mut envelope, "evidence_refs", id);
                selected.retain(|s| s != id);
            }
            LossyEdit::DropEvent(id) => selected.retain(|s| s != id),
            LossyEdit::DropObligation(name) => {
                remove_from(&mut envelope, "pending_obligations", name);
                let ids: BTreeSet<&str> = scenario
                    .history
                    .iter()
                    .filter(|e| matches!(&e.kind, EventKind::ObligationOpened { obligation } if obligation == name))
                    .map(|e| e.id.as_str())
                    .collect();
                selected.retain(|s| !ids.contains(s.as_str()));
            }
            LossyEdit::MarkSideEffectApplied(key) => {
                applied_keys.push(key);
                if envelope.get("idempotency_key").and_then(Value::as_str) == Some(key.as_str()) {
                    envelope.insert(
                        "side_effect_status".to_owned(),
                        Value::from(SideEffectStatus::Applied.as_str()),
                    );
                }
            }
            LossyEdit::InjectInstruction { text, rebind } => {
                summary = format!("{}\n{text}", summary.trim_end());
                if *rebind {
                    envelope.insert(
                        "summary_sha256".to_owned(),
                        Value::String(summary_sha256(&summary).to_string()),
                    );
                }
            }
            LossyEdit::AddEvent(event) => added.push(event.clone()),
            LossyEdit::SetEnvelopeField { field, value } => {
                envelope.insert(field.clone(), value.clone());
            }
        }
    }
    // The envelope's references are resolved from the durable store (E-8).
    let mut reachable: BTreeSet<String> = selected.into_iter().collect();
    reachable.extend(string_array(&envelope, "exact_constraint_refs"));
    reachable.extend(string_array(&envelope, "evidence_refs"));
    let mut kept_events: Vec<Event> = scenario
        .history
        .iter()
        .filter(|e| reachable.contains(&e.id))
        .cloned()
        .map(|mut event| {
            if let EventKind::ToolCall {
                idempotency_key,
                outcome,
                ..
            }
            | EventKind::Reconciliation {
                idempotency_key,
                outcome,
            } = &mut event.kind
                && applied_keys.contains(&idempotency_key.as_str())
            {
                *outcome = SideEffectStatus::Applied;
            }
            event
        })
        .collect();
    kept_events.extend(added);
    CompactedPath {
        envelope: Value::Object(envelope),
        summary,
        kept_events,
    }
}

/// What is known of one approval.
#[derive(Debug, Clone, Default)]
struct ApprovalFact {
    tool: Option<String>,
    expires_at: Option<Timestamp>,
    revoked: bool,
    policy_version: Option<String>,
}

/// What is known of one side-effecting call.
#[derive(Debug, Clone)]
struct CallFact {
    tool: Option<String>,
    status: SideEffectStatus,
}

/// The facts one path knows, folded from its events (and, on the compacted path, its
/// envelope).
#[derive(Debug, Clone, Default)]
struct View {
    identity: Option<(String, String)>,
    policy_version: Option<String>,
    capabilities: BTreeMap<String, String>,
    constraints: Vec<(String, Forbid)>,
    approvals: BTreeMap<String, ApprovalFact>,
    calls: BTreeMap<String, CallFact>,
    obligations: BTreeSet<String>,
    evidence: BTreeSet<String>,
    superseded: BTreeMap<String, String>,
}

impl View {
    fn fold(events: &[Event]) -> Self {
        let mut v = Self::default();
        for event in events {
            match &event.kind {
                EventKind::RunStarted {
                    tenant_id,
                    principal_id,
                } => v.identity = Some((tenant_id.clone(), principal_id.clone())),
                EventKind::UserConstraint { forbid } => {
                    v.constraints.push((event.id.clone(), forbid.clone()));
                }
                EventKind::PolicyVersion { policy_version } => {
                    v.policy_version = Some(policy_version.clone());
                }
                EventKind::CapabilityVersion {
                    capability,
                    version,
                } => {
                    v.capabilities.insert(capability.clone(), version.clone());
                }
                EventKind::ApprovalGranted {
                    approval_id,
                    tool,
                    expires_at,
                    policy_version,
                } => {
                    let fact = v.approvals.entry(approval_id.clone()).or_default();
                    fact.tool = Some(tool.clone());
                    fact.expires_at = Some(*expires_at);
                    fact.policy_version.clone_from(policy_version);
                }
                EventKind::ApprovalRevoked { approval_id } => {
                    v.approvals.entry(approval_id.clone()).or_default().revoked = true;
                }
                EventKind::ToolCall {
                    tool,
                    idempotency_key,
                    outcome,
                } => {
                    v.calls.insert(
                        idempotency_key.clone(),
                        CallFact {
                            tool: Some(tool.clone()),
                            status: *outcome,
                        },
                    );
                }
                EventKind::Reconciliation {
                    idempotency_key,
                    outcome,
                } => {
                    v.calls
                        .entry(idempotency_key.clone())
                        .or_insert(CallFact {
                            tool: None,
                            status: *outcome,
                        })
                        .status = *outcome;
                }
                EventKind::ObligationOpened { obligation } => {
                    v.obligations.insert(obligation.clone());
                }
                EventKind::ObligationClosed { obligation } => {
                    v.obligations.remove(obligation);
                }
                EventKind::Evidence { supersedes } => {
                    v.evidence.insert(event.id.clone());
                    if let Some(old) = supersedes {
                        v.superseded.insert(old.clone(), event.id.clone());
                    }
                }
                EventKind::Observation => {}
            }
        }
        v
    }

    /// Adds what the envelope recorded at the boundary (the latest word on its fields).
    fn absorb(&mut self, env: &ContinuityEnvelope) {
        self.identity = Some((env.tenant_id.as_str().to_owned(), env.principal_id.clone()));
        self.policy_version = Some(env.policy_version.clone());
        self.capabilities
            .insert(env.capability_name.clone(), env.capability_version.clone());
        if let Some(id) = &env.approval_id {
            let fact = self.approvals.entry(id.clone()).or_default();
            fact.tool = Some(env.capability_name.clone());
            fact.expires_at = match (fact.expires_at, env.approval_expires_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if let Some(key) = &env.idempotency_key {
            self.calls.insert(
                key.clone(),
                CallFact {
                    tool: Some(env.capability_name.clone()),
                    status: env.side_effect_status,
                },
            );
        }
        self.obligations
            .extend(env.pending_obligations.iter().cloned());
        self.evidence.extend(env.evidence_refs.iter().cloned());
    }
}

/// The safety rules, the same for both paths, over one view and the durable state.
fn assess(
    view: &View,
    current: &ContinuityState,
    next: &NextAction,
    now: Timestamp,
    d: &mut SafetyAssessment,
) {
    use Strictness::{AskHuman, Block, Reauthorize};
    // (5) Tenant and principal do not change.
    if let Some((tenant, principal)) = &view.identity {
        if tenant != current.tenant_id.as_str()
            || next.tenant_id.as_ref().is_some_and(|t| t != tenant)
        {
            d.add(Block, "tenant_mismatch", format!("run tenant `{tenant}`"));
        }
        if *principal != current.principal_id
            || next.principal_id.as_ref().is_some_and(|p| p != principal)
        {
            d.add(
                Block,
                "principal_mismatch",
                format!("run principal `{principal}`"),
            );
        }
    }
    // (4) An unknown effect is never retried: the durable state has the last word on its key.
    if current.side_effect_status.is_unresolved() {
        let code = if current.side_effect_status == SideEffectStatus::SideEffectUnknown {
            "unknown_side_effect"
        } else {
            "partial_side_effect"
        };
        d.add(
            Block,
            code,
            format!("durable state of `{}`", current.capability_name),
        );
    }
    let mut calls = view.calls.clone();
    if let Some(key) = &current.idempotency_key {
        let fact = calls.entry(key.clone()).or_insert(CallFact {
            tool: Some(current.capability_name.clone()),
            status: current.side_effect_status,
        });
        fact.status = current.side_effect_status;
    }
    for (key, call) in &calls {
        let same_key = next.idempotency_key.as_deref() == Some(key.as_str());
        let same_tool = call.tool.as_deref() == Some(next.tool.as_str());
        if call.status.is_unresolved() && (same_key || same_tool) {
            d.add(
                Block,
                "retry_of_unknown_side_effect",
                format!("`{key}` is {}", call.status),
            );
        } else if call.status == SideEffectStatus::Applied && same_key {
            d.add(
                Reauthorize,
                "duplicate_of_applied_effect",
                format!("`{key}` already applied"),
            );
        }
    }
    // (1) Negative user constraints.
    for (id, forbid) in &view.constraints {
        if forbid.matches(next) {
            d.add(Block, "constraint_violated", format!("constraint `{id}`"));
        }
    }
    // (3) Policy and capability versions.
    if let Some(version) = &view.policy_version
        && *version != current.policy_version
    {
        d.add(
            Reauthorize,
            "policy_version_changed",
            format!("`{version}` → `{}`", current.policy_version),
        );
    }
    for (capability, version) in &view.capabilities {
        let now_version = if *capability == current.capability_name {
            Some(current.capability_version.as_str())
        } else if *capability == next.tool {
            next.capability_version.as_deref()
        } else {
            None
        };
        if let Some(now_version) = now_version
            && now_version != version
        {
            d.add(
                Reauthorize,
                "capability_version_changed",
                format!("`{capability}` `{version}` → `{now_version}`"),
            );
        }
    }
    // (2) Approvals: never reuse an expired, revoked or unknown one.
    if let Some(id) = &next.approval_id {
        let durable = current.approval.as_ref().filter(|a| a.id == *id);
        if let Some(approval) = durable {
            match approval.status {
                crate::ApprovalStatus::Active => {}
                crate::ApprovalStatus::Revoked => {
                    d.add(AskHuman, "approval_revoked", format!("`{id}`"));
                }
                _ => d.add(AskHuman, "approval_not_active", format!("`{id}`")),
            }
            if approval.expires_at <= now {
                d.add(AskHuman, "approval_expired", format!("`{id}`"));
            }
        }
        match view.approvals.get(id) {
            None if durable.is_none() => {
                d.add(AskHuman, "approval_unknown", format!("`{id}`"));
            }
            None => {}
            Some(fact) => {
                if fact.revoked {
                    d.add(AskHuman, "approval_revoked", format!("`{id}`"));
                }
                if fact.expires_at.is_some_and(|t| t <= now) {
                    d.add(AskHuman, "approval_expired", format!("`{id}`"));
                }
                if fact.tool.as_ref().is_some_and(|t| *t != next.tool) {
                    d.add(
                        AskHuman,
                        "approval_for_other_action",
                        format!("`{id}` approves another tool"),
                    );
                }
                if let Some(version) = &fact.policy_version
                    && *version != current.policy_version
                {
                    d.add(
                        Reauthorize,
                        "approval_policy_stale",
                        format!("`{id}` granted under `{version}`"),
                    );
                }
            }
        }
    } else if next.requires_approval {
        d.add(
            AskHuman,
            "approval_missing",
            format!("`{}` needs an approval", next.tool),
        );
    }
    // (7) Pending obligations stay visible.
    if next.ends_task && !view.obligations.is_empty() {
        let open: Vec<&str> = view.obligations.iter().map(String::as_str).collect();
        d.add(AskHuman, "obligation_pending", open.join(", "));
    }
    // (8) Evidence cited after the boundary links to the trace before it.
    for reference in &next.evidence_refs {
        if !view.evidence.contains(reference) {
            d.add(
                Reauthorize,
                "evidence_unlinked",
                format!("`{reference}` is not in the trace"),
            );
        } else if let Some(newer) = view.superseded.get(reference) {
            d.add(
                Reauthorize,
                "evidence_superseded",
                format!("`{reference}` superseded by `{newer}`"),
            );
        }
    }
}

/// Decides the next action on the full history and the durable state.
#[must_use]
pub fn decide_full(
    history: &[Event],
    current: &ContinuityState,
    next: &NextAction,
    now: Timestamp,
) -> SafetyAssessment {
    let mut decision = SafetyAssessment::default();
    assess(&View::fold(history), current, next, now, &mut decision);
    decision
}

/// The level a continuity decision asks for.
fn continuity_strictness(reason: ContinuityReason) -> Strictness {
    use ContinuityReason as R;
    match reason {
        R::ContinuityValidated => Strictness::Allow,
        R::PolicyVersionChanged
        | R::CapabilityChanged
        | R::CapabilityVersionChanged
        | R::ApprovalBindingChanged
        | R::ActionDigestChanged
        | R::IdempotencyKeyChanged
        | R::SideEffectStatusChanged
        | R::CheckpointChanged => Strictness::Reauthorize,
        R::ApprovalRevoked | R::ApprovalNotActive | R::ApprovalExpired => Strictness::AskHuman,
        R::SchemaInvalid
        | R::UnknownSideEffect
        | R::PartialSideEffect
        | R::SummaryDigestMismatch
        | R::TenantMismatch
        | R::PrincipalMismatch
        | R::AuthorizationModeChanged
        | R::DelegatedPrincipalChanged
        | R::DelegatedScopeChanged => Strictness::Block,
    }
}

/// Decides the next action on the compacted path only: the continuity [`decide`] of the
/// envelope against the durable state (the summary is only hashed), then the same safety
/// rules as [`decide_full`] over the kept events and the envelope's fields.
#[must_use]
pub fn decide_compacted(
    envelope: &Value,
    summary: &str,
    kept_events: &[Event],
    current: &ContinuityState,
    next: &NextAction,
    now: Timestamp,
) -> SafetyAssessment {
    let mut decision = SafetyAssessment::default();
    let continuity = decide(envelope, current, summary, now);
    let reason = continuity.reason();
    let detail = match continuity.status() {
        ContinuityStatus::ReauthorizationRequired => "continuity held; the gate decides afresh",
        ContinuityStatus::BlockedOnReconciliation => "blocked on reconciliation",
        ContinuityStatus::ContinuityValidationFailed => "continuity validation failed",
    };
    decision.add(continuity_strictness(reason), reason.as_str(), detail);
    let mut view = View::fold(kept_events);
    if let Ok(valid) = validate_envelope(envelope) {
        let env = valid.envelope();
        view.absorb(env);
        for reference in &env.exact_constraint_refs {
            let resolved = kept_events
                .iter()
                .any(|e| e.id == *reference && matches!(e.kind, EventKind::UserConstraint { .. }));
            if !resolved {
                decision.add(
                    Strictness::AskHuman,
                    "constraint_unresolved",
                    format!("`{reference}` is not in the store"),
                );
            }
        }
    }
    assess(&view, current, next, now, &mut decision);
    decision
}

/// Whether the compacted path held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// The compacted decision is the same as, or stricter than, the full one.
    Pass,
    /// The compacted decision is less strict: the compaction lost something that matters.
    Lossy,
}

impl Fidelity {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Lossy => "lossy",
        }
    }
}

/// One evaluated scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evaluation {
    /// The scenario's name.
    pub scenario: String,
    /// The property it exercises.
    pub property: Property,
    /// What it expected.
    pub expect: Expectation,
    /// The decision on the full history.
    pub full: SafetyAssessment,
    /// The decision on the compacted path.
    pub compacted: SafetyAssessment,
    /// `pass` when compacted ≥ full, `lossy` otherwise.
    pub verdict: Fidelity,
    /// Whether the case held: a `pass` case passed, a `caught` case was flagged, and any
    /// pinned decision matched.
    pub holds: bool,
    /// Why it does not hold (empty when it does).
    pub problems: Vec<String>,
}

/// Decides a scenario on both paths and judges it.
#[must_use]
pub fn evaluate(scenario: &Scenario) -> Evaluation {
    let next = &scenario.next_action;
    let full = decide_full(&scenario.history, &scenario.current, next, scenario.now);
    let path = compact(scenario);
    let compacted = decide_compacted(
        &path.envelope,
        &path.summary,
        &path.kept_events,
        &scenario.current,
        next,
        scenario.now,
    );
    let verdict = if compacted.decision >= full.decision {
        Fidelity::Pass
    } else {
        Fidelity::Lossy
    };
    let mut problems = Vec::new();
    match (scenario.expect, verdict) {
        (Expectation::Pass, Fidelity::Lossy) => problems.push(format!(
            "the compacted path ({}) is less strict than the full history ({})",
            compacted.decision, full.decision
        )),
        (Expectation::Caught, Fidelity::Pass) => problems.push(format!(
            "the deliberately lossy compaction went undetected (full {}, compacted {})",
            full.decision, compacted.decision
        )),
        _ => {}
    }
    for (which, pinned, got) in [
        ("full", scenario.expect_full, full.decision),
        ("compacted", scenario.expect_compacted, compacted.decision),
    ] {
        if let Some(want) = pinned
            && want != got
        {
            problems.push(format!("expected the {which} decision {want}, got {got}"));
        }
    }
    Evaluation {
        scenario: scenario.name.clone(),
        property: scenario.property,
        expect: scenario.expect,
        full,
        compacted,
        verdict,
        holds: problems.is_empty(),
        problems,
    }
}

/// Totals over a set of evaluations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvalSummary {
    /// Scenarios evaluated.
    pub scenarios: usize,
    /// Scenarios that held.
    pub holding: usize,
    /// Scenarios that did not.
    pub failing: usize,
    /// `pass` cases whose compacted path was the same or stricter.
    pub passed: usize,
    /// `caught` cases the harness flagged.
    pub caught: usize,
    /// Properties with at least one `pass` case and one `caught` case that held.
    pub properties_covered: Vec<Property>,
    /// Properties without both.
    pub properties_missing: Vec<Property>,
}

impl EvalSummary {
    /// Totals `rows`.
    #[must_use]
    pub fn of(rows: &[Evaluation]) -> Self {
        let held = |p: Property, e: Expectation| {
            rows.iter()
                .any(|r| r.property == p && r.expect == e && r.holds)
        };
        let (covered, missing): (Vec<Property>, Vec<Property>) = Property::ALL
            .into_iter()
            .partition(|p| held(*p, Expectation::Pass) && held(*p, Expectation::Caught));
        let holding = rows.iter().filter(|r| r.holds).count();
        Self {
            scenarios: rows.len(),
            holding,
            failing: rows.len() - holding,
            passed: rows
                .iter()
                .filter(|r| r.holds && r.expect == Expectation::Pass)
                .count(),
            caught: rows
                .iter()
                .filter(|r| r.holds && r.expect == Expectation::Caught)
                .count(),
            properties_covered: covered,
            properties_missing: missing,
        }
    }

    /// Whether every scenario held.
    #[must_use]
    pub const fn all_hold(&self) -> bool {
        self.failing == 0
    }
}
