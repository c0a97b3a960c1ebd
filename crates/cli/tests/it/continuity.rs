//! Issue 4, acceptance 2 (CLI side): every case folder of `crates/continuity/tests/cases/` —
//! envelope, state, summary, now → status and reason — decided by the built binary through
//! `cairn continuity check`, judged by the same helper the library test uses, with the exit
//! code of SPEC §9.1 (0 reauthorization required, 4 validation failed, 6 blocked).

use std::process::Command;

use cairn_test_support::continuity_cases::{Case, case_dirs};

#[test]
fn every_continuity_case_holds_through_the_cli() {
    let dirs = case_dirs();
    assert!(
        dirs.len() >= 21,
        "the case folder is missing or nearly empty"
    );
    for dir in dirs {
        let case = Case::load(&dir);
        let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .arg("--json")
            .args(["continuity", "check", "--now", case.now()])
            .arg("--envelope")
            .arg(case.envelope_path())
            .arg("--state")
            .arg(case.state_path())
            .arg("--summary")
            .arg(case.summary_path())
            .env_remove("CAIRN_STORE")
            .output()
            .expect("run cairn");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{}: not JSON ({e}): {}",
                case.name,
                String::from_utf8_lossy(&out.stdout)
            )
        });
        case.assert_decision(&json);
        let want = match json["status"].as_str().unwrap() {
            "reauthorization_required" => 0,
            "continuity_validation_failed" => 4,
            "blocked_on_reconciliation" => 6,
            other => panic!("{}: unknown status {other}", case.name),
        };
        assert_eq!(out.status.code(), Some(want), "{}: exit code", case.name);
    }
}

#[test]
fn a_malformed_state_is_invalid_input_not_a_decision() {
    let case = Case::load(&case_dirs()[0]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(&state, "{\"schema_version\": \"continuity-state/v1\"}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args([
            "--json",
            "continuity",
            "check",
            "--now",
            case.now(),
            "--state",
        ])
        .arg(&state)
        .arg("--envelope")
        .arg(case.envelope_path())
        .arg("--summary")
        .arg(case.summary_path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "invalid_continuity_state");
}
