//! `cairn continuity check`: the rehydration decision of SPEC E-4 from files — an envelope,
//! the current durable state, the summary and `now`. The decision never authorises anything;
//! the exit code says which of the three outcomes it is.

use cairn_continuity::{ContinuityState, ContinuityStatus, decide_text};
use cairn_core::Timestamp;

use crate::args::ContinuityCommand;
use crate::failure::{Failure, exit};
use crate::input::read;
use crate::output::Outcome;
use serde_json::Value;

/// Runs `cairn continuity …`.
pub fn run(command: ContinuityCommand) -> Result<Outcome, Failure> {
    let ContinuityCommand::Check {
        envelope,
        state,
        summary,
        now,
    } = command;
    let now: Timestamp = now.parse().map_err(|e| {
        Failure::new(
            cairn_core::CoreError::INVALID_TIMESTAMP,
            format!("`--now`: {e}"),
        )
    })?;
    let state_text = read(&state, "state")?;
    let state = ContinuityState::from_json(&state_text).map_err(|e| {
        Failure::new(
            cairn_core::ErrorCode::error_code(&e),
            format!("`{}`: {e}", state.display()),
        )
    })?;
    let summary = read(&summary, "summary")?;
    // The envelope is judged, not merely parsed: an invalid one is a decision
    // (`continuity_validation_failed` / `schema_invalid`), not a usage error.
    let envelope = read(&envelope, "envelope")?;
    let decision = decide_text(&envelope, &state, &summary, now);
    let json = decision.to_json();
    let human = format!(
        "{} ({}): authorized false, requires reauthorization true\n{}",
        decision.status().as_str(),
        decision.reason().as_str(),
        serde_json::to_string_pretty(&json).unwrap_or_default()
    );
    Ok(decided(json, human, decision.status()))
}

/// The outcome of a rehydration decision: exit 0 when it can at best ask for
/// reauthorization, `BLOCKED` when validation failed, `RECONCILE` when it waits on one.
pub(crate) fn decided(json: Value, human: String, status: ContinuityStatus) -> Outcome {
    Outcome {
        json,
        human,
        exit: match status {
            ContinuityStatus::ReauthorizationRequired => exit::OK,
            ContinuityStatus::ContinuityValidationFailed => exit::BLOCKED,
            ContinuityStatus::BlockedOnReconciliation => exit::RECONCILE,
        },
        silent: false,
    }
}
