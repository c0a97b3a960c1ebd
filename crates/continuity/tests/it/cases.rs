//! Data-driven conformance for the rehydration decision: every folder of `tests/cases/` is an
//! envelope, a state, a summary and `now`, with the expected status and reason (see
//! `cairn_test_support::continuity_cases`). Adding a case is adding a folder; `check` is the one helper.

use std::collections::BTreeSet;
use std::path::Path;

use cairn_continuity::{ContinuityReason, ContinuityState, decide_text};
use cairn_core::Timestamp;
use cairn_test_support::continuity_cases::{Case, case_dirs};

/// Runs one case folder through the library and judges the decision.
fn check(dir: &Path) {
    let case = Case::load(dir);
    let state = ContinuityState::from_json(&case.state)
        .unwrap_or_else(|e| panic!("{}: state.json: {e}", case.name));
    let now: Timestamp = case
        .now()
        .parse()
        .unwrap_or_else(|e| panic!("{}: now: {e}", case.name));
    let decision = decide_text(&case.envelope, &state, &case.summary, now);
    let json = decision.to_json();
    // What a caller reads: never authorised, always back to the gate.
    assert_eq!(json["authorized"], false, "{}", case.name);
    assert_eq!(json["requires_reauthorization"], true, "{}", case.name);
    case.assert_decision(&json);
}

#[test]
fn every_case_folder_decides_as_expected() {
    let dirs = case_dirs();
    assert!(
        dirs.len() >= 40,
        "expected the full case folder, found {}",
        dirs.len()
    );
    for dir in &dirs {
        check(dir);
    }
}

#[test]
fn every_reason_of_e4_has_a_case() {
    let covered: BTreeSet<String> = case_dirs()
        .iter()
        .map(|dir| {
            Case::load(dir).expect["reason"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for reason in ContinuityReason::ALL {
        assert!(covered.contains(reason.as_str()), "no case for `{reason}`");
    }
}
