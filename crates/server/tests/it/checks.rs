//! The stateless checks through the API (issue 20, acceptance 1): every continuity case folder
//! and every VCE and RLC conformance case decides over HTTP exactly as the library decides it
//! — the same decision, the same findings in the same order.

use std::path::{Path, PathBuf};

use cairn_continuity::{ContinuityState, decide_text};
use cairn_interop::py_json;
use cairn_interop::{RlcValidator, VceValidator};
use cairn_server::client::Answer;
use cairn_server::tokens::Role;
use cairn_test_support::continuity_cases::{Case, case_dirs};
use serde_json::json;

use crate::Harness;

fn interop_cases(kind: &str) -> Vec<PathBuf> {
    cairn_test_support::subfolders(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../interop/tests/{kind}_cases")),
    )
}

fn text(path: &Path) -> Option<String> {
    path.exists()
        .then(|| std::fs::read_to_string(path).expect("readable case file"))
}

/// A request body holding each given member's file text verbatim, so that what Python's
/// reader makes of a file (`NaN`, lone surrogates, duplicate keys) reaches the service as is.
fn body_of(members: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = members
        .iter()
        .filter_map(|(name, text)| text.as_ref().map(|t| format!("\"{name}\": {t}")))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// The service's answer for the case in `dir` is the library's report.
#[track_caller]
fn assert_decided_as(
    answer: &Answer,
    decision: &str,
    findings: &[cairn_core::CodedFinding],
    dir: &Path,
) {
    assert_eq!(
        answer.status,
        200,
        "{}: {}",
        dir.display(),
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(
        answer.json(),
        json!({"decision": decision, "findings": findings}),
        "{}",
        dir.display()
    );
}

#[test]
fn every_continuity_case_decides_through_the_api_as_in_the_library() {
    let harness = Harness::start();
    let token = harness.token("acme", Role::Agent);
    let dirs = case_dirs();
    assert!(dirs.len() >= 40, "the case folder, found {}", dirs.len());
    for dir in &dirs {
        let case = Case::load(dir);
        let body = json!({
            "envelope": case.envelope,
            "state": case.state,
            "summary": case.summary,
            "now": case.now(),
        });
        let answer = harness.call(
            "POST",
            "/v1/continuity/check",
            Some(&token),
            Some(&body.to_string()),
        );
        assert_eq!(
            answer.status,
            200,
            "{}: {:?}",
            case.name,
            String::from_utf8_lossy(&answer.body)
        );
        let state = ContinuityState::from_json(&case.state).expect("state");
        let library = decide_text(
            &case.envelope,
            &state,
            &case.summary,
            case.now().parse().expect("now"),
        )
        .to_json();
        assert_eq!(answer.json(), library, "{}", case.name);
        case.assert_decision(&answer.json());
    }
}

#[test]
fn an_envelope_and_a_state_may_be_sent_as_json_values() {
    let harness = Harness::start();
    let token = harness.token("acme", Role::Investigator);
    let case = Case::load(
        &case_dirs()
            .into_iter()
            .find(|d| d.ends_with("ok-bare"))
            .expect("ok-bare"),
    );
    let as_text = json!({"envelope": case.envelope, "state": case.state, "summary": case.summary, "now": case.now()});
    let as_values = format!(
        r#"{{"envelope": {}, "state": {}, "summary": {}, "now": "{}"}}"#,
        case.envelope,
        case.state,
        json!(case.summary),
        case.now()
    );
    let first = harness.call(
        "POST",
        "/v1/continuity/check",
        Some(&token),
        Some(&as_text.to_string()),
    );
    let second = harness.call(
        "POST",
        "/v1/continuity/check",
        Some(&token),
        Some(&as_values),
    );
    assert_eq!(first.status, 200);
    assert_eq!(
        second.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&second.body)
    );
    assert_eq!(first.json(), second.json());
    assert_eq!(first.json()["status"], "reauthorization_required");
}

#[test]
fn every_vce_case_decides_through_the_api_as_in_the_library() {
    let harness = Harness::start();
    let token = harness.token("acme", Role::Agent);
    let validator = VceValidator::new().expect("validator");
    let dirs = interop_cases("vce");
    assert!(dirs.len() >= 90, "the VCE cases, found {}", dirs.len());
    for dir in &dirs {
        let envelope = text(&dir.join("envelope.json")).expect("envelope.json");
        let restore = text(&dir.join("restore.json"));
        let body = body_of(&[
            ("envelope", Some(envelope.clone())),
            ("restore", restore.clone()),
        ]);
        let answer = harness.call("POST", "/v1/vce/check", Some(&token), Some(&body));
        let restore = restore.map(|t| py_json::parse(&t).expect("restore"));
        let report = validator.check_read(
            &py_json::parse(&envelope).expect("envelope"),
            restore.as_ref(),
        );
        assert_decided_as(&answer, report.decision.as_str(), &report.findings, dir);
    }
}

#[test]
fn every_rlc_case_decides_through_the_api_as_in_the_library() {
    let harness = Harness::start();
    let token = harness.token("acme", Role::Admin);
    let validator = RlcValidator::new().expect("validator");
    let dirs = interop_cases("rlc");
    assert!(dirs.len() >= 60, "the RLC cases, found {}", dirs.len());
    for dir in &dirs {
        let extension = text(&dir.join("fixture.json"))
            .or_else(|| text(&dir.join("extension.json")))
            .expect("extension.json or fixture.json");
        let restore = text(&dir.join("restore.json"));
        let vce = text(&dir.join("vce.json"));
        let body = body_of(&[
            ("extension", Some(extension.clone())),
            ("restore", restore.clone()),
            ("vce", vce.clone()),
        ]);
        let answer = harness.call("POST", "/v1/rlc/check", Some(&token), Some(&body));
        let read = |t: Option<String>| t.map(|t| py_json::parse(&t).expect("case file"));
        let (restore, vce) = (read(restore), read(vce));
        let report = validator.check_read(
            &py_json::parse(&extension).expect("extension"),
            restore.as_ref(),
            vce.as_ref(),
        );
        assert_decided_as(&answer, report.decision.as_str(), &report.findings, dir);
    }
}

#[test]
fn a_check_that_cannot_be_read_is_refused_naming_the_field() {
    let harness = Harness::start();
    let token = harness.token("acme", Role::Agent);
    let refused = |path: &str, body: &str| {
        let answer = harness.call("POST", path, Some(&token), Some(body));
        (
            answer.status,
            answer.error("code").expect("an error code"),
            answer.error("field"),
        )
    };
    let (status, code, field) = refused("/v1/vce/check", "{\"envelope\": ");
    assert_eq!((status, field.as_deref()), (400, Some("body")), "{code}");
    let (status, code, field) = refused("/v1/vce/check", r#"{"envelope": {}, "restor": {}}"#);
    assert_eq!(
        (status, code.as_str(), field.as_deref()),
        (400, "body_invalid", Some("body.restor"))
    );
    let (status, _, field) = refused("/v1/rlc/check", r#"{"vce": {}}"#);
    assert_eq!((status, field.as_deref()), (400, Some("body.extension")));
    let case = Case::load(&case_dirs()[0]);
    let (status, _, field) = refused(
        "/v1/continuity/check",
        &json!({"envelope": case.envelope, "state": "{", "summary": "", "now": case.now()})
            .to_string(),
    );
    assert_eq!((status, field.as_deref()), (400, Some("body.state")));
    let (status, _, field) = refused(
        "/v1/continuity/check",
        &json!({"envelope": case.envelope, "state": case.state, "summary": "", "now": "yesterday"})
            .to_string(),
    );
    assert_eq!((status, field.as_deref()), (400, Some("body.now")));
    // Without a token nothing is decided.
    let answer = harness.call("POST", "/v1/vce/check", None, Some(r#"{"envelope": {}}"#));
    assert_eq!(answer.status, 401);
}
