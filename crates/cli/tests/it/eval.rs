//! Issue 4, acceptance 4: `cairn eval` over the shipped corpus (`eval/`) — every property of
//! E-6 exercised, every compacted path the same or stricter where it must be, every
//! deliberately lossy compaction caught — plus the exit codes: 4 when a case does not hold,
//! 2 for a malformed scenario file (naming the file and the JSON path).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../eval")
}

fn cairn_eval(dir: &Path, json: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    if json {
        command.arg("--json");
    }
    command
        .arg("eval")
        .arg(dir)
        .env_remove("CAIRN_STORE")
        .output()
        .expect("run cairn")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

const PROPERTIES: [&str; 8] = [
    "negative_constraint",
    "approval_reuse",
    "version_change",
    "unknown_side_effect",
    "identity",
    "summary_injection",
    "pending_obligation",
    "evidence_link",
];

#[test]
fn the_shipped_corpus_holds_through_the_cli() {
    let out = cairn_eval(&corpus(), true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout_json(&out);
    let rows = json["rows"].as_array().unwrap();
    assert!(rows.len() >= 16);
    for property in PROPERTIES {
        for (expect, verdict) in [("pass", "pass"), ("caught", "lossy")] {
            assert!(
                rows.iter().any(|r| r["property"] == property
                    && r["expect"] == expect
                    && r["verdict"] == verdict
                    && r["holds"] == true),
                "{property}: no {expect} case with verdict {verdict}"
            );
        }
    }
    for row in rows {
        assert_eq!(row["holds"], true, "{row}");
        let order = ["allow", "reauthorize", "ask_human", "block"];
        let rank = |d: &Value| order.iter().position(|o| d == o).unwrap();
        let full = rank(&row["full"]["decision"]);
        let compacted = rank(&row["compacted"]["decision"]);
        match row["expect"].as_str().unwrap() {
            "pass" => assert!(compacted >= full, "{row}"),
            _ => assert!(compacted < full, "{row}"),
        }
        assert!(row["file"].as_str().unwrap().ends_with(".json"));
    }
    let summary = &json["summary"];
    assert_eq!(summary["failing"], 0);
    assert_eq!(summary["properties_covered"].as_array().unwrap().len(), 8);
    assert_eq!(summary["properties_missing"], serde_json::json!([]));
}

#[test]
fn the_table_shows_both_decisions_and_the_verdict() {
    let out = cairn_eval(&corpus(), false);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text.lines().next().unwrap();
    for column in ["SCENARIO", "PROPERTY", "FULL", "COMPACTED", "VERDICT"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(text.contains("constraint-ref-dropped"));
    assert!(text.contains("lossy"));
    assert!(text.contains("0 failing; properties covered 8/8"), "{text}");
}

fn copy_case(from: &str, to: &Path, edit: impl FnOnce(&mut Value)) {
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join(from)).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(to, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

#[test]
fn a_less_strict_compacted_path_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    // A lossy compaction that claims it should pass.
    copy_case(
        "negative_constraint/constraint-ref-dropped.json",
        &dir.path().join("claims-pass.json"),
        |doc| {
            doc["expect"] = "pass".into();
            doc.as_object_mut().unwrap().remove("expect_compacted");
        },
    );
    copy_case(
        "negative_constraint/constraint-ref-kept.json",
        &dir.path().join("fine.json"),
        |_| {},
    );
    let out = cairn_eval(dir.path(), true);
    assert_eq!(out.status.code(), Some(4));
    let json = stdout_json(&out);
    assert_eq!(json["summary"]["failing"], 1);
    let failing: Vec<&Value> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["holds"] == false)
        .collect();
    assert_eq!(failing.len(), 1);
    assert_eq!(failing[0]["verdict"], "lossy");
    assert!(
        failing[0]["problems"][0]
            .as_str()
            .unwrap()
            .contains("less strict")
    );
}

#[test]
fn an_undetected_lossy_case_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    // Claims to be lossy, but the compaction kept everything.
    copy_case(
        "pending_obligation/obligation-kept.json",
        &dir.path().join("claims-caught.json"),
        |doc| {
            doc["expect"] = "caught".into();
            doc.as_object_mut().unwrap().remove("expect_compacted");
        },
    );
    let out = cairn_eval(dir.path(), false);
    assert_eq!(out.status.code(), Some(4));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("FAILED"), "{text}");
    assert!(text.contains("undetected"), "{text}");
}

#[test]
fn a_malformed_scenario_exits_2_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    copy_case("identity/tenant-switch-detected.json", &bad, |doc| {
        doc["history"][1]["policy_version"] = 4.into();
    });
    let out = cairn_eval(dir.path(), true);
    assert_eq!(out.status.code(), Some(2));
    let json = stdout_json(&out);
    assert_eq!(json["error"]["code"], "invalid_scenario");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("bad.json"), "{message}");
    assert!(message.contains("$.history[1].policy_version"), "{message}");

    std::fs::write(&bad, "{ not json").unwrap();
    let out = cairn_eval(dir.path(), false);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("error[invalid_scenario]") && stderr.contains("bad.json"),
        "{stderr}"
    );
}

#[test]
fn an_empty_or_missing_folder_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(cairn_eval(dir.path(), false).status.code(), Some(2));
    assert_eq!(
        cairn_eval(&dir.path().join("missing"), false).status.code(),
        Some(2)
    );
}

#[test]
fn one_scenario_file_can_be_evaluated_alone() {
    let out = cairn_eval(
        &corpus().join("summary_injection/instruction-promoted-to-record.json"),
        true,
    );
    assert_eq!(out.status.code(), Some(0));
    let json = stdout_json(&out);
    assert_eq!(json["rows"][0]["verdict"], "lossy");
    assert_eq!(json["rows"][0]["full"]["decision"], "ask_human");
    assert_eq!(json["rows"][0]["compacted"]["decision"], "allow");
}
