//! What deciding a call gives: the gate's [`GateVerdict`], and the one answer every edge
//! receives from [`crate::Executor::admit`] — a [`Permit`] to run the call, or a recorded
//! [`Denial`] with its [`DenyCause`].
//!
//! Every check that can refuse a call names itself in a `DenyCause`: the edges (hooks, the
//! service, the gateway) tell the model and the user what to do from the cause, never by
//! matching reason strings.

use cairn_core::Digest;
use cairn_ledger::record::{Admission, AllowDeny, Label};

use crate::recorder::Receipt;
use cairn_policy::GateRequest;

/// Why a call was refused: the first check that refused it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenyCause {
    /// The policy set refused it: a `forbid` rule, or no `permit` at all. `reason` is the
    /// policy engine's code (`forbidden`, `default_deny`, …).
    Policy {
        /// The policy engine's reason code.
        reason: &'static str,
    },
    /// The arguments are not strict JSON, so no policy can be shown exactly the bytes that
    /// are recorded.
    UnreadableArguments {
        /// The offending value's path and the problem.
        detail: String,
    },
    /// The call touches Cairn's own files or runs a command only a person may run.
    SelfProtection {
        /// What it touches.
        detail: String,
    },
    /// The call lies outside the active lane, or no lane binding says what the tool changes.
    Lane {
        /// What is wrong, shown to the model.
        detail: String,
        /// Whether the tool has no capability binding at all (a person adds one; a lane
        /// ruling does not help).
        unbound_tool: bool,
    },
    /// An earlier call of the same capability has an unknown outcome (P-3).
    Reconciliation {
        /// The earlier call's idempotency key, which `cairn reconcile` names.
        idempotency_key: String,
    },
    /// The edge restricts consequential calls for now (a decision conflicting or dropped
    /// across a boundary, its evidence missing, a reconciliation pending).
    Restricted {
        /// The restriction's stable code.
        reason: &'static str,
        /// What the model and the user are told, with the command that lifts it.
        message: String,
    },
    /// The policies permit the call only with a person's approval (`@approval`): the gate's
    /// verdict, which the executor turns into a held call ([`DenyCause::Approval`]) or, with
    /// an approval of exactly this action in force, into an allow.
    ApprovalRequired {
        /// What the asking policies say (their `@approval` text).
        reason: String,
    },
    /// The call waits for (or was refused by) a person's approval: held, with the request a
    /// person decides.
    Approval(ApprovalDenial),
    /// Deciding failed — an internal error, a rule id that cannot be recorded, a check that
    /// never ran — so the call is refused rather than let through.
    Fault {
        /// The failure's stable code.
        reason: &'static str,
    },
}

impl DenyCause {
    /// The stable reason code recorded and returned by the service (`forbidden`,
    /// `args_unreadable`, `self_protection`, `outside_lane`, `unresolved_side_effect`, a
    /// restriction's or a fault's own code).
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Policy { reason } | Self::Restricted { reason, .. } | Self::Fault { reason } => {
                reason
            }
            Self::ApprovalRequired { .. } => "approval_required",
            Self::Approval(denial) => denial.code,
            Self::UnreadableArguments { .. } => "args_unreadable",
            Self::SelfProtection { .. } => "self_protection",
            Self::Lane { .. } => "outside_lane",
            Self::Reconciliation { .. } => "unresolved_side_effect",
        }
    }

    /// What exactly was wrong, when the code alone does not say.
    #[must_use]
    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::UnreadableArguments { detail }
            | Self::SelfProtection { detail }
            | Self::Lane { detail, .. }
            | Self::Restricted {
                message: detail, ..
            }
            | Self::ApprovalRequired { reason: detail }
            | Self::Approval(ApprovalDenial {
                message: detail, ..
            }) => Some(detail),
            Self::Policy { .. } | Self::Reconciliation { .. } | Self::Fault { .. } => None,
        }
    }
}

/// A call held for a person, or refused because of what a person decided (or did not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDenial {
    /// The stable code: `approval_pending`, `approval_refused`, `approval_expired`,
    /// `approval_revoked`, `approval_used_up`, `approval_other_action`,
    /// `approval_other_run`, `approval_policy_changed`.
    pub code: &'static str,
    /// The request a person decides now (`None` when nothing waits: refused, revoked, or an
    /// approval of another run cited).
    pub waiting: Option<WaitingRequest>,
    /// The earlier approval that does not admit this call, when one does not.
    pub earlier: Option<String>,
    /// What the asking policies say.
    pub reason: String,
    /// What the agent is told: what it waits for, the request id, what happens next.
    pub message: String,
}

/// A request waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingRequest {
    /// Its id (`apr-…`).
    pub id: String,
    /// Until when a person may decide it.
    pub expires_at: cairn_core::Timestamp,
    /// Whether this call raised it (else an identical earlier call did).
    pub new: bool,
}

/// Anything that decides calls. The Cedar policy gate is the one Cairn ships.
pub trait Gate: Send + Sync {
    /// Decides one call. Must not panic; an internal failure must come back as a deny.
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict;

    /// The version of the policy set in force, recorded in continuity envelopes.
    fn policy_set_version(&self) -> Option<Digest> {
        None
    }

    /// Whether some call of `tool` by `principal` could be allowed, whatever its arguments
    /// (what the MCP gateway's `tools/list` shows). Errs towards "could": every call is still
    /// decided in full.
    fn could_allow(&self, _tool: &str, _principal: &str) -> bool {
        true
    }
}

/// A gate's verdict: allow or deny, the determining rules and the policy-set version, and for
/// a deny its cause. Built only through [`GateVerdict::allow`] and [`GateVerdict::deny`], so
/// an allow never carries a cause and a deny always does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateVerdict {
    admission: Admission,
    cause: Option<DenyCause>,
}

impl GateVerdict {
    /// An allow by `rule_ids` under the policy set `policy_set_version`.
    #[must_use]
    pub const fn allow(policy_set_version: Digest, rule_ids: Vec<Label>) -> Self {
        Self {
            admission: Admission {
                decision: AllowDeny::Allow,
                policy_set_version,
                rule_ids,
            },
            cause: None,
        }
    }

    /// A deny by `rule_ids` (none for a default deny) under `policy_set_version`, for `cause`.
    #[must_use]
    pub const fn deny(policy_set_version: Digest, rule_ids: Vec<Label>, cause: DenyCause) -> Self {
        Self {
            admission: Admission {
                decision: AllowDeny::Deny,
                policy_set_version,
                rule_ids,
            },
            cause: Some(cause),
        }
    }

    /// A deny by the built-in `rule` for `cause`, under `gate`'s policy-set version (or the
    /// digest of `unversioned` for a gate that has none).
    #[must_use]
    pub fn built_in_deny(gate: &(impl Gate + ?Sized), rule: &str, cause: DenyCause) -> Self {
        Self::deny(
            gate.policy_set_version()
                .unwrap_or_else(|| Digest::of(b"unversioned")),
            Label::new(rule).map(|rule| vec![rule]).unwrap_or_default(),
            cause,
        )
    }

    /// Whether the call is allowed.
    #[must_use]
    pub fn allows(&self) -> bool {
        self.admission.decision == AllowDeny::Allow
    }

    /// The policy-set version the verdict was taken under.
    #[must_use]
    pub const fn policy_set_version(&self) -> Digest {
        self.admission.policy_set_version
    }

    /// The determining rules.
    #[must_use]
    pub fn rule_ids(&self) -> &[Label] {
        &self.admission.rule_ids
    }

    /// Why the call is refused (`None` for an allow).
    #[must_use]
    pub const fn cause(&self) -> Option<&DenyCause> {
        self.cause.as_ref()
    }

    /// The admission the intent record carries, and the cause of a deny.
    pub(crate) fn into_parts(self) -> (Admission, Option<DenyCause>) {
        (self.admission, self.cause)
    }
}

/// Proof that a call was admitted and its intent record written. Only [`crate::Executor::admit`]
/// makes one and [`crate::Executor::execute`] consumes it, so a call can run at most once per
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
    pub(crate) step_index: u64,
    pub(crate) digest: Digest,
    pub(crate) tool: String,
    pub(crate) rule_ids: Vec<String>,
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
    /// Why it was refused.
    pub cause: DenyCause,
}

impl Denial {
    /// The stable reason code ([`DenyCause::code`]).
    #[must_use]
    pub const fn reason(&self) -> &'static str {
        self.cause.code()
    }

    /// What exactly was wrong ([`DenyCause::detail`]).
    #[must_use]
    pub fn detail(&self) -> Option<&str> {
        self.cause.detail()
    }

    /// What the model is told of this refusal of its `name` call in run `run`: the rule,
    /// why, and what to do next (the command a person runs, or how to retry) — the same
    /// words through every edge (the hooks, the MCP gateway).
    #[must_use]
    pub fn told(&self, run: &str, name: &str) -> String {
        let rules = self.rule_ids.join(", ");
        match &self.cause {
            DenyCause::Reconciliation {
                idempotency_key: key,
            } => format!(
                "Cairn denied `{name}`: an earlier `{name}` call's side effect has an unknown outcome (idempotency key `{key}`); it must not be retried blindly (rule {rules}). Once a person has checked the effect: cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF"
            ),
            DenyCause::Lane {
                detail,
                unbound_tool: true,
            } => format!(
                "Cairn denied `{name}` (rule {rules}): {detail}. Ask the user to add the binding; a lane ruling does not help here."
            ),
            DenyCause::Lane { detail, .. } => format!(
                "Cairn denied `{name}`: the call lies outside the active lane (rule {rules}): {detail}. Work within the lane, or ask the user for a lane ruling."
            ),
            DenyCause::SelfProtection { detail } => format!(
                "Cairn denied `{name}` (rule {rules}): {detail}. The agent never changes Cairn's policies, lanes, keys, store or hook settings, nor runs a person's commands (approvals, reconciliations); ask the user to do it outside the session."
            ),
            DenyCause::UnreadableArguments { detail } => format!(
                "Cairn denied `{name}` (rule {rules}): {detail}. The policies judge exactly the arguments that are recorded, so arguments Cairn cannot read exactly are refused; send them as plain JSON (valid escapes, no repeated keys, at most {} levels of nesting).",
                cairn_core::strict_json::MAX_DEPTH
            ),
            DenyCause::Approval(denial) => {
                format!("Cairn held `{name}` (rule {rules}): {}", denial.message)
            }
            DenyCause::Restricted { message, .. } => {
                format!("Cairn denied `{name}` (rule {rules}): {message}")
            }
            cause if rules.is_empty() => format!(
                "Cairn denied `{name}`: no policy permits it (default deny, reason `{}`). See why: cairn policy explain --tool {name} --args '<the call's arguments>'",
                cause.code()
            ),
            cause => format!(
                "Cairn denied `{name}`: policy rule {rules} (reason `{}`). See why: cairn policy explain --tool {name} --args '<the call's arguments>'",
                cause.code()
            ),
        }
    }
}

/// The outcome of [`crate::Executor::admit`].
#[derive(Debug)]
pub enum Admitted {
    /// The call may run: pass the permit to [`crate::Executor::execute`].
    Permitted(Permit),
    /// The call was refused and recorded; show the denial to the model.
    Denied(Denial),
}
