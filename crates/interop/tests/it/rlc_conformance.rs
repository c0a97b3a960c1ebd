//! Data-driven RLC 0.1 conformance: every folder of `tests/rlc_cases/` is one case — an
//! extension (`extension.json`, or `fixture.json` holding `extension` and `restore_results`),
//! optional `restore.json` and `vce.json`, and `expected.json` with the decision and the set of
//! finding codes. Adding a case is adding a folder; [`check`] is the one helper.
//!
//! The expected decisions were confirmed against the published Python reference
//! (`rlc_reference.py`), except where a case's `about` says the reference raises.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cairn_interop::py_json::{self, PyJson};
use cairn_interop::rlc::{RlcDecision, RlcValidator, codes, split_document};
use serde_json::Value;

/// The published suite has 21 tests, each with its own case folder.
const MIN_CASES: usize = 21;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rlc_cases")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not json: {e}", path.display()))
}

fn read_as_python(path: &Path) -> PyJson {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    py_json::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The report on one case folder, its documents read as the CLI reads them: as Python's
/// `json.loads` would.
fn decide(validator: &RlcValidator, dir: &Path) -> cairn_interop::rlc::RlcReport {
    let fixture = dir.join("fixture.json");
    let bare = dir.join("extension.json");
    let document = read_as_python(if fixture.exists() { &fixture } else { &bare });
    let restore_path = dir.join("restore.json");
    let restore = restore_path.exists().then(|| read_as_python(&restore_path));
    let vce_path = dir.join("vce.json");
    let vce = vce_path.exists().then(|| read_as_python(&vce_path));
    validator.check_read(&document, restore.as_ref(), vce.as_ref())
}

/// Runs one case folder and returns a description of any mismatch.
fn check(validator: &RlcValidator, dir: &Path) -> Result<(), String> {
    let expected = read_json(&dir.join("expected.json"));
    let report = decide(validator, dir);

    let want_decision = expected["decision"].as_str().expect("decision");
    let want_codes: BTreeSet<&str> = expected["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c.as_str().expect("code"))
        .collect();
    for code in &want_codes {
        assert!(
            codes::ALL.contains(code),
            "{}: unknown code `{code}`",
            dir.display()
        );
    }
    let got_codes: BTreeSet<&str> = report.findings.iter().map(|f| f.code).collect();
    if report.decision.as_str() == want_decision && got_codes == want_codes {
        Ok(())
    } else {
        Err(format!(
            "{}: expected {want_decision} {want_codes:?}, got {} {:#?}",
            dir.file_name().unwrap_or_default().to_string_lossy(),
            report.decision,
            report.findings
        ))
    }
}

fn case_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/rlc_cases exists")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_case_reaches_its_expected_decision_and_codes() {
    let validator = RlcValidator::new().expect("schemas compile");
    let dirs = case_dirs();
    assert!(
        dirs.len() >= MIN_CASES,
        "only {} cases, the published suite alone has {MIN_CASES}",
        dirs.len()
    );
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|dir| check(&validator, dir).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_published_suite_test_has_its_own_case() {
    let suite: BTreeSet<String> = case_dirs()
        .iter()
        .filter_map(|dir| {
            read_json(&dir.join("expected.json"))["reference_test"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(suite.len(), MIN_CASES, "{suite:#?}");
}

#[test]
fn passed_reports_have_no_findings_and_others_explain_themselves() {
    let validator = RlcValidator::new().expect("schemas compile");
    for dir in case_dirs() {
        let report = decide(&validator, &dir);
        assert_eq!(
            report.decision == RlcDecision::Passed,
            report.findings.is_empty(),
            "{}",
            dir.display()
        );
        for finding in &report.findings {
            let first = finding.message.chars().next().unwrap_or(' ');
            assert!(
                !first.is_uppercase() && !finding.message.ends_with('.'),
                "{}: message style: {}",
                dir.display(),
                finding.message
            );
        }
    }
}

/// The published fixtures as they lie in `interop/rlc-0.1/`, when that folder is present.
fn shared_dir() -> Option<PathBuf> {
    cairn_test_support::shared::shared_dir_with("interop/rlc-0.1")
}

#[test]
fn the_published_fixtures_pass_and_block() {
    let Some(shared) = shared_dir() else { return };
    // The benchmark reads the accepted fixture from this case: it must stay the published bytes.
    let copy = cases_dir().join("suite-03-accepted-fixture-passes-lane-restore/fixture.json");
    assert!(
        std::fs::read(&copy).expect("case copy")
            == std::fs::read(shared.join("interop/rlc-0.1/rlc-accepted.json")).expect("published"),
        "{} differs from the published rlc-accepted.json",
        copy.display()
    );
    let validator = RlcValidator::new().expect("schemas compile");
    let vce = read_json(&shared.join("interop/vce-0.1/continuation-envelope.example.json"));
    for (file, want) in [
        ("rlc-accepted.json", RlcDecision::Passed),
        ("rlc-rejected-lane-conflation.json", RlcDecision::Blocked),
    ] {
        let fixture = read_json(&shared.join("interop/rlc-0.1").join(file));
        let (extension, restore) = split_document(&fixture);
        for vce in [None, Some(&vce)] {
            let report = validator.check(extension, restore, vce);
            assert_eq!(report.decision, want, "{file}: {report:#?}");
        }
    }
}
