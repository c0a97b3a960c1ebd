//! `cairn vce check` and `cairn rlc check`: the published VCE 0.1 and RLC 0.1 formats,
//! decided as their reference implementations decide them, with every finding and its code.
//! The JSON form is `{"decision", "findings": [{"code", "message"}]}`; the exit code says the
//! decision (0 RESUMABLE / PASSED, 3 REVIEW_REQUIRED, 4 BLOCKED) or malformed input (2).
//! Inputs are read as Python's `json.loads` reads them (`cairn_core::py_json`), so anything
//! the reference decides is decided here too; only what is not JSON (or nests more than
//! 1,000 levels) exits 2.

use std::fmt::Write as _;

use cairn_continuity::vce::{VceDecision, VceValidator};
use cairn_core::CodedFinding;
use cairn_lanes::rlc::{RlcDecision, RlcValidator};
use serde_json::json;

use crate::args::{RlcCommand, VceCommand};
use crate::failure::{Failure, exit};
use crate::input::read_py_json;
use crate::output::Outcome;

fn outcome(decision: &str, findings: &[CodedFinding], code: u8) -> Outcome {
    let mut human = format!("{decision}\n");
    for finding in findings {
        let _ = writeln!(human, "  {}: {}", finding.code, finding.message);
    }
    Outcome {
        json: json!({"decision": decision, "findings": findings}),
        human,
        exit: code,
        silent: false,
    }
}

/// Runs `cairn vce …`.
pub fn run_vce(command: VceCommand) -> Result<Outcome, Failure> {
    let VceCommand::Check { envelope, restore } = command;
    let envelope = read_py_json(&envelope, "envelope")?;
    let restore = restore
        .map(|path| read_py_json(&path, "restore results"))
        .transpose()?;
    let validator =
        VceValidator::new().map_err(|e| Failure::internal("schema_compile", e.to_string()))?;
    let report = validator.check_read(&envelope, restore.as_ref());
    let code = match report.decision {
        VceDecision::Resumable => exit::OK,
        VceDecision::ReviewRequired => exit::REVIEW,
        VceDecision::Blocked => exit::BLOCKED,
    };
    Ok(outcome(report.decision.as_str(), &report.findings, code))
}

/// Runs `cairn rlc …`.
pub fn run_rlc(command: RlcCommand) -> Result<Outcome, Failure> {
    let RlcCommand::Check { file, restore, vce } = command;
    let document = read_py_json(&file, "extension")?;
    let restore = restore
        .map(|path| read_py_json(&path, "restore results"))
        .transpose()?;
    let vce = vce
        .map(|path| read_py_json(&path, "VCE envelope"))
        .transpose()?;
    let validator =
        RlcValidator::new().map_err(|e| Failure::internal("schema_compile", e.to_string()))?;
    let report = validator.check_read(&document, restore.as_ref(), vce.as_ref());
    let code = match report.decision {
        RlcDecision::Passed => exit::OK,
        RlcDecision::ReviewRequired => exit::REVIEW,
        RlcDecision::Blocked => exit::BLOCKED,
    };
    Ok(outcome(report.decision.as_str(), &report.findings, code))
}
