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
    let files = open_files(ctx)?;
    let now = now(&args.at)?;
    let window = window(&args.window)?;
    let comparison = files.compare_now(args.name.as_deref(), now, window)?;
    let activity = match args.activity {
        ActivityArg::Working => ActivityHealth::Working,
        ActivityArg::WaitingHuman => ActivityHealth::WaitingHuman,
        ActivityArg::Idle => ActivityHealth::Idle,
        ActivityArg::Failing => ActivityHealth::Failing,
    };
    let status = Status::new(activity, &comparison);
    let json = serde_json::to_value(&status)
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot serialise: {e}")))?;
    let activity_text = json
        .get("activity")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let mut human = format!(
        "activity {activity_text} · {}\n",
        continuity_line(
            status.continuity(),
            status.determining_key(),
            status.reason().code(),
            status.action().as_str(),
        )
    );
    if status.restricts_consequential() {
        human.push_str("  consequential actions (writes, sends, deploys) must wait\n");
    }
    Ok(Outcome::ok(json, human))
}
