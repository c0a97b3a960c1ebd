//! Tool events: `PreToolUse` puts the call through the gate and records it; `PostToolUse`
//! and `PostToolUseFailure` record what came of it; `UserPromptSubmit` records the prompt
//! as the next observation.
//!
//! # Outcomes
//!
//! What a report says is read by [`crate::outcome::classify`] against the shapes the pinned
//! hosts report; anything Cairn cannot read is unknown, never done.
//!
//! - A response of a call that ran to its end becomes the observation `{"step", "result"}`
//!   whose digest the next record names (the same shape `Executor::execute` observes).
//! - A failure whose outcome is known — the tool ran and reported an error, such as a
//!   command's non-zero exit — becomes `{"step", "error"}`. It is not an unknown side
//!   effect: blocking `Bash` after every failing test run would make the hooks unusable.
//! - A consequential call whose outcome is not known — interrupted, timed out, killed by a
//!   signal, moved to the background, or reported in a shape Cairn does not recognise — is
//!   recorded as `side_effect_unknown` under the call's idempotency key `<run>:<step>` (what
//!   `Executor::execute_effect` records), with the reason, and every consequential call is
//!   refused until its outcome is observed — the host's report that a background task ran to
//!   its own end (Claude Code's `<task-notification>`), recorded as a reconciliation whose
//!   evidence is that report — or until `cairn reconcile` names it.
//! - A response that does not read as JSON at all is still observed: by the digest of the
//!   exact bytes the host sent.

use std::sync::Arc;

use cairn_runtime::approvals::{ApprovalId, ApprovalOptions};
use cairn_runtime::continuity::AuthorizationMode;
use cairn_runtime::effects::{idempotency_key, unknown_event};
use cairn_runtime::ledger::record::{Label, ToolRef};
use cairn_runtime::reconcile::{ObservedOutcome, reconcile_with};
use cairn_runtime::{
    Admitted, ApprovalDenial, CallContext, DenyCause, Executor, Replay, RuntimeError, ToolCall,
};
use serde_json::{Value, json};

use crate::answer::Answer;
use crate::error::HookError;
use crate::gate::HookGate;
use crate::input::{ToolOutcome, ToolUse};
use crate::outcome::OutcomeClass;
use crate::session::{BackgroundCall, PendingStep};
use cairn_runtime::restrictions::Restriction;

/// The version recorded for host tools (the hosts do not version them).
const TOOL_VERSION: &str = "unversioned";

/// The observation of a call's report: its result, its error, or — when the response does
/// not read as JSON — the digest of the exact bytes the host sent, so that nothing the model
/// was shown goes unrecorded.
fn observed(step: Option<u64>, outcome: &ToolOutcome, class: &OutcomeClass) -> Value {
    match outcome {
        ToolOutcome::Failure { error, .. } => json!({"step": step, "error": error}),
        ToolOutcome::Response(response) => match response.value() {
            Some(value)
                if class.is_known() || matches!(class, OutcomeClass::Backgrounded { .. }) =>
            {
                json!({"step": step, "result": value})
            }
            Some(value) => json!({"step": step, "result": value, "unrecognised": true}),
            None => json!({"step": step, "unreadable_result": {
                "sha256": cairn_core::Digest::of(response.raw().as_bytes()).to_string(),
                "bytes": response.raw().len(),
            }}),
        },
    }
}

/// What the model is told of a consequential call whose outcome is unknown.
fn unknown_told(tool: &str, class: &OutcomeClass, key: &str, run: &str) -> String {
    let reconcile = format!(
        "a person checks the effect and runs `cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`"
    );
    match class {
        OutcomeClass::Backgrounded { task, at_timeout } => format!(
            "[Cairn] This `{tool}` call was moved to the background{} (task `{task}`) before it finished, so its outcome is unknown: it is recorded as side_effect_unknown under idempotency key `{key}`. Do not run it again. Consequential calls are refused until the host reports the task's end, or until {reconcile}.",
            if *at_timeout {
                " when it outlived its timeout"
            } else {
                ""
            }
        ),
        OutcomeClass::Unknown { detail, .. } => format!(
            "[Cairn] The outcome of this `{tool}` call is unknown ({detail}), so it may or may not have taken effect. It is recorded under idempotency key `{key}`. Do not retry it: consequential calls are refused until {reconcile}."
        ),
        OutcomeClass::Completed | OutcomeClass::Failed => String::new(),
    }
}

impl crate::engine::Session<'_> {
    /// `PreToolUse`: gate, record, answer.
    pub(crate) fn pre_tool_use(&mut self, tool: &ToolUse) -> Result<Answer, HookError> {
        // The lanes judge file paths below the same resolved root as the guard.
        let guard = self.guard();
        let mut lanes = cairn_runtime::config::load_lanes(&self.project.lanes(), guard.root())?;
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
        let mut gate = HookGate::new(policy, self.config.tools.clone(), self.env.fault);
        if self.config.authorization_mode == AuthorizationMode::HumanApproved {
            gate = gate.with_a_person_for_every_call();
        }
        let gate = Arc::new(gate);
        let replay = if needs_rows {
            Replay::Records { lanes }
        } else {
            Replay::Skip
        };
        let executor =
            self.executor_with(Arc::clone(&gate) as Arc<dyn cairn_runtime::Gate>, replay)?;
        let mut executor = executor.with_guard(guard);
        self.note_lane_change(&mut executor)?;
        self.rehydrate_if_due(&mut executor)?;
        let run = executor.recorder().run_id().to_string();
        let consequential = gate.is_consequential(&tool.name);
        let restriction = if consequential {
            self.restriction(&executor, &run)?
        } else {
            None
        };
        executor.restrict(restriction, &self.config.tools);
        let call = ToolCall {
            tool: ToolRef {
                name: Label::new(&tool.name)?,
                version: Label::new(TOOL_VERSION)?,
            },
            args: tool.input.get().as_bytes(),
            lane: None,
        };
        let mut executor = executor.with_approval_options(ApprovalOptions {
            request_ttl: self.config.approvals.request_ttl,
        });
        let context = CallContext {
            agent: tool.actor(),
            call_id: tool.id.clone(),
            approval: None,
            mcp: None,
        };
        let admitted = executor.admit_with(&call, &context)?;
        self.state.observation = executor.recorder().current_observation();
        drop(executor);
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
                if let DenyCause::Approval(ApprovalDenial {
                    waiting: Some(waiting),
                    ..
                }) = &denial.cause
                    && !self.holding
                    && !self.config.approvals.hold().is_zero()
                {
                    return self.hold(tool, &run, &waiting.id);
                }
                let reason = denial.told(&run, &tool.name);
                let told = format!(
                    "{reason} (Cairn recorded this refusal as step {} of run `{run}`.)",
                    denial.receipt.step_index
                );
                Ok(Answer::deny(&told))
            }
        }
    }

    /// Holds a call in flight (`approvals.while_waiting: "hold"`) until a person decides its
    /// request `id` or the hold ends; an approved call is admitted again — now by the
    /// approval, whose use is recorded with its step — and runs without a retry.
    fn hold(&mut self, tool: &ToolUse, run: &str, id: &str) -> Result<Answer, HookError> {
        let hold = self.config.approvals.hold();
        let approval = ApprovalId::parse(id).map_err(cairn_runtime::RuntimeError::from)?;
        let tenant = self.tenant()?;
        let run_id = cairn_core::RunId::new(run)?;
        let waited = self
            .runs()?
            .approvals()
            .wait(&tenant, &run_id, &approval, hold)?;
        match waited.told(&tool.name, id, hold, run) {
            None => {
                self.holding = true;
                let answer = self.pre_tool_use(tool);
                self.holding = false;
                answer
            }
            Some(told) => Ok(Answer::deny(&told)),
        }
    }

    /// Records a change of the active lane since the session's previous call — a person or a
    /// program edited the lanes, or a ruling moved it — as a `lane_changed` boundary of its
    /// own, before the call it applies to (issue 34, 5): the lane a step is recorded in then
    /// never changes without a record saying so. The first call of a session only notes it.
    fn note_lane_change(&mut self, executor: &mut Executor) -> Result<(), HookError> {
        let now = executor
            .lanes()
            .and_then(|book| book.active_lane())
            .unwrap_or_default()
            .to_owned();
        let before = self.state.active_lane.replace(now.clone());
        let Some(before) = before.filter(|before| *before != now) else {
            return Ok(());
        };
        let mut event =
            cairn_runtime::ledger::record::BoundaryEvent::new(Label::new("lane_changed")?);
        event.reason = Some(Label::new("active_lane_changed")?);
        let from = if before.is_empty() { "none" } else { &before };
        event.evidence_ref = Some(Label::new(format!("lane:{from}"))?);
        let lane = (!now.is_empty())
            .then(|| cairn_core::LaneId::new(&now))
            .transpose()?;
        executor.recorder().record_boundary(event, lane)?;
        Ok(())
    }

    /// What blocks consequential calls now: an unresolved side effect first, then the
    /// decision invariants.
    fn restriction(
        &mut self,
        executor: &Executor,
        run: &str,
    ) -> Result<Option<Restriction>, HookError> {
        if let Some((key, tool)) = executor.unresolved().iter().next() {
            return Ok(Some(cairn_runtime::restrictions::reconciliation(
                run, key, tool,
            )));
        }
        self.decision_restriction()
    }

    /// `PostToolUse` / `PostToolUseFailure`: record what came of the call, as
    /// [`crate::outcome::classify`] reads the report. A consequential call whose outcome is
    /// not known — moved to the background, interrupted, timed out, reported in a shape Cairn
    /// does not recognise — is recorded as `side_effect_unknown` under its idempotency key;
    /// a call moved to the background is remembered by its task, whose end the host reports
    /// later ([`Self::background_task_ended`]).
    pub(crate) fn post_tool_use(
        &mut self,
        tool: &ToolUse,
        outcome: &ToolOutcome,
        event: &str,
    ) -> Result<Answer, HookError> {
        let class = crate::outcome::classify(self.host, &tool.name, outcome);
        let mut recorder = self.recorder()?;
        let pending = tool.id.as_deref().and_then(|id| self.state.take_step(id));
        let mut step = pending.as_ref().map(|p| p.step);
        if step.is_none() && !class.is_known() {
            // The state lost the call (a power loss, a state file reset): the latest admitted
            // call of the same tool is the best evidence of which step this was.
            step = self.runs()?.latest_admitted(
                recorder.tenant_id(),
                recorder.run_id(),
                &tool.name,
            )?;
        }
        let consequential = pending.as_ref().map_or_else(
            || self.config.tools.is_consequential(&tool.name),
            |p| p.consequential,
        );
        let mut told = Vec::new();
        let mut observation = observed(step, outcome, &class);
        if let (Some(step), true) = (step, consequential && !class.is_known()) {
            // Saved before the record: a later `PreToolUse` must never skip the records that
            // hold an unresolved side effect.
            self.state.unresolved_hint = Some(true);
            self.files.save(&self.state)?;
            let run = recorder.run_id().to_string();
            let key = idempotency_key(&run, step);
            let mut record = unknown_event(&key)?;
            let reason = match &class {
                OutcomeClass::Backgrounded { .. } => "moved_to_background",
                OutcomeClass::Unknown { reason, .. } => reason,
                OutcomeClass::Completed | OutcomeClass::Failed => "unknown",
            };
            record.reason = Some(Label::new(reason)?);
            recorder.record_boundary(record, None)?;
            told.push(unknown_told(&tool.name, &class, &key, &run));
            if let (OutcomeClass::Backgrounded { task, .. }, Some(id)) = (&class, &tool.id) {
                self.state.remember_background(
                    task.clone(),
                    BackgroundCall {
                        step,
                        tool: tool.name.clone(),
                        tool_use_id: id.clone(),
                    },
                );
            }
            if let Some(object) = observation.as_object_mut() {
                object.insert("outcome_unknown".to_owned(), json!(true));
                object.insert("idempotency_key".to_owned(), json!(key));
            }
        }
        recorder.observe(&observation)?;
        recorder.flush()?;
        self.state.observation = recorder.current_observation();
        drop(recorder);
        self.rehydrate_standalone_if_due()?;
        Ok(self.answer_with_context(event, told))
    }

    /// `UserPromptSubmit`: the prompt is what the model is shown next. A prompt that is the
    /// host's report of a background task's end settles the call that started it. Any other
    /// prompt to the main agent starts a new turn: a call of the turn before that never
    /// reported its outcome — the user interrupted it (Esc), and Claude Code sends neither
    /// `PostToolUse` nor `Stop` for that — is `side_effect_unknown` now, before the model can
    /// run it again.
    pub(crate) fn user_prompt(
        &mut self,
        prompt: Option<&str>,
        agent: Option<&str>,
    ) -> Result<Answer, HookError> {
        let notification = prompt.and_then(crate::outcome::TaskNotification::parse);
        let mut told = Vec::new();
        if notification.is_none() && agent.is_none() {
            told.extend(self.settle_pending("user_prompt", Settle::MainAgent)?);
        }
        if let Some(prompt) = prompt {
            let mut recorder = self.recorder()?;
            recorder.observe(&json!({ "user_prompt": prompt }))?;
            recorder.flush()?;
            self.state.observation = recorder.current_observation();
            drop(recorder);
        }
        if let Some(ended) = &notification {
            told.extend(self.background_task_ended(ended)?);
        }
        self.rehydrate_standalone_if_due()?;
        Ok(self.answer_with_context("UserPromptSubmit", told))
    }

    /// The host reports that the background task `ended`. When it is the task of a call this
    /// session moved to the background (the same task id and `tool_use_id`) and it ran to its
    /// own end, the call's unknown outcome is reconciled as `applied` with the host's report as
    /// evidence; a task killed or stopped stays unknown until a person reconciles it.
    fn background_task_ended(
        &mut self,
        ended: &crate::outcome::TaskNotification,
    ) -> Result<Option<String>, HookError> {
        let Some(call) = self
            .state
            .background
            .get(&ended.task)
            .filter(|call| call.tool_use_id == ended.tool_use_id)
            .cloned()
        else {
            return Ok(None);
        };
        self.state.background.remove(&ended.task);
        let mut recorder = self.recorder()?;
        let run = recorder.run_id().to_string();
        let key = idempotency_key(&run, call.step);
        let how = ended.exit_code.map_or_else(
            || ended.status.clone(),
            |code| format!("{} with exit code {code}", ended.status),
        );
        if !ended.ran_to_its_end() {
            return Ok(Some(format!(
                "[Cairn] The background task `{}` of the `{}` call recorded under idempotency key `{key}` ended ({how}) without running to its own end, so its effect is still unknown. Consequential calls stay refused until a person checks the effect and runs `cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`.",
                ended.task, call.tool
            )));
        }
        let evidence = format!(
            "host:{}:task:{}:{}:exit-{}",
            self.host.as_str(),
            ended.task,
            ended.status,
            ended
                .exit_code
                .map_or_else(|| "none".to_owned(), |c| c.to_string())
        );
        match reconcile_with(&mut recorder, &key, ObservedOutcome::Applied, &evidence) {
            Ok(_) => {}
            // Reconciled already (by a person, or by an earlier report of the same task).
            Err(RuntimeError::InvalidInput { .. }) => return Ok(None),
            Err(error) => return Err(error.into()),
        }
        recorder.flush()?;
        self.state.observation = recorder.current_observation();
        Ok(Some(format!(
            "[Cairn] The background task `{}` of the `{}` call recorded under idempotency key `{key}` ran to its end ({how}): Claude Code's report is recorded as its outcome, and that call no longer blocks consequential calls.",
            ended.task, call.tool
        )))
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
                "[Cairn] The `{}` call admitted as step {} never reported its outcome before `{event}` (it was interrupted, the host was stopped while it ran, or it was left running), so it may or may not have taken effect. It is recorded as side_effect_unknown under idempotency key `{key}`; consequential calls are refused until a person checks the effect and runs `cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`.",
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
