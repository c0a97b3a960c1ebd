//! What goes into the gate (a [`GateRequest`]) and what comes out (a [`GateDecision`], or an
//! [`Explanation`] for people), plus the description of a loaded policy ([`PolicyInfo`]).

use std::fmt;

use cairn_core::{AllowDeny, Digest};
use serde::Serialize;

use crate::error::Location;

/// One tool call, as the executor presents it to the gate.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    /// The tenant the run belongs to (`context.tenant`).
    pub tenant: &'a str,
    /// The agent making the call (the principal, `Agent::"<principal>"`).
    pub principal: &'a str,
    /// The run (`context.run`).
    pub run: &'a str,
    /// The task (`context.task`).
    pub task: &'a str,
    /// The responsibility lane, if any (`context.lane`, absent when `None`).
    pub lane: Option<&'a str>,
    /// The tool name (the action, `Action::"<tool>"`, and the resource `Tool::"<tool>"`).
    pub tool: &'a str,
    /// The tool version (`resource.version`).
    pub tool_version: &'a str,
    /// The arguments, read strictly from the bytes the record digests
    /// ([`crate::Arguments::read`]). Only the catalog's declared fields of an object are
    /// read; `null` means no field is present.
    pub args: &'a crate::Arguments<'a>,
    /// For a call through the MCP gateway, the upstream server and its own name of the tool
    /// (`context.mcp`: `{server, tool}`, absent when `None`), so that a rule can name them
    /// apart from the gateway's `<server>__<tool>`.
    pub mcp: Option<McpTarget<'a>>,
}

/// The upstream server and tool of a call through the MCP gateway (`context.mcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTarget<'a> {
    /// The upstream server's name in the gateway's configuration (`context.mcp.server`).
    pub server: &'a str,
    /// The tool's name on that server (`context.mcp.tool`).
    pub tool: &'a str,
}

/// The annotation by which a `permit` asks for a person's approval of each call it would
/// admit: `@approval("why a person must look")`.
pub const APPROVAL_ANNOTATION: &str = "approval";

/// What the agent and the approver are told when an `@approval` annotation has no text.
pub const DEFAULT_APPROVAL_REASON: &str = "a policy asks for a person's approval of this call";

/// Why the gate decided as it did. Precedence, highest first: `ArgsUnreadable`,
/// `InvalidRequest`, `InvalidArguments`, `Forbidden`, `EvaluationError`, `ApprovalRequired`,
/// `Permitted`, `DefaultDeny`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DecisionReason {
    /// At least one permit policy was satisfied and no forbid policy was satisfied or failed.
    Permitted,
    /// At least one forbid policy was satisfied.
    Forbidden,
    /// No policy was satisfied: the explicit default deny.
    DefaultDeny,
    /// The call is permitted only with a person's approval: a satisfied `permit` carries
    /// `@approval` (and no forbid was satisfied or failed). The decision is a deny — anything
    /// that does not know approvals refuses the call — and its rule ids are the permits that
    /// ask; the runtime holds the call until a person decides.
    ApprovalRequired {
        /// What the agent and the approver are told: the asking permits' `@approval` texts,
        /// in id order, joined with `; `.
        reason: String,
    },
    /// A declared argument field is present with a value of the wrong JSON type (or the
    /// arguments of a tool that declares fields are not a JSON object): the call is denied
    /// without evaluating policies, since a forbid on that field could not be evaluated.
    InvalidArguments {
        /// The declared field (`args` when the arguments as a whole are not an object).
        field: String,
    },
    /// One or more forbid policies failed to evaluate for this call (an overflow, a missing
    /// attribute); since they might have forbidden it, the call is denied.
    EvaluationError {
        /// The forbid policies that failed, in id order.
        policy_ids: Vec<String>,
    },
    /// The arguments are not strict JSON (a bad escape, a duplicate key, nesting past the
    /// limit, a number no double holds), so the policies could not be shown exactly what was
    /// recorded: denied by the built-in rule [`crate::ARGS_UNREADABLE_RULE`], whatever the
    /// policies say.
    ArgsUnreadable {
        /// The JSON path of the offending value.
        path: String,
        /// The strict reader's code (`json_invalid`, `json_duplicate_key`, `json_too_deep`).
        code: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The call could not be put to Cedar at all (the tool name is reserved, or Cedar refused
    /// the request): denied.
    InvalidRequest {
        /// What was wrong.
        reason: String,
    },
}

impl DecisionReason {
    /// A stable `snake_case` code for the reason, for records and machine output.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Permitted => "permitted",
            Self::Forbidden => "forbidden",
            Self::DefaultDeny => "default_deny",
            Self::ApprovalRequired { .. } => "approval_required",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::EvaluationError { .. } => "evaluation_error",
            Self::InvalidRequest { .. } => "invalid_request",
            Self::ArgsUnreadable { .. } => "args_unreadable",
        }
    }
}

impl fmt::Display for DecisionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Permitted => f.write_str("permitted by policy"),
            Self::Forbidden => f.write_str("forbidden by policy"),
            Self::DefaultDeny => f.write_str("no policy permits this call (default deny)"),
            Self::ApprovalRequired { reason } => {
                write!(f, "permitted only with a person's approval: {reason}")
            }
            Self::InvalidArguments { field } => write!(
                f,
                "argument `{field}` does not have its declared type (fail closed)"
            ),
            Self::EvaluationError { policy_ids } => write!(
                f,
                "forbid policies failed to evaluate (fail closed): {}",
                backticked(policy_ids)
            ),
            Self::InvalidRequest { reason } => write!(f, "invalid request: {reason}"),
            Self::ArgsUnreadable {
                path,
                code,
                message,
            } => write!(
                f,
                "the arguments are not strict JSON at `{path}` ({code}: {message}), so no policy could judge exactly what was recorded (fail closed)"
            ),
        }
    }
}

/// The gate's answer for one call: what the intent record's `admission` carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateDecision {
    /// Allow or deny.
    pub decision: AllowDeny,
    /// The determining policy ids, sorted: the satisfied permits for an allow, the satisfied
    /// forbids for a deny (or the failed forbids for [`DecisionReason::EvaluationError`]);
    /// empty for a default deny and for calls refused before evaluation.
    pub rule_ids: Vec<String>,
    /// The version of the policy set that decided ([`crate::PolicyGate::version`]).
    pub policy_set_version: Digest,
    /// Why.
    pub reason: DecisionReason,
}

impl GateDecision {
    /// Whether the call may run.
    #[must_use]
    pub fn is_allow(&self) -> bool {
        self.decision == AllowDeny::Allow
    }
}

/// Permit or forbid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// A `permit` policy.
    Permit,
    /// A `forbid` policy.
    Forbid,
}

impl Effect {
    /// `permit` or `forbid`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Permit => "permit",
            Self::Forbid => "forbid",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A loaded policy: its id, where it is written and its effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyInfo {
    /// The policy's `@id`.
    pub id: String,
    /// Where the policy starts (its first annotation).
    pub at: Location,
    /// Permit or forbid.
    pub effect: Effect,
    /// For a `permit` annotated `@approval`: what a person is asked to approve, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

/// Something Cedar's validator noticed that does not refuse the policy (a mixed-script or
/// confusable identifier), for `cairn policy check` to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyWarning {
    /// Where.
    pub at: Location,
    /// The policy's `@id`.
    pub policy_id: String,
    /// Cedar's message, with its hint when it gives one.
    pub message: String,
}

/// A policy that failed to evaluate for a call, with Cedar's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyFailure {
    /// The policy.
    pub policy: PolicyInfo,
    /// Cedar's evaluation error.
    pub message: String,
}

/// A decision with the policies behind it, for `cairn policy explain` ("why").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The decision, exactly as [`crate::PolicyGate::decide`] returns it.
    pub decision: GateDecision,
    /// Whether the tool is declared in the catalog (an undeclared tool gets no arguments and
    /// is matched only by action-unconstrained policies).
    pub tool_declared: bool,
    /// The determining policies, in the order of `decision.rule_ids`.
    pub determining: Vec<PolicyInfo>,
    /// Every policy that failed to evaluate (permits included), in id order.
    pub failed: Vec<PolicyFailure>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decision = &self.decision;
        writeln!(
            f,
            "{} ({}) under policy set {}",
            decision.decision,
            decision.reason.code(),
            decision.policy_set_version
        )?;
        writeln!(f, "  why: {}", decision.reason)?;
        if !self.tool_declared {
            writeln!(
                f,
                "  note: the tool is not in the catalog; only action-unconstrained policies apply and no argument is visible"
            )?;
        }
        for policy in &self.determining {
            writeln!(
                f,
                "  determining: `{}` ({}) at {}",
                policy.id, policy.effect, policy.at
            )?;
        }
        for failure in &self.failed {
            writeln!(
                f,
                "  failed: `{}` ({}) at {}: {}",
                failure.policy.id, failure.policy.effect, failure.policy.at, failure.message
            )?;
        }
        Ok(())
    }
}

fn backticked(ids: &[String]) -> String {
    let quoted: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
    quoted.join(", ")
}
