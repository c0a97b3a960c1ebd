//! `cairn reconcile` from an investigator's shell: a run blocked on an unknown side effect
//! is unblocked by naming the idempotency key, the observed outcome and the evidence; a wrong
//! or already reconciled key is invalid input; the chain still verifies.

use cairn_test_support::gates::AllowAll;
use std::process::Command;
use std::sync::Arc;

use cairn_ledger::record::{Label, ToolRef};
use cairn_runtime::{
    Admitted, CallError, Durability, Executor, Recorder, RecorderOptions, ToolCall,
};
use cairn_store_sqlite::{OpenMode, SqliteStore};

fn cairn(db: &std::path::Path, args: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("--json")
        .arg("--store")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap_or_default(),
    )
}

#[test]
fn reconcile_unblocks_by_key_and_refuses_what_is_not_pending() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".cairn/cairn.db");
    {
        let store = Arc::new(SqliteStore::open(&db, OpenMode::CreateIfMissing).unwrap());
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
    let (code, json) = cairn(
        &db,
        &[
            "reconcile",
            "--run",
            "run-t",
            "--key",
            "run-t:7",
            "--outcome",
            "applied",
            "--evidence",
            "x",
        ],
    );
    assert_eq!(
        (code, json["error"]["code"].as_str()),
        (2, Some("invalid_input")),
        "{json}"
    );
    let (code, json) = cairn(
        &db,
        &[
            "reconcile",
            "--run",
            "run-t",
            "--key",
            "run-t:0",
            "--outcome",
            "maybe",
            "--evidence",
            "x",
        ],
    );
    assert_eq!(
        (code, json["error"]["code"].as_str()),
        (2, Some("invalid_input")),
        "{json}"
    );
    let (code, json) = cairn(
        &db,
        &[
            "reconcile",
            "--run",
            "run-t",
            "--key",
            "run-t:0",
            "--outcome",
            "not_executed",
            "--evidence",
            "tickets.lookup(run-t:0)=none",
        ],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["outcome"], "not_executed");
    assert_eq!(json["step_index"], 2);
    let (code, _) = cairn(
        &db,
        &[
            "reconcile",
            "--run",
            "run-t",
            "--key",
            "run-t:0",
            "--outcome",
            "applied",
            "--evidence",
            "x",
        ],
    );
    assert_eq!(code, 2, "a reconciled key cannot be reconciled again");
    let (code, json) = cairn(&db, &["ledger", "verify", "--all"]);
    assert_eq!(code, 0, "{json}");
}
