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
use cairn_ledger::record::{Admission, AllowDeny, Label, TerminationReason};
pub use cairn_policy::{Arguments, GateRequest, UnreadableArguments};
use serde_json::{Value, json};

use crate::effects::{RECONCILIATION_RULE, Unresolved, idempotency_key, unknown_event};
use crate::error::RuntimeError;
use crate::recorder::{ClosedRun, Receipt, Recorder, ToolCall};

/// A gate's verdict with everything the record needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateVerdict {
    /// Allow or deny, with the determining rules and the policy-set version.
    pub admission: Admission,
    /// A stable reason code (`permitted`, `forbidden`, `default_deny`, …).
    pub reason: &'static str,
}

impl GateVerdict {
    /// A deny by the built-in `rule` for `reason`, under `gate`'s policy-set version (or the
    /// digest of `unversioned` for a gate that has none).
    #[must_use]
    pub fn built_in_deny(gate: &(impl Gate + ?Sized), rule: &str, reason: &'static str) -> Self {
        Self {
            admission: Admission {
                decision: AllowDeny::Deny,
                policy_set_version: gate
                    .policy_set_version()
                    .unwrap_or_else(|| Digest::of(b"unversioned")),
                rule_ids: Label::new(rule).map(|rule| vec![rule]).unwrap_or_default(),
            },
            reason,
        }
    }
}

/// Anything that decides calls. The Cedar policy gate is the one Cairn ships.
pub trait Gate: Send + Sync {
    /// Decides one call. Must not panic; an internal failure must come back as a deny.
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict;

    /// The version of the policy set in force, recorded in continuity envelopes.
    fn policy_set_version(&self) -> Option<Digest> {
        None
    }

    /// The verdict for a call whose arguments are not strict JSON: a deny by the built-in
    /// rule `cairn.args-unreadable`, which no policy can override (the policies cannot be
    /// shown exactly the bytes that are recorded).
    fn refuse_unreadable(&self, _unreadable: &UnreadableArguments) -> GateVerdict {
        GateVerdict::built_in_deny(self, cairn_policy::ARGS_UNREADABLE_RULE, "args_unreadable")
    }
}

/// Proof that a call was admitted and its intent record written. Only [`Executor::admit`]
/// makes one and [`Executor::execute`] consumes it, so a call can run at most once per
/// admission and never without its record.
///
/// ```compile_fail
/// // A permit cannot be forged outside the runtime: every field is named, so this fails only
/// // because the fields are private.
/// let permit = cairn_runtime::Permit {
///     step_index: 0,
///     digest: cairn_core::Digest::of(b""),
///     tool: String::new(),
///     rule_ids: Vec::new(),
/// };
/// ```
#[derive(Debug)]
#[must_use = "an admitted call does nothing until it is executed with its permit"]
pub struct Permit {
    step_index: u64,
    digest: Digest,
    tool: String,
    rule_ids: Vec<String>,
}

impl Permit {
    /// The step the call was recorded as.
    #[must_use]
    pub const fn step_index(&self) -> u64 {
        self.step_index
    }

    /// The intent record's digest.
    #[must_use]
    pub const fn digest(&self) -> Digest {
        self.digest
    }

    /// The rules that allowed the call (empty when no rule is named, as in a policy-less
    /// observe mode).
    #[must_use]
    pub fn rule_ids(&self) -> &[String] {
        &self.rule_ids
    }
}

/// A refused call: recorded, never executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Where the denial was recorded.
    pub receipt: Receipt,
    /// The determining rules (empty for a default deny).
    pub rule_ids: Vec<String>,
    /// The stable reason code.
    pub reason: &'static str,
    /// What exactly was wrong, when the reason code alone does not say (unreadable
    /// arguments: the offending value's path and the problem).
    pub detail: Option<String>,
}

/// The outcome of [`Executor::admit`].
#[derive(Debug)]
pub enum Admitted {
    /// The call may run: pass the permit to [`Executor::execute`].
    Permitted(Permit),
    /// The call was refused and recorded; show the denial to the model.
    Denied(Denial),
}

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
        }
    }

    /// Guards the project: calls that touch its configuration are refused by
    /// [`crate::protect::SELF_PROTECTION_RULE`], and file paths (lanes included) are judged by
    /// where they resolve.
    #[must_use]
    pub fn with_guard(mut self, guard: crate::protect::ProjectGuard) -> Self {
        self.guard = Some(guard);
        self
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
        self.admit_by(call, None)
    }

    /// [`Executor::admit`] for a call `agent` made — a host's subagent, not the run's main
    /// agent — which its intent record names.
    ///
    /// # Errors
    /// As [`Executor::admit`].
    pub fn admit_by(
        &mut self,
        call: &ToolCall<'_>,
        agent: Option<Label>,
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
        let verdict = match &read {
            _ if protection.is_some() => GateVerdict::built_in_deny(
                self.gate.as_ref(),
                crate::protect::SELF_PROTECTION_RULE,
                "self_protection",
            ),
            Ok(args) => self.gate.decide(&GateRequest {
                tenant: self.recorder.tenant_id().as_str(),
                principal: &self.principal,
                run: self.recorder.run_id().as_str(),
                task: self.recorder.task_id().as_str(),
                lane: lane.as_ref().map(|l| l.as_str()),
                tool: call.tool.name.as_str(),
                tool_version: call.tool.version.as_str(),
                args,
            }),
            Err(unreadable) => self.gate.refuse_unreadable(unreadable),
        };
        let parsed = read.as_ref().ok().map(Arguments::value);
        let protected = protection.is_some();
        let detail = protection.or_else(|| read.as_ref().err().map(ToString::to_string));
        // A capability blocked on reconciliation is refused whatever the policy says (P-3);
        // the record names the reconciliation rule.
        let blocked = self
            .unresolved
            .blocking(call.tool.name.as_str())
            .filter(|_| !protected)
            .map(str::to_owned);
        // What the policy allows must also lie within the lane (L-4).
        let lane_denial = match (&blocked, verdict.admission.decision) {
            (None, AllowDeny::Allow) => {
                self.lane_denial(call.tool.name.as_str(), parsed, lane.as_ref())
            }
            _ => None,
        };
        let (admission, reason) = match (&blocked, &lane_denial) {
            (Some(_), _) => (
                Admission {
                    decision: AllowDeny::Deny,
                    policy_set_version: verdict.admission.policy_set_version,
                    rule_ids: vec![Label::new(RECONCILIATION_RULE)?],
                },
                "unresolved_side_effect",
            ),
            (None, Some(denial)) => (
                Admission {
                    decision: AllowDeny::Deny,
                    policy_set_version: verdict.admission.policy_set_version,
                    rule_ids: vec![Label::new(denial.rule)?],
                },
                "outside_lane",
            ),
            (None, None) => (verdict.admission, verdict.reason),
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
        let decision = admission.decision;
        let rule_ids: Vec<String> = admission.rule_ids.iter().map(ToString::to_string).collect();
        let receipt = self.recorder.record_step_by(call, admission, agent)?;
        Ok(match decision {
            AllowDeny::Allow => Admitted::Permitted(Permit {
                step_index: receipt.step_index,
                digest: receipt.digest,
                tool: call.tool.name.as_str().to_owned(),
                rule_ids,
            }),
            AllowDeny::Deny => {
                // The model is shown the denial, never a result.
                let shown = match (&blocked, &lane_denial) {
                    (None, None) => {
                        let mut shown = json!({
                            "tool": call.tool.name.as_str(),
                            "denied": true,
                            "reason": reason,
                            "rule_ids": rule_ids,
                        });
                        if let (Some(detail), Some(object)) = (&detail, shown.as_object_mut()) {
                            object.insert("detail".to_owned(), Value::String(detail.clone()));
                        }
                        shown
                    }
                    (None, Some(denial)) => json!({
                        "tool": call.tool.name.as_str(),
                        "denied": true,
                        "reason": reason,
                        "rule_ids": rule_ids,
                        "lane": call.lane.as_ref().map(|l| l.as_str()),
                        "detail": denial.message,
                    }),
                    (Some(key), _) => json!({
                        "tool": call.tool.name.as_str(),
                        "denied": true,
                        "reason": reason,
                        "rule_ids": rule_ids,
                        "idempotency_key": key,
                        "resolve_with": format!(
                            "cairn reconcile --run {} --key {key} --outcome applied|not_executed --evidence REF",
                            self.recorder.run_id()
                        ),
                    }),
                };
                self.recorder.observe(&shown)?;
                Admitted::Denied(Denial {
                    receipt,
                    rule_ids,
                    reason,
                    detail: match (&blocked, &lane_denial) {
                        (None, None) => detail,
                        (None, Some(denial)) => Some(denial.message.clone()),
                        (Some(_), _) => None,
                    },
                })
            }
        })
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
