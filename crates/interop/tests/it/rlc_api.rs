//! The public RLC API beyond the conformance cases: the embedded schemas are the published
//! ones, reports serialise as documented, fixtures split, digests match the published
//! values, and no JSON input makes the validator panic.

use std::path::PathBuf;

use cairn_core::CodedFinding;
use cairn_interop::rlc::{
    ENVELOPE_SCHEMA_TEXT, RESTORE_RESULTS_SCHEMA_TEXT, RlcDecision, RlcReport, RlcValidator, codes,
    extension_digest, lane_digest, split_document,
};
use serde_json::{Value, json};

fn accepted() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rlc_cases/suite-03-accepted-fixture-passes-lane-restore/fixture.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn interop_dir() -> Option<PathBuf> {
    cairn_test_support::shared::shared_dir_with("interop/rlc-0.1")
        .map(|shared| shared.join("interop/rlc-0.1"))
}

#[test]
fn the_embedded_schemas_are_the_published_files_byte_for_byte() {
    let Some(dir) = interop_dir() else { return };
    for (file, embedded) in [
        (
            "responsibility-lane-envelope.schema.json",
            ENVELOPE_SCHEMA_TEXT,
        ),
        (
            "responsibility-lane-restore-results.schema.json",
            RESTORE_RESULTS_SCHEMA_TEXT,
        ),
    ] {
        let published = std::fs::read(dir.join(file)).unwrap();
        assert!(
            published == embedded.as_bytes(),
            "crates/interop/schemas/rlc-0.1/{file} differs from the published {}",
            dir.join(file).display()
        );
    }
}

#[test]
fn reports_serialise_as_documented() {
    let report = RlcReport {
        decision: RlcDecision::ReviewRequired,
        findings: vec![CodedFinding::new(codes::LANE_CHECK_PENDING, "pending")],
    };
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"decision": "REVIEW_REQUIRED", "findings": [{"code": "lane_check_pending", "message": "pending"}]})
    );
    for decision in [
        RlcDecision::Passed,
        RlcDecision::ReviewRequired,
        RlcDecision::Blocked,
    ] {
        assert_eq!(
            serde_json::to_value(decision).unwrap(),
            json!(decision.as_str())
        );
    }
}

#[test]
fn codes_are_unique_snake_case() {
    let mut seen = std::collections::BTreeSet::new();
    for code in codes::ALL {
        assert!(seen.insert(*code), "duplicate code {code}");
        assert!(
            code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{code}"
        );
    }
}

#[test]
fn split_document_accepts_fixtures_and_bare_extensions() {
    let fixture = accepted();
    let (extension, restore) = split_document(&fixture);
    assert_eq!(extension, &fixture["extension"]);
    assert_eq!(restore, Some(&fixture["restore_results"]));

    let bare = fixture["extension"].clone();
    let (extension, restore) = split_document(&bare);
    assert_eq!(extension, &bare);
    assert_eq!(restore, None);

    let only_extension = json!({"extension": {"a": 1}});
    assert_eq!(
        split_document(&only_extension),
        (&only_extension["extension"], None)
    );
    // Any other member makes the document a (smuggling, schema-invalid) bare extension.
    let smuggled = json!({"extension": {"a": 1}, "restore_results": {}, "about": "x"});
    assert_eq!(split_document(&smuggled), (&smuggled, None));
    let array = json!([1]);
    assert_eq!(split_document(&array), (&array, None));
}

#[test]
fn digests_match_the_published_values() {
    let fixture = accepted();
    let extension = &fixture["extension"];
    for lane in extension["responsibility_lanes"].as_array().unwrap() {
        assert_eq!(
            lane_digest(lane).unwrap(),
            lane["lane_digest"].as_str().unwrap()
        );
    }
    assert_eq!(
        extension_digest(extension).unwrap(),
        extension["extension_digest"]["value"].as_str().unwrap()
    );
    assert!(lane_digest(&json!([])).is_err());
    assert!(extension_digest(&json!("x")).is_err());
}

#[test]
fn a_vce_envelope_that_is_not_an_object_blocks() {
    let fixture = accepted();
    let validator = RlcValidator::new().unwrap();
    for vce in [Value::Null, json!([]), json!("vce-example-001")] {
        let report = validator.check(
            &fixture["extension"],
            Some(&fixture["restore_results"]),
            Some(&vce),
        );
        assert_eq!(report.decision, RlcDecision::Blocked);
        assert_eq!(report.findings.len(), 1);
        assert_eq!(report.findings[0].code, codes::VCE_ENVELOPE_INVALID);
    }
}

#[test]
fn json_null_restore_results_are_missing() {
    let fixture = accepted();
    let validator = RlcValidator::new().unwrap();
    let report = validator.check(&fixture["extension"], Some(&Value::Null), None);
    assert_eq!(report.decision, RlcDecision::Blocked);
    assert_eq!(report.findings[0].code, codes::RESTORE_RESULTS_MISSING);
}

/// Every sub-value of the fixture, the restore results and the vce envelope replaced in turn
/// by hostile values: the validator must answer, never panic.
#[test]
fn no_json_input_makes_the_validator_panic() {
    let validator = RlcValidator::new().unwrap();
    let fixture = accepted();
    let vce = json!({"envelope_id": "vce-example-001", "operational_tail": [
        {"event_id": "evt-003", "event_type": "artifact_modified"},
        {"event_id": "evt-004", "event_type": ["unhashable"]},
        {"event_id": 7}, "junk"
    ]});
    let junk = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1.5e300),
        json!(""),
        json!("\u{0000}\u{1F600}"),
        json!([]),
        json!([null, {}, []]),
        json!({}),
        json!({"lane_id": []}),
    ];
    let documents = [
        fixture["extension"].clone(),
        fixture["restore_results"].clone(),
        vce,
    ];
    let mut runs = 0usize;
    for (which, document) in documents.iter().enumerate() {
        for pointer in pointers(document) {
            for replacement in &junk {
                let mut changed = documents.clone();
                *changed[which].pointer_mut(&pointer).unwrap() = replacement.clone();
                let report = validator.check(&changed[0], Some(&changed[1]), Some(&changed[2]));
                assert_eq!(
                    report.decision == RlcDecision::Passed,
                    report.findings.is_empty()
                );
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "{runs}");
}

/// Every JSON pointer of `value`, the root included.
fn pointers(value: &Value) -> Vec<String> {
    fn walk(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    let escaped = key.replace('~', "~0").replace('/', "~1");
                    walk(item, format!("{at}/{escaped}"), out);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, format!("{at}/{index}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}
