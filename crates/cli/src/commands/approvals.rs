//! `cairn approvals`: the person's side of held calls (SPEC T-4). A call a policy permits
//! only with a person's approval (`@approval`) is held with a request `apr-…`; here a person
//! lists what waits, looks at a request — the tool, the digest of the exact arguments, the
//! policies it was held under — and approves exactly that call, refuses it, or revokes an
//! approval. Each decision is a record in the request's run, naming the approver (the OS
//! user running this command).

use std::sync::Arc;

use cairn_core::{Clock, SystemClock, TenantId};
use cairn_runtime::approvals::{ApprovalId, Approvals, Listed, PersonDecision};
use cairn_runtime::duration::parse_duration;

use crate::args::{ApprovalRef, ApprovalsCommand};
use crate::context::Context;
use crate::failure::Failure;
use crate::output::Outcome;

/// Runs `cairn approvals …`.
pub fn run(ctx: &Context, command: ApprovalsCommand) -> Result<Outcome, Failure> {
    let store = ctx.open_existing_store()?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let approvals = Approvals::new(store, clock);
    match command {
        ApprovalsCommand::List { all, tenant } => {
            let tenant = tenant.map(TenantId::new).transpose()?;
            let listed = approvals.list(tenant.as_ref(), all)?;
            let shown: Vec<&Listed> = listed
                .iter()
                .filter(|l| all || l.state == cairn_runtime::approvals::ApprovalState::Pending)
                .collect();
            let human = if shown.is_empty() {
                if all {
                    "no approval requests".to_owned()
                } else {
                    "no request waits for a person (`--all` lists decided ones too)".to_owned()
                }
            } else {
                shown.iter().map(|l| line(l)).collect::<Vec<_>>().join("\n")
            };
            Ok(Outcome::ok(
                serde_json::json!({ "approvals": shown }),
                human,
            ))
        }
        ApprovalsCommand::Show(request) => {
            let (tenant, id) = named(&request)?;
            let listed = approvals.find(tenant.as_ref(), &id)?;
            Ok(Outcome::ok(
                serde_json::to_value(&listed).unwrap_or_default(),
                detail(&listed),
            ))
        }
        ApprovalsCommand::Approve {
            request,
            expires_in,
            uses,
            note,
        } => {
            let expires_in = parse_duration("--expires-in", &expires_in)?;
            let decision = PersonDecision::Approve { expires_in, uses };
            decide(&approvals, &request, &decision, note.as_deref(), "approved")
        }
        ApprovalsCommand::Deny { request, note } => decide(
            &approvals,
            &request,
            &PersonDecision::Deny,
            note.as_deref(),
            "refused",
        ),
        ApprovalsCommand::Revoke { request, note } => decide(
            &approvals,
            &request,
            &PersonDecision::Revoke,
            note.as_deref(),
            "revoked",
        ),
    }
}

fn named(request: &ApprovalRef) -> Result<(Option<TenantId>, ApprovalId), Failure> {
    let tenant = request.tenant.as_deref().map(TenantId::new).transpose()?;
    let id = ApprovalId::parse(request.id.trim())?;
    Ok((tenant, id))
}

fn decide(
    approvals: &Approvals,
    request: &ApprovalRef,
    decision: &PersonDecision,
    note: Option<&str>,
    done: &str,
) -> Result<Outcome, Failure> {
    let (tenant, id) = named(request)?;
    let approver = os_approver();
    let listed = approvals.decide(tenant.as_ref(), &id, decision, &approver, note)?;
    let request = &listed.approval.request;
    let then = match decision {
        PersonDecision::Approve { uses, .. } => format!(
            "; it admits the identical `{}` call of run `{}` {} until {}",
            request.tool.name,
            request.run,
            if *uses == 1 {
                "once".to_owned()
            } else {
                format!("{uses} times")
            },
            listed
                .approval
                .expires_at()
                .map(|t| t.to_string())
                .unwrap_or_default()
        ),
        PersonDecision::Deny | PersonDecision::Revoke => String::new(),
    };
    Ok(Outcome::ok(
        serde_json::to_value(&listed).unwrap_or_default(),
        format!("{id} {done} by {approver}{then}"),
    ))
}

/// One line of `approvals list`.
fn line(listed: &Listed) -> String {
    let request = &listed.approval.request;
    format!(
        "{}  {:<8}  {}/{} step {}  {}  args {}  requested {}{}",
        request.id,
        listed.state.as_str(),
        request.tenant,
        request.run,
        request.step,
        request.tool.name,
        request.action_digest.short(),
        request.requested_at,
        if listed.run_closed {
            "  (run closed)"
        } else {
            ""
        }
    )
}

/// What `approvals show` prints.
fn detail(listed: &Listed) -> String {
    let a = &listed.approval;
    let r = &a.request;
    let mut lines = vec![
        format!("{}  {}", r.id, listed.state.as_str()),
        format!(
            "  run:        {}/{} (held step {}){}",
            r.tenant,
            r.run,
            r.step,
            if listed.run_closed { ", closed" } else { "" }
        ),
        format!("  tool:       {} {}", r.tool.name, r.tool.version),
        format!(
            "  action:     {} (tool, version and canonical arguments)",
            r.action_digest
        ),
        format!(
            "  policies:   {}",
            r.policy_set_version
                .map_or_else(|| "unknown".to_owned(), |v| v.to_string())
        ),
        format!("  call id:    {}", r.call_id.as_deref().unwrap_or("none")),
        format!(
            "  requested:  {} (decide by {})",
            r.requested_at, r.expires_at
        ),
    ];
    match &a.decision {
        Some(cairn_runtime::approvals::Decision::Granted {
            approver,
            at,
            expires_at,
            uses,
        }) => lines.push(format!(
            "  approved:   by {approver} at {at}, {uses} use(s) until {expires_at}; used {} time(s)",
            a.used.len()
        )),
        Some(cairn_runtime::approvals::Decision::Refused { approver, at }) => {
            lines.push(format!("  refused:    by {approver} at {at}"));
        }
        None => lines.push("  decision:   none yet".to_owned()),
    }
    if let Some((by, at)) = &a.revoked {
        lines.push(format!("  revoked:    by {by} at {at}"));
    }
    lines.join("\n")
}

/// The person deciding: the effective OS user, as `os:<name>` (`os:uid-<n>` when the user
/// database does not name it).
fn os_approver() -> String {
    let uid = rustix::process::geteuid().as_raw();
    let name = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                let found: u32 = fields.nth(1)?.parse().ok()?;
                (found == uid).then(|| name.to_owned())
            })
        });
    name.map_or_else(|| format!("os:uid-{uid}"), |name| format!("os:{name}"))
}
