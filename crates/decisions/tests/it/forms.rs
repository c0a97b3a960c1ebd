//! The JSON forms of the snapshot, observations, comparison and status: their fields, their
//! round trips, and the structured, coded errors hostile or corrupted documents get.

use crate::common;

use cairn_core::ErrorCode;
use cairn_decisions::{
    ActivityHealth, ContinuityHealth, MAX_DOCUMENT_BYTES, Observation, Snapshot, Status, compare,
    parse_observations,
};
use common::*;
use serde_json::{Value, json};

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[test]
fn the_snapshot_form_round_trips_and_verifies_its_digest() {
    let snapshot = snapshot3();
    let json = serde_json::to_value(&snapshot).unwrap();
    println!("{}", serde_json::to_string_pretty(&json).unwrap());
    assert_eq!(
        keys(&json),
        [
            "canonicalization",
            "decisions",
            "schema_version",
            "snapshot_digest",
            "taken_at"
        ]
    );
    assert_eq!(json["schema_version"], "cairn.decision-snapshot/v1");
    assert_eq!(json["canonicalization"], "jcs");
    assert_eq!(
        keys(&json["decisions"][0]),
        [
            "approval_ref",
            "key",
            "observed_at",
            "revision",
            "source",
            "value_digest"
        ]
    );
    let order: Vec<&str> = json["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["key"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["acceptance_test", "approval_boundary", "scope"]);
    assert_eq!(
        json["snapshot_digest"].as_str().unwrap(),
        snapshot.digest().to_string()
    );

    let text = json.to_string();
    assert_eq!(Snapshot::from_json(&text).unwrap(), snapshot);
    assert_eq!(serde_json::from_str::<Snapshot>(&text).unwrap(), snapshot);
    // The digest does not depend on how the document is formatted.
    let pretty = serde_json::to_string_pretty(&json).unwrap();
    assert_eq!(
        Snapshot::from_json(&pretty).unwrap().digest(),
        snapshot.digest()
    );
}

#[test]
fn a_corrupted_snapshot_is_refused_with_a_code_and_a_path() {
    let good = serde_json::to_value(snapshot3()).unwrap();
    let refuse = |edit: &dyn Fn(&mut Value), code: &str, path: &str| {
        let mut doc = good.clone();
        edit(&mut doc);
        let err = Snapshot::from_json(&doc.to_string()).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(path), "{err} should name {path}");
    };
    refuse(
        &|d| d["decisions"][0]["revision"] = json!(2),
        "snapshot_digest_mismatch",
        "$.snapshot_digest",
    );
    refuse(
        &|d| d["taken_at"] = json!("2026-03-02T09:59:59Z"),
        "snapshot_digest_mismatch",
        "$.snapshot_digest",
    );
    refuse(
        &|d| {
            let first = d["decisions"][0].clone();
            d["decisions"][0] = d["decisions"][1].clone();
            d["decisions"][1] = first;
        },
        "invalid_decision_snapshot",
        "$.decisions",
    );
    refuse(
        &|d| {
            d["decisions"].as_array_mut().unwrap().pop();
        },
        "invalid_decision_snapshot",
        "too_few_decisions",
    );
    refuse(
        &|d| {
            d["decisions"][1]["value_digest"]["digest"] =
                json!(format!("sha256:{}", "b".repeat(64)))
        },
        "unkeyed_decision_digest",
        "$.decisions[1].value_digest",
    );
    refuse(
        &|d| d["decisions"][2]["value"] = json!({"repository": "acme/api"}),
        "invalid_decision_snapshot",
        "$.decisions[2]",
    );
    refuse(
        &|d| d["decisions"][2]["source"] = json!("~/work/acme"),
        "invalid_ref",
        "source",
    );
    refuse(
        &|d| d["decisions"][2]["key"] = json!("Scope"),
        "invalid_decision_snapshot",
        "$.decisions[2]",
    );
    refuse(
        &|d| d["canonicalization"] = json!("json-sort-keys-utf8-v1"),
        "invalid_decision_snapshot",
        "$.canonicalization",
    );
    refuse(
        &|d| d["schema_version"] = json!("cairn.decision-snapshot/v2"),
        "invalid_decision_snapshot",
        "$.schema_version",
    );
    refuse(
        &|d| d["prompt"] = json!("hello"),
        "invalid_decision_snapshot",
        "$",
    );
    let err = Snapshot::from_json("[").unwrap_err();
    assert_eq!(err.code(), "invalid_decision_snapshot");
    let huge = " ".repeat(MAX_DOCUMENT_BYTES + 1);
    assert_eq!(
        Snapshot::from_json(&huge).unwrap_err().code(),
        "decision_document_too_large"
    );
}

#[test]
fn the_observation_forms_round_trip() {
    let present = seen(scope(), &value(&scope()), 1);
    let absent =
        Observation::absent(approval_boundary(), t(30), Some("hook:session-start")).unwrap();
    let list = vec![present.clone(), absent.clone()];
    let json = serde_json::to_value(&list).unwrap();
    println!("{}", serde_json::to_string_pretty(&json).unwrap());
    assert_eq!(
        keys(&json[0]),
        [
            "key",
            "observed_at",
            "revision",
            "source",
            "status",
            "value_digest"
        ]
    );
    assert_eq!(json[0]["status"], "present");
    assert_eq!(keys(&json[1]), ["key", "observed_at", "source", "status"]);
    assert_eq!(json[1]["status"], "absent");
    assert_eq!(parse_observations(&json.to_string()).unwrap(), list);
    assert_eq!(
        serde_json::from_value::<Vec<Observation>>(json.clone()).unwrap(),
        list
    );

    // No provenance is written as null and read back as none.
    let anonymous = Observation::absent(target(), t(30), None).unwrap();
    let json = serde_json::to_value(&anonymous).unwrap();
    assert_eq!(json["source"], Value::Null);
    let mut without = json.clone();
    without.as_object_mut().unwrap().remove("source");
    assert_eq!(
        serde_json::from_value::<Observation>(without).unwrap(),
        anonymous
    );
}

#[test]
fn malformed_observations_are_refused_with_the_element_path() {
    let present = serde_json::to_value(seen(scope(), &value(&scope()), 1)).unwrap();
    let refuse = |item: Value, code: &str, path: &str| {
        let text = json!([present.clone(), item]).to_string();
        let err = parse_observations(&text).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(path), "{err} should name {path}");
    };
    let mut no_digest = present.clone();
    no_digest.as_object_mut().unwrap().remove("value_digest");
    refuse(no_digest, "invalid_decision_observation", "$[1]");
    let mut absent_with_revision = present.clone();
    absent_with_revision["status"] = json!("absent");
    refuse(absent_with_revision, "invalid_decision_observation", "$[1]");
    let mut unknown_status = present.clone();
    unknown_status["status"] = json!("maybe");
    refuse(unknown_status, "invalid_decision_observation", "$[1]");
    let mut zero = present.clone();
    zero["revision"] = json!(0);
    refuse(zero, "invalid_decision_observation", "$[1].revision");
    let mut raw_value = present.clone();
    raw_value["value"] = json!("acme/api");
    refuse(raw_value, "invalid_decision_observation", "$[1]");
    let mut path_source = present.clone();
    path_source["source"] = json!("C:\\Users\\alice\\transcript.jsonl");
    refuse(path_source, "invalid_ref", "source");
    assert_eq!(
        parse_observations("{}").unwrap_err().code(),
        "invalid_decision_observation"
    );
}

#[test]
fn the_comparison_form_has_state_action_and_every_decision() {
    let changed = json!({"repository": "acme/elsewhere"});
    let mut after = fresh_except(&[scope()]);
    after.push(seen(scope(), &changed, 2));
    let c = judge(&snapshot3(), &after, &[]);
    let json = serde_json::to_value(&c).unwrap();
    println!("{}", serde_json::to_string_pretty(&json).unwrap());
    assert_eq!(
        keys(&json),
        [
            "action",
            "boundary_at",
            "compared_at",
            "decisions",
            "determining_key",
            "observation_deadline",
            "reason",
            "restricts_consequential",
            "schema_version",
            "snapshot_digest",
            "state",
            "unmatched_observations"
        ]
    );
    assert_eq!(json["schema_version"], "cairn.decision-comparison/v1");
    assert_eq!(json["state"], "conflicting");
    assert_eq!(json["action"], "stop_and_ask");
    assert_eq!(json["determining_key"], "scope");
    assert_eq!(json["reason"], "changed_without_approval");
    assert_eq!(json["restricts_consequential"], true);
    let scope_result = json["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["key"] == "scope")
        .unwrap();
    assert_eq!(
        keys(scope_result),
        [
            "action",
            "after",
            "approval_refs",
            "before",
            "key",
            "reason",
            "state"
        ]
    );
    assert_eq!(scope_result["before"]["revision"], 1);
    assert_eq!(scope_result["after"]["revision"], 2);

    let missing = compare(None, &[], &[], boundary(), t(5), window());
    let json = serde_json::to_value(&missing).unwrap();
    assert_eq!(json["state"], "continuity_evidence_missing");
    assert_eq!(json["reason"], "no_snapshot");
    assert_eq!(json["action"], "re_observe");
    assert_eq!(json["snapshot_digest"], Value::Null);
    assert_eq!(json["decisions"], json!([]));
}

#[test]
fn status_reports_activity_and_continuity_side_by_side() {
    let changed = json!({"repository": "acme/elsewhere"});
    let mut after = fresh_except(&[scope()]);
    after.push(seen(scope(), &changed, 2));
    let conflicting = judge(&snapshot3(), &after, &[]);
    let status = Status::new(ActivityHealth::Working, &conflicting);
    assert_eq!(status.activity(), ActivityHealth::Working);
    assert_eq!(status.continuity(), ContinuityHealth::Conflicting);
    assert!(status.restricts_consequential());
    let json = serde_json::to_value(&status).unwrap();
    println!("{}", serde_json::to_string_pretty(&json).unwrap());
    assert_eq!(
        keys(&json),
        [
            "action",
            "activity",
            "as_of",
            "continuity",
            "determining_key",
            "reason",
            "restricts_consequential",
            "schema_version"
        ]
    );
    assert_eq!(json["activity"], "working");
    assert_eq!(json["continuity"], "conflicting");
    assert_eq!(json["action"], "stop_and_ask");

    let preserved = judge(&snapshot3(), &fresh_except(&[]), &[]);
    let status = Status::new(ActivityHealth::WaitingHuman, &preserved);
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["activity"], "waiting_human");
    assert_eq!(json["continuity"], "preserved");
    assert_eq!(json["restricts_consequential"], false);

    // Activity never relaxes continuity: a failing or idle agent with a dropped decision is
    // still restricted, and a working one is too.
    for activity in [
        ActivityHealth::Working,
        ActivityHealth::WaitingHuman,
        ActivityHealth::Idle,
        ActivityHealth::Failing,
    ] {
        let status = Status::new(activity, &conflicting);
        assert_eq!(status.continuity(), ContinuityHealth::Conflicting);
        assert!(status.restricts_consequential());
    }
}
