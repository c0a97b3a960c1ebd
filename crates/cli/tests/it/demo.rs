//! `cairn demo` (the main job: the canonical support-triage scenario across a compaction) and
//! `cairn cost` on what it recorded, through the binary: the printed timeline, the JSON form,
//! the export, the rollups, and how output behaves on a closed pipe.

use crate::common;

use common::{INVALID, OK, Output, Project, arg, command_in};
use serde_json::Value;

/// The index of the first line containing every one of `parts`.
#[track_caller]
fn line_with(lines: &[&str], parts: &[&str]) -> usize {
    lines
        .iter()
        .position(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{}", lines.join("\n")))
}

#[test]
fn demo_prints_the_canonical_scenario_with_each_boundary_and_decision_in_order() {
    let project = Project::new();
    let dir = project.path("d");
    let out = Output::of(command_in(project.root()).args(["demo", "--dir", arg(&dir)]));
    out.expect(OK);
    assert!(
        dir.join(".cairn/cairn.db").is_file(),
        "the demo store goes to DIR/.cairn/cairn.db"
    );
    let lines: Vec<&str> = out.stdout.lines().collect();

    let refund = line_with(&lines, &["payments.refund", "DENY"]);
    assert!(
        lines[refund].contains("support.no-refund-without-approval"),
        "{}",
        lines[refund]
    );
    let export = line_with(&lines, &["crm.export_customers", "DENY"]);
    assert!(
        lines[export].contains("(default deny)"),
        "{}",
        lines[export]
    );
    let write = line_with(&lines, &["tickets.create", "allow"]);
    let unknown = line_with(&lines, &["boundary", "side_effect_unknown"]);
    let compaction = line_with(&lines, &["boundary", "context_compaction", "trigger auto"]);
    let blocked = line_with(&lines, &["blocked_on_reconciliation", "authorized: false"]);
    let retry = line_with(&lines, &["tickets.create", "DENY"]);
    let lookup = line_with(&lines, &["tickets.lookup", "allow"]);
    let reconciliation = line_with(&lines, &["boundary", "reconciliation", "applied"]);
    let rehydration = line_with(&lines, &["boundary", "context_rehydration"]);
    let validated = line_with(&lines, &["reauthorization_required", "authorized: false"]);
    let next = line_with(&lines, &["tickets.comment", "allow"]);
    let terminal = line_with(&lines, &["terminal", "completed"]);
    let order = [
        refund,
        export,
        write,
        unknown,
        compaction,
        blocked,
        retry,
        lookup,
        reconciliation,
        rehydration,
        validated,
        next,
        terminal,
    ];
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "rows out of order {order:?}:\n{}",
        out.stdout
    );
    assert!(
        lines[retry].contains("cairn.reconciliation-required"),
        "{}",
        lines[retry]
    );
    assert!(out.stdout.contains("verify      intact"), "{}", out.stdout);
    // The hints name the compaction's page and the console.
    let step = lines[compaction].split_whitespace().next().unwrap();
    let hint = line_with(&lines, &["ledger boundary --run"]);
    assert!(
        lines[hint].ends_with(&format!("--step {step}")),
        "{}",
        lines[hint]
    );
    line_with(&lines, &[" ui ", "one-time link"]);
}

/// The demo's records, and the index of the first record matching `pred`.
#[track_caller]
fn find(records: &[Value], what: &str, pred: impl Fn(&Value) -> bool) -> usize {
    records
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no {what} record in {records:?}"))
}

fn event(record: &Value) -> &str {
    record["boundary"]["event"].as_str().unwrap_or("")
}

#[test]
fn demo_json_records_the_boundary_protocol_around_an_unknown_write() {
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
    let steps: Vec<u64> = records
        .iter()
        .map(|r| r["step_index"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, (0..records.len() as u64).collect::<Vec<u64>>());
    assert_eq!(records.last().unwrap()["kind"], "terminal");
    assert_eq!(
        demo["checkpoint"]["size"].as_u64(),
        Some(records.len() as u64)
    );
    for record in records {
        assert_eq!(record["run_id"], demo["run_id"]);
    }

    // Issue 3: every step carries the policy-set version and the determining rules; only
    // the export, which no rule covers, is denied with none.
    let calls: Vec<&Value> = records.iter().filter(|r| r["kind"] == "step").collect();
    let version = calls[0]["admission"]["policy_set_version"]
        .as_str()
        .unwrap();
    assert!(version.starts_with("sha256:") && version.len() == 71);
    for call in &calls {
        assert_eq!(call["admission"]["policy_set_version"], version, "{call}");
        let rules = call["admission"]["rule_ids"].as_array().unwrap();
        if call["tool"]["name"] == "crm.export_customers" {
            assert_eq!(call["admission"]["decision"], "deny", "{call}");
            assert!(rules.is_empty(), "{call}");
        } else {
            assert!(!rules.is_empty(), "a call names no rule: {call}");
        }
    }
    assert_eq!(records[3]["tool"]["name"], "payments.refund");
    assert_eq!(records[3]["admission"]["decision"], "deny");
    assert_eq!(
        records[3]["admission"]["rule_ids"],
        serde_json::json!(["support.no-refund-without-approval"])
    );

    // The write whose answer was lost, and the boundaries around it, in order.
    let write = find(records, "ticket write", |r| {
        r["tool"]["name"] == "tickets.create" && r["admission"]["decision"] == "allow"
    });
    let unknown = find(records, "side_effect_unknown", |r| {
        event(r) == "side_effect_unknown"
    });
    let compaction = find(records, "context_compaction", |r| {
        event(r) == "context_compaction"
    });
    let retry = find(records, "denied retry", |r| {
        r["tool"]["name"] == "tickets.create" && r["admission"]["decision"] == "deny"
    });
    let reconciliation = find(records, "reconciliation", |r| event(r) == "reconciliation");
    let rehydration = find(records, "context_rehydration", |r| {
        event(r) == "context_rehydration"
    });
    assert_eq!(
        [unknown, compaction, retry, reconciliation, rehydration],
        [write + 1, write + 2, write + 3, write + 5, write + 6],
        "{records:?}"
    );
    let key = format!("{}:{write}", demo["run_id"].as_str().unwrap());
    assert_eq!(
        records[unknown]["boundary"]["idempotency_key"],
        key.as_str()
    );
    assert_eq!(
        records[compaction]["boundary"]["trigger"], "auto",
        "{}",
        records[compaction]
    );
    assert!(
        records[compaction]["boundary"]["envelope_digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:")),
        "{}",
        records[compaction]
    );
    assert_eq!(
        records[retry]["admission"]["rule_ids"],
        serde_json::json!(["cairn.reconciliation-required"])
    );
    assert_eq!(
        records[retry]["args"], records[write]["args"],
        "the same write"
    );
    assert_eq!(
        records[retry - 1],
        records[compaction],
        "no rehydration record while blocked"
    );
    let reconciled = &records[reconciliation]["boundary"];
    assert_eq!(reconciled["idempotency_key"], key.as_str());
    assert_eq!(reconciled["side_effect_status"], "applied");
    assert_eq!(
        reconciled["supersedes_envelope_id"],
        records[compaction]["boundary"]["envelope_id"]
    );
    assert_eq!(
        records[reconciliation - 1]["tool"]["name"],
        "tickets.lookup",
        "reconciled by a lookup by idempotency key"
    );
    let rehydrated = &records[rehydration]["boundary"];
    assert_eq!(rehydrated["reason"], "continuity_validated");
    assert_eq!(rehydrated["envelope_id"], reconciled["envelope_id"]);
    assert_eq!(
        rehydrated["summary_digest"],
        records[compaction]["boundary"]["summary_digest"]
    );
    // After rehydration the gate decides the next call afresh, and admits it.
    assert_eq!(records[rehydration + 1]["kind"], "step");
    assert_eq!(records[rehydration + 1]["admission"]["decision"], "allow");

    // The two continuity decisions, neither of which authorises anything.
    let decisions = demo["continuity"].as_array().unwrap();
    let seen: Vec<(&str, &str, bool, u64)> = decisions
        .iter()
        .map(|n| {
            (
                n["decision"]["status"].as_str().unwrap(),
                n["decision"]["reason"].as_str().unwrap(),
                n["decision"]["authorized"].as_bool().unwrap(),
                n["after_step"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "blocked_on_reconciliation",
                "unknown_side_effect",
                false,
                compaction as u64
            ),
            (
                "reauthorization_required",
                "continuity_validated",
                false,
                rehydration as u64
            ),
        ]
    );

    // I-7: records carry digests and sizes, never the arguments, results or summary.
    let text = Value::Array(records.clone()).to_string();
    for payload in [
        "ch_2",
        "C-0193",
        "A-1009",
        "charged twice",
        "duplicate charge refund policy",
        "create the ticket again",
    ] {
        assert!(
            !text.contains(payload),
            "a record leaks `{payload}`: {text}"
        );
    }
}

#[test]
fn the_demo_export_shows_the_boundaries_the_denied_retry_and_the_reconciliation() {
    let project = Project::new();
    let run = project.demo_run();
    let lines = project.export(&run, "run.jsonl");
    let records: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&str> = records
        .iter()
        .map(event)
        .filter(|e| !e.is_empty())
        .collect();
    assert_eq!(
        events,
        [
            "side_effect_unknown",
            "context_compaction",
            "reconciliation",
            "context_rehydration"
        ]
    );
    assert!(records.iter().any(|r| {
        r["tool"]["name"] == "tickets.create"
            && r["admission"]["rule_ids"] == serde_json::json!(["cairn.reconciliation-required"])
    }));
    assert_eq!(records.last().unwrap()["schema"], "cairn.checkpoint/v1");
    let verified = project.cairn_json(&["ledger", "verify", "--run", &run]);
    assert_eq!(verified.expect(OK).json()["intact"], true);
}

/// `cairn ledger boundary` on the demo's compaction: the envelope the record binds (the write
/// of unknown outcome, the objective), the summary labelled untrusted beside it, the blocked
/// rehydration and how the run came back; an envelope altered in the store is shown as
/// altered (exit 5), never as what the record says; a step that is not a compaction is refused.
#[test]
fn ledger_boundary_shows_the_durable_record_beside_the_untrusted_summary() {
    let project = Project::new();
    let run = project.demo_run();
    let records = project.export(&run, "run.jsonl");
    let step = records
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| event(r) == "context_compaction")
        .and_then(|r| r["step_index"].as_u64())
        .unwrap()
        .to_string();

    let shown = project.cairn(&["ledger", "boundary", "--run", &run, "--step", &step]);
    shown.expect(OK);
    for part in [
        "what the durable record says (authoritative)",
        "side_effect_unknown",
        "without creating a duplicate ticket",
        "UNTRUSTED",
        "The ticket write failed, so create the ticket again",
        "rehydration BLOCKED on reconciliation",
        "reconciliation",
        "context_rehydration (continuity_validated)",
    ] {
        assert!(
            shown.stdout.contains(part),
            "no {part:?} in:\n{}",
            shown.stdout
        );
    }
    let json = project
        .cairn_json(&["ledger", "boundary", "--run", &run, "--step", &step])
        .expect(OK)
        .json();
    assert_eq!(json["envelope"]["status"], "bound");
    assert_eq!(json["summary"]["untrusted"], true);
    let after: Vec<&str> = json["after"]
        .as_array()
        .unwrap()
        .iter()
        .map(event)
        .collect();
    assert_eq!(after, ["reconciliation", "context_rehydration"]);

    project
        .cairn(&["ledger", "boundary", "--run", &run, "--step", "0"])
        .expect(INVALID);

    let db = rusqlite::Connection::open(project.store()).unwrap();
    db.execute(
        "UPDATE envelopes SET body = replace(body, 'duplicate ticket', 'second ticket')",
        [],
    )
    .unwrap();
    let altered = project.cairn(&["ledger", "boundary", "--run", &run, "--step", &step]);
    altered.expect(common::TAMPER);
    assert!(altered.stdout.contains("ALTERED"), "{}", altered.stdout);
    assert!(
        !altered.stdout.contains("second ticket"),
        "{}",
        altered.stdout
    );
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
        (Some(1), Some(10), Some(3))
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

    let write = cost_row(&project, "tool", "tickets.create");
    assert_eq!(
        (write["calls"].as_u64(), write["denied"].as_u64()),
        (Some(2), Some(1)),
        "the write and its denied retry"
    );

    let tenant = cost_row(&project, "tenant", "demo");
    assert_eq!(
        (tenant["calls"].as_u64(), tenant["denied"].as_u64()),
        (Some(10), Some(3))
    );

    // `--tenant` keeps one tenant's runs: the demo's, or none of another's.
    let demo_only = project.cairn_json(&["cost", "--by", "tool", "--tenant", "demo"]);
    let demo_only = demo_only.expect(OK).json();
    assert_eq!(demo_only["tenant"], "demo");
    let all = project
        .cairn_json(&["cost", "--by", "tool"])
        .expect(OK)
        .json();
    assert_eq!(demo_only["rows"], all["rows"]);
    assert_eq!(all["tenant"], Value::Null);
    let other = project.cairn_json(&["cost", "--tenant", "elsewhere"]);
    assert_eq!(other.expect(OK).json()["rows"], serde_json::json!([]));
    let bad = project.cairn_json(&["cost", "--tenant", "a/b"]);
    assert_eq!(bad.expect(INVALID).error_code(), "invalid_id");

    let completed = cost_row(&project, "termination", "completed");
    assert_eq!(
        (completed["runs"].as_u64(), completed["calls"].as_u64()),
        (Some(1), Some(10))
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
