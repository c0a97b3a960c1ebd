//! Issue 4 (E-2, E-5): a call whose outcome is unknown blocks its capability — in this
//! process and after a restart — until a reconciliation record names the outcome; other
//! capabilities keep working; nothing retries the call.

use crate::common;
use cairn_test_support::gates::AllowAll;

use std::sync::Arc;

use cairn_ledger::Store;
use cairn_runtime::effects::RECONCILIATION_RULE;
use cairn_runtime::reconcile::{ObservedOutcome, reconcile_run};
use cairn_runtime::{
    Admitted, CallError, DenyCause, Durability, EffectOutcome, Executor, Recorder, RecorderOptions,
    ToolCall,
};

fn call(tool: &str) -> ToolCall<'static> {
    common::call(tool, "1", b"{\"subject\":\"charged twice\"}")
}

fn options() -> RecorderOptions {
    RecorderOptions {
        durability: Durability::Sync,
        content_retention: None,
    }
}

fn clock() -> Arc<dyn cairn_core::Clock> {
    Arc::new(cairn_core::SystemClock)
}

#[test]
fn an_unknown_outcome_blocks_its_capability_until_reconciled_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("fx.db"));
    let (tenant, run): (cairn_core::TenantId, cairn_core::RunId) =
        ("acme".parse().unwrap(), "run-fx".parse().unwrap());
    let recorder = Recorder::open(
        store.clone(),
        clock(),
        (tenant.clone(), "task-fx".parse().unwrap(), run.clone()),
        options(),
    )
    .unwrap();
    let mut executor = Executor::new(recorder, Arc::new(AllowAll("allow")), "agent");

    let Admitted::Permitted(permit) = executor.admit(&call("tickets.create")).unwrap() else {
        panic!()
    };
    let mut attempts = 0;
    let outcome = executor
        .execute_effect(permit, || {
            attempts += 1;
            Err(CallError::OutcomeUnknown("timeout after dispatch".into()))
        })
        .unwrap();
    assert_eq!(attempts, 1, "the executor never retries");
    let EffectOutcome::Unknown { idempotency_key } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        idempotency_key, "run-fx:0",
        "the key comes from the run and the step"
    );

    // The same capability is refused and the refusal names the reconciliation rule.
    let Admitted::Denied(denial) = executor.admit(&call("tickets.create")).unwrap() else {
        panic!("a retry of the write must be refused");
    };
    assert_eq!(denial.rule_ids, vec![RECONCILIATION_RULE.to_owned()]);
    assert!(
        matches!(&denial.cause, DenyCause::Reconciliation { idempotency_key } if idempotency_key.ends_with(":0")),
        "{denial:?}"
    );
    assert_eq!(denial.reason(), "unresolved_side_effect");
    // Other capabilities still work.
    assert!(matches!(
        executor.admit(&call("kb.search")).unwrap(),
        Admitted::Permitted(_)
    ));
    drop(executor);

    // A new process rebuilds the block from the records.
    let rows = store.rows(&tenant, &run).unwrap();
    let recorder = Recorder::resume(store.clone(), clock(), &tenant, &run, options()).unwrap();
    let mut executor = Executor::resumed(recorder, &rows, Arc::new(AllowAll("allow")), "agent");
    assert!(matches!(
        executor.admit(&call("tickets.create")).unwrap(),
        Admitted::Denied(_)
    ));
    assert!(
        executor
            .reconcile("run-fx:9", ObservedOutcome::Applied, "lookup")
            .is_err(),
        "unknown keys are refused"
    );
    executor
        .reconcile(
            "run-fx:0",
            ObservedOutcome::NotExecuted,
            "tickets.lookup?key=run-fx:0 -> none",
        )
        .unwrap();
    assert!(matches!(
        executor.admit(&call("tickets.create")).unwrap(),
        Admitted::Permitted(_)
    ));

    let records: Vec<_> = store
        .rows(&tenant, &run)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let events: Vec<String> = records
        .iter()
        .filter_map(|r| r.boundary.as_ref().map(|b| b.event.to_string()))
        .collect();
    assert_eq!(events, ["side_effect_unknown", "reconciliation"]);
    let reconciliation = records
        .iter()
        .find_map(|r| {
            r.boundary
                .as_ref()
                .filter(|b| b.event.as_str() == "reconciliation")
        })
        .unwrap();
    assert_eq!(
        reconciliation.idempotency_key.as_ref().unwrap().as_str(),
        "run-fx:0"
    );
    assert_eq!(
        reconciliation.side_effect_status.as_ref().unwrap().as_str(),
        "not_executed"
    );
    assert!(reconciliation.evidence_ref.is_some());
}

#[test]
fn reconcile_run_works_from_outside_the_agent_process() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("rr.db"));
    let (tenant, run): (cairn_core::TenantId, cairn_core::RunId) =
        ("acme".parse().unwrap(), "run-rr".parse().unwrap());
    {
        let recorder = Recorder::open(
            store.clone(),
            clock(),
            (tenant.clone(), "task".parse().unwrap(), run.clone()),
            options(),
        )
        .unwrap();
        let mut executor = Executor::new(recorder, Arc::new(AllowAll("allow")), "agent");
        let Admitted::Permitted(permit) = executor.admit(&call("tickets.create")).unwrap() else {
            panic!()
        };
        executor
            .execute_effect(permit, || Err(CallError::OutcomeUnknown("crash".into())))
            .unwrap();
    }
    let err = reconcile_run(
        store.clone(),
        clock(),
        &tenant,
        &run,
        "run-rr:5",
        ObservedOutcome::Applied,
        "x",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("run-rr:0"),
        "the error lists what is unresolved: {err}"
    );
    reconcile_run(
        store.clone(),
        clock(),
        &tenant,
        &run,
        "run-rr:0",
        ObservedOutcome::Applied,
        "ticket T-9 found",
    )
    .unwrap();
    let again = reconcile_run(
        store,
        clock(),
        &tenant,
        &run,
        "run-rr:0",
        ObservedOutcome::Applied,
        "x",
    );
    assert!(again.is_err(), "a resolved key cannot be reconciled twice");
}
