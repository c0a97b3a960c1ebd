//! The executor façade: `admit` → record → execute → observe (SPEC §6, I-1).
//!
//! Every call goes through the gate; the decision is written as an intent record *before*
//! anything runs; an allowed call yields a [`Permit`], and [`Executor::execute`] is the only
//! way to run a call and it consumes one. A `Permit` has no public constructor, so code that
//! skips the gate or the record does not compile. A denied call is recorded and never runs;
//! the denial becomes what the model is shown next.

use std::sync::Arc;

use cairn_core::Digest;
use cairn_ledger::keys::SigningKey;
use cairn_ledger::record::{Label, TerminationReason};
pub use cairn_policy::{Arguments, GateRequest, UnreadableArguments};
use serde_json::{Value, json};

use crate::effects::{RECONCILIATION_RULE, Unresolved, idempotency_key, unknown_event};
use crate::error::RuntimeError;
use crate::recorder::{ClosedRun, Receipt, Recorder, ToolCall};
use crate::verdict::{Admitted, Denial, DenyCause, Gate, GateVerdict, Permit};

/// The façade an agent runtime calls for every tool call.
pub struct Executor {
    recorder: Recorder,
    gate: Arc<dyn Gate>,
    principal: String,
    pub(crate) unresolved: Unresolved,
    /// The project's lanes, when it declares any (see `crate::lanes`).
    pub(crate) lanes: Option<cairn_lanes::LaneBook>,
    /// The repository head, policy version and environment the host reports now.
    pub(crate) validity: Option<cairn_lanes::Validity>,
    /// The project whose configuration no call may touch, and against which file paths are
    /// resolved (see [`crate::protect`]).
    pub(crate) guard: Option<crate::protect::ProjectGuard>,
    /// How held calls raise approval requests.
    approvals: crate::approvals::ApprovalOptions,
    /// The run's records say its authorization mode is `human_approved`: every call the
    /// gate permits needs a person's approval too.
    human_approved: bool,
    /// What refuses consequential calls now, and which tools are (see
    /// [`crate::restrictions`]); set by the edge before each call.
    restriction: Option<(
        crate::restrictions::Restriction,
        crate::restrictions::ToolClasses,
    )>,
}

/// Who made a call and what it carries beside its arguments.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The agent that made the call, when it is not the run's main agent (a host's subagent,
    /// `<agent type>:<agent id>`), which its intent record names.
    pub agent: Option<Label>,
    /// The host's id of the call (`tool_use_id`, `call_id`), which an approval request of a
    /// held call records.
    pub call_id: Option<String>,
    /// An approval the caller cites (`apr-…`): it must be one of this run's.
    pub approval: Option<String>,
    /// For a call through the MCP gateway: the upstream server and the tool's own name
    /// there, which the policies read as `context.mcp`.
    pub mcp: Option<UpstreamTool>,
}

/// The upstream server and tool of a call through the MCP gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamTool {
    /// The upstream server's name in the gateway's configuration.
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
}

/// How a dispatched call failed, as far as the caller can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The call certainly did not take effect (refused before dispatch, invalid request).
    NotExecuted(String),
    /// The call was dispatched and its outcome is unknown (timeout, crash, lost connection):
    /// it may have taken effect. The capability is blocked until reconciled.
    OutcomeUnknown(String),
}

/// What became of an executed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectOutcome {
    /// It ran and returned this result.
    Applied(Value),
    /// It did not take effect.
    NotExecuted(String),
    /// Its outcome is unknown; it is recorded under this idempotency key and its capability is
    /// refused until a reconciliation names the outcome.
    Unknown {
        /// `<run_id>:<step_index>` of the call.
        idempotency_key: String,
    },
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("recorder", &self.recorder)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// Wraps a new run's recorder with a gate; `principal` is who the run acts for.
    #[must_use]
    pub fn new(recorder: Recorder, gate: Arc<dyn Gate>, principal: impl Into<String>) -> Self {
        Self {
            recorder,
            gate,
            principal: principal.into(),
            unresolved: Unresolved::default(),
            lanes: None,
            validity: None,
            guard: None,
            approvals: crate::approvals::ApprovalOptions::default(),
            human_approved: false,
            restriction: None,
        }
    }

    /// Wraps a resumed run's recorder, rebuilding the unresolved side effects from its
    /// records so that a restart cannot forget a blocked capability.
    #[must_use]
    pub fn resumed(
        recorder: Recorder,
        rows: &[cairn_ledger::store::StoredRow],
        gate: Arc<dyn Gate>,
        principal: impl Into<String>,
    ) -> Self {
        Self {
            recorder,
            gate,
            principal: principal.into(),
            unresolved: Unresolved::from_rows(rows),
            lanes: None,
            validity: None,
            guard: None,
            approvals: crate::approvals::ApprovalOptions::default(),
            human_approved: crate::approvals::is_human_approved(rows),
            restriction: None,
        }
    }

    /// Records that this run's authorization mode is `human_approved`: from now on, and for
    /// every writer that resumes the run, each call the gate permits needs a person's
    /// approval too ([`crate::approvals::with_a_person`]).
    ///
    /// # Errors
    /// Store failures (the mode is then not in force).
    pub fn require_a_person_for_every_call(&mut self) -> Result<Receipt, RuntimeError> {
        let receipt = self
            .recorder
            .record_boundary(crate::approvals::human_approved_event()?, None)?;
        self.human_approved = true;
        Ok(receipt)
    }

    /// Guards the project: calls that touch its configuration are refused by
    /// [`crate::protect::SELF_PROTECTION_RULE`], and file paths (lanes included) are judged by
    /// where they resolve.
    #[must_use]
    pub fn with_guard(mut self, guard: crate::protect::ProjectGuard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// Refuses the consequential calls (as `tools` classifies them) with `restriction` until
    /// it is set again; `None` lifts it. An edge sets it before each call from what holds
    /// then ([`Executor::continuity_restriction`]); read-only calls still go to the gate.
    pub fn restrict(
        &mut self,
        restriction: Option<crate::restrictions::Restriction>,
        tools: &crate::restrictions::ToolClasses,
    ) {
        self.restriction = restriction.map(|restriction| (restriction, tools.clone()));
    }

    /// What refuses the run's consequential calls now: a side effect of unknown outcome
    /// awaiting reconciliation first, then the decisions
    /// ([`crate::restrictions::decisions_now`] with the decision files and observation
    /// window of `decisions`, when the edge keeps any, and `session`). Set it with
    /// [`Executor::restrict`].
    #[must_use]
    pub fn continuity_restriction(
        &self,
        decisions: Option<(
            Result<crate::decision_files::DecisionFiles, crate::decision_files::DecisionFilesError>,
            jiff::SignedDuration,
        )>,
        session: Option<&str>,
    ) -> Option<crate::restrictions::Restriction> {
        match self.unresolved.iter().next() {
            Some((key, tool)) => Some(crate::restrictions::reconciliation(
                self.recorder.run_id().as_str(),
                key,
                tool,
            )),
            None => decisions.and_then(|(files, window)| {
                crate::restrictions::decisions_now(files, session, self.recorder.now(), window)
            }),
        }
    }

    /// Raises approval requests with `options` (how long a request waits for a person).
    #[must_use]
    pub const fn with_approval_options(
        mut self,
        options: crate::approvals::ApprovalOptions,
    ) -> Self {
        self.approvals = options;
        self
    }

    /// How held calls raise approval requests.
    #[must_use]
    pub const fn approval_options(&self) -> crate::approvals::ApprovalOptions {
        self.approvals
    }

    /// Who the run acts for.
    #[must_use]
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The gate deciding this run's calls.
    #[must_use]
    pub fn gate(&self) -> &dyn Gate {
        self.gate.as_ref()
    }

    /// The side effects waiting for reconciliation.
    #[must_use]
    pub const fn unresolved(&self) -> &Unresolved {
        &self.unresolved
    }

    /// The run's recorder, to read (its identity, what waits for a commit).
    #[must_use]
    pub const fn recorder_ref(&self) -> &Recorder {
        &self.recorder
    }

    /// The run's recorder (for boundaries, flushing, identity).
    pub fn recorder(&mut self) -> &mut Recorder {
        &mut self.recorder
    }

    /// Asks the gate, writes the intent record (durably before returning in `sync` mode),
    /// and returns a [`Permit`] for an allowed call or the recorded [`Denial`].
    ///
    /// # Errors
    /// Store failures. The caller must treat an error as a deny: nothing was admitted.
    pub fn admit(&mut self, call: &ToolCall<'_>) -> Result<Admitted, RuntimeError> {
        self.admit_with(call, &CallContext::default())
    }

    /// [`Executor::admit`] for a call with its `context`: the subagent that made it, the
    /// host's call id, an approval it cites.
    ///
    /// A call the policies permit only with a person's approval (`@approval`) is admitted
    /// when this run holds an approval of exactly this action (tool, version, canonical
    /// arguments) under the same policies, in force and with uses left — its use recorded
    /// with the step in one commit — and is otherwise held: a refused step, with a request a
    /// person decides ([`crate::approvals`]), and a [`DenyCause::Approval`].
    ///
    /// # Errors
    /// As [`Executor::admit`].
    pub fn admit_with(
        &mut self,
        call: &ToolCall<'_>,
        context: &CallContext,
    ) -> Result<Admitted, RuntimeError> {
        // INVARIANT: the gate judges exactly the bytes the record digests, or the call is
        // denied: arguments that are not strict JSON never reach it as "no arguments".
        let read = Arguments::read(call.args);
        // With lanes configured, a call without a lane is made in the active one, and the
        // record names it.
        let lane = self.resolve_lane(call)?;
        // INVARIANT: a call that touches Cairn's own configuration is refused whatever the
        // policies say.
        let protection = match (&read, &self.guard) {
            (Ok(args), Some(guard)) => guard.refusal(args.value()),
            _ => None,
        };
        // A continuity restriction refuses a consequential call whatever the policies say.
        let restricted = self
            .restriction
            .as_ref()
            .filter(|(_, tools)| tools.is_consequential(call.tool.name.as_str()))
            .map(|(restriction, _)| restriction);
        let verdict = match (&read, protection, restricted) {
            (_, Some(detail), _) => GateVerdict::built_in_deny(
                self.gate.as_ref(),
                crate::protect::SELF_PROTECTION_RULE,
                DenyCause::SelfProtection { detail },
            ),
            (Ok(_), None, Some(restriction)) => GateVerdict::built_in_deny(
                self.gate.as_ref(),
                restriction.rule,
                DenyCause::Restricted {
                    reason: restriction.reason,
                    message: restriction.message.clone(),
                },
            ),
            (Ok(args), None, None) => {
                let decided = self.gate.decide(&GateRequest {
                    mcp: context.mcp.as_ref().map(|target| cairn_policy::McpTarget {
                        server: &target.server,
                        tool: &target.tool,
                    }),
                    tenant: self.recorder.tenant_id().as_str(),
                    principal: &self.principal,
                    run: self.recorder.run_id().as_str(),
                    task: self.recorder.task_id().as_str(),
                    lane: lane.as_ref().map(|l| l.as_str()),
                    tool: call.tool.name.as_str(),
                    tool_version: call.tool.version.as_str(),
                    args,
                });
                if self.human_approved {
                    crate::approvals::with_a_person(decided)
                } else {
                    decided
                }
            }
            // No policy can override it: the policies cannot be shown exactly the bytes that
            // are recorded.
            (Err(unreadable), None, _) => GateVerdict::built_in_deny(
                self.gate.as_ref(),
                cairn_policy::ARGS_UNREADABLE_RULE,
                DenyCause::UnreadableArguments {
                    detail: unreadable.to_string(),
                },
            ),
        };
        let verdict = self.checked_after_gate(verdict, call, read.as_ref().ok(), lane.as_ref())?;
        // A person's approval is looked for only when the policies ask for one.
        let (verdict, plan) = match (&read, verdict.cause()) {
            (Ok(args), Some(DenyCause::ApprovalRequired { .. })) => {
                self.decide_approval(&verdict, call, args, context)?
            }
            _ => (verdict, crate::approvals::ApprovalPlan::default()),
        };
        // The record names the resolved lane; the call is copied only when that differs from
        // the lane it named (with lanes configured and none named), keeping the common path
        // free of allocations.
        let resolved;
        let call = if lane == call.lane {
            call
        } else {
            resolved = ToolCall {
                tool: call.tool.clone(),
                args: call.args,
                lane,
            };
            &resolved
        };
        let (admission, cause) = verdict.into_parts();
        let rule_ids: Vec<String> = admission.rule_ids.iter().map(ToString::to_string).collect();
        let agent = context.agent.clone();
        let receipt = if plan.is_empty() {
            self.recorder.record_step_by(call, admission, agent)?
        } else {
            self.recorder
                .record_step_with(call, admission, agent, plan.before, plan.after)?
        };
        let Some(cause) = cause else {
            return Ok(Admitted::Permitted(Permit {
                step_index: receipt.step_index,
                digest: receipt.digest,
                tool: call.tool.name.as_str().to_owned(),
                rule_ids,
            }));
        };
        // The model is shown the denial, never a result.
        let mut shown = json!({
            "tool": call.tool.name.as_str(),
            "denied": true,
            "reason": cause.code(),
            "rule_ids": rule_ids,
        });
        if let Some(object) = shown.as_object_mut() {
            match &cause {
                DenyCause::Reconciliation { idempotency_key } => {
                    object.insert("idempotency_key".to_owned(), json!(idempotency_key));
                    object.insert(
                        "resolve_with".to_owned(),
                        json!(format!(
                            "cairn reconcile --run {} --key {idempotency_key} --outcome applied|not_executed --evidence REF",
                            self.recorder.run_id()
                        )),
                    );
                }
                DenyCause::Approval(denial) => {
                    if let Some(waiting) = &denial.waiting {
                        object.insert("approval_id".to_owned(), json!(waiting.id));
                        object.insert(
                            "approval_expires_at".to_owned(),
                            json!(waiting.expires_at.to_string()),
                        );
                    }
                    object.insert("detail".to_owned(), json!(denial.message));
                }
                DenyCause::Lane { detail, .. } => {
                    object.insert(
                        "lane".to_owned(),
                        json!(call.lane.as_ref().map(|l| l.as_str())),
                    );
                    object.insert("detail".to_owned(), json!(detail));
                }
                other => {
                    if let Some(detail) = other.detail() {
                        object.insert("detail".to_owned(), json!(detail));
                    }
                }
            }
        }
        self.recorder.observe(&shown)?;
        Ok(Admitted::Denied(Denial {
            receipt,
            rule_ids,
            cause,
        }))
    }

    /// The checks that come after the policies: a capability blocked on reconciliation is
    /// refused whatever the policy says (P-3; the record names the reconciliation rule), and
    /// what the policy allows must also lie within the lane (L-4). A call refused by
    /// self-protection keeps that cause.
    fn checked_after_gate(
        &self,
        verdict: GateVerdict,
        call: &ToolCall<'_>,
        args: Option<&Arguments>,
        lane: Option<&cairn_core::LaneId>,
    ) -> Result<GateVerdict, RuntimeError> {
        let version = verdict.policy_set_version();
        if matches!(verdict.cause(), Some(DenyCause::SelfProtection { .. })) {
            return Ok(verdict);
        }
        if let Some(key) = self.unresolved.blocking(call.tool.name.as_str()) {
            return Ok(GateVerdict::deny(
                version,
                vec![Label::new(RECONCILIATION_RULE)?],
                DenyCause::Reconciliation {
                    idempotency_key: key.to_owned(),
                },
            ));
        }
        // What the policies permit only with a person's approval must lie within the lane
        // too: an approval never lifts a lane.
        if !verdict.allows() && !matches!(verdict.cause(), Some(DenyCause::ApprovalRequired { .. }))
        {
            return Ok(verdict);
        }
        Ok(
            match self.lane_denial(call.tool.name.as_str(), args.map(Arguments::value), lane) {
                Some(denial) => GateVerdict::deny(
                    version,
                    vec![Label::new(denial.rule)?],
                    DenyCause::Lane {
                        unbound_tool: denial.rule == cairn_lanes::UNBOUND_TOOL_RULE,
                        detail: denial.message,
                    },
                ),
                None => verdict,
            },
        )
    }

    /// Runs an admitted call, consuming its permit; its result (or error) becomes the
    /// observation the next step records.
    ///
    /// Running a call needs its permit, and a permit runs one call:
    ///
    /// ```no_run
    /// # use cairn_runtime::{Executor, Permit};
    /// fn once(executor: &mut Executor, permit: Permit) {
    ///     let _ = executor.execute(permit, || Ok::<_, String>(serde_json::Value::Null));
    /// }
    /// ```
    ///
    /// ```compile_fail
    /// # use cairn_runtime::{Executor, Permit};
    /// fn twice(executor: &mut Executor, permit: Permit) {
    ///     let _ = executor.execute(permit, || Ok::<_, String>(serde_json::Value::Null));
    ///     let _ = executor.execute(permit, || Ok::<_, String>(serde_json::Value::Null));
    /// }
    /// ```
    ///
    /// # Errors
    /// Only when the observation cannot be canonicalised; the call has run by then.
    pub fn execute<E: std::fmt::Display>(
        &mut self,
        permit: Permit,
        call: impl FnOnce() -> Result<Value, E>,
    ) -> Result<Result<Value, String>, RuntimeError> {
        let outcome = call().map_err(|e| e.to_string());
        let observation = match &outcome {
            Ok(value) => json!({"step": permit.step_index, "result": value}),
            Err(error) => json!({"step": permit.step_index, "error": error}),
        };
        self.recorder.observe(&observation)?;
        Ok(outcome)
    }

    /// Runs an admitted call that has an external effect, consuming its permit. A call whose
    /// outcome is unknown is recorded (durably, before this returns) under its idempotency
    /// key and its capability is refused until [`Executor::reconcile`] names the outcome;
    /// nothing here ever retries it.
    ///
    /// # Errors
    /// Store failures while recording an unknown outcome.
    pub fn execute_effect(
        &mut self,
        permit: Permit,
        call: impl FnOnce() -> Result<Value, CallError>,
    ) -> Result<EffectOutcome, RuntimeError> {
        let (observation, outcome) = match call() {
            Ok(value) => (
                json!({"step": permit.step_index, "result": value}),
                EffectOutcome::Applied(value),
            ),
            Err(CallError::NotExecuted(error)) => (
                json!({"step": permit.step_index, "error": error}),
                EffectOutcome::NotExecuted(error),
            ),
            Err(CallError::OutcomeUnknown(error)) => {
                let key = idempotency_key(self.recorder.run_id().as_str(), permit.step_index);
                self.recorder.record_boundary(unknown_event(&key)?, None)?;
                self.unresolved.insert(key.clone(), permit.tool.clone());
                (
                    json!({"step": permit.step_index, "error": error, "outcome_unknown": true, "idempotency_key": key}),
                    EffectOutcome::Unknown {
                        idempotency_key: key,
                    },
                )
            }
        };
        self.recorder.observe(&observation)?;
        Ok(outcome)
    }

    /// Records what the model is shown that is not a tool result (a user message).
    ///
    /// # Errors
    /// When the value cannot be canonicalised.
    pub fn observe(&mut self, observation: &Value) -> Result<Digest, RuntimeError> {
        self.recorder.observe(observation)
    }

    /// Closes the run (terminal record and signed checkpoint).
    ///
    /// # Errors
    /// As [`Recorder::terminate`].
    pub fn terminate(
        self,
        reason: TerminationReason,
        detail: Option<Label>,
        key: &SigningKey,
    ) -> Result<ClosedRun, RuntimeError> {
        self.recorder.terminate(reason, detail, key)
    }
}
