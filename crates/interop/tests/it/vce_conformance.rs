//! Data-driven conformance for the VCE 0.1 validator: every folder of `tests/vce_cases/` is an
//! `envelope.json`, an optional `restore.json` and `expected.json` (`{"about", "decision",
//! "codes", "count"?, "reference"?}`), read as Python reads them and checked against
//! [`VceValidator::check_read`]. Adding a case is
//! adding a folder (or a line of `tests/vce_cases/generate.py`); `check` is the one helper.
//!
//! The folder holds one case per test of the published suite (`test_vce_conformance.py`, 17
//! tests) and one per rule of SPEC Appendix A that the suite leaves out.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use cairn_interop::py_json::{self, PyJson};
use cairn_interop::vce::{VceDecision, VceValidator, codes};
use serde_json::Value;

/// The tests of the published suite, each of which some case must name as its `reference`.
const REFERENCE_TESTS: [&str; 17] = [
    "test_published_examples_are_schema_valid",
    "test_schema_rejects_extra_property_bad_enum_and_bad_format",
    "test_example_digest_and_semantics_are_valid",
    "test_missing_restore_results_fails_closed",
    "test_missing_required_read_fails_closed",
    "test_missing_required_evidence_check_fails_closed",
    "test_pending_restore_check_requires_review",
    "test_digest_mismatch_fails_closed",
    "test_task_verification_remains_pending_after_restore",
    "test_verified_envelope_is_resumable_only_after_restore",
    "test_next_action_blocker_requires_review",
    "test_tampering_fails_closed",
    "test_execution_claim_requires_evidence_reference",
    "test_existence_only_check_cannot_verify_execution_claim",
    "test_untrusted_sources_cannot_regain_authority",
    "test_project_policy_may_carry_constraint_authority",
    "test_execution_artifacts_require_declared_restore_checks",
];

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vce_cases")
}

fn case_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(cases_dir())
        .expect("tests/vce_cases exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn read_json(path: &Path) -> Value {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A case document read as the CLI reads it: as Python's `json.loads` would.
fn read_as_python(path: &Path) -> PyJson {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    py_json::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs one case folder through the library and judges the report; returns `expected.json`.
fn check(validator: &VceValidator, dir: &Path) -> Value {
    let name = dir.file_name().unwrap().to_string_lossy();
    let envelope = read_as_python(&dir.join("envelope.json"));
    let restore_path = dir.join("restore.json");
    let restore = restore_path.exists().then(|| read_as_python(&restore_path));
    let expected = read_json(&dir.join("expected.json"));
    let report = validator.check_read(&envelope, restore.as_ref());
    let json = serde_json::to_value(&report).unwrap();
    let about = expected["about"].as_str().unwrap_or_default();

    assert_eq!(
        json["decision"], expected["decision"],
        "{name}: {about}\n{json:#}"
    );
    let got: BTreeSet<&str> = report.findings.iter().map(|f| f.code).collect();
    let want: BTreeSet<&str> = expected["codes"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: expected.json has no codes"))
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(got, want, "{name}: {about}\n{json:#}");
    if let Some(count) = expected.get("count") {
        assert_eq!(
            report.findings.len() as u64,
            count.as_u64().unwrap(),
            "{name}: number of findings\n{json:#}"
        );
    }
    assert_report_shape(&name, &report, &json);
    expected
}

/// Invariants of every report: RESUMABLE exactly when there is no finding; messages are
/// lowercase-led and name a path or value in backticks; every code is a documented one.
fn assert_report_shape(name: &str, report: &cairn_interop::vce::VceReport, json: &Value) {
    assert_eq!(
        report.decision == VceDecision::Resumable,
        report.findings.is_empty(),
        "{name}: a resumable report has no findings, any other has some"
    );
    let blocking = report
        .findings
        .iter()
        .any(|f| !codes::REVIEW.contains(&f.code));
    if !report.findings.is_empty() {
        assert_eq!(
            report.decision == VceDecision::Blocked,
            blocking,
            "{name}: blocked exactly when a finding blocks"
        );
    }
    for finding in &report.findings {
        assert!(
            codes::ALL.contains(&finding.code),
            "{name}: {}",
            finding.code
        );
        let first = finding.message.chars().next().unwrap();
        assert!(
            !first.is_uppercase() && finding.message.contains('`'),
            "{name}: message style: {}",
            finding.message
        );
    }
    assert_eq!(
        json.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["decision", "findings"]
    );
}

#[test]
fn every_case_folder_decides_as_expected() {
    let validator = VceValidator::new().unwrap();
    let dirs = case_dirs();
    assert!(
        dirs.len() >= 17,
        "expected at least one case per published test, found {}",
        dirs.len()
    );
    for dir in &dirs {
        check(&validator, dir);
    }
}

#[test]
fn every_published_test_has_a_case() {
    let validator = VceValidator::new().unwrap();
    let covered: BTreeSet<String> = case_dirs()
        .iter()
        .filter_map(|dir| {
            check(&validator, dir)
                .get("reference")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    for test in REFERENCE_TESTS {
        assert!(covered.contains(test), "no case covers `{test}`");
    }
}

#[test]
fn every_reachable_code_has_a_case() {
    let validator = VceValidator::new().unwrap();
    let mut covered = BTreeSet::new();
    for dir in case_dirs() {
        let expected = check(&validator, &dir);
        for code in expected["codes"].as_array().unwrap() {
            covered.insert(code.as_str().unwrap().to_owned());
        }
    }
    for code in codes::ALL {
        if !codes::PRE_EMPTED.contains(code) {
            assert!(covered.contains(*code), "no case reports `{code}`");
        }
    }
}

/// The published example with its restore results is REVIEW_REQUIRED in the reference
/// (`test_task_verification_remains_pending_after_restore`): the gate passes and the task's
/// verification is still pending. The case folder holds the examples byte for byte; when the
/// interop folder is present, this also checks they are still the published files.
#[test]
fn the_published_example_with_its_restore_results_needs_review() {
    let validator = VceValidator::new().unwrap();
    let dir = cases_dir().join("ref-task-verification-remains-pending-after-restore");
    let envelope_text = fs::read_to_string(dir.join("envelope.json")).unwrap();
    let restore_text = fs::read_to_string(dir.join("restore.json")).unwrap();
    let envelope: Value = serde_json::from_str(&envelope_text).unwrap();
    let restore: Value = serde_json::from_str(&restore_text).unwrap();
    let report = validator.check(&envelope, Some(&restore));
    assert_eq!(report.decision, VceDecision::ReviewRequired);
    let got: Vec<&str> = report.findings.iter().map(|f| f.code).collect();
    assert_eq!(
        got,
        [codes::VERIFICATION_PENDING, codes::NEXT_ACTION_BLOCKED]
    );
    assert_eq!(
        validator.check(&envelope, None).decision,
        VceDecision::Blocked
    );

    let Some(interop) = interop_dir() else {
        return;
    };
    for (file, text) in [
        ("continuation-envelope.example.json", &envelope_text),
        ("restore-results.example.json", &restore_text),
    ] {
        let published = fs::read_to_string(interop.join(file)).unwrap();
        assert_eq!(
            &published, text,
            "{file} differs from the published example"
        );
    }
}

/// The schemas embedded in the library are the published ones, byte for byte.
#[test]
fn the_embedded_schemas_are_the_published_files() {
    use cairn_interop::vce::{ENVELOPE_SCHEMA_JSON, RESTORE_RESULTS_SCHEMA_JSON};
    let checked_in = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/vce-0.1");
    let files = [
        ("continuation-envelope.schema.json", ENVELOPE_SCHEMA_JSON),
        ("restore-results.schema.json", RESTORE_RESULTS_SCHEMA_JSON),
    ];
    for (file, embedded) in files {
        assert_eq!(
            fs::read_to_string(checked_in.join(file)).unwrap(),
            embedded,
            "{file}: the embedded text is not the checked-in copy"
        );
    }
    let Some(interop) = interop_dir() else {
        return;
    };
    for (file, embedded) in files {
        let published = fs::read(interop.join(file)).unwrap();
        assert!(
            published == embedded.as_bytes(),
            "{file}: the checked-in copy differs from {}",
            interop.join(file).display()
        );
    }
}

/// `$CAIRN_SHARED_DIR/interop/vce-0.1`, or the `shared` folder beside the workspace; `None`
/// (with a note on stdout) when it is not there.
fn interop_dir() -> Option<PathBuf> {
    cairn_test_support::shared::shared_dir_with("interop/vce-0.1")
        .map(|shared| shared.join("interop/vce-0.1"))
}
