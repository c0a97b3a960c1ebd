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
//! [`decide`](crate::decision::decide) (envelope against the durable state, summary by digest only) and folds what the
//! compaction kept: the selected events, the records the envelope references (exact
//! constraints and evidence stay in the store, E-8) and the envelope's own fields. Both then
//! apply the same safety rules. Neither reads the summary's text: instructions injected into
//! it can only change the digest check.

mod assess;
mod compaction;
mod read;
mod scenario;

use serde::Serialize;

pub use assess::{Reason, SafetyAssessment, decide_compacted, decide_full};
pub use compaction::{CompactedPath, compact};
pub use read::{ScenarioError, ScenarioErrorCode};
pub use scenario::{
    Compaction, Event, EventKind, Expectation, Forbid, LossyEdit, NextAction, Property, Scenario,
    Strictness,
};

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
