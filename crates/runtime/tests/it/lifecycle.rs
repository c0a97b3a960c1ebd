//! The run lifecycle every edge uses (`Runs`): a session continues in its next run once one
//! is closed, a missing run is opened or refused as asked, and an executor built from the
//! records remembers a side effect awaiting reconciliation after a restart.

use crate::common;
use cairn_test_support::gates::AllowAll;

use std::sync::Arc;

use cairn_core::{RunId, TenantId};
use cairn_ledger::record::{TerminationReason, ToolRef};
use cairn_ledger::{Store, StoreError};
use cairn_runtime::{
    Admitted, CallError, DenyCause, Durability, IfMissing, RecorderOptions, Replay, RunName, Runs,
    RuntimeError, ToolCall,
};
use cairn_store_sqlite::{OpenMode, SqliteStore};

fn runs(store: Arc<SqliteStore>) -> Runs {
    Runs::new(
        store,
        Arc::new(cairn_core::SystemClock),
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
}

fn call(tool: &str) -> ToolCall<'static> {
    ToolCall {
        tool: ToolRef {
            name: common::label(tool),
            version: common::label("1"),
        },
        args: b"{}",
        lane: None,
    }
}

fn fixture() -> (tempfile::TempDir, Arc<SqliteStore>, TenantId) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(dir.path().join("cairn.db"), OpenMode::CreateIfMissing).unwrap(),
    );
    (dir, store, "acme".parse().unwrap())
}

#[test]
fn a_closed_session_run_continues_in_the_next_generation_which_names_it() {
    let (_dir, store, tenant) = fixture();
    let runs = runs(Arc::clone(&store));
    let session = RunName::Session {
        base: "cc-s1",
        from: 1,
    };
    let open = IfMissing::Open { task: None };
    let first = runs.open_or_resume(&tenant, session, &open).unwrap();
    assert_eq!(first.generation, 1);
    assert_eq!(first.recorder.run_id().as_str(), "cc-s1");
    assert_eq!(first.recorder.task_id().as_str(), "task-cc-s1");
    let (key, _) = common::key();
    first
        .recorder
        .terminate(TerminationReason::Completed, None, &key)
        .unwrap();

    assert_eq!(
        runs.current(&tenant, session).unwrap(),
        ("cc-s1.2".parse::<RunId>().unwrap(), 2, false)
    );
    let second = runs.open_or_resume(&tenant, session, &open).unwrap();
    assert_eq!(second.generation, 2);
    let run = second.recorder.run_id().clone();
    assert_eq!(run.as_str(), "cc-s1.2");
    let rows = store.rows(&tenant, &run).unwrap();
    let boundary = rows[0].as_ref().unwrap().boundary.clone().unwrap();
    assert_eq!(boundary.event.as_str(), "session_resumed");
    assert_eq!(
        boundary.evidence_ref.unwrap().as_str(),
        "run:acme/cc-s1",
        "the new run names the run it continues"
    );
    // Resumed, not opened again: no second boundary.
    let again = runs.open_or_resume(&tenant, session, &open).unwrap();
    assert_eq!(again.generation, 2);
    assert_eq!(store.rows(&tenant, &run).unwrap().len(), 1);
}

#[test]
fn an_exact_run_that_is_missing_is_refused_or_opened_as_asked() {
    let (_dir, store, tenant) = fixture();
    let runs = runs(store);
    let run: RunId = "run-x".parse().unwrap();
    let refused = runs
        .open_or_resume(&tenant, RunName::Exact(&run), &IfMissing::Refuse)
        .unwrap_err();
    assert!(
        matches!(refused, RuntimeError::Store(StoreError::RunNotFound { .. })),
        "{refused:?}"
    );
    let opened = runs
        .open_or_resume(
            &tenant,
            RunName::Exact(&run),
            &IfMissing::Open {
                task: Some("task-9".parse().unwrap()),
            },
        )
        .unwrap();
    assert_eq!(opened.recorder.task_id().as_str(), "task-9");
    assert!(
        runs.open(&tenant, &run, None).is_err(),
        "an open run is never opened twice"
    );
}

#[test]
fn an_executor_built_from_the_records_remembers_a_blocked_capability() {
    let (_dir, store, tenant) = fixture();
    let runs = runs(store);
    let run: RunId = "run-fx".parse().unwrap();
    let recorder = runs.open(&tenant, &run, None).unwrap();
    let mut executor = runs
        .executor(recorder, Arc::new(AllowAll("allow")), "agent", Replay::Skip)
        .unwrap();
    let Admitted::Permitted(permit) = executor.admit(&call("tickets.create")).unwrap() else {
        panic!("allowed");
    };
    executor
        .execute_effect(permit, || Err(CallError::OutcomeUnknown("timeout".into())))
        .unwrap();
    drop(executor);

    let exact = RunName::Exact(&run);
    let resumed = runs
        .open_or_resume(&tenant, exact, &IfMissing::Refuse)
        .unwrap();
    let mut executor = runs
        .executor(
            resumed.recorder,
            Arc::new(AllowAll("allow")),
            "agent",
            Replay::Records { lanes: None },
        )
        .unwrap();
    let Admitted::Denied(denial) = executor.admit(&call("tickets.create")).unwrap() else {
        panic!("the retry must be refused after a restart");
    };
    assert!(matches!(denial.cause, DenyCause::Reconciliation { .. }));
    assert_eq!(
        runs.latest_admitted(&tenant, &run, "tickets.create")
            .unwrap(),
        Some(0)
    );
    assert_eq!(runs.unresolved(&tenant, &run).unwrap().iter().count(), 1);
}
