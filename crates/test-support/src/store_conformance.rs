//! The store conformance suite: what every [`Store`] must do, written once and run against
//! each store (SQLite, PostgreSQL), so that "behaves like the SQLite store" is a test.
//!
//! A store's test suite implements [`Harness`] (how to get a fresh store, a second handle
//! on it, and how to damage it under the API) and invokes [`store_conformance!`] with an
//! `Option` of its harness (`None` skips every case, for a store whose server is absent):
//!
//! ```text
//! cairn_test_support::store_conformance!(SqliteHarness::new());
//! ```
//!
//! The cases are this module's public functions; the macro writes one `#[test]` per case.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test support: a failed expectation is the test failing"
)]

use std::sync::{Arc, Barrier};

use cairn_core::{Digest, ErrorCode, RunId, TaskId, TenantId, Timestamp};
use cairn_ledger::record::{
    Admission, AllowDeny, ArgsRef, BoundaryEvent, DraftEvent, IntentRecord, Label, RecordDraft,
    SealedRecord, Termination, TerminationReason, ToolRef,
};
use cairn_ledger::store::{
    Commit, ContentItem, CostDimension, EnvelopeItem, ResumePoint, RunFilter, RunMeta,
};
use cairn_ledger::{Store, StoreError};

/// Damage done to a store under its API, to check the store reports it rather than hides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// The body of the record at `step` (of every run) becomes text that is not JSON.
    BodyNotJson {
        /// The step.
        step: u64,
    },
    /// The `args_size` column of the record at `step` no longer matches its body.
    ArgsSizeColumn {
        /// The step.
        step: u64,
        /// The new value.
        size: i64,
    },
    /// Every run's kept Merkle frontier becomes 72 zero bytes.
    FrontierGarbage,
    /// Every run's kept head digest and frontier are forgotten (`NULL`).
    HeadForgotten,
}

/// What a store's suite gives the conformance suite.
pub trait Harness {
    /// The store under test.
    type Store: Store + 'static;

    /// A new, empty store of its own.
    fn fresh(&self) -> Self::Store;

    /// A second handle on the same store, with its own connection, as another process has.
    fn again(&self, store: &Self::Store) -> Self::Store;

    /// Damages the store under its API.
    fn tamper(&self, store: &Self::Store, what: Tamper);

    /// Whether every run keeps a Merkle frontier with its head.
    fn every_run_keeps_a_frontier(&self, store: &Self::Store) -> bool;
}

/// Writes one `#[test]` per conformance case for the harness `$harness`, an expression of
/// type `Option<impl Harness>` evaluated in each test (`None`: the case returns at once,
/// after the harness said why it is skipped).
#[macro_export]
macro_rules! store_conformance {
    ($harness:expr) => {
        $crate::store_conformance!(@cases $harness;
            runs_open_once_and_records_of_unknown_runs_are_refused,
            racing_writers_have_exactly_one_winner_per_step,
            appends_are_contiguous_atomic_and_end_at_the_terminal_record,
            records_read_back_by_step_and_as_digests,
            content_expires_on_its_own_schedule_and_a_later_expiry_wins,
            content_is_kept_ahead_of_the_record_that_carries_its_digest,
            a_corrupted_row_is_reported_as_a_fault_at_its_step,
            cost_rolls_up_calls_denials_and_argument_bytes,
            runs_are_listed_by_filter_and_found_across_tenants,
            envelopes_are_saved_with_their_boundary_record,
            the_resume_point_is_kept_with_the_run_and_agrees_with_the_records,
            a_group_of_commits_lands_together_and_a_failing_one_alone_is_refused
        );
    };
    (@cases $harness:expr; $($case:ident),+) => {
        $(
            #[test]
            fn $case() {
                if let Some(harness) = $harness {
                    $crate::store_conformance::$case(&harness);
                }
            }
        )+
    };
}

/// The tenant, run and task most cases use.
#[must_use]
pub fn ids() -> (TenantId, RunId, TaskId) {
    (
        "acme".parse().unwrap(),
        "run-1".parse().unwrap(),
        "task-1".parse().unwrap(),
    )
}

/// 2026-11-30T06:00:`second`Z.
#[must_use]
pub fn at(second: u32) -> Timestamp {
    format!("2026-11-30T06:{:02}:{:02}Z", second / 60, second % 60)
        .parse()
        .unwrap()
}

fn draft(tenant: &TenantId, run: &RunId, event: DraftEvent, recorded_at: Timestamp) -> RecordDraft {
    RecordDraft {
        tenant_id: tenant.clone(),
        run_id: run.clone(),
        task_id: ids().2,
        event,
        lane_id: None,
        observation_digest: None,
        recorded_at,
    }
}

/// A step of `run` calling `tool` (denied when its name starts with `deny`), its arguments
/// the tool's name, recorded `index` seconds after the minute.
#[must_use]
pub fn step_of(
    tenant: &TenantId,
    run: &RunId,
    index: u64,
    prev: Option<Digest>,
    tool: &str,
) -> IntentRecord {
    let recorded_at = at(u32::try_from(index % 600).unwrap());
    step_at(tenant, run, (index, prev), tool, recorded_at)
}

/// A step at `(index, prev)` of `run` calling `tool`, recorded at `recorded_at`.
fn step_at(
    tenant: &TenantId,
    run: &RunId,
    (index, prev): (u64, Option<Digest>),
    tool: &str,
    recorded_at: Timestamp,
) -> IntentRecord {
    let event = DraftEvent::Step {
        tool: ToolRef {
            name: Label::new(tool).unwrap(),
            version: Label::new("1").unwrap(),
        },
        args: ArgsRef {
            digest: Digest::of(tool.as_bytes()),
            size: tool.len() as u64,
        },
        admission: Admission {
            decision: if tool.starts_with("deny") {
                AllowDeny::Deny
            } else {
                AllowDeny::Allow
            },
            policy_set_version: Digest::of(b"p"),
            rule_ids: vec![Label::new("r").unwrap()],
        },
        agent: None,
    };
    IntentRecord::seal(draft(tenant, run, event, recorded_at), index, prev).unwrap()
}

/// A step of the default run.
#[must_use]
pub fn step(index: u64, prev: Option<Digest>, tool: &str) -> IntentRecord {
    let (tenant, run, _) = ids();
    step_of(&tenant, &run, index, prev, tool)
}

fn terminal(index: u64, prev: Digest) -> IntentRecord {
    let (tenant, run, _) = ids();
    let event = DraftEvent::Terminal(Termination {
        reason: TerminationReason::Completed,
        detail: None,
    });
    IntentRecord::seal(draft(&tenant, &run, event, at(599)), index, Some(prev)).unwrap()
}

fn boundary(index: u64, prev: Digest) -> IntentRecord {
    let (tenant, run, _) = ids();
    let event = DraftEvent::Boundary(BoundaryEvent::new(Label::new("compact").unwrap()));
    IntentRecord::seal(draft(&tenant, &run, event, at(300)), index, Some(prev)).unwrap()
}

/// The records, sealed with their JSON lines.
#[must_use]
pub fn sealed(records: &[IntentRecord]) -> Vec<SealedRecord> {
    records
        .iter()
        .map(|r| SealedRecord::from_record(r.clone()).unwrap())
        .collect()
}

/// Every record of `run`, each of which must read.
#[must_use]
pub fn records_of(store: &dyn Store, tenant: &TenantId, run: &RunId) -> Vec<IntentRecord> {
    store
        .rows(tenant, run)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// Appends `records` alone.
///
/// # Errors
/// The store's.
pub fn append(store: &dyn Store, records: &[IntentRecord]) -> Result<(), StoreError> {
    store.append(&Commit {
        records: &sealed(records),
        ..Commit::default()
    })
}

fn open_run(store: &dyn Store, tenant: &TenantId, run: &RunId, opened: u32) {
    store
        .open_run(&RunMeta {
            tenant_id: tenant.clone(),
            run_id: run.clone(),
            task_id: ids().2,
            opened_at: at(opened),
        })
        .unwrap();
}

/// A fresh store with the default run opened.
fn opened<H: Harness>(harness: &H) -> H::Store {
    let store = harness.fresh();
    let (tenant, run, _) = ids();
    open_run(&store, &tenant, &run, 0);
    store
}

/// A chain of `count` steps after `prev`, starting at `start`.
fn chain(start: u64, count: u64, mut prev: Option<Digest>, tool: &str) -> Vec<IntentRecord> {
    (start..start + count)
        .map(|index| {
            let record = step(index, prev, tool);
            prev = Some(record.digest);
            record
        })
        .collect()
}

/// A run is opened once; records of a run never opened are refused.
pub fn runs_open_once_and_records_of_unknown_runs_are_refused<H: Harness>(harness: &H) {
    let store = harness.fresh();
    let err = append(&store, &[step(0, None, "a")]).unwrap_err();
    assert!(matches!(err, StoreError::RunNotFound { .. }), "{err:?}");
    let (tenant, run, _) = ids();
    open_run(&store, &tenant, &run, 0);
    let err = store
        .open_run(&RunMeta {
            tenant_id: tenant.clone(),
            run_id: run.clone(),
            task_id: ids().2,
            opened_at: at(1),
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::RunExists { .. }), "{err:?}");
    assert_eq!(err.code(), "run_exists");
    // The same run id under another tenant is another run.
    open_run(&store, &"other".parse().unwrap(), &run, 0);
    // An empty commit writes nothing and is not an error.
    store.append(&Commit::default()).unwrap();
    assert_eq!(store.run(&tenant, &run).unwrap().unwrap().records, 0);
}

/// Two writers, each with its own connection, race for the same step 20 times: exactly one
/// wins each round and the other gets a clean `step_conflict`; no fork, no gap.
pub fn racing_writers_have_exactly_one_winner_per_step<H: Harness>(harness: &H) {
    let store = opened(harness);
    let first = step(0, None, "a");
    append(&store, std::slice::from_ref(&first)).unwrap();
    let writers: Vec<Arc<H::Store>> = (0..2).map(|_| Arc::new(harness.again(&store))).collect();
    let rounds = 20_u64;
    for round in 1..=rounds {
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = writers
                .iter()
                .zip(["writer.x", "writer.y"])
                .map(|(writer, tool)| {
                    let barrier = Arc::clone(&barrier);
                    scope.spawn(move || {
                        // Both extend the latest head they can see.
                        let (tenant, run, _) = ids();
                        let head = writer.resume_point(&tenant, &run).unwrap().unwrap();
                        let record = step(round, head.head, tool);
                        barrier.wait();
                        append(writer.as_ref(), &[record])
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "round {round}: {results:?}"
        );
        let loser = results.into_iter().find_map(Result::err).unwrap();
        assert!(
            matches!(loser, StoreError::Conflict { step, .. } if step == round),
            "{loser:?}"
        );
        assert_eq!(loser.code(), "step_conflict");
    }
    let (tenant, run, _) = ids();
    let rows = store.rows(&tenant, &run).unwrap();
    assert_eq!(rows.len() as u64, rounds + 1);
    let mut prev = None;
    for (index, row) in rows.iter().enumerate() {
        let record = row.as_ref().unwrap();
        assert_eq!(record.step_index, index as u64);
        assert_eq!(record.prev_digest, prev, "the chain is unbroken at {index}");
        prev = Some(record.digest);
    }
}

/// A batch with a gap is refused whole; the terminal record closes the run with its
/// checkpoint, and nothing is appended after it.
pub fn appends_are_contiguous_atomic_and_end_at_the_terminal_record<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    let r0 = step(0, None, "a");
    let r1 = step(1, Some(r0.digest), "b");
    let gap = step(2, Some(r1.digest), "c");
    let err = append(&store, &[r0.clone(), gap]).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NonContiguous {
                expected: 1,
                got: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "non_contiguous_step");
    assert!(
        store.rows(&tenant, &run).unwrap().is_empty(),
        "nothing landed"
    );
    append(&store, &[r0.clone(), r1.clone()]).unwrap();
    // A step that exists is a conflict, whoever offers it.
    let err = append(&store, std::slice::from_ref(&r1)).unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { step: 1, .. }),
        "{err:?}"
    );
    assert!(store.checkpoint(&tenant, &run).unwrap().is_none());
    let end = terminal(2, r1.digest);
    store
        .append(&Commit {
            records: &sealed(std::slice::from_ref(&end)),
            content: &[],
            checkpoint_note: Some("note"),
            envelope: None,
        })
        .unwrap();
    let err = append(&store, &[step(3, Some(end.digest), "d")]).unwrap_err();
    assert!(matches!(err, StoreError::RunTerminated { .. }), "{err:?}");
    let info = store.run(&tenant, &run).unwrap().unwrap();
    assert_eq!(info.records, 3);
    assert_eq!(info.termination, Some(TerminationReason::Completed));
    assert_eq!(info.last_recorded_at, Some(at(599)));
    assert!(info.terminated() && info.checkpointed);
    assert_eq!(
        store.checkpoint(&tenant, &run).unwrap().as_deref(),
        Some("note")
    );
}

/// Records read back exactly as written: all of them in step order, one by step, and their
/// digests.
pub fn records_read_back_by_step_and_as_digests<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    let records = chain(0, 7, None, "read.me");
    append(&store, &records[..3]).unwrap();
    append(&store, &records[3..]).unwrap();
    let rows = records_of(&store, &tenant, &run);
    assert_eq!(rows, records);
    assert_eq!(
        store.record(&tenant, &run, 4).unwrap().unwrap().unwrap(),
        records[4]
    );
    assert!(store.record(&tenant, &run, 7).unwrap().is_none());
    let digests: Vec<Digest> = records.iter().map(|r| r.digest).collect();
    assert_eq!(store.digests(&tenant, &run).unwrap(), digests);
    // Another tenant's run of the same id shares nothing with it.
    let other: TenantId = "other".parse().unwrap();
    assert!(store.rows(&other, &run).unwrap().is_empty());
    assert!(store.run(&other, &run).unwrap().is_none());
}

/// `bytes` as content stored at second `stored`, kept until second `expires`.
fn content_item(bytes: &[u8], stored: u32, expires: u32) -> ContentItem {
    ContentItem {
        digest: Digest::of(bytes),
        bytes: bytes.to_vec(),
        stored_at: at(stored),
        expires_at: at(expires),
    }
}

/// Raw content is kept by digest until its own expiry; storing it again with a later
/// expiry extends it; gc deletes expired content and never a record.
pub fn content_expires_on_its_own_schedule_and_a_later_expiry_wins<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    let bytes = b"{\"q\":1}".to_vec();
    let digest = Digest::of(&bytes);
    let item = |stored, expires| content_item(&bytes, stored, expires);
    let records = chain(0, 2, None, "a");
    store
        .append(&Commit {
            records: &sealed(&records[..1]),
            // The same content twice in one commit is kept once.
            content: &[item(0, 10), item(1, 5)],
            checkpoint_note: None,
            envelope: None,
        })
        .unwrap();
    store
        .append(&Commit {
            records: &sealed(&records[1..]),
            content: &[item(2, 30)],
            checkpoint_note: None,
            envelope: None,
        })
        .unwrap();
    let kept = store.content(&digest).unwrap().unwrap();
    assert_eq!(kept.bytes, bytes);
    assert_eq!(kept.stored_at, at(0), "the first storing is remembered");
    assert_eq!(kept.expires_at, at(30), "the later expiry wins");
    assert_eq!(store.gc_content(at(20)).unwrap(), 0);
    assert!(store.content(&digest).unwrap().is_some());
    assert!(store.gc_content(at(30)).unwrap() >= 1);
    assert!(store.content(&digest).unwrap().is_none());
    assert!(
        store
            .content(&Digest::of(b"never stored"))
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store.rows(&tenant, &run).unwrap().len(),
        2,
        "gc never touches records"
    );
}

/// Content no record carries yet (what the model was shown after a call) is kept on its own,
/// readable by digest and with the later expiry winning, and writes no record.
pub fn content_is_kept_ahead_of_the_record_that_carries_its_digest<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    let bytes = b"{\"result\":\"kept ahead\"}".to_vec();
    let digest = Digest::of(&bytes);
    let item = |stored, expires| content_item(&bytes, stored, expires);
    store.keep_content(&tenant, &run, &[item(0, 10)]).unwrap();
    store.keep_content(&tenant, &run, &[]).unwrap();
    let kept = store.content(&digest).unwrap().expect("kept");
    assert_eq!(kept.bytes, bytes);
    store.keep_content(&tenant, &run, &[item(1, 40)]).unwrap();
    let kept = store.content(&digest).unwrap().expect("kept");
    assert_eq!((kept.stored_at, kept.expires_at), (at(0), at(40)));
    assert!(store.rows(&tenant, &run).unwrap().is_empty(), "no record");
    // The record that carries it commits as any other.
    append(&store, &chain(0, 1, None, "a")).unwrap();
    assert_eq!(store.rows(&tenant, &run).unwrap().len(), 1);
}

/// A row whose body is not a record, or whose columns disagree with its body, is returned
/// as a fault at its step — never hidden, never an error for the whole run.
pub fn a_corrupted_row_is_reported_as_a_fault_at_its_step<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    append(&store, &chain(0, 3, None, "a")).unwrap();
    harness.tamper(&store, Tamper::BodyNotJson { step: 1 });
    harness.tamper(&store, Tamper::ArgsSizeColumn { step: 0, size: 999 });
    let rows = store.rows(&tenant, &run).unwrap();
    assert_eq!(rows.len(), 3);
    let fault = rows[0].as_ref().unwrap_err();
    assert_eq!(fault.step_index, 0);
    assert!(fault.detail.contains("args_size"), "{}", fault.detail);
    let fault = rows[1].as_ref().unwrap_err();
    assert_eq!(fault.step_index, 1);
    assert!(
        fault.detail.contains("not a valid record"),
        "{}",
        fault.detail
    );
    assert!(rows[2].is_ok());
    let one = store.record(&tenant, &run, 1).unwrap().unwrap();
    assert_eq!(one.unwrap_err().step_index, 1);
}

/// Cost rollups by tool, task, tenant and termination count calls, denials and argument
/// bytes per key, in the keys' byte order; a tenant's rollup counts its runs only.
pub fn cost_rolls_up_calls_denials_and_argument_bytes<H: Harness>(harness: &H) {
    let store = opened(harness);
    let r0 = step(0, None, "alpha");
    let r1 = step(1, Some(r0.digest), "deny.me");
    let r2 = step(2, Some(r1.digest), "alpha");
    append(&store, &[r0, r1, r2.clone()]).unwrap();
    let second: TenantId = "Beta".parse().unwrap();
    let run = ids().1;
    open_run(&store, &second, &run, 1);
    append(&store, &[step_of(&second, &run, 0, None, "Zeta")]).unwrap();
    let by_tool = store.cost(CostDimension::Tool, None).unwrap();
    let keys: Vec<&str> = by_tool.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        ["Zeta", "alpha", "deny.me"],
        "byte order, not a locale's"
    );
    let alpha = &by_tool[1];
    assert_eq!(
        (alpha.runs, alpha.calls, alpha.denied, alpha.arg_bytes),
        (1, 2, 0, 10)
    );
    assert_eq!((by_tool[2].calls, by_tool[2].denied), (1, 1));
    let by_tenant = store.cost(CostDimension::Tenant, None).unwrap();
    let rows: Vec<(&str, u64, u64)> = by_tenant
        .iter()
        .map(|r| (r.key.as_str(), r.runs, r.calls))
        .collect();
    assert_eq!(rows, [("Beta", 1, 1), ("acme", 1, 3)]);
    // One tenant's rollup counts its own runs only, in every dimension.
    let only_beta = store.cost(CostDimension::Tool, Some(&second)).unwrap();
    let rows: Vec<(&str, u64, u64)> = only_beta
        .iter()
        .map(|r| (r.key.as_str(), r.runs, r.calls))
        .collect();
    assert_eq!(rows, [("Zeta", 1, 1)]);
    let beta_tasks = store.cost(CostDimension::Task, Some(&second)).unwrap();
    assert_eq!(
        (beta_tasks.len(), beta_tasks[0].runs, beta_tasks[0].calls),
        (1, 1, 1)
    );
    let nobody: TenantId = "nobody".parse().unwrap();
    assert!(
        store
            .cost(CostDimension::Tenant, Some(&nobody))
            .unwrap()
            .is_empty()
    );
    let by_task = store.cost(CostDimension::Task, None).unwrap();
    assert_eq!((by_task[0].runs, by_task[0].calls), (2, 4));
    let by_end = store.cost(CostDimension::Termination, None).unwrap();
    assert_eq!(
        (by_end[0].key.as_str(), by_end[0].runs, by_end[0].calls),
        ("unterminated", 2, 4)
    );
    store
        .append(&Commit {
            records: &sealed(&[terminal(3, r2.digest)]),
            checkpoint_note: Some("note"),
            ..Commit::default()
        })
        .unwrap();
    let by_end = store.cost(CostDimension::Termination, None).unwrap();
    let rows: Vec<(&str, u64, u64)> = by_end
        .iter()
        .map(|r| (r.key.as_str(), r.runs, r.calls))
        .collect();
    assert_eq!(rows, [("completed", 1, 3), ("unterminated", 1, 1)]);
}

/// `runs list` filters — tenant, unterminated, idle since — and `find_runs` across tenants,
/// oldest first.
pub fn runs_are_listed_by_filter_and_found_across_tenants<H: Harness>(harness: &H) {
    let store = harness.fresh();
    let (acme, run, _) = ids();
    let other: TenantId = "other".parse().unwrap();
    let later: RunId = "run-2".parse().unwrap();
    open_run(&store, &acme, &later, 5);
    open_run(&store, &acme, &run, 0);
    open_run(&store, &other, &run, 1);
    // acme/run-1 is active at 100 s; other/run-1 ends; acme/run-2 stays idle since opening.
    let late = step_at(&acme, &run, (0, None), "a", at(100));
    append(&store, &[late]).unwrap();
    let first = step_of(&other, &run, 0, None, "a");
    let end = IntentRecord::seal(
        draft(
            &other,
            &run,
            DraftEvent::Terminal(Termination {
                reason: TerminationReason::Cancelled,
                detail: None,
            }),
            at(2),
        ),
        1,
        Some(first.digest),
    )
    .unwrap();
    append(&store, &[first, end]).unwrap();
    let names = |filter: RunFilter| -> Vec<String> {
        store
            .list_runs(&filter)
            .unwrap()
            .iter()
            .map(|info| format!("{}/{}", info.meta.tenant_id, info.meta.run_id))
            .collect()
    };
    assert_eq!(
        names(RunFilter::default()),
        ["acme/run-1", "other/run-1", "acme/run-2"],
        "oldest first"
    );
    assert_eq!(
        names(RunFilter {
            tenant_id: Some(acme.clone()),
            ..RunFilter::default()
        }),
        ["acme/run-1", "acme/run-2"]
    );
    assert_eq!(
        names(RunFilter {
            unterminated_only: true,
            ..RunFilter::default()
        }),
        ["acme/run-1", "acme/run-2"]
    );
    assert_eq!(
        names(RunFilter {
            unterminated_only: true,
            idle_before: Some(at(50)),
            ..RunFilter::default()
        }),
        ["acme/run-2"],
        "idle since its opening at 5 s; run-1 was active at 100 s"
    );
    assert_eq!(
        names(RunFilter {
            tenant_id: Some(other.clone()),
            unterminated_only: true,
            idle_before: Some(at(500)),
        }),
        Vec::<String>::new()
    );
    let found = store.find_runs(&run).unwrap();
    let tenants: Vec<&str> = found.iter().map(|i| i.meta.tenant_id.as_str()).collect();
    assert_eq!(tenants, ["acme", "other"]);
    let ended = &found[1];
    assert_eq!(ended.termination, Some(TerminationReason::Cancelled));
    assert!(!ended.checkpointed);
    assert_eq!(ended.records, 2);
    assert!(
        store
            .find_runs(&"run-9".parse().unwrap())
            .unwrap()
            .is_empty()
    );
}

/// An envelope is saved with the boundary record that names it, in the same commit; a second
/// envelope of the same id is refused and nothing of its commit lands.
pub fn envelopes_are_saved_with_their_boundary_record<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    assert!(store.latest_envelope(&tenant, &run).unwrap().is_none());
    let steps = chain(0, 2, None, "a");
    let first = boundary(2, steps[1].digest);
    store
        .append(&Commit {
            records: &sealed(&[steps[0].clone(), steps[1].clone(), first.clone()]),
            envelope: Some(EnvelopeItem {
                envelope_id: "env-1",
                supersedes: None,
                body: "{\"one\":1}",
            }),
            ..Commit::default()
        })
        .unwrap();
    let second = boundary(3, first.digest);
    store
        .append(&Commit {
            records: &sealed(std::slice::from_ref(&second)),
            envelope: Some(EnvelopeItem {
                envelope_id: "env-2",
                supersedes: Some("env-1"),
                body: "{\"two\":2}",
            }),
            ..Commit::default()
        })
        .unwrap();
    let latest = store.latest_envelope(&tenant, &run).unwrap().unwrap();
    assert_eq!(
        (
            latest.envelope_id.as_str(),
            latest.step_index,
            latest.supersedes.as_deref()
        ),
        ("env-2", 3, Some("env-1"))
    );
    assert_eq!(latest.body, "{\"two\":2}");
    let all: Vec<(String, u64)> = store
        .envelopes(&tenant, &run)
        .unwrap()
        .into_iter()
        .map(|e| (e.envelope_id, e.step_index))
        .collect();
    assert_eq!(all, [("env-1".to_owned(), 2), ("env-2".to_owned(), 3)]);
    let again = boundary(4, second.digest);
    let err = store
        .append(&Commit {
            records: &sealed(&[again]),
            envelope: Some(EnvelopeItem {
                envelope_id: "env-1",
                supersedes: None,
                body: "{}",
            }),
            ..Commit::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("env-1"), "{err}");
    assert_eq!(store.run(&tenant, &run).unwrap().unwrap().records, 4);
    assert!(
        store
            .envelopes(&"other".parse().unwrap(), &run)
            .unwrap()
            .is_empty()
    );
}

/// A run's head (last digest and Merkle frontier) is kept with it, so a writer resumes
/// without reading the run, and it always agrees with the records: a head that disagrees
/// (overwritten, or from an older schema) is not believed, and the next append restores it.
pub fn the_resume_point_is_kept_with_the_run_and_agrees_with_the_records<H: Harness>(harness: &H) {
    let store = opened(harness);
    let (tenant, run, _) = ids();
    let fresh = store.resume_point(&tenant, &run).unwrap().unwrap();
    assert_eq!((fresh.tree.len(), fresh.head), (0, None));
    assert!(
        store
            .resume_point(&tenant, &"run-9".parse().unwrap())
            .unwrap()
            .is_none()
    );
    let mut records: Vec<IntentRecord> = Vec::new();
    for batch in [1_u64, 2, 5, 1, 9] {
        let new = chain(
            records.len() as u64,
            batch,
            records.last().map(|r| r.digest),
            "t",
        );
        append(&store, &new).unwrap();
        records.extend(new);
        let kept = store.resume_point(&tenant, &run).unwrap().unwrap();
        let digests: Vec<Digest> = records.iter().map(|r| r.digest).collect();
        let slow = ResumePoint::from_digests(kept.info.clone(), &digests);
        assert_eq!(kept.tree.len(), records.len() as u64);
        assert_eq!(kept.tree.root(), slow.tree.root());
        assert_eq!(kept.head, slow.head);
    }
    let truth = store.resume_point(&tenant, &run).unwrap().unwrap();
    harness.tamper(&store, Tamper::FrontierGarbage);
    let resumed = store.resume_point(&tenant, &run).unwrap().unwrap();
    assert_eq!(resumed.tree.root(), truth.tree.root());
    harness.tamper(&store, Tamper::HeadForgotten);
    let resumed = store.resume_point(&tenant, &run).unwrap().unwrap();
    assert_eq!(resumed.tree.root(), truth.tree.root());
    assert_eq!(resumed.head, truth.head);
    let next = step(records.len() as u64, records.last().map(|r| r.digest), "t");
    append(&store, std::slice::from_ref(&next)).unwrap();
    records.push(next);
    let digests: Vec<Digest> = records.iter().map(|r| r.digest).collect();
    let kept = store.resume_point(&tenant, &run).unwrap().unwrap();
    assert_eq!(
        kept.tree.root(),
        ResumePoint::from_digests(kept.info.clone(), &digests)
            .tree
            .root()
    );
    assert!(
        harness.every_run_keeps_a_frontier(&store),
        "the append restored the kept frontier"
    );
}

/// A group commit of several runs: every commit that continues its run lands; one that does
/// not (a step already taken) is refused alone, and the others are durable all the same.
pub fn a_group_of_commits_lands_together_and_a_failing_one_alone_is_refused<H: Harness>(
    harness: &H,
) {
    let store = harness.fresh();
    let tenant: TenantId = "acme".parse().unwrap();
    let runs: Vec<RunId> = (0..3)
        .map(|i| format!("group-{i}").parse().unwrap())
        .collect();
    for run in &runs {
        open_run(&store, &tenant, run, 0);
    }
    // Run 1 already has its step 0: the group's step 0 for it conflicts.
    let taken = step_of(&tenant, &runs[1], 0, None, "earlier");
    append(&store, std::slice::from_ref(&taken)).unwrap();
    let batches: Vec<Vec<SealedRecord>> = runs
        .iter()
        .map(|run| {
            let first = step_of(&tenant, run, 0, None, "read");
            let second = step_of(&tenant, run, 1, Some(first.digest), "write");
            sealed(&[first, second])
        })
        .collect();
    let commits: Vec<Commit<'_>> = batches
        .iter()
        .map(|records| Commit {
            records,
            ..Commit::default()
        })
        .collect();
    let results = store.append_group(&commits);
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        matches!(results[1], Err(StoreError::Conflict { .. })),
        "{results:?}"
    );
    for i in [0, 2] {
        let stored = records_of(&store, &tenant, &runs[i]);
        assert_eq!(stored.len(), 2, "run {i}");
        assert_eq!(stored[1].digest, batches[i][1].record().digest);
    }
    assert_eq!(records_of(&store, &tenant, &runs[1]), vec![taken]);
}
