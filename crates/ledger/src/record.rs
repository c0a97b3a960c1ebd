//! The intent record `cairn.intent/v1` (SPEC I-1, I-2): one record per step, boundary or
//! terminal event, emitted by the executor, chained to its predecessor by digest.
//!
//! This is a versioned public format. A record's `digest` is `sha256` over the RFC 8785
//! canonical form of the record without its `digest` field; `prev_digest` is the digest of the
//! previous record of the same run (null for step 0). Records hold only identifiers, names,
//! sizes and digests (I-7): never raw arguments, observations, prompts or secrets.

use std::fmt;

use cairn_core::canonical::jcs;
use cairn_core::{Canonicalization, CoreError, Digest, LaneId, RunId, TaskId, TenantId, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// The schema tag written into every record.
pub const INTENT_SCHEMA: &str = "cairn.intent/v1";

/// The longest free-text label (rule id, tool name, reference) a record accepts.
pub const MAX_LABEL_LEN: usize = 256;

/// The schema tag; a single-valued enum so a record of another schema fails to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum IntentSchema {
    /// `cairn.intent/v1`.
    #[serde(rename = "cairn.intent/v1")]
    V1,
}

/// What a record stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A tool call decided by the gate (allowed or denied).
    Step,
    /// A compaction, reset, restart, handoff, rehydration or reconciliation.
    Boundary,
    /// The one record that closes a run.
    Terminal,
}

impl RecordKind {
    /// The lowercase name used in records and tables.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Step => "step",
            Self::Boundary => "boundary",
            Self::Terminal => "terminal",
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A short, printable, bounded text: tool names, versions, rule ids, references.
///
/// It cannot hold control characters or more than [`MAX_LABEL_LEN`] bytes, so an unbounded
/// prompt or payload cannot be smuggled into a structural record through it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[schemars(transparent)]
pub struct Label(#[schemars(length(min = 1, max = 256))] String);

impl Label {
    /// Validates `text` as a label.
    ///
    /// # Errors
    /// [`CoreError::InvalidId`] when `text` is empty, too long or has control characters.
    pub fn new(text: impl Into<String>) -> Result<Self, CoreError> {
        let text = text.into();
        let reason = if text.is_empty() {
            Some("must not be empty")
        } else if text.len() > MAX_LABEL_LEN {
            Some("must be at most 256 bytes")
        } else if text.chars().any(char::is_control) {
            Some("must not contain control characters")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(CoreError::InvalidId {
                kind: "label",
                value: text.chars().take(40).collect(),
                reason,
            }),
            None => Ok(Self(text)),
        }
    }

    /// The label text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// The concrete capability called: not a generic label but the tool and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRef {
    /// The tool's name as the executor dispatches it.
    pub name: Label,
    /// The tool's version (or `unversioned`).
    pub version: Label,
}

/// The arguments as submitted, by digest and size; the bytes themselves live in the content
/// store if retention allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgsRef {
    /// SHA-256 of the argument bytes exactly as submitted, before any normalisation.
    pub digest: Digest,
    /// Their length in bytes.
    pub size: u64,
}

pub use cairn_core::AllowDeny;

/// Which rules admitted or denied a call, under which policy-set version.
///
/// An empty `rule_ids` with `deny` is an explicit default deny: no rule covered the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Admission {
    /// The verdict.
    pub decision: AllowDeny,
    /// The digest of the canonical policy text in force.
    pub policy_set_version: Digest,
    /// The determining rule ids.
    pub rule_ids: Vec<Label>,
}

/// Why a run ended (I-2). Successful runs are closed too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TerminationReason {
    /// The task finished.
    Completed,
    /// A budget (steps, tokens, money, time) ran out.
    BudgetExhausted,
    /// The gate refused what the run needed to continue.
    PolicyDenied,
    /// The executor failed.
    Error,
    /// The run exceeded its time limit.
    Timeout,
    /// A person or system cancelled the run.
    Cancelled,
}

impl TerminationReason {
    /// Every reason, in the order the specification lists them.
    pub const ALL: [Self; 6] = [
        Self::Completed,
        Self::BudgetExhausted,
        Self::PolicyDenied,
        Self::Error,
        Self::Timeout,
        Self::Cancelled,
    ];

    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::BudgetExhausted => "budget_exhausted",
            Self::PolicyDenied => "policy_denied",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for TerminationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TerminationReason {
    type Err = CoreError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| CoreError::InvalidId {
                kind: "termination reason",
                value: text.chars().take(40).collect(),
                reason: "expected completed, budget_exhausted, policy_denied, error, timeout or cancelled",
            })
    }
}

/// The closing of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Termination {
    /// A short code-like detail (never a payload or a prompt).
    pub detail: Option<Label>,
    /// Why the run ended.
    pub reason: TerminationReason,
}

/// An inclusive range of event (step) indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventRange {
    /// The first index in the range.
    pub first: u64,
    /// The last index in the range.
    pub last: u64,
}

/// What a boundary record carries (E-8): ids, ranges, digests and stable codes — never
/// secrets or unbounded prompt text. Absent fields are omitted from the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoundaryEvent {
    /// What an approval event binds (`approval_requested`, `approval_granted`,
    /// `approval_refused`, `approval_revoked`, `approval_used`, `approval_expired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<ApprovalEvent>>,
    /// The digest of the saved envelope's RFC 8785 form, binding the stored envelope to this
    /// record so that an altered envelope is detected when it is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope_digest: Option<Digest>,
    /// The continuity envelope saved or loaded at this boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope_id: Option<Label>,
    /// The event type: `context_compaction`, `context_rehydration`,
    /// `continuity_validation_failed`, `reconciliation`, `reset`, `restart`, `handoff`, …
    pub event: Label,
    /// A reference to external evidence (for example a lookup by idempotency key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_ref: Option<Label>,
    /// The idempotency key a reconciliation resolves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<Label>,
    /// What a lane event binds: the digest of the lane definition a ruling set, of the
    /// handoff's signed text, or of what a lane was revalidated against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane_digest: Option<Digest>,
    /// The classes of control state preserved in the envelope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preserved: Vec<Label>,
    /// A stable reason code (for example a continuity decision's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Label>,
    /// A side-effect state (`not_executed`, `applied`, `side_effect_unknown`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effect_status: Option<Label>,
    /// The events summarised across this boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_event_range: Option<EventRange>,
    /// The digest binding the derived summary to the source events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_digest: Option<Digest>,
    /// The envelope this one supersedes (reconciliation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes_envelope_id: Option<Label>,
    /// What caused it (`manual`, `auto`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Label>,
}

impl BoundaryEvent {
    /// A boundary event of type `event` with no other detail.
    #[must_use]
    pub fn new(event: Label) -> Self {
        Self {
            approval: None,
            event,
            trigger: None,
            envelope_id: None,
            envelope_digest: None,
            supersedes_envelope_id: None,
            source_event_range: None,
            summary_digest: None,
            reason: None,
            preserved: Vec::new(),
            idempotency_key: None,
            lane_digest: None,
            side_effect_status: None,
            evidence_ref: None,
        }
    }
}

/// An approval's part of a boundary record (SPEC T-4): the request a held call raised, a
/// person's decision on it, its use by the call it admitted, its revocation or expiry. Ids,
/// digests, counts and instants only (I-7): the arguments are bound by digest.
///
/// INVARIANT: fields are declared in code-point order (the record's fast canonical path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalEvent {
    /// The digest of the exact action: the tool, its version and the RFC 8785 form of the
    /// arguments (`sha256` over `{"args":…,"tool":…,"version":…}` in canonical form).
    pub action_digest: Digest,
    /// Who decided or revoked (`os:<user>` locally, `token:<name>` over the service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<Label>,
    /// The host's id of the held call (`tool_use_id`, `call_id`), when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<Label>,
    /// Until when the request may be decided (`approval_requested`), or the approval used
    /// (`approval_granted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// The request's id, `apr-` and 24 hex digits.
    pub id: Label,
    /// The request's random nonce (`approval_requested`): the id is derived from it, the run
    /// and the held step, so an id names one request of one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<Label>,
    /// The policy-set version the call was held under (`approval_requested`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_set_version: Option<Digest>,
    /// The held step (`approval_requested`), or the step the approval admitted
    /// (`approval_used`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// The tool held (`approval_requested`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolRef>,
    /// How many calls the approval admits (`approval_granted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<u64>,
}

/// One record of the ledger, exactly as stored and exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "cairn.intent/v1",
    description = "One step, boundary or terminal record of a Cairn run."
)]
pub struct IntentRecord {
    /// Always `cairn.intent/v1`.
    pub schema: IntentSchema,
    /// How `digest` was computed; always `jcs` (RFC 8785).
    pub canonicalization: Canonicalization,
    /// The tenant the run belongs to.
    pub tenant_id: TenantId,
    /// The run this record belongs to.
    pub run_id: RunId,
    /// The user-authorised task the run executes.
    pub task_id: TaskId,
    /// 0, 1, 2, … within the run, with no gaps.
    pub step_index: u64,
    /// Step, boundary or terminal.
    pub kind: RecordKind,
    /// The responsibility lane the event is bound to, if any.
    pub lane_id: Option<LaneId>,
    /// The capability called (steps only).
    pub tool: Option<ToolRef>,
    /// The agent that made the call, when it is not the run's main agent (steps only): a
    /// host's subagent, as `<agent type>:<agent id>`. Absent from the record otherwise (so a
    /// record without it is exactly a record of before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Label>,
    /// The arguments as submitted (steps only).
    pub args: Option<ArgsRef>,
    /// The gate's decision (steps only).
    pub admission: Option<Admission>,
    /// `H(canonical_json(observation))` of what the model was shown before this record.
    pub observation_digest: Option<Digest>,
    /// Boundary details (boundary records only).
    pub boundary: Option<BoundaryEvent>,
    /// Why the run ended (terminal records only).
    pub termination: Option<Termination>,
    /// When the executor wrote the record.
    pub recorded_at: Timestamp,
    /// The digest of the previous record of the run; null for step 0.
    pub prev_digest: Option<Digest>,
    /// SHA-256 over the canonical form of this record without `digest`.
    pub digest: Digest,
}

/// The body of a record before it is chained: everything the executor decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordDraft {
    /// The tenant the run belongs to.
    pub tenant_id: TenantId,
    /// The run.
    pub run_id: RunId,
    /// The task.
    pub task_id: TaskId,
    /// What kind of event, with its kind-specific content.
    pub event: DraftEvent,
    /// The lane, if any.
    pub lane_id: Option<LaneId>,
    /// The observation digest, if any.
    pub observation_digest: Option<Digest>,
    /// When it is recorded.
    pub recorded_at: Timestamp,
}

/// The kind-specific content of a draft; makes a step without admission unrepresentable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftEvent {
    /// A tool call and its admission.
    Step {
        /// The capability.
        tool: ToolRef,
        /// The arguments as submitted.
        args: ArgsRef,
        /// The gate's decision.
        admission: Admission,
        /// The agent that made the call, when not the run's main agent.
        agent: Option<Label>,
    },
    /// A boundary event.
    Boundary(BoundaryEvent),
    /// The end of the run.
    Terminal(Termination),
}

/// The borrowed view hashed to obtain a record's digest: every field but `digest`.
///
/// INVARIANT: lists exactly the fields of [`IntentRecord`] except `digest`; the test
/// `preimage_is_the_record_without_its_digest` fails if the two drift apart.
#[derive(Serialize)]
struct Preimage<'a> {
    admission: &'a Option<Admission>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: &'a Option<Label>,
    args: &'a Option<ArgsRef>,
    boundary: &'a Option<BoundaryEvent>,
    canonicalization: Canonicalization,
    kind: RecordKind,
    lane_id: &'a Option<LaneId>,
    observation_digest: &'a Option<Digest>,
    prev_digest: &'a Option<Digest>,
    recorded_at: &'a Timestamp,
    run_id: &'a RunId,
    schema: IntentSchema,
    step_index: u64,
    task_id: &'a TaskId,
    tenant_id: &'a TenantId,
    termination: &'a Option<Termination>,
    tool: &'a Option<ToolRef>,
}

impl IntentRecord {
    /// Chains `draft` after a predecessor: assigns the step index and `prev_digest`, and
    /// computes the digest.
    ///
    /// # Errors
    /// [`CoreError::Canonicalization`] if the record cannot be canonicalised (never for
    /// records built from validated parts).
    pub fn seal(
        draft: RecordDraft,
        step_index: u64,
        prev_digest: Option<Digest>,
    ) -> Result<Self, CoreError> {
        SealedRecord::seal(draft, step_index, prev_digest).map(SealedRecord::into_record)
    }

    fn unsealed(draft: RecordDraft, step_index: u64, prev_digest: Option<Digest>) -> Self {
        let (kind, tool, args, admission, boundary, termination, agent) = match draft.event {
            DraftEvent::Step {
                tool,
                args,
                admission,
                agent,
            } => (
                RecordKind::Step,
                Some(tool),
                Some(args),
                Some(admission),
                None,
                None,
                agent,
            ),
            DraftEvent::Boundary(b) => {
                (RecordKind::Boundary, None, None, None, Some(b), None, None)
            }
            DraftEvent::Terminal(t) => {
                (RecordKind::Terminal, None, None, None, None, Some(t), None)
            }
        };
        Self {
            schema: IntentSchema::V1,
            canonicalization: Canonicalization::Jcs,
            tenant_id: draft.tenant_id,
            run_id: draft.run_id,
            task_id: draft.task_id,
            step_index,
            kind,
            lane_id: draft.lane_id,
            tool,
            agent,
            args,
            admission,
            observation_digest: draft.observation_digest,
            boundary,
            termination,
            recorded_at: draft.recorded_at,
            prev_digest,
            digest: Digest::from_bytes([0; 32]),
        }
    }

    /// The canonical bytes the digest is computed over.
    ///
    /// # Errors
    /// [`CoreError::Canonicalization`] if serialisation fails.
    pub fn preimage_bytes(&self) -> Result<Vec<u8>, CoreError> {
        let preimage = Preimage {
            admission: &self.admission,
            agent: &self.agent,
            args: &self.args,
            boundary: &self.boundary,
            canonicalization: self.canonicalization,
            kind: self.kind,
            lane_id: &self.lane_id,
            observation_digest: &self.observation_digest,
            prev_digest: &self.prev_digest,
            recorded_at: &self.recorded_at,
            run_id: &self.run_id,
            schema: self.schema,
            step_index: self.step_index,
            task_id: &self.task_id,
            tenant_id: &self.tenant_id,
            termination: &self.termination,
            tool: &self.tool,
        };
        if !self.integers_are_safe() {
            return jcs(&preimage);
        }
        // INVARIANT: every struct reachable from `Preimage` declares its fields in code-point
        // order and every key is ASCII, every string is escaped as RFC 8785 escapes it, and
        // every integer is a JavaScript-safe integer — so compact serde_json output *is* the
        // RFC 8785 form. Debug builds (every test) check it against the reference.
        let mut out = Vec::with_capacity(1024);
        serde_json::to_writer(&mut out, &preimage).map_err(|e| CoreError::Canonicalization {
            reason: e.to_string(),
        })?;
        debug_assert_eq!(
            Ok(&out),
            jcs(&preimage).as_ref(),
            "the record fast path diverged from RFC 8785"
        );
        Ok(out)
    }

    /// Whether every integer in the record prints exactly in RFC 8785 (at most 2^53 − 1).
    fn integers_are_safe(&self) -> bool {
        use cairn_core::fast_jcs::MAX_SAFE_INTEGER;
        let range_ok = self
            .boundary
            .as_ref()
            .and_then(|b| b.source_event_range)
            .is_none_or(|r| r.first <= MAX_SAFE_INTEGER && r.last <= MAX_SAFE_INTEGER);
        let approval_ok = self
            .boundary
            .as_ref()
            .and_then(|b| b.approval.as_ref())
            .is_none_or(|a| {
                a.step.is_none_or(|s| s <= MAX_SAFE_INTEGER)
                    && a.uses.is_none_or(|u| u <= MAX_SAFE_INTEGER)
            });
        self.step_index <= MAX_SAFE_INTEGER
            && self
                .args
                .as_ref()
                .is_none_or(|a| a.size <= MAX_SAFE_INTEGER)
            && range_ok
            && approval_ok
    }

    /// Recomputes the digest from the record's content.
    ///
    /// # Errors
    /// As [`Self::preimage_bytes`].
    pub fn compute_digest(&self) -> Result<Digest, CoreError> {
        self.preimage_bytes().map(|bytes| Digest::of(&bytes))
    }

    /// Checks that the fields present match the kind: a step has a tool, arguments and an
    /// admission; a boundary its event; a terminal record its termination; and nothing else.
    ///
    /// # Errors
    /// A message naming the first field that does not fit.
    pub fn check_shape(&self) -> Result<(), String> {
        let want = |present: bool, wanted: bool, field: &str| {
            if present == wanted {
                Ok(())
            } else if wanted {
                Err(format!("a {} record needs `{field}`", self.kind))
            } else {
                Err(format!("a {} record must not carry `{field}`", self.kind))
            }
        };
        let step = self.kind == RecordKind::Step;
        want(self.tool.is_some(), step, "tool")?;
        want(self.args.is_some(), step, "args")?;
        want(self.admission.is_some(), step, "admission")?;
        want(
            self.boundary.is_some(),
            self.kind == RecordKind::Boundary,
            "boundary",
        )?;
        want(
            self.termination.is_some(),
            self.kind == RecordKind::Terminal,
            "termination",
        )?;
        match (self.step_index, &self.prev_digest) {
            (0, Some(_)) => Err("step 0 must have a null `prev_digest`".to_owned()),
            (n, None) if n > 0 => Err(format!("step {n} needs a `prev_digest`")),
            _ => Ok(()),
        }
    }

    /// The record as one line of compact JSON (no trailing newline), as exported.
    ///
    /// # Errors
    /// If serialisation fails (it does not for valid records).
    pub fn to_json_line(&self) -> Result<String, CoreError> {
        let preimage = self.preimage_bytes()?;
        json_line(preimage, &self.digest)
    }
}

/// The record's JSON line: its canonical preimage with the digest appended as the last
/// member. Any JSON reader parses it back to the same record.
fn json_line(mut preimage: Vec<u8>, digest: &Digest) -> Result<String, CoreError> {
    // The preimage is a JSON object, so it ends with `}` and has at least one member.
    if preimage.pop() != Some(b'}') {
        return Err(CoreError::Canonicalization {
            reason: "a record preimage must be a JSON object".to_owned(),
        });
    }
    preimage.extend_from_slice(b",\"digest\":\"");
    preimage.extend_from_slice(digest.to_string().as_bytes());
    preimage.extend_from_slice(b"\"}");
    String::from_utf8(preimage).map_err(|e| CoreError::Canonicalization {
        reason: e.to_string(),
    })
}

/// A sealed record together with its JSON line, serialised once: what the executor hands to
/// a store, which writes the line as the record's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedRecord {
    record: IntentRecord,
    json: String,
}

impl SealedRecord {
    /// Chains `draft` after a predecessor (see [`IntentRecord::seal`]), canonicalising it once
    /// for both its digest and its JSON line.
    ///
    /// # Errors
    /// [`CoreError::Canonicalization`] if the record cannot be canonicalised.
    pub fn seal(
        draft: RecordDraft,
        step_index: u64,
        prev_digest: Option<Digest>,
    ) -> Result<Self, CoreError> {
        let mut record = IntentRecord::unsealed(draft, step_index, prev_digest);
        let preimage = record.preimage_bytes()?;
        record.digest = Digest::of(&preimage);
        let json = json_line(preimage, &record.digest)?;
        Ok(Self { record, json })
    }

    /// Wraps an already sealed record (computing its line).
    ///
    /// # Errors
    /// As [`IntentRecord::to_json_line`].
    pub fn from_record(record: IntentRecord) -> Result<Self, CoreError> {
        let json = record.to_json_line()?;
        Ok(Self { record, json })
    }

    /// The same record sealed again at another place in its run's chain — step
    /// `step_index` after `prev_digest` — for a writer whose step another writer took first.
    ///
    /// # Errors
    /// [`CoreError::Canonicalization`] if the record cannot be canonicalised.
    pub fn rechain(self, step_index: u64, prev_digest: Option<Digest>) -> Result<Self, CoreError> {
        let mut record = self.record;
        record.step_index = step_index;
        record.prev_digest = prev_digest;
        let preimage = record.preimage_bytes()?;
        record.digest = Digest::of(&preimage);
        let json = json_line(preimage, &record.digest)?;
        Ok(Self { record, json })
    }

    /// The record.
    #[must_use]
    pub const fn record(&self) -> &IntentRecord {
        &self.record
    }

    /// The record's JSON line (no trailing newline).
    #[must_use]
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The record, dropping its line.
    #[must_use]
    pub fn into_record(self) -> IntentRecord {
        self.record
    }
}

/// The JSON Schema of `cairn.intent/v1`, generated from the types (checked in as
/// `schemas/cairn.intent.v1.schema.json`), with every object's keys sorted so the text is the
/// same whichever features of `serde_json` the build happens to unify (`preserve_order`,
/// which a dependency enables, would otherwise keep declaration order).
#[must_use]
pub fn intent_record_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<IntentRecord>();
    let mut value = serde_json::to_value(schema).map_or(serde_json::Value::Null, sorted);
    // Every top-level field (and both of `termination`'s) is always written, null when it
    // does not apply — but `agent`, written only when a subagent made the call (so records
    // without it are byte for byte those of before the field). `#[schemars(required)]` on an
    // `Option` would also forbid the null, so the requirement is added here instead.
    for pointer in ["", "/$defs/Termination"] {
        if let Some(schema) = value.pointer_mut(pointer) {
            require_all_properties(schema);
        }
    }
    if let Some(required) = value.get_mut("required").and_then(|r| r.as_array_mut()) {
        required.retain(|name| name.as_str() != Some(OPTIONAL_FIELD));
    }
    value
}

/// The one field of a record that is left out rather than written null when it does not
/// apply.
const OPTIONAL_FIELD: &str = "agent";

/// Sets an object schema's `required` to all of its properties, in sorted order.
fn require_all_properties(schema: &mut serde_json::Value) {
    let Some(names) = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| {
            let mut names: Vec<String> = p.keys().cloned().collect();
            names.sort();
            names
        })
    else {
        return;
    };
    if let Some(object) = schema.as_object_mut() {
        object.insert("required".to_owned(), serde_json::Value::from(names));
    }
}

/// Rebuilds every object with its keys in sorted order.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(String, serde_json::Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(step_index: u64, prev: Option<Digest>) -> IntentRecord {
        let draft = RecordDraft {
            tenant_id: "acme".parse().unwrap(),
            run_id: "run-1".parse().unwrap(),
            task_id: "task-1".parse().unwrap(),
            event: DraftEvent::Step {
                tool: ToolRef {
                    name: Label::new("tickets.create").unwrap(),
                    version: Label::new("2").unwrap(),
                },
                args: ArgsRef {
                    digest: Digest::of(b"{}"),
                    size: 2,
                },
                admission: Admission {
                    decision: AllowDeny::Allow,
                    policy_set_version: Digest::of(b"policy"),
                    rule_ids: vec![Label::new("support.write").unwrap()],
                },
                agent: None,
            },
            lane_id: None,
            observation_digest: Some(Digest::of(b"obs")),
            recorded_at: "2026-11-30T06:00:00Z".parse().unwrap(),
        };
        IntentRecord::seal(draft, step_index, prev).unwrap()
    }

    #[test]
    fn preimage_is_the_record_without_its_digest() {
        let record = sample(1, Some(Digest::of(b"prev")));
        let mut value = serde_json::to_value(&record).unwrap();
        value.as_object_mut().unwrap().remove("digest");
        assert_eq!(jcs(&value).unwrap(), record.preimage_bytes().unwrap());
        assert_eq!(record.digest, Digest::of(&jcs(&value).unwrap()));
    }

    #[test]
    fn a_record_sealed_again_elsewhere_is_the_record_sealed_there() {
        let prev = Some(Digest::of(b"another writer's head"));
        let moved = SealedRecord::from_record(sample(0, None))
            .unwrap()
            .rechain(5, prev)
            .unwrap();
        let there = SealedRecord::from_record(sample(5, prev)).unwrap();
        assert_eq!(moved, there);
    }

    #[test]
    fn a_record_round_trips_through_its_json_line() {
        let record = sample(0, None);
        let line = record.to_json_line().unwrap();
        let back: IntentRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.compute_digest().unwrap(), record.digest);
        assert!(record.check_shape().is_ok());
    }

    #[test]
    fn unknown_fields_and_other_schemas_are_refused() {
        let line = sample(0, None).to_json_line().unwrap();
        let extra = line.replacen('{', "{\"note\":\"x\",", 1);
        assert!(serde_json::from_str::<IntentRecord>(&extra).is_err());
        let other = line.replace("cairn.intent/v1", "cairn.intent/v9");
        assert!(serde_json::from_str::<IntentRecord>(&other).is_err());
    }

    #[test]
    fn labels_refuse_control_characters_and_unbounded_text() {
        assert!(Label::new("ok label").is_ok());
        assert!(Label::new("line\nbreak").is_err());
        assert!(Label::new("x".repeat(257)).is_err());
        assert!(Label::new("").is_err());
    }

    #[test]
    fn shape_rules_follow_the_kind() {
        let mut record = sample(0, None);
        record.termination = Some(Termination {
            reason: TerminationReason::Completed,
            detail: None,
        });
        assert!(record.check_shape().unwrap_err().contains("termination"));
        let mut record = sample(1, None);
        record.prev_digest = None;
        assert!(record.check_shape().unwrap_err().contains("prev_digest"));
    }
}
