//! Shared fixtures of the runtime's integration tests: a store with real, signed runs.

#![allow(dead_code, reason = "test code")]
#![allow(clippy::expect_used, reason = "test fixtures")]

use std::path::Path;
use std::sync::Arc;

use cairn_core::{Clock, FixedClock, RunId, TaskId, TenantId, Timestamp};
use cairn_ledger::Store;
use cairn_ledger::keys::{SigningKey, TrustedKeys};
use cairn_ledger::record::{
    Admission, AllowDeny, BoundaryEvent, Label, TerminationReason, ToolRef,
};
use cairn_ledger::verify::{CheckpointPolicy, RunReport, verify_run};
use cairn_runtime::{Durability, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};

/// A fresh signing key and the trust set holding its verifier key.
pub fn key() -> (SigningKey, TrustedKeys) {
    let key = SigningKey::generate(&mut rand_core::OsRng, "cairn.test").expect("key");
    let trusted = TrustedKeys::new(vec![key.verifier_key()]);
    (key, trusted)
}

/// A label, valid by construction in these tests.
pub fn label(text: &str) -> Label {
    Label::new(text).expect("label")
}

/// An admission under a fixed policy version.
pub fn admission(decision: AllowDeny, rules: &[&str]) -> Admission {
    Admission {
        decision,
        policy_set_version: cairn_core::Digest::of(b"policy-v1"),
        rule_ids: rules.iter().map(|r| label(r)).collect(),
    }
}

/// A call of version `version` of `tool` with `args`, outside any lane.
pub fn call<'a>(tool: &str, version: &str, args: &'a [u8]) -> ToolCall<'a> {
    ToolCall {
        tool: ToolRef {
            name: label(tool),
            version: label(version),
        },
        args,
        lane: None,
    }
}

/// A new run `run` of tenant `acme` in `store`, recorded with `sync` durability and no
/// content retention, on the system clock.
pub fn sync_recorder(store: Arc<SqliteStore>, task: &str, run: &str) -> Recorder {
    Recorder::open(
        store,
        Arc::new(cairn_core::SystemClock),
        (
            "acme".parse().expect("tenant"),
            task.parse().expect("task"),
            run.parse().expect("run"),
        ),
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
    .expect("open run")
}

/// Writes a closed run of `steps` tool calls (every fifth denied, a boundary in the middle)
/// and returns its ids.
pub fn write_run(
    store: Arc<SqliteStore>,
    key: &SigningKey,
    tenant: &str,
    run: &str,
    steps: usize,
) -> (TenantId, RunId) {
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::new(
        "2026-11-30T06:00:00Z".parse::<Timestamp>().expect("time"),
    ));
    let tenant: TenantId = tenant.parse().expect("tenant");
    let run_id: RunId = run.parse().expect("run");
    let task: TaskId = "task-1".parse().expect("task");
    let mut recorder = Recorder::open(
        store,
        clock,
        (tenant.clone(), task, run_id.clone()),
        RecorderOptions {
            durability: Durability::DEFAULT_BATCH,
            content_retention: None,
        },
    )
    .expect("open run");
    recorder
        .observe(&serde_json::json!({"role": "user", "content": format!("task for {run}")}))
        .expect("observe");
    for i in 0..steps {
        if i == steps / 2 {
            recorder
                .record_boundary(
                    BoundaryEvent {
                        approval: None,
                        event: label("context_compaction"),
                        trigger: Some(label("auto")),
                        envelope_id: Some(label(&format!("env-{run}"))),
                        envelope_digest: None,
                        supersedes_envelope_id: None,
                        source_event_range: Some(cairn_ledger::record::EventRange {
                            first: 0,
                            last: i as u64,
                        }),
                        summary_digest: Some(cairn_core::Digest::of(b"summary")),
                        reason: None,
                        preserved: vec![label("identity"), label("approval")],
                        idempotency_key: None,
                        lane_digest: None,
                        side_effect_status: None,
                        evidence_ref: None,
                    },
                    None,
                )
                .expect("boundary");
        }
        let decision = if i % 5 == 3 {
            AllowDeny::Deny
        } else {
            AllowDeny::Allow
        };
        let args = format!("{{\"n\":{i},\"run\":\"{run}\"}}");
        recorder
            .record_step(
                &call(&format!("tool.{}", i % 3), "1", args.as_bytes()),
                admission(
                    decision,
                    &[if decision == AllowDeny::Allow {
                        "allow.all"
                    } else {
                        "deny.writes"
                    }],
                ),
            )
            .expect("step");
        recorder
            .observe(&serde_json::json!({"result": i, "run": run}))
            .expect("observe");
    }
    recorder
        .terminate(TerminationReason::Completed, None, key)
        .expect("terminate");
    (tenant, run_id)
}

/// The verification of the run `run` of `tenant` as `store` holds it: its rows and its
/// checkpoint note, against `trusted` under `policy`.
pub fn verify_stored(
    store: &dyn Store,
    (tenant, run): (&TenantId, &RunId),
    trusted: &TrustedKeys,
    policy: CheckpointPolicy,
) -> RunReport {
    let rows = store.rows(tenant, run).expect("rows");
    let note = store.checkpoint(tenant, run).expect("checkpoint");
    verify_run(tenant, run, &rows, note.as_deref(), trusted, policy)
}

/// Opens (creating) a store file.
pub fn open(path: &Path) -> Arc<SqliteStore> {
    Arc::new(SqliteStore::open(path, OpenMode::CreateIfMissing).expect("store"))
}
