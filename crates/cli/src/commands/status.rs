//! `cairn status`: activity health and continuity health side by side (SPEC D-3), never
//! merged into one light — `activity working · continuity conflicting (scope:
//! changed_without_approval) → stop_and_ask`.
//!
//! Continuity comes from comparing the latest (or named) decision snapshot with the current
//! decision book, as `cairn decisions compare` does. Activity is what the caller says it is
//! (`--activity`); Cairn does not infer it from continuity, and it is `working` when not
//! given. The JSON form is `cairn.decision-status/v1`. The command is a report: it exits 0
//! whenever the status could be computed (the gate is `cairn decisions compare`, which
//! exits 0, 3 or 4).

use cairn_decisions::{ActivityHealth, Status};

use super::decisions::{continuity_line, now, open_files, window};
use crate::args::{ActivityArg, StatusArgs};
use crate::context::Context;
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;

/// Runs `cairn status`.
pub fn run(ctx: &Context, args: &StatusArgs) -> Result<Outcome, Failure> {
    let activity = match args.activity {
        ActivityArg::Working => ActivityHealth::Working,
        ActivityArg::WaitingHuman => ActivityHealth::WaitingHuman,
        ActivityArg::Idle => ActivityHealth::Idle,
        ActivityArg::Failing => ActivityHealth::Failing,
    };
    if let Some(service) = crate::remote::Remote::from_env(ctx, "an investigator's")? {
        return remote(&service, args, activity);
    }
    let files = open_files(ctx)?;
    let now = now(&args.at)?;
    let window = window(&args.window)?;
    let comparison = files.compare_now(args.name.as_deref(), now, window)?;
    let status = Status::new(activity, &comparison);
    let json = serde_json::to_value(&status)
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot serialise: {e}")))?;
    let activity_text = json
        .get("activity")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let human = human(
        &activity_text,
        &continuity_line(
            status.continuity().as_str(),
            status
                .determining_key()
                .map(cairn_decisions::DecisionKind::as_str),
            status.reason().code(),
            status.action().as_str(),
        ),
        status.restricts_consequential(),
    );
    Ok(Outcome::ok(json, human))
}

fn human(activity: &str, continuity: &str, restricts: bool) -> String {
    let mut human = format!("activity {activity} · {continuity}\n");
    if restricts {
        human.push_str("  consequential actions (writes, sends, deploys) must wait\n");
    }
    human
}

/// The status with the continuity of the service's tenant (`GET /v1/decisions/status`),
/// compared by the service at its own time and with its own window.
fn remote(
    service: &crate::remote::Remote,
    args: &StatusArgs,
    activity: ActivityHealth,
) -> Result<Outcome, Failure> {
    #[derive(serde::Deserialize)]
    struct View {
        continuity: String,
        reason: String,
        action: String,
        determining_key: Option<String>,
        restricts_consequential: bool,
    }
    if args.at.now.is_some() {
        return Err(Failure::new(
            CliCode::USAGE,
            "`--now` is for a local store: the service compares its tenant's decisions at its own time",
        ));
    }
    let path = match &args.name {
        Some(name) => format!("/v1/decisions/status?name={}", crate::remote::encoded(name)),
        None => "/v1/decisions/status".to_owned(),
    };
    let view: View = service.get(&path)?;
    let activity_text = serde_json::to_value(activity)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let json = serde_json::json!({
        "schema_version": cairn_decisions::STATUS_SCHEMA_VERSION,
        "activity": activity_text,
        "continuity": view.continuity,
        "action": view.action,
        "restricts_consequential": view.restricts_consequential,
        "determining_key": view.determining_key,
        "reason": view.reason,
        "as_of": cairn_core::Clock::now(&cairn_core::SystemClock),
    });
    let human = human(
        &activity_text,
        &continuity_line(
            &view.continuity,
            view.determining_key.as_deref(),
            &view.reason,
            &view.action,
        ),
        view.restricts_consequential,
    );
    Ok(Outcome::ok(json, human))
}
