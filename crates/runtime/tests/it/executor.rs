//! The executor façade: every call is decided and recorded before it may run; a denied call
//! never runs; what the model is shown after a call — its result or its denial — is the
//! observation the next record carries.

use crate::common;

use std::sync::Arc;

use cairn_core::Digest;
use cairn_core::canonical::jcs_digest;
use cairn_ledger::Store;
use cairn_ledger::record::AllowDeny;
use cairn_runtime::{
    Admitted, DenyCause, Durability, Executor, Gate, GateRequest, GateVerdict, Recorder,
    RecorderOptions, ToolCall,
};
use serde_json::json;

/// Allows `tickets.read`, denies everything else by a named rule.
struct ReadOnly;

impl Gate for ReadOnly {
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        if request.tool == "tickets.read" {
            GateVerdict::allow(Digest::of(b"policy-v1"), vec![common::label("read")])
        } else {
            GateVerdict::deny(
                Digest::of(b"policy-v1"),
                vec![common::label("no-writes")],
                DenyCause::Policy {
                    reason: "forbidden",
                },
            )
        }
    }
}

fn call(tool: &str) -> ToolCall<'static> {
    common::call(tool, "1", b"{\"id\":1}")
}

#[test]
fn results_and_denials_become_the_next_observation_and_denied_calls_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("e.db"));
    let clock: Arc<dyn cairn_core::Clock> = Arc::new(cairn_core::SystemClock);
    let recorder = Recorder::open(
        store.clone(),
        clock,
        (
            "acme".parse().unwrap(),
            "task-e".parse().unwrap(),
            "run-e".parse().unwrap(),
        ),
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
    .unwrap();
    let mut executor = Executor::new(recorder, Arc::new(ReadOnly), "agent");
    let user = json!({"role": "user", "content": "look at ticket 1"});
    executor.observe(&user).unwrap();

    let Admitted::Permitted(permit) = executor.admit(&call("tickets.read")).unwrap() else {
        panic!("tickets.read is allowed");
    };
    assert_eq!(permit.step_index(), 0);
    let result = executor
        .execute(permit, || Ok::<_, String>(json!({"status": "open"})))
        .unwrap();
    assert_eq!(result, Ok(json!({"status": "open"})));

    let mut ran = false;
    let Admitted::Denied(denial) = executor.admit(&call("tickets.delete")).unwrap() else {
        panic!("tickets.delete is denied");
    };
    assert_eq!(denial.rule_ids, vec!["no-writes".to_owned()]);
    assert_eq!(
        denial.cause,
        DenyCause::Policy {
            reason: "forbidden"
        }
    );
    assert_eq!(denial.reason(), "forbidden");
    // There is no permit, so there is nothing to pass to `execute`: the call cannot run.
    assert!(!ran);
    ran = matches!(
        executor.admit(&call("tickets.read")).unwrap(),
        Admitted::Permitted(_)
    );
    assert!(ran);

    let rows = store
        .rows(&"acme".parse().unwrap(), &"run-e".parse().unwrap())
        .unwrap();
    let records: Vec<_> = rows.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        records.len(),
        3,
        "every decision is recorded, the denial included"
    );
    assert_eq!(
        records[0].observation_digest,
        Some(jcs_digest(&user).unwrap())
    );
    assert_eq!(
        records[1].observation_digest,
        Some(jcs_digest(&json!({"step": 0, "result": {"status": "open"}})).unwrap()),
        "a call's result is what the next step saw"
    );
    assert_eq!(
        records[2].observation_digest,
        Some(
            jcs_digest(&json!({
                "tool": "tickets.delete", "denied": true, "reason": "forbidden", "rule_ids": ["no-writes"]
            }))
            .unwrap()
        ),
        "a denial is what the next step saw"
    );
    assert_eq!(
        records[1].admission.as_ref().unwrap().decision,
        AllowDeny::Deny
    );
}
