//! Issue 15 ("No tool call gets through undecided"): the executor judges exactly the bytes it
//! records, or denies — through the real Cedar gate, with a policy that forbids refunds over
//! 10,000.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::sync::Arc;

use cairn_ledger::Store;
use cairn_ledger::record::{Decision, ToolRef};
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::{Admitted, Durability, Executor, Recorder, RecorderOptions, ToolCall};

const POLICY: &str = r#"
@id("all") permit(principal, action, resource);
@id("refund-cap") forbid(principal, action == Action::"payments.refund", resource)
    when { context.args has amount && context.args.amount > 10000 };
"#;

const CATALOG: &str = r#"{"tools": {"payments.refund": {"args": {"amount": "Long"}}}}"#;

fn executor(dir: &std::path::Path) -> (Executor, Arc<cairn_store_sqlite::SqliteStore>) {
    let store = common::open(&dir.join("gate.db"));
    let catalog = ToolCatalog::from_json("tools.json", CATALOG).unwrap();
    let gate = PolicyGate::load(&[PolicySource::new("p.cedar", POLICY)], &catalog).unwrap();
    let recorder = Recorder::open(
        store.clone(),
        Arc::new(cairn_core::SystemClock),
        (
            "acme".parse().unwrap(),
            "task-g".parse().unwrap(),
            "run-g".parse().unwrap(),
        ),
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
    .unwrap();
    (Executor::new(recorder, Arc::new(gate), "agent"), store)
}

fn refund(args: &[u8]) -> ToolCall<'_> {
    ToolCall {
        tool: ToolRef {
            name: common::label("payments.refund"),
            version: common::label("1"),
        },
        args,
        lane: None,
    }
}

/// `(allowed, rule ids)` of one admitted call.
fn admit(executor: &mut Executor, args: &[u8]) -> (bool, Vec<String>) {
    match executor.admit(&refund(args)).unwrap() {
        Admitted::Permitted(_) => (true, vec!["<allowed>".to_owned()]),
        Admitted::Denied(denial) => (false, denial.rule_ids),
    }
}

#[test]
fn issue_15_arguments_a_lenient_reader_drops_are_denied_by_a_built_in_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (mut executor, store) = executor(dir.path());
    let deep = format!(
        r#"{{"amount": 25000, "tags": {}{}}}"#,
        "[".repeat(127),
        "]".repeat(127)
    );
    let hostile: [&[u8]; 5] = [
        // A lone surrogate in a field no policy reads.
        br#"{"amount": 25000, "memo": "\udead"}"#,
        // Nesting past the limit, in an undeclared field.
        deep.as_bytes(),
        // A number no double holds, in the declared field.
        br#"{"amount": 1e400}"#,
        // A duplicate key: the record digests both, a lenient reader keeps the last.
        br#"{"amount": 25000, "amount": 5}"#,
        // Not JSON at all.
        br#"{"amount": 25000"#,
    ];
    for args in hostile {
        assert_eq!(
            admit(&mut executor, args),
            (false, vec!["cairn.args-unreadable".to_owned()]),
            "{}",
            String::from_utf8_lossy(args)
        );
    }
    // The same refund, readable, is forbidden by the policy itself.
    assert_eq!(
        admit(&mut executor, br#"{"amount": 25000, "memo": "x"}"#),
        (false, vec!["refund-cap".to_owned()])
    );
    // Every refusal is recorded like any other deny.
    let rows = store
        .rows(&"acme".parse().unwrap(), &"run-g".parse().unwrap())
        .unwrap();
    assert_eq!(rows.len(), hostile.len() + 1);
    for row in &rows[..hostile.len()] {
        let admission = row.as_ref().unwrap().admission.clone().unwrap();
        assert_eq!(admission.decision, Decision::Deny);
        assert_eq!(admission.rule_ids[0].as_str(), "cairn.args-unreadable");
    }
}

#[test]
fn issue_15_a_declared_long_of_minus_zero_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (mut executor, _store) = executor(dir.path());
    assert!(admit(&mut executor, br#"{"amount": -0}"#).0);
    // Numbers that are not integer literals stay refused, never rounded.
    for args in [
        &br#"{"amount": 25000.0}"#[..],
        br#"{"amount": 2.5e4}"#,
        br#"{"amount": 9223372036854775808}"#,
    ] {
        assert!(!admit(&mut executor, args).0, "{}", String::from_utf8_lossy(args));
    }
}
