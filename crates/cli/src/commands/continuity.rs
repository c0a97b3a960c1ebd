//! `cairn continuity check`: the rehydration decision of SPEC E-4 from files — an envelope,
//! the current durable state, the summary and `now`. The decision never authorises anything;
//! the exit code says which of the three outcomes it is.

use std::path::Path;

use cairn_continuity::{ContinuityState, ContinuityStatus, decide_text};
use cairn_core::Timestamp;

use crate::args::ContinuityCommand;
use crate::failure::{Failure, exit};
use crate::output::Outcome;

/// The largest input file read (the envelope parser has its own, smaller limit).
const MAX_FILE_BYTES: u64 = 4 << 20;

fn read(path: &Path, what: &str) -> Result<String, Failure> {
    let unreadable = |e: std::io::Error| {
        Failure::invalid(
            "unreadable_input",
            format!("cannot read the {what} `{}`: {e}", path.display()),
        )
    };
    let len = std::fs::metadata(path).map_err(unreadable)?.len();
    if len > MAX_FILE_BYTES {
        return Err(Failure::invalid(
            "input_too_large",
            format!(
                "the {what} `{}` is {len} bytes; the limit is {MAX_FILE_BYTES}",
                path.display()
            ),
        ));
    }
    std::fs::read_to_string(path).map_err(unreadable)
}

/// Runs `cairn continuity …`.
pub fn run(command: ContinuityCommand) -> Result<Outcome, Failure> {
    let ContinuityCommand::Check {
        envelope,
        state,
        summary,
        now,
    } = command;
    let now: Timestamp = now
        .parse()
        .map_err(|e| Failure::invalid("invalid_timestamp", format!("`--now`: {e}")))?;
    let state_text = read(&state, "state")?;
    let state = ContinuityState::from_json(&state_text).map_err(|e| Failure {
        code: cairn_core::ErrorCode::code(&e),
        message: format!("`{}`: {e}", state.display()),
        exit: exit::INVALID,
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
    Ok(Outcome {
        json,
        human,
        exit: match decision.status() {
            ContinuityStatus::ReauthorizationRequired => exit::OK,
            ContinuityStatus::ContinuityValidationFailed => exit::BLOCKED,
            ContinuityStatus::BlockedOnReconciliation => exit::RECONCILE,
        },
        silent: false,
    })
}
