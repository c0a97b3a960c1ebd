//! Cairn's policy gate on Cedar (SPEC §6, P-1…P-3): every tool call is admitted or denied by
//! named policies, under a versioned policy set, and the decision says which policies
//! determined it.
//!
//! A forbid rule denies the call it names, and the decision says which rule:
//!
//! ```
//! use cairn_core::AllowDeny;
//! use cairn_policy::{Arguments, GateRequest, PolicyGate, PolicySource, ToolCatalog};
//!
//! let tools = r#"{"tools": {"Bash": {"args": {"command": "String"}}}}"#;
//! let catalog = ToolCatalog::from_json("tools.json", tools)?;
//! let policies = r#"
//!     @id("shell") permit(principal, action == Action::"Bash", resource);
//!     @id("no-push") forbid(principal, action == Action::"Bash", resource)
//!         when { context.args has command && context.args.command like "*git push*" };
//! "#;
//! let gate = PolicyGate::load(&[PolicySource::new("project.cedar", policies)], &catalog)?;
//!
//! let args = Arguments::read(br#"{"command": "git push origin main"}"#)?;
//! let decision = gate.decide(&GateRequest {
//!     mcp: None,
//!     tenant: "acme",
//!     principal: "agent",
//!     run: "run-1",
//!     task: "task-1",
//!     lane: None,
//!     tool: "Bash",
//!     tool_version: "1",
//!     args: &args,
//! });
//! assert_eq!(decision.decision, AllowDeny::Deny);
//! assert_eq!(decision.rule_ids, ["no-push"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The crate is pure: callers read the policy files and the tool catalog and pass their text
//! in ([`PolicySource`], [`ToolCatalog::from_json`]); nothing here touches the disk or the
//! clock.
//!
//! - **Loading** ([`PolicyGate::load`]): each file is parsed by Cedar; every policy must carry
//!   a unique `@id("…")`, which becomes its Cedar policy id; templates are refused; the set
//!   is validated in strict mode against a schema generated from the catalog
//!   ([`ToolCatalog::cedar_schema`]); a policy that can never apply (such as a forbid on an
//!   undeclared argument) or hides bidirectional control characters is refused too. Any
//!   failure is a located [`PolicyLoadError`] — never a gate that silently allows. An empty
//!   set is legal and denies every call.
//! - **Deciding** ([`PolicyGate::decide`]): the call becomes a Cedar request with principal
//!   `Agent::"<agent>"`, action `Action::"<tool>"`, resource `Tool::"<tool>"` (attributes
//!   `name`, `version`) and context `{tenant, run, task, lane?, args}`, where `args` holds only
//!   the catalog's declared fields. Forbid beats permit; no satisfied policy is an explicit
//!   default deny; a wrongly typed declared argument or a forbid policy that fails to evaluate
//!   denies (fail closed).
//! - **Versioning** ([`PolicyGate::version`]): a digest of the policies' canonical Cedar JSON
//!   form and the catalog, blind to formatting and file layout.

mod args;
mod catalog;
mod decision;
mod error;
mod gate;
pub mod limits;
mod load;
mod source;

pub use args::{ARGS_UNREADABLE_RULE, Arguments, UnreadableArguments};
pub use catalog::{ArgType, ToolCatalog, ToolDecl, UNDECLARED_TOOL_ACTION};
pub use decision::{
    APPROVAL_ANNOTATION, DEFAULT_APPROVAL_REASON, DecisionReason, Effect, Explanation,
    GateDecision, GateRequest, McpTarget, PolicyFailure, PolicyInfo, PolicyWarning,
};
pub use error::{Location, PolicyLoadError};
pub use gate::PolicyGate;
pub use source::PolicySource;
