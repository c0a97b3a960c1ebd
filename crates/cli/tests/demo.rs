//! `cairn demo` (the main job) and `cairn cost` on what it recorded, through the binary:
//! the printed timeline, the JSON form, the rollups, and how output behaves on a closed pipe.

#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a failed expectation is the test failing"
)]

mod common;

use common::{OK, Output, Project, arg, command_in};
use serde_json::Value;

#[test]
fn demo_prints_a_timeline_with_the_denied_refund_the_terminal_record_and_an_intact_chain() {
    let project = Project::new();
    let dir = project.path("d");
    let out = Output::of(command_in(project.root()).args(["demo", "--dir", arg(&dir)]));
    out.expect(OK);
    assert!(
        dir.join(".cairn/cairn.db").is_file(),
        "the demo store goes to DIR/.cairn/cairn.db"
    );

    let lines: Vec<&str> = out.stdout.lines().collect();
    let deny = lines
        .iter()
        .find(|l| l.contains("DENY"))
        .unwrap_or_else(|| panic!("no DENY row in:\n{}", out.stdout));
    assert!(
        deny.contains("support.no-refund-without-approval"),
        "{deny}"
    );
    assert!(deny.contains("payments.refund"), "{deny}");
    let step_rows = lines
        .iter()
        .filter(|l| l.split_whitespace().nth(1) == Some("step"))
        .count();
    assert_eq!(step_rows, 7, "seven step rows in:\n{}", out.stdout);
    let default_deny = lines
        .iter()
        .find(|l| l.contains("crm.export_customers"))
        .unwrap_or_else(|| panic!("no export row in:\n{}", out.stdout));
    assert!(
        default_deny.contains("DENY") && default_deny.contains("default deny"),
        "{default_deny}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("terminal") && l.contains("completed")),
        "no terminal row in:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("intact"), "{}", out.stdout);
}

#[test]
fn demo_json_has_contiguous_records_admitted_by_named_rules_ending_in_a_terminal_record() {
    let project = Project::new();
    let dir = project.path("d");
    let out = Output::of(command_in(project.root()).args(["--json", "demo", "--dir", arg(&dir)]));
    let demo = out.expect(OK).json();

    assert_eq!(
        demo["verification"]["findings"],
        Value::Array(Vec::new()),
        "{demo}"
    );
    assert_eq!(
        demo["verification"]["checkpoint"]["state"], "verified",
        "{demo}"
    );
    let records = demo["records"].as_array().unwrap();
    assert_eq!(records.len(), 8);
    let steps: Vec<u64> = records
        .iter()
        .map(|r| r["step_index"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, (0..8).collect::<Vec<u64>>());
    assert_eq!(records[7]["kind"], "terminal");
    assert!(records[..7].iter().all(|r| r["kind"] == "step"));
    assert_eq!(demo["checkpoint"]["size"], 8);
    // Issue 3: every step carries the policy-set version and the determining rules.
    for record in &records[..7] {
        let version = record["admission"]["policy_set_version"].as_str().unwrap();
        assert!(
            version.starts_with("sha256:") && version.len() == 71,
            "{record}"
        );
        assert_eq!(
            version,
            records[0]["admission"]["policy_set_version"]
                .as_str()
                .unwrap()
        );
    }
    for (i, record) in records[..7].iter().enumerate() {
        let rules = record["admission"]["rule_ids"].as_array().unwrap();
        if i == 4 {
            // No rule covers the export: an explicit default deny with no rule ids.
            assert_eq!(record["admission"]["decision"], "deny", "{record}");
            assert!(rules.is_empty(), "{record}");
        } else {
            assert!(!rules.is_empty(), "step {i} names no rule: {record}");
        }
    }
    assert_eq!(records[3]["admission"]["decision"], "deny");
    assert_eq!(
        records[3]["admission"]["rule_ids"],
        serde_json::json!(["support.no-refund-without-approval"])
    );
    for record in records {
        assert_eq!(record["run_id"], demo["run_id"]);
    }
    // I-7: structural records carry digests and sizes, never the arguments themselves.
    let text = Value::Array(records.clone()).to_string();
    for payload in [
        "ch_2",
        "C-0193",
        "A-1009",
        "charged twice",
        "duplicate charge refund policy",
    ] {
        assert!(
            !text.contains(payload),
            "a record leaks `{payload}`: {text}"
        );
    }
}

/// One row of `cost --by BY --json`, by key.
fn cost_row(project: &Project, by: &str, key: &str) -> Value {
    let out = project.cairn_json(&["cost", "--by", by]);
    let json = out.expect(OK).json();
    assert_eq!(json["by"], by);
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key)
        .cloned()
        .unwrap_or_else(|| panic!("no `{key}` row in {json}"))
}

#[test]
fn cost_rolls_up_the_demo_by_task_tool_tenant_and_termination() {
    let project = Project::new();
    let demo = project.demo();
    let arg_bytes: u64 = demo["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["args"]["size"].as_u64())
        .sum();

    let task = cost_row(&project, "task", "task-support-T-4821");
    assert_eq!(
        (
            task["runs"].as_u64(),
            task["calls"].as_u64(),
            task["denied"].as_u64()
        ),
        (Some(1), Some(7), Some(2))
    );
    assert_eq!(task["arg_bytes"].as_u64(), Some(arg_bytes));

    let refund = cost_row(&project, "tool", "payments.refund");
    assert_eq!(
        (refund["calls"].as_u64(), refund["denied"].as_u64()),
        (Some(1), Some(1))
    );
    let read = cost_row(&project, "tool", "tickets.read");
    assert_eq!(
        (read["calls"].as_u64(), read["denied"].as_u64()),
        (Some(1), Some(0))
    );

    let tenant = cost_row(&project, "tenant", "demo");
    assert_eq!(
        (tenant["calls"].as_u64(), tenant["denied"].as_u64()),
        (Some(7), Some(2))
    );

    let completed = cost_row(&project, "termination", "completed");
    assert_eq!(
        (completed["runs"].as_u64(), completed["calls"].as_u64()),
        (Some(1), Some(7))
    );

    let human = project.cairn(&["cost", "--by", "tool"]);
    assert!(
        human
            .expect(OK)
            .stdout
            .lines()
            .any(|l| l.starts_with("payments.refund")),
        "{}",
        human.stdout
    );
}

/// Runs `cairn --store S ARGS…` with stdout connected to a pipe whose reader is already
/// closed, as in `cairn … | head -0`.
fn with_closed_stdout(project: &Project, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let store = project.store();
    Output::of(
        command_in(project.root())
            .arg("--store")
            .arg(&store)
            .args(args)
            .stdout(writer),
    )
}

#[test]
fn a_closed_pipe_on_stdout_is_not_a_failure_for_text_output() {
    let project = Project::new();
    project.demo();
    let out = with_closed_stdout(&project, &["runs", "list"]);
    out.expect(OK);
    assert_eq!(out.stderr, "");
}

/// Bug: with `--json`, a closed pipe makes the command exit 1 with
/// `error[io]: cannot write output: Broken pipe`, although output.rs means to treat a closed
/// pipe as success (the serde_json error is rewrapped as `ErrorKind::Other`, hiding
/// `BrokenPipe`).
#[test]
fn a_closed_pipe_on_stdout_is_not_a_failure_for_json_output() {
    let project = Project::new();
    project.demo();
    let out = with_closed_stdout(&project, &["--json", "runs", "list"]);
    out.expect(OK);
    assert_eq!(out.stderr, "");
}
