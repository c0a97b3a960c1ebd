//! `cairn reconcile` from an investigator's shell: a run blocked on an unknown side effect
//! is unblocked by naming the idempotency key, the observed outcome and the evidence; a wrong
//! or already reconciled key is invalid input; the chain still verifies — on the SQLite store
//! and on a PostgreSQL one.

use cairn_test_support::gates::AllowAll;
use std::process::Command;
use std::sync::Arc;

use cairn_ledger::Store;
use cairn_ledger::record::{Label, ToolRef};
use cairn_runtime::{
    Admitted, CallError, Durability, Executor, Recorder, RecorderOptions, ToolCall,
};
use cairn_store_sqlite::{OpenMode, SqliteStore};

fn cairn(store: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .current_dir(dir.path())
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .arg("--json")
        .arg("--store")
        .arg(store)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap_or_default(),
    )
}

/// Writes run `run-t` into `store`: one call admitted whose outcome is unknown.
fn blocked_run(store: Arc<dyn Store>) {
    let recorder = Recorder::open(
        store,
        Arc::new(cairn_core::SystemClock),
        (
            "acme".parse().unwrap(),
            "task-t".parse().unwrap(),
            "run-t".parse().unwrap(),
        ),
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
    .unwrap();
    let mut executor = Executor::new(recorder, Arc::new(AllowAll("allow")), "agent");
    let call = ToolCall {
        tool: ToolRef {
            name: Label::new("tickets.create").unwrap(),
            version: Label::new("3").unwrap(),
        },
        args: b"{}",
        lane: None,
    };
    let Admitted::Permitted(permit) = executor.admit(&call).unwrap() else {
        panic!()
    };
    executor
        .execute_effect(permit, || Err(CallError::OutcomeUnknown("timeout".into())))
        .unwrap();
}

#[test]
fn reconcile_unblocks_by_key_and_refuses_what_is_not_pending() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".cairn/cairn.db");
    blocked_run(Arc::new(
        SqliteStore::open(&db, OpenMode::CreateIfMissing).unwrap(),
    ));
    reconcile_flow(db.to_str().unwrap());
}

#[test]
fn reconcile_works_on_a_postgres_store() {
    let Some(schemas) = cairn_test_support::postgres::Schemas::new() else {
        return;
    };
    let url = schemas.url();
    blocked_run(Arc::new(
        cairn_store_postgres::PostgresStore::open(
            &url,
            OpenMode::CreateIfMissing,
            &cairn_store_postgres::Options::default(),
        )
        .unwrap(),
    ));
    reconcile_flow(&url);
}

/// `cairn reconcile` of the effect of `key` in run `run-t` of `store`.
fn reconcile(store: &str, key: &str, outcome: &str, evidence: &str) -> (i32, serde_json::Value) {
    cairn(
        store,
        &[
            "reconcile",
            "--run",
            "run-t",
            "--key",
            key,
            "--outcome",
            outcome,
            "--evidence",
            evidence,
        ],
    )
}

/// Reconciles run `run-t` of `store` through the CLI: wrong keys and outcomes refused, the
/// right one recorded once, the chain intact.
fn reconcile_flow(store: &str) {
    // A key the run does not have, and an outcome that is none.
    for (key, outcome) in [("run-t:7", "applied"), ("run-t:0", "maybe")] {
        let (code, json) = reconcile(store, key, outcome, "x");
        assert_eq!(
            (code, json["error"]["code"].as_str()),
            (2, Some("invalid_input")),
            "{json}"
        );
    }
    let (code, json) = reconcile(
        store,
        "run-t:0",
        "not_executed",
        "tickets.lookup(run-t:0)=none",
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["outcome"], "not_executed");
    assert_eq!(json["step_index"], 2);
    let (code, _) = reconcile(store, "run-t:0", "applied", "x");
    assert_eq!(code, 2, "a reconciled key cannot be reconciled again");
    let (code, json) = cairn(store, &["ledger", "verify", "--all"]);
    assert_eq!(code, 0, "{json}");
}
