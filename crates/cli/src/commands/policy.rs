//! `cairn policy check` and `cairn policy explain`: validate a policy set (printing its
//! version) and decide one call, naming the determining rules and why.

use std::fmt::Write as _;
use std::path::PathBuf;

use cairn_policy::{Arguments, GateRequest, PolicyGate};
use cairn_runtime::config::load_gate;
use cairn_runtime::layout::{POLICIES_DIR, TOOLS_FILE};

use crate::args::{PolicyCommand, PolicyLocation};
use crate::context::Context;
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;

/// Runs `cairn policy …`.
pub fn run(ctx: &Context, command: PolicyCommand) -> Result<Outcome, Failure> {
    match command {
        PolicyCommand::Check { path, tools } => check(
            ctx,
            &PolicyLocation {
                policies: path,
                tools,
            },
        ),
        PolicyCommand::Explain {
            tool,
            args,
            lane,
            tool_version,
            principal,
            location,
        } => {
            let gate = gate(ctx, &location)?;
            // The same strict reading as on the executor's path: arguments that are not
            // strict JSON are explained as the deny every call with them gets.
            let explanation = match Arguments::read(args.as_bytes()) {
                Ok(args) => gate.explain(&GateRequest {
                    mcp: None,
                    tenant: "cli",
                    principal: &principal,
                    run: "explain",
                    task: "explain",
                    lane: lane.as_deref(),
                    tool: &tool,
                    tool_version: &tool_version,
                    args: &args,
                }),
                Err(unreadable) => gate.explain_unreadable(&tool, &unreadable),
            };
            let json = serde_json::to_value(&explanation)
                .map_err(|e| Failure::new(CliCode::INTERNAL, e.to_string()))?;
            Ok(Outcome::ok(json, explanation.to_string()))
        }
    }
}

/// The policy set and catalog a command uses: explicit paths, else `policies/` and
/// `tools.json` beside the store (in `.cairn/`).
fn locate(ctx: &Context, location: &PolicyLocation) -> Result<(PathBuf, Option<PathBuf>), Failure> {
    let project = ctx.cairn_dir()?;
    let policies = location
        .policies
        .clone()
        .unwrap_or_else(|| project.join(POLICIES_DIR));
    if !policies.exists() {
        return Err(Failure::new(
            cairn_runtime::RuntimeError::UNREADABLE_INPUT,
            format!(
                "no policies at `{}` (run `cairn init`, or pass a path)",
                policies.display()
            ),
        ));
    }
    let tools = match &location.tools {
        Some(path) => Some(path.clone()),
        None => Some(project.join(TOOLS_FILE)).filter(|p| p.exists()),
    };
    Ok((policies, tools))
}

fn gate(ctx: &Context, location: &PolicyLocation) -> Result<PolicyGate, Failure> {
    let (policies, tools) = locate(ctx, location)?;
    Ok(load_gate(&policies, tools.as_deref())?)
}

fn check(ctx: &Context, location: &PolicyLocation) -> Result<Outcome, Failure> {
    let (policies, tools) = locate(ctx, location)?;
    let gate = load_gate(&policies, tools.as_deref())?;
    let mut human = format!(
        "valid: {} polic{} in {}\nversion {}\n",
        gate.policies().len(),
        if gate.policies().len() == 1 {
            "y"
        } else {
            "ies"
        },
        policies.display(),
        gate.version()
    );
    for policy in gate.policies() {
        let _ = writeln!(
            human,
            "  {:<7} {:<40} {}{}",
            policy.effect.as_str(),
            policy.id,
            policy.at,
            policy
                .approval
                .as_deref()
                .map(|why| format!("  asks a person: {why}"))
                .unwrap_or_default()
        );
    }
    for warning in gate.warnings() {
        let _ = writeln!(
            human,
            "  warning {}: {} ({})",
            warning.at, warning.message, warning.policy_id
        );
    }
    Ok(Outcome::ok(
        serde_json::json!({
            "valid": true,
            "version": gate.version(),
            "policies": gate.policies(),
            "warnings": gate.warnings(),
            "tools": tools,
        }),
        human,
    ))
}
