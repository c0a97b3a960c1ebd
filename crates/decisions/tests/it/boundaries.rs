//! D-5 as data: six synthetic compaction boundaries (`tests/boundaries/`). The event-only
//! rule calls all six healthy; `compare` separates them into 2 preserved, 1 approved change,
//! 1 dropped approval boundary, 1 scope conflict and 1 acceptance test re-asserted without a
//! fresh observation. Adding a case is adding a folder; `check` is the one helper.

use std::collections::BTreeMap;
use std::path::Path;

use cairn_decisions::{ContinuityHealth, compare};
use cairn_test_support::decision_boundaries::{Case, case_dirs, event_only_verdict};
use serde_json::Value;

/// One row of the D-5 table.
struct Row {
    name: String,
    event_only: &'static str,
    state: ContinuityHealth,
    determining: String,
}

/// Runs one case folder through the event-only rule and the library and judges both.
fn check(dir: &Path) -> Row {
    let case = Case::load(dir);
    let event_only = event_only_verdict(&case.events);
    assert_eq!(
        event_only, case.expected["event_only"],
        "{}: event-only verdict",
        case.name
    );
    let inputs = case.inputs();
    let comparison = compare(
        Some(&inputs.snapshot),
        &inputs.observations,
        &inputs.approvals,
        inputs.boundary_at,
        inputs.now,
        inputs.window,
    );
    let json = serde_json::to_value(&comparison).unwrap();
    case.assert_comparison(&json);

    // No raw value reaches any document.
    let documents = [
        serde_json::to_string(&inputs.snapshot).unwrap(),
        serde_json::to_string(&inputs.observations).unwrap(),
        serde_json::to_string(&inputs.approvals).unwrap(),
        json.to_string(),
    ];
    for raw in case.raw_strings() {
        for document in &documents {
            assert!(
                !document.contains(&raw),
                "{}: raw value `{raw}` leaked into {document}",
                case.name
            );
        }
    }
    Row {
        name: case.name,
        event_only,
        state: comparison.state(),
        determining: comparison
            .determining_key()
            .map_or_else(|| "-".to_owned(), ToString::to_string),
    }
}

#[test]
fn event_only_calls_all_six_healthy_while_compare_separates_them() {
    let rows: Vec<Row> = case_dirs().iter().map(|dir| check(dir)).collect();
    assert_eq!(rows.len(), 6, "D-5 has six boundaries");

    println!(
        "{:<38} {:<11} {:<16} determining",
        "case", "event-only", "invariant"
    );
    for row in &rows {
        println!(
            "{:<38} {:<11} {:<16} {}",
            row.name,
            row.event_only,
            row.state.as_str(),
            row.determining
        );
    }

    assert!(rows.iter().all(|r| r.event_only == "healthy"));
    let mut counts: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for row in &rows {
        counts
            .entry(row.state.as_str())
            .or_default()
            .push(row.determining.as_str());
    }
    let want: BTreeMap<&str, Vec<&str>> = [
        ("preserved", vec!["-", "-"]),
        ("approved_change", vec!["acceptance_test"]),
        ("dropped", vec!["approval_boundary"]),
        ("conflicting", vec!["scope"]),
        ("unverified", vec!["acceptance_test"]),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, want);
}

#[test]
fn the_case_files_are_what_the_readme_describes() {
    for dir in case_dirs() {
        let case = Case::load(&dir);
        let name = &case.name;
        assert!(case.decisions["description"].is_string(), "{name}");
        let after = case.decisions["after"].as_array().unwrap();
        for item in after {
            let status = item["status"].as_str().unwrap();
            assert!(matches!(status, "present" | "absent"), "{name}");
            assert_eq!(item.get("value").is_some(), status == "present", "{name}");
        }
        // The event stream holds no prompt or transcript path.
        for event in &case.events {
            let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
            assert!(
                !keys
                    .iter()
                    .any(|k| matches!(k.as_str(), "transcript_path" | "prompt" | "tool_input")),
                "{name}: {event}"
            );
        }
        assert_eq!(
            case.expected["event_only"],
            Value::from("healthy"),
            "{name}"
        );
    }
}

#[test]
fn the_event_only_rule_is_not_always_healthy() {
    let case = Case::load(&case_dirs()[0]);
    let without = |name: &str| -> Vec<Value> {
        case.events
            .iter()
            .filter(|e| e["hook_event_name"] != name)
            .cloned()
            .collect()
    };
    assert_eq!(event_only_verdict(&without("PreCompact")), "unknown");
    // SessionStart with source "compact" alone also ends a compaction.
    assert_eq!(event_only_verdict(&without("PostCompact")), "healthy");
    let no_end: Vec<Value> = without("PostCompact")
        .into_iter()
        .filter(|e| e["hook_event_name"] != "SessionStart")
        .collect();
    assert_eq!(event_only_verdict(&no_end), "unknown");
    let mut failing = case.events.clone();
    failing.last_mut().unwrap()["success"] = Value::Bool(false);
    assert_eq!(event_only_verdict(&failing), "unknown");
    let idle: Vec<Value> = case
        .events
        .iter()
        .take_while(|e| e["hook_event_name"] != "InstructionsLoaded")
        .cloned()
        .collect();
    assert_eq!(event_only_verdict(&idle), "unknown");
}
