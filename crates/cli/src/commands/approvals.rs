//! `cairn approvals`: the person's side of held calls (SPEC T-4). A call a policy permits
//! only with a person's approval (`@approval`) is held with a request `apr-…`; here a person
//! lists what waits, looks at a request — the tool, the digest of the exact arguments, the
//! policies it was held under — and approves exactly that call, refuses it, or revokes an
//! approval. Each decision is a record in the request's run, naming the approver (the OS
//! user running this command).
//!
//! With `CAIRN_SERVER` set (and no `--store`), the same commands ask the service, with the
//! token of `CAIRN_TOKEN` (an approver's to decide; an investigator's reads): the approver
//! recorded is then the token.

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
    if let Some(service) = crate::remote::Remote::from_env(ctx, "an approver's to decide")? {
        return remote::run(&service, command);
    }
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

/// `cairn approvals` against a service (`CAIRN_SERVER`, `CAIRN_TOKEN`).
mod remote {
    use serde_json::{Value, json};

    use crate::args::ApprovalsCommand;
    use crate::failure::Failure;
    use crate::output::Outcome;
    use crate::remote::Remote;

    pub fn run(service: &Remote, command: ApprovalsCommand) -> Result<Outcome, Failure> {
        let call = |method: &str, path: &str, body: Option<Value>| service.call(method, path, body);
        let id_path = |id: &str| {
            cairn_runtime::approvals::ApprovalId::parse(id.trim())
                .map(|id| format!("/v1/approvals/{id}"))
                .map_err(|e| Failure::from_error(&e))
        };
        match command {
            ApprovalsCommand::List { all, tenant: _ } => {
                let listed = call("GET", &format!("/v1/approvals?all={all}"), None)?;
                let lines: Vec<String> = listed
                    .as_array()
                    .map(|a| a.iter().map(line).collect())
                    .unwrap_or_default();
                let human = if lines.is_empty() {
                    "no request waits for a person".to_owned()
                } else {
                    lines.join("\n")
                };
                Ok(Outcome::ok(json!({ "approvals": listed }), human))
            }
            ApprovalsCommand::Show(request) => {
                let shown = call("GET", &id_path(&request.id)?, None)?;
                let human = line(&shown);
                Ok(Outcome::ok(shown, human))
            }
            ApprovalsCommand::Approve {
                request,
                expires_in,
                uses,
                note,
            } => {
                let body = json!({"expires_in": expires_in, "uses": uses, "note": note});
                decide(&call, &id_path(&request.id)?, ("approve", "approved"), body)
            }
            ApprovalsCommand::Deny { request, note } => decide(
                &call,
                &id_path(&request.id)?,
                ("deny", "refused"),
                json!({"note": note}),
            ),
            ApprovalsCommand::Revoke { request, note } => decide(
                &call,
                &id_path(&request.id)?,
                ("revoke", "revoked"),
                json!({"note": note}),
            ),
        }
    }

    /// One request to the service: method, path, body; its JSON answer or its refusal.
    type Call<'a> = dyn Fn(&str, &str, Option<Value>) -> Result<Value, Failure> + 'a;

    /// `POST {path}/{action}` with `body`, said as `done`.
    fn decide(
        call: &Call<'_>,
        path: &str,
        (action, done): (&str, &str),
        body: Value,
    ) -> Result<Outcome, Failure> {
        let decided = call("POST", &format!("{path}/{action}"), Some(body))?;
        let human = format!("{done}: {}", line(&decided));
        Ok(Outcome::ok(decided, human))
    }

    /// One request as the service shows it.
    fn line(view: &Value) -> String {
        let text = |key: &str| {
            view.get(key)
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        };
        format!(
            "{}  {:<8}  {}/{} step {}  {}  requested {}{}",
            text("id"),
            text("state"),
            text("tenant_id"),
            text("run_id"),
            view.get("step").unwrap_or(&Value::Null),
            text("tool"),
            text("requested_at"),
            view.get("decided_by")
                .and_then(Value::as_str)
                .map(|by| format!("  decided by {by}"))
                .unwrap_or_default()
        )
    }
}
