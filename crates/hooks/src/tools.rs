//! Tool events: `PreToolUse` puts the call through the gate and records it; `PostToolUse`
//! and `PostToolUseFailure` record what came of it; `UserPromptSubmit` records the prompt
//! as the next observation.
//!
//! # Outcomes
//!
//! - A response becomes the observation `{"step", "result"}` whose digest the next record
//!   names (the same shape `Executor::execute` observes).
//! - A failure whose outcome is known — the tool ran and reported an error, such as a
//!   command's non-zero exit — becomes `{"step", "error"}`. It is not an unknown side
//!   effect: blocking `Bash` after every failing test run would make the hooks unusable.
//! - A failure whose outcome is unknown — interrupted (`is_interrupt`, `interrupted: true`)
//!   or timed out — of a consequential call admitted in this session is recorded as
//!   `side_effect_unknown` under the call's idempotency key `<run>:<step>` (what
//!   `Executor::execute_effect` records), and every consequential call is refused until
//!   `cairn reconcile` names the outcome.

use std::sync::Arc;

use cairn_ledger::record::{Label, ToolRef};
use cairn_runtime::effects::{idempotency_key, unknown_event};
use cairn_runtime::{Admitted, Denial, Executor, ToolCall};
use serde_json::{Value, json};

use crate::answer::Answer;
use crate::error::HookError;
use crate::gate::{HookGate, Restriction};
use crate::input::{ToolOutcome, ToolUse};
use crate::session::PendingStep;

/// The version recorded for host tools (the hosts do not version them).
const TOOL_VERSION: &str = "unversioned";

/// Whether a tool's outcome is unknown: interrupted or timed out after dispatch.
fn outcome_unknown(outcome: &ToolOutcome) -> bool {
    match outcome {
        ToolOutcome::Failure { interrupted, error } => {
            let error = error.to_ascii_lowercase();
            *interrupted || error.contains("timed out") || error.contains("timeout")
        }
        ToolOutcome::Response(value) => ["interrupted", "timed_out", "timedOut"]
            .iter()
            .any(|flag| value.get(flag).and_then(Value::as_bool) == Some(true)),
    }
}

impl crate::engine::Session<'_> {
    /// `PreToolUse`: gate, record, answer.
    pub(crate) fn pre_tool_use(&mut self, tool: &ToolUse) -> Result<Answer, HookError> {
        // The lanes judge file paths below the same resolved root as the guard.
        let guard = self.guard();
        let mut lanes = cairn_runtime::project::load_lanes(&self.project.lanes(), guard.root())?;
        if let Some(book) = lanes.as_mut()
            && !self.config.tools.is_consequential(&tool.name)
        {
            // A tool the hooks know only reads has no effects unless a binding says so
            // (issue 16, B12): a lanes file does not quietly disable `Grep` or `WebFetch`.
            book.bind_read_only(&tool.name);
        }
        let needs_rows = lanes.is_some()
            || self.state.unresolved_hint != Some(false)
            || self.state.boundary.phase == crate::session::Phase::Compacted;
        let policy = self.policy_gate()?;
        let gate = Arc::new(HookGate::new(
            policy,
            self.config.tools.clone(),
            self.env.fault,
        ));
        let (recorder, rows) = self.recorder_and_rows(needs_rows)?;
        let principal = self.config.principal(self.host);
        let as_gate = Arc::clone(&gate) as Arc<dyn cairn_runtime::Gate>;
        let executor = match rows {
            Some(rows) => {
                let mut executor = Executor::resumed(recorder, &rows, as_gate, principal);
                if let Some(lanes) = lanes {
                    executor.adopt_lanes(lanes, &rows)?;
                }
                executor
            }
            None => Executor::new(recorder, as_gate, principal),
        };
        let mut executor = executor.with_guard(guard);
        self.rehydrate_if_due(&mut executor)?;
        let run = executor.recorder().run_id().to_string();
        let consequential = gate.is_consequential(&tool.name);
        let restriction = if consequential {
            self.restriction(&executor, &run)?
        } else {
            None
        };
        gate.restrict(restriction.clone());
        let call = ToolCall {
            tool: ToolRef {
                name: Label::new(&tool.name)?,
                version: Label::new(TOOL_VERSION)?,
            },
            args: tool.input.get().as_bytes(),
            lane: None,
        };
        let admitted = executor.admit(&call)?;
        self.state.observation = executor.recorder().current_observation();
        match admitted {
            Admitted::Permitted(permit) => {
                let step = permit.step_index();
                if let Some(id) = &tool.id {
                    self.state.remember(
                        id.clone(),
                        PendingStep {
                            step,
                            tool: tool.name.clone(),
                            consequential,
                            agent: tool.agent.clone(),
                        },
                    );
                }
                self.state.last_tool = Some(tool.name.clone());
                Ok(Answer::allow(
                    self.host,
                    self.config.explicit_allow,
                    &format!("admitted by Cairn's policy; recorded as step {step} of run `{run}`"),
                ))
            }
            Admitted::Denied(denial) => {
                let reason = denial_reason(&executor, &run, tool, &denial, restriction.as_ref());
                Ok(Answer::deny(&format!(
                    "{reason} (Cairn recorded this refusal as step {} of run `{run}`.)",
                    denial.receipt.step_index
                )))
            }
        }
    }

    /// What blocks consequential calls now: an unresolved side effect first, then the
    /// decision invariants.
    fn restriction(
        &mut self,
        executor: &Executor,
        run: &str,
    ) -> Result<Option<Restriction>, HookError> {
        if let Some((key, tool)) = executor.unresolved().iter().next() {
            return Ok(Some(Restriction {
                rule: crate::gate::RULE_RECONCILIATION,
                reason: "blocked_on_reconciliation",
                message: format!(
                    "Cairn is blocked on reconciliation: a `{tool}` call's side effect has an unknown outcome (idempotency key `{key}`), so no consequential call may run and nothing may be retried blindly. A person must look the effect up and record what happened: cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF"
                ),
            }));
        }
        self.decision_restriction()
    }

    /// `PostToolUse` / `PostToolUseFailure`: record what came of the call.
    pub(crate) fn post_tool_use(
        &mut self,
        tool: &ToolUse,
        outcome: &ToolOutcome,
        event: &str,
    ) -> Result<Answer, HookError> {
        let mut recorder = self.recorder()?;
        let pending = tool.id.as_ref().and_then(|id| self.state.steps.remove(id));
        let mut step = pending.as_ref().map(|p| p.step);
        if step.is_none() && outcome_unknown(outcome) {
            // The state lost the call (a power loss, a state file reset): the latest admitted
            // call of the same tool is the best evidence of which step this was.
            let rows = self
                .store()?
                .rows(recorder.tenant_id(), recorder.run_id())?;
            step = latest_admitted(&rows, &tool.name);
        }
        let consequential = pending.as_ref().map_or_else(
            || self.config.tools.is_consequential(&tool.name),
            |p| p.consequential,
        );
        let error = match outcome {
            ToolOutcome::Failure { error, .. } => error.clone(),
            ToolOutcome::Response(_) => "the call was interrupted or timed out".to_owned(),
        };
        let mut told = Vec::new();
        let observation = match (outcome, step) {
            (outcome, Some(step)) if consequential && outcome_unknown(outcome) => {
                // Saved before the record: a later `PreToolUse` must never skip the records
                // that hold an unresolved side effect.
                self.state.unresolved_hint = Some(true);
                self.files.save(&self.state)?;
                let key = idempotency_key(recorder.run_id().as_str(), step);
                recorder.record_boundary(unknown_event(&key)?, None)?;
                told.push(format!(
                    "[Cairn] The outcome of this `{}` call is unknown ({}), so it may or may not have taken effect. It is recorded under idempotency key `{key}`. Do not retry it: consequential calls are refused until a person checks the effect and runs `cairn reconcile --run {} --key {key} --outcome applied|not_executed --evidence REF`.",
                    tool.name,
                    if error.is_empty() { "interrupted" } else { "interrupted or timed out" },
                    recorder.run_id()
                ));
                json!({"step": step, "error": error, "outcome_unknown": true, "idempotency_key": key})
            }
            (ToolOutcome::Response(value), _) if !outcome_unknown(outcome) => {
                json!({"step": step, "result": value})
            }
            _ => json!({"step": step, "error": error}),
        };
        recorder.observe(&observation)?;
        recorder.flush()?;
        self.state.observation = recorder.current_observation();
        drop(recorder);
        self.rehydrate_standalone_if_due()?;
        Ok(self.answer_with_context(event, told))
    }

    /// `UserPromptSubmit`: the prompt is what the model is shown next.
    pub(crate) fn user_prompt(&mut self, prompt: Option<&str>) -> Result<Answer, HookError> {
        if let Some(prompt) = prompt {
            let mut recorder = self.recorder()?;
            recorder.observe(&json!({ "user_prompt": prompt }))?;
            recorder.flush()?;
            self.state.observation = recorder.current_observation();
        }
        self.rehydrate_standalone_if_due()?;
        Ok(self.answer_with_context("UserPromptSubmit", Vec::new()))
    }

    /// `Stop`: the end of a turn, not of the session. Records are durable already (`sync`);
    /// a consequential call admitted in the turn whose outcome never came is
    /// `side_effect_unknown` now (see [`Self::settle_pending`]); a rehydration still due
    /// (Codex, whose first event after a compaction may be this one) runs now.
    pub(crate) fn stop(&mut self) -> Result<Answer, HookError> {
        let told = self.settle_pending("stop", Settle::MainAgent)?;
        self.rehydrate_standalone_if_due()?;
        Ok(tell_user(&told))
    }

    /// `SubagentStop`: the subagent's calls that never reported an outcome are unknown.
    pub(crate) fn subagent_stop(&mut self, agent: Option<&str>) -> Result<Answer, HookError> {
        let told = match agent {
            Some(agent) => self.settle_pending("subagent_stop", Settle::Agent(agent))?,
            None => Vec::new(),
        };
        Ok(tell_user(&told))
    }

    /// Calls admitted and never followed by their outcome when `event` came — the turn's
    /// `Stop`, `SessionEnd`, or the `SessionStart` of a host that was killed — are over as far
    /// as the host will ever tell: a consequential one may or may not have taken effect (the
    /// host was killed while it ran; Codex left a long command running and never reports on
    /// it). Each is recorded as `side_effect_unknown` under its idempotency key (E-2), which
    /// refuses consequential calls until a person reconciles it. Parallel calls are not
    /// touched before then: a `PreToolUse` for one call before another's `PostToolUse` is
    /// normal. Returns what to tell the user (and the model, where the event can carry it).
    pub(crate) fn settle_pending(
        &mut self,
        event: &str,
        which: Settle<'_>,
    ) -> Result<Vec<String>, HookError> {
        let (over, going_on): (Vec<_>, Vec<_>) = std::mem::take(&mut self.state.steps)
            .into_iter()
            .partition(|(_, pending)| which.covers(pending.agent.as_deref()));
        self.state.steps = going_on.into_iter().collect();
        let consequential: Vec<_> = over.into_iter().filter(|(_, p)| p.consequential).collect();
        if consequential.is_empty() {
            return Ok(Vec::new());
        }
        // Saved before the records, as `post_tool_use` does: a later `PreToolUse` must never
        // skip the records that hold an unresolved side effect. The steps stay listed until
        // their record is written.
        self.state.steps.extend(consequential.iter().cloned());
        self.state.unresolved_hint = Some(true);
        self.files.save(&self.state)?;
        let mut recorder = self.recorder()?;
        let run = recorder.run_id().to_string();
        let mut told = Vec::new();
        for (id, pending) in consequential {
            let key = idempotency_key(&run, pending.step);
            let mut record = unknown_event(&key)?;
            record.reason = Some(Label::new(format!("no_outcome_by_{event}"))?);
            recorder.record_boundary(record, None)?;
            self.state.steps.remove(&id);
            told.push(format!(
                "[Cairn] The `{}` call admitted as step {} never reported its outcome before `{event}` (the host was stopped while it ran, or left it running), so it may or may not have taken effect. It is recorded as side_effect_unknown under idempotency key `{key}`; consequential calls are refused until a person checks the effect and runs `cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`.",
                pending.tool, pending.step
            ));
        }
        recorder.flush()?;
        self.state.observation = recorder.current_observation();
        Ok(told)
    }

    /// The answer of an event that can carry context for the model: the pending re-injected
    /// context and `extra`, if any.
    fn answer_with_context(&mut self, event: &str, mut extra: Vec<String>) -> Answer {
        if let Some(context) = self.state.context.take() {
            extra.insert(0, context);
        }
        if extra.is_empty() {
            Answer::silent()
        } else {
            Answer::context(event, &extra.join("\n\n"))
        }
    }
}

/// The answer of an event that can only speak to the user: `told`, if anything.
fn tell_user(told: &[String]) -> Answer {
    if told.is_empty() {
        Answer::silent()
    } else {
        Answer::system_message(&told.join("\n"))
    }
}

/// Whose calls are over at an event.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Settle<'a> {
    /// The main agent's (its turn ended: `Stop`); subagents may still be working.
    MainAgent,
    /// One subagent's (`SubagentStop`).
    Agent(&'a str),
    /// Everyone's (the session ended, or a new host process started).
    All,
}

impl Settle<'_> {
    fn covers(self, agent: Option<&str>) -> bool {
        match self {
            Self::MainAgent => agent.is_none(),
            Self::Agent(id) => agent == Some(id),
            Self::All => true,
        }
    }
}

/// The step of the latest call of `tool` the gate admitted in `rows`.
fn latest_admitted(rows: &[cairn_ledger::store::StoredRow], tool: &str) -> Option<u64> {
    rows.iter()
        .rev()
        .filter_map(|row| row.as_ref().ok())
        .find(|record| {
            record
                .tool
                .as_ref()
                .is_some_and(|t| t.name.as_str() == tool)
                && record
                    .admission
                    .as_ref()
                    .is_some_and(|a| a.decision == cairn_ledger::record::AllowDeny::Allow)
        })
        .map(|record| record.step_index)
}

/// What the model is told about a refusal, with the command that resolves it.
fn denial_reason(
    executor: &Executor,
    run: &str,
    tool: &ToolUse,
    denial: &Denial,
    restriction: Option<&Restriction>,
) -> String {
    let name = &tool.name;
    let rules = denial.rule_ids.join(", ");
    match denial.reason {
        "unresolved_side_effect" => {
            let key = executor.unresolved().blocking(name).unwrap_or("?");
            format!(
                "Cairn denied `{name}`: an earlier `{name}` call's side effect has an unknown outcome (idempotency key `{key}`); it must not be retried blindly (rule {rules}). Once a person has checked the effect: cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF"
            )
        }
        "outside_lane" if rules == "cairn.lane-unbound-tool" => {
            let detail = denial.detail.as_deref().unwrap_or_default();
            format!(
                "Cairn denied `{name}` (rule {rules}): {detail}. Ask the user to add the binding; a lane ruling does not help here."
            )
        }
        "outside_lane" => {
            let detail = denial.detail.as_deref().unwrap_or_default();
            format!(
                "Cairn denied `{name}`: the call lies outside the active lane (rule {rules}): {detail}. Work within the lane, or ask the user for a lane ruling."
            )
        }
        "self_protection" => format!(
            "Cairn denied `{name}` (rule {rules}): {}. The agent never changes Cairn's policies, lanes, keys, store or hook settings, nor runs a person's commands (approvals, reconciliations); ask the user to do it outside the session.",
            denial
                .detail
                .as_deref()
                .unwrap_or("the call touches Cairn's own configuration")
        ),
        "args_unreadable" => format!(
            "Cairn denied `{name}` (rule {rules}): {}. The policies judge exactly the arguments that are recorded, so arguments Cairn cannot read exactly are refused; send them as plain JSON (valid escapes, no repeated keys, at most {} levels of nesting).",
            denial
                .detail
                .as_deref()
                .unwrap_or("the arguments are not strict JSON"),
            cairn_core::strict_json::MAX_DEPTH
        ),
        _ => match restriction.filter(|r| denial.reason == r.reason) {
            Some(restriction) => format!(
                "Cairn denied `{name}` (rule {}): {}",
                restriction.rule, restriction.message
            ),
            None if rules.is_empty() => format!(
                "Cairn denied `{name}`: no policy permits it (default deny, reason `{}`). See why: cairn policy explain --tool {name} --args '<the call's arguments>'",
                denial.reason
            ),
            None => format!(
                "Cairn denied `{name}`: policy rule {rules} (reason `{}`). See why: cairn policy explain --tool {name} --args '<the call's arguments>'",
                denial.reason
            ),
        },
    }
}
