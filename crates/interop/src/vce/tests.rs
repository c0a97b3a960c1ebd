//! Unit tests of the VCE 0.1 validator's stages on their own: every stage accepts values of
//! any shape without panicking, and every rule the schema pre-empts still fires when its stage
//! runs without the schema in front of it. Decisions on whole documents are tested by the case
//! folder (`tests/it/vce_conformance.rs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is the test failing"
)]

use proptest::prelude::*;
use serde_json::{Value, json};

use super::top::Top;
use super::*;

const EXAMPLE: &str = include_str!(
    "../../tests/vce_cases/ref-task-verification-remains-pending-after-restore/envelope.json"
);
const RESTORE: &str = include_str!(
    "../../tests/vce_cases/ref-task-verification-remains-pending-after-restore/restore.json"
);

fn example() -> Value {
    serde_json::from_str(EXAMPLE).unwrap()
}

fn restore() -> Value {
    serde_json::from_str(RESTORE).unwrap()
}

/// A validator that accepts every document, to run the gate's own rules on malformed results.
fn anything() -> crate::schema::Schema {
    crate::schema::compile("anything", "{}").unwrap()
}

fn resign(envelope: &mut Value) {
    if let Some(map) = envelope.as_object() {
        let hex = digest::digest_without_field(map).unwrap();
        let hex = String::from_utf8(hex.to_vec()).unwrap();
        if let Some(meta) = envelope
            .get_mut("envelope_digest")
            .and_then(Value::as_object_mut)
        {
            meta.insert("value".into(), Value::String(hex));
        }
    }
}

/// Every JSON pointer into `value`, the root excluded.
fn pointers(value: &Value, prefix: &str, out: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (format!("{prefix}/{k}"), v))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{prefix}/{i}"), v))
            .collect(),
        _ => Vec::new(),
    };
    for (pointer, child) in children {
        out.push(pointer.clone());
        pointers(child, &pointer, out);
    }
}

fn shapes() -> [Value; 10] {
    [
        json!(null),
        json!(true),
        json!(7),
        json!(-1.5),
        json!(""),
        json!("x"),
        json!([]),
        json!([null, {"status": "passed"}]),
        json!({}),
        json!({"check_id": [], "status": "pending"}),
    ]
}

/// Runs every stage on `envelope` and `restore` with no schema in front, then the whole check.
fn run_all(
    validator: &VceValidator,
    envelope: &Value,
    restore: Option<&Value>,
) -> Vec<&'static str> {
    let mut stage = Stage::default();
    digest::check(envelope, None, &mut stage);
    let top = Top::of(envelope);
    let index = semantic::check(&top, &mut stage);
    gate::check(&top, restore, &anything(), &index, &mut stage);
    after_gate::check(&top, &mut stage);
    let report = validator.check(envelope, restore);
    assert_eq!(
        report.decision == VceDecision::Resumable,
        report.findings.is_empty()
    );
    stage.findings.iter().map(|f| f.code).collect()
}

#[test]
fn every_stage_takes_any_shape_at_any_place_of_the_envelope() {
    let validator = VceValidator::new().unwrap();
    let base = example();
    let restore = restore();
    let mut all = Vec::new();
    pointers(&base, "", &mut all);
    for pointer in &all {
        for shape in shapes() {
            let mut envelope = base.clone();
            *envelope.pointer_mut(pointer).unwrap() = shape;
            resign(&mut envelope);
            run_all(&validator, &envelope, Some(&restore));
        }
    }
}

#[test]
fn every_stage_takes_any_shape_at_any_place_of_the_restore_results() {
    let validator = VceValidator::new().unwrap();
    let mut envelope = example();
    envelope["pending_verification"] = json!([]);
    envelope["next_action"]["blocked_by"] = json!([]);
    resign(&mut envelope);
    let base = restore();
    let mut all = Vec::new();
    pointers(&base, "", &mut all);
    for pointer in &all {
        for shape in shapes() {
            let mut restore = base.clone();
            *restore.pointer_mut(pointer).unwrap() = shape;
            run_all(&validator, &envelope, Some(&restore));
        }
    }
}

#[test]
fn documents_that_are_not_objects_block() {
    let validator = VceValidator::new().unwrap();
    for shape in shapes() {
        let report = validator.check(&shape, Some(&restore()));
        assert_eq!(report.decision, VceDecision::Blocked);
        assert_eq!(report.findings[0].code, codes::SCHEMA_INVALID);
        let report = validator.check(&example(), Some(&shape));
        assert_eq!(report.decision, VceDecision::Blocked);
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.code == codes::RESTORE_SCHEMA_INVALID)
        );
    }
}

/// Runs the semantic stage alone on the example changed by `change`.
fn semantic_codes(change: impl FnOnce(&mut Value)) -> Vec<&'static str> {
    let mut envelope = example();
    change(&mut envelope);
    let mut stage = Stage::default();
    semantic::check(&Top::of(&envelope), &mut stage);
    stage.findings.iter().map(|f| f.code).collect()
}

#[test]
fn pre_empted_semantic_rules_fire_without_the_schema() {
    type Change = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(&str, Change)> = vec![
        (
            codes::MISSING_TOP_LEVEL_FIELD,
            Box::new(|e| drop(e.as_object_mut().unwrap().remove("project"))),
        ),
        (
            codes::AUTHORITY_MODEL_INVALID,
            Box::new(|e| e["authority_model"] = json!([])),
        ),
        (
            codes::AUTHORITY_PRECEDENCE_INVALID,
            Box::new(|e| e["authority_model"]["precedence"] = json!(["memory"])),
        ),
        (
            codes::MEMORY_DEFAULT_INVALID,
            Box::new(|e| e["authority_model"]["memory_default"] = json!("constraint")),
        ),
        (
            codes::AUTHORITATIVE_SOURCES_INVALID,
            Box::new(|e| e["authority_model"]["authoritative_sources"] = json!([])),
        ),
        (
            codes::AUTHORITATIVE_SOURCES_INVALID,
            Box::new(|e| e["authority_model"]["authoritative_sources"] = json!("user_message")),
        ),
        (
            codes::AUTHORITATIVE_SOURCES_INVALID,
            Box::new(|e| {
                e["authority_model"]["authoritative_sources"] = json!(["user_message", "tool"])
            }),
        ),
        (
            codes::OPERATIONAL_TAIL_EMPTY,
            Box::new(|e| e["operational_tail"] = json!([])),
        ),
        (
            codes::OPERATIONAL_EVENT_INVALID,
            Box::new(|e| e["operational_tail"][1] = json!("event")),
        ),
        (
            codes::ARTIFACT_REFS_INVALID,
            Box::new(|e| e["artifact_refs"] = json!({})),
        ),
        (
            codes::ARTIFACT_REFS_INVALID,
            Box::new(|e| e["artifact_refs"][0]["artifact_id"] = json!("")),
        ),
        (
            codes::RESTORE_REQUIREMENTS_INVALID,
            Box::new(|e| e["restore_requirements"] = json!(null)),
        ),
        (
            codes::RESTORE_REQUIREMENTS_INVALID,
            Box::new(|e| e["restore_requirements"]["required_evidence_checks"] = json!({})),
        ),
        (
            codes::RESTORE_NOT_FAIL_CLOSED,
            Box::new(|e| e["restore_requirements"]["fail_closed"] = json!(1)),
        ),
        (
            codes::CHECK_ID_MISSING,
            Box::new(|e| {
                e["restore_requirements"]["required_evidence_checks"][0]["check_id"] = json!(5)
            }),
        ),
        (
            codes::EVIDENCE_ARTIFACT_WITHOUT_ANCHOR,
            Box::new(|e| e["artifact_refs"][0]["digest"] = json!("")),
        ),
        (
            codes::REJECTED_APPROACHES_INVALID,
            Box::new(|e| e["rejected_approaches"] = json!("none")),
        ),
        (
            codes::REJECTED_APPROACH_REOPENED,
            Box::new(|e| e["rejected_approaches"][0]["status"] = json!("reopened")),
        ),
        (
            codes::PENDING_VERIFICATION_INVALID,
            Box::new(|e| e["pending_verification"] = json!(null)),
        ),
        (
            codes::PENDING_VERIFICATION_PROMOTED,
            Box::new(|e| e["pending_verification"][0]["status"] = json!("passed")),
        ),
    ];
    for (code, change) in cases {
        let codes = semantic_codes(change);
        assert!(codes.contains(&code), "{code}: got {codes:?}");
    }
    assert!(semantic_codes(|_| ()).is_empty());
}

#[test]
fn pre_empted_digest_gate_and_after_gate_rules_fire_without_the_schema() {
    let mut stage = Stage::default();
    let mut envelope = example();
    envelope["envelope_digest"]["algorithm"] = json!("md5");
    digest::check(&envelope, None, &mut stage);
    assert_eq!(stage.findings[0].code, codes::ENVELOPE_DIGEST_UNSUPPORTED);

    let mut deep = json!(null);
    for _ in 0..=crate::sort_keys::SORT_KEYS_UTF8_V1_MAX_DEPTH {
        deep = Value::Array(vec![deep]);
    }
    envelope["project"] = deep;
    let mut stage = Stage::default();
    digest::check(&envelope, None, &mut stage);
    assert!(
        stage
            .findings
            .iter()
            .any(|f| f.code == codes::ENVELOPE_DIGEST_UNCOMPUTABLE)
    );

    // A method no schema admits, on both sides, reaches the gate's last rule.
    let mut envelope = example();
    envelope["restore_requirements"]["required_evidence_checks"][0]["method"] = json!("signature");
    let mut results = restore();
    results["evidence_checks"][0]["method"] = json!("signature");
    let mut stage = Stage::default();
    let index = semantic::check(&Top::of(&envelope), &mut stage);
    gate::check(
        &Top::of(&envelope),
        Some(&results),
        &anything(),
        &index,
        &mut stage,
    );
    assert!(
        stage
            .findings
            .iter()
            .any(|f| f.code == codes::CHECK_METHOD_UNKNOWN)
    );

    for blocked_by in [json!("verify-tests"), json!(null)] {
        let mut envelope = example();
        envelope["next_action"]["blocked_by"] = blocked_by;
        let mut stage = Stage::default();
        after_gate::check(&Top::of(&envelope), &mut stage);
        assert!(
            stage
                .findings
                .iter()
                .any(|f| f.code == codes::NEXT_ACTION_INVALID)
        );
    }
}

#[test]
fn decisions_and_reports_serialise_as_the_reference_names_them() {
    assert_eq!(
        serde_json::to_value([
            VceDecision::Resumable,
            VceDecision::ReviewRequired,
            VceDecision::Blocked
        ])
        .unwrap(),
        json!(["RESUMABLE", "REVIEW_REQUIRED", "BLOCKED"])
    );
    let report = VceValidator::new().unwrap().check(&example(), None);
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"decision": "BLOCKED", "findings": [{
            "code": "restore_results_missing",
            "message": report.findings[0].message,
        }]})
    );
}

#[test]
fn every_code_is_listed_once_and_classified() {
    let mut seen = std::collections::BTreeSet::new();
    for code in codes::ALL {
        assert!(seen.insert(code), "{code} listed twice");
        assert!(
            code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{code}"
        );
    }
    for code in codes::PRE_EMPTED.iter().chain(codes::REVIEW) {
        assert!(seen.contains(code), "{code} is not in ALL");
    }
}

#[test]
fn the_validator_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<VceValidator>();
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "digest",
            "pending",
            "passed",
            "constraint",
            "artifact-rfc",
            "vce-example-001"
        ])
        .prop_map(Value::from),
        "[a-z_]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "envelope_id",
                    "artifact_refs",
                    "artifact_id",
                    "check_id",
                    "method",
                    "status",
                    "operational_tail",
                    "evidence_refs",
                    "event_type",
                    "restore_requirements",
                    "required_evidence_checks",
                    "required_reads",
                    "completed_reads",
                    "evidence_checks",
                    "next_action",
                    "blocked_by",
                    "digest",
                    "receipt_ref",
                    "authority_model",
                ])
                .prop_map(str::to_owned),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn no_input_makes_any_stage_panic(envelope in any_json(), results in any_json()) {
        let validator = VceValidator::new().unwrap();
        run_all(&validator, &envelope, Some(&results));
        run_all(&validator, &envelope, None);
    }
}

#[test]
fn the_example_reports_its_open_work_in_plain_words() {
    let validator = VceValidator::new().unwrap();
    let report = validator.check(&example(), Some(&restore()));
    let messages: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "`$.pending_verification[0]` (`verify-tests`) is `pending`: the task's verification is not done",
            "`$.next_action.blocked_by` is `[\"verify-tests\"]`: the next action waits on them",
        ]
    );
}
