//! The recorder's promises: sync records are durable when acknowledged, batch records are
//! committed within their window and always before a boundary or the end, observations chain
//! into the next step, content follows the retention policy, and a resumed writer continues
//! the same verifiable chain.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use cairn_core::canonical::jcs_digest;
use cairn_core::{Clock, Digest, FixedClock, RunId, TenantId, Timestamp};
use cairn_ledger::Store;
use cairn_ledger::record::AllowDeny;
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use cairn_runtime::{Durability, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

fn clock() -> Arc<dyn Clock> {
    Arc::new(FixedClock::new(
        "2026-11-30T06:00:00Z".parse::<Timestamp>().unwrap(),
    ))
}

fn ids() -> (TenantId, RunId) {
    ("acme".parse().unwrap(), "run-r".parse().unwrap())
}

fn recorder(store: Arc<SqliteStore>, options: RecorderOptions) -> Recorder {
    let (tenant, run) = ids();
    Recorder::open(
        store,
        clock(),
        (tenant, "task-r".parse().unwrap(), run),
        options,
    )
    .unwrap()
}

fn call(args: &[u8]) -> ToolCall<'_> {
    common::call("fs.read", "1", args)
}

fn without_content(durability: Durability) -> RecorderOptions {
    RecorderOptions {
        durability,
        content_retention: None,
    }
}

/// Records an allowed call of `fs.read` with `args`.
fn allow(rec: &mut Recorder, args: &[u8]) {
    rec.record_step(&call(args), common::admission(AllowDeny::Allow, &["r"]))
        .unwrap();
}

/// A second connection, as another process would see the store.
fn visible(db: &std::path::Path) -> usize {
    let other = SqliteStore::open(db, OpenMode::MustExist).unwrap();
    other.rows(&ids().0, &ids().1).unwrap().len()
}

#[test]
fn sync_records_are_visible_to_other_processes_when_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut rec = recorder(common::open(&db), without_content(Durability::Sync));
    for i in 1..=3 {
        allow(&mut rec, b"{}");
        assert_eq!(visible(&db), i);
    }
}

#[test]
fn batch_records_wait_for_their_window_and_are_flushed_at_a_boundary_and_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b.db");
    let options = without_content(Durability::Batch {
        max_records: 4,
        max_delay: Duration::from_secs(3600),
    });
    let (key, trusted) = common::key();
    let mut rec = recorder(common::open(&db), options);
    for _ in 0..3 {
        allow(&mut rec, b"{}");
    }
    assert_eq!(visible(&db), 0, "three records are inside the window");
    allow(&mut rec, b"{}");
    assert_eq!(visible(&db), 4, "the fourth fills the window");
    rec.record_step(&call(b"{}"), common::admission(AllowDeny::Deny, &["d"]))
        .unwrap();
    assert_eq!(visible(&db), 4);
    rec.record_boundary(
        cairn_ledger::record::BoundaryEvent::new(common::label("context_compaction")),
        None,
    )
    .unwrap();
    assert_eq!(
        visible(&db),
        6,
        "a boundary flushes everything, itself included"
    );
    allow(&mut rec, b"{}");
    rec.terminate(
        cairn_ledger::record::TerminationReason::Completed,
        None,
        &key,
    )
    .unwrap();
    assert_eq!(visible(&db), 8);
    let store = SqliteStore::open(&db, OpenMode::MustExist).unwrap();
    let (tenant, run) = ids();
    let report = common::verify_stored(
        &store,
        (&tenant, &run),
        &trusted,
        CheckpointPolicy::Required,
    );
    assert!(report.is_intact(), "{:#?}", report.findings);
}

#[test]
fn a_dropped_batch_writer_commits_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    let mut rec = recorder(
        common::open(&db),
        without_content(Durability::DEFAULT_BATCH),
    );
    allow(&mut rec, b"{}");
    drop(rec);
    assert_eq!(visible(&db), 1);
}

#[test]
fn each_step_records_the_digest_of_what_the_model_saw_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let store = common::open(&db);
    let mut rec = recorder(store.clone(), RecorderOptions::default());
    let first = json!({"role": "user", "content": "list the files"});
    rec.observe(&first).unwrap();
    let args = br#"{ "path" : "/tmp" }"#;
    allow(&mut rec, args);
    let result = json!({"files": ["a", "b"]});
    rec.observe(&result).unwrap();
    allow(&mut rec, b"{}");
    let rows = store.rows(&ids().0, &ids().1).unwrap();
    let (r0, r1) = (rows[0].as_ref().unwrap(), rows[1].as_ref().unwrap());
    assert_eq!(r0.observation_digest, Some(jcs_digest(&first).unwrap()));
    assert_eq!(
        r1.observation_digest,
        Some(jcs_digest(&result).unwrap()),
        "a result is the next observation"
    );
    // Arguments are digested exactly as submitted, whitespace included.
    let args_ref = r0.args.as_ref().unwrap();
    assert_eq!(args_ref.digest, Digest::of(args));
    assert_eq!(args_ref.size, args.len() as u64);
    // Retained content hashes back to the digests the records hold.
    let kept = store.content(&args_ref.digest).unwrap().unwrap();
    assert_eq!(Digest::of(&kept.bytes), args_ref.digest);
    let obs = store
        .content(&r1.observation_digest.unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(Digest::of(&obs.bytes), r1.observation_digest.unwrap());
}

#[test]
fn without_retention_no_content_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("n.db"));
    let mut rec = recorder(store.clone(), without_content(Durability::Sync));
    rec.observe(&json!({"secret": "x"})).unwrap();
    rec.record_step(
        &call(b"{\"a\":1}"),
        common::admission(AllowDeny::Allow, &["r"]),
    )
    .unwrap();
    assert!(store.content(&Digest::of(b"{\"a\":1}")).unwrap().is_none());
}

#[test]
fn a_resumed_writer_continues_the_same_chain() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let (key, trusted) = common::key();
    {
        let mut rec = recorder(common::open(&db), RecorderOptions::default());
        allow(&mut rec, b"1");
        allow(&mut rec, b"2");
    }
    let store = common::open(&db);
    let (tenant, run) = ids();
    let mut rec = Recorder::resume(
        store.clone(),
        clock(),
        &tenant,
        &run,
        RecorderOptions::default(),
    )
    .unwrap();
    assert_eq!(rec.next_step(), 2);
    allow(&mut rec, b"3");
    rec.terminate(
        cairn_ledger::record::TerminationReason::Completed,
        None,
        &key,
    )
    .unwrap();
    let report = common::verify_stored(
        &*store,
        (&tenant, &run),
        &trusted,
        CheckpointPolicy::Required,
    );
    assert!(report.is_intact(), "{:#?}", report.findings);
    assert_eq!(report.records, 4);
    let again = Recorder::resume(store, clock(), &tenant, &run, RecorderOptions::default());
    assert_eq!(
        cairn_core::ErrorCode::code(&again.unwrap_err()),
        "run_terminated"
    );
}

#[test]
fn an_envelope_is_saved_atomically_with_its_boundary_record_and_the_latest_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("env.db");
    let store = common::open(&db);
    let mut rec = recorder(store.clone(), RecorderOptions::default());
    allow(&mut rec, b"{}");
    let body = r#"{"envelope_id":"ce-1"}"#;
    let mut event = cairn_ledger::record::BoundaryEvent::new(common::label("context_compaction"));
    event.envelope_id = Some(common::label("ce-1"));
    event.envelope_digest = Some(Digest::of(body.as_bytes()));
    let receipt = rec
        .record_boundary_with_envelope(
            event.clone(),
            None,
            cairn_ledger::store::EnvelopeItem {
                envelope_id: "ce-1",
                supersedes: None,
                body,
            },
        )
        .unwrap();
    assert_eq!(receipt.step_index, 1);
    let (tenant, run) = ids();
    let saved = store.latest_envelope(&tenant, &run).unwrap().unwrap();
    assert_eq!(
        (
            saved.envelope_id.as_str(),
            saved.step_index,
            saved.body.as_str()
        ),
        ("ce-1", 1, body)
    );

    // The same id cannot be saved twice, and the failed commit leaves nothing behind.
    let again = rec.record_boundary_with_envelope(
        event,
        None,
        cairn_ledger::store::EnvelopeItem {
            envelope_id: "ce-1",
            supersedes: None,
            body,
        },
    );
    assert!(again.is_err());
    assert_eq!(
        visible(&db),
        2,
        "the boundary record of a refused envelope is not written"
    );

    let mut superseding = cairn_ledger::record::BoundaryEvent::new(common::label("reconciliation"));
    superseding.envelope_id = Some(common::label("ce-2"));
    rec.record_boundary_with_envelope(
        superseding,
        None,
        cairn_ledger::store::EnvelopeItem {
            envelope_id: "ce-2",
            supersedes: Some("ce-1"),
            body: "{}",
        },
    )
    .unwrap();
    let latest = store.latest_envelope(&tenant, &run).unwrap().unwrap();
    assert_eq!(
        (
            latest.envelope_id.as_str(),
            latest.supersedes.as_deref(),
            latest.step_index
        ),
        ("ce-2", Some("ce-1"), 2)
    );
}

/// A store with one run and two sync writers of it, as two processes would have.
fn two_writers(dir: &std::path::Path) -> (Arc<SqliteStore>, Recorder, Recorder) {
    let store = Arc::new(SqliteStore::open(dir.join("s.db"), OpenMode::CreateIfMissing).unwrap());
    let sync = without_content(Durability::Sync);
    let first = recorder(Arc::clone(&store), sync);
    let (tenant, run) = ids();
    let second = Recorder::resume(
        Arc::clone(&store) as Arc<dyn Store>,
        clock(),
        &tenant,
        &run,
        sync,
    )
    .unwrap();
    (store, first, second)
}

/// Two writers of one run (two hosts, two service replicas): the one whose step the other
/// took first resumes from the run's new head and commits at the next step — no conflict for
/// the caller, no gap, no fork — and its receipt names the step it landed at.
#[test]
fn a_sync_writer_that_lost_its_step_resumes_from_the_new_head() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut first, mut second) = two_writers(dir.path());
    let (tenant, run) = ids();
    let admit = || common::admission(AllowDeny::Allow, &["allow.all"]);
    assert_eq!(
        first.record_step(&call(b"a"), admit()).unwrap().step_index,
        0
    );
    assert_eq!(
        first.record_step(&call(b"b"), admit()).unwrap().step_index,
        1
    );
    // `second` still believes the run is empty: its record goes after the two.
    let landed = second.record_step(&call(b"c"), admit()).unwrap();
    assert_eq!(landed.step_index, 2);
    assert_eq!(second.rebases(), 1);
    // And `first`, now behind, rebases in turn.
    assert_eq!(
        first.record_step(&call(b"d"), admit()).unwrap().step_index,
        3
    );
    assert_eq!(first.rebases(), 1);
    let rows = store.rows(&tenant, &run).unwrap();
    assert_eq!(rows.len(), 4);
    let report = verify_run(
        &tenant,
        &run,
        &rows,
        None,
        &cairn_ledger::keys::TrustedKeys::new(Vec::new()),
        CheckpointPolicy::WhenTerminated,
    );
    assert!(report.is_intact(), "{:#?}", report.findings);
    let digests: Vec<Digest> = rows.iter().map(|r| r.as_ref().unwrap().digest).collect();
    assert_eq!(digests[2], landed.digest);
}

/// A writer does not slip its record in after another writer's boundary: the boundary (an
/// unknown side effect, a compaction) may change the decision the record carries, so the
/// conflict goes back to the caller, and nothing of the record is written.
#[test]
fn a_sync_writer_behind_another_writers_boundary_gets_the_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut first, mut second) = two_writers(dir.path());
    let (tenant, run) = ids();
    first
        .record_boundary(
            cairn_ledger::record::BoundaryEvent::new(common::label("context_compaction")),
            None,
        )
        .unwrap();
    let err = second
        .record_step(
            &call(b"c"),
            common::admission(AllowDeny::Allow, &["allow.all"]),
        )
        .unwrap_err();
    assert_eq!(cairn_core::ErrorCode::code(&err), "step_conflict", "{err}");
    assert_eq!(store.rows(&tenant, &run).unwrap().len(), 1);
}

/// A store whose `keep_content` always fails (everything else is SQLite's).
struct NoContentAhead(Arc<SqliteStore>);

/// Methods of [`Store`] that [`NoContentAhead`] hands to SQLite as they are.
macro_rules! to_sqlite {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ok:ty;)*) => {
        $(fn $name(&self, $($arg: $ty),*) -> Result<$ok, cairn_ledger::StoreError> {
            self.0.$name($($arg),*)
        })*
    };
}

impl Store for NoContentAhead {
    to_sqlite! {
        fn open_run(meta: &cairn_ledger::store::RunMeta) -> ();
        fn append(commit: &cairn_ledger::store::Commit<'_>) -> ();
        fn run(tenant: &TenantId, run: &RunId) -> Option<cairn_ledger::store::RunInfo>;
        fn find_runs(run: &RunId) -> Vec<cairn_ledger::store::RunInfo>;
        fn list_runs(filter: &cairn_ledger::store::RunFilter) -> Vec<cairn_ledger::store::RunInfo>;
        fn rows(tenant: &TenantId, run: &RunId) -> Vec<cairn_ledger::store::StoredRow>;
        fn record(tenant: &TenantId, run: &RunId, step: u64) -> Option<cairn_ledger::store::StoredRow>;
        fn digests(tenant: &TenantId, run: &RunId) -> Vec<Digest>;
        fn checkpoint(tenant: &TenantId, run: &RunId) -> Option<String>;
        fn envelopes(tenant: &TenantId, run: &RunId) -> Vec<cairn_ledger::store::StoredEnvelope>;
        fn latest_envelope(tenant: &TenantId, run: &RunId) -> Option<cairn_ledger::store::StoredEnvelope>;
        fn content(digest: &Digest) -> Option<cairn_ledger::store::StoredContent>;
        fn gc_content(now: Timestamp) -> u64;
        fn cost(by: cairn_ledger::store::CostDimension, tenant: Option<&TenantId>) -> Vec<cairn_ledger::store::CostRow>;
    }

    fn keep_content(
        &self,
        _tenant: &TenantId,
        _run: &RunId,
        _content: &[cairn_ledger::store::ContentItem],
    ) -> Result<(), cairn_ledger::StoreError> {
        Err(cairn_ledger::StoreError::Backend(
            "content refused".to_owned(),
        ))
    }
}

/// Content kept ahead of its record is a copy: a store that cannot keep it now fails
/// neither the flush nor the observation's place in the chain, and the content is stored
/// with the next record's commit.
#[test]
fn content_a_store_cannot_keep_ahead_waits_for_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        Arc::new(SqliteStore::open(dir.path().join("c.db"), OpenMode::CreateIfMissing).unwrap());
    let store: Arc<dyn Store> = Arc::new(NoContentAhead(Arc::clone(&sqlite)));
    let (tenant, run) = ids();
    let mut rec = Recorder::open(
        store,
        clock(),
        (tenant.clone(), "task-r".parse().unwrap(), run.clone()),
        RecorderOptions::default(),
    )
    .unwrap();
    let shown = rec.observe(&json!({"result": "shown"})).unwrap();
    rec.flush()
        .expect("a content copy that waits is no failure");
    assert!(sqlite.content(&shown).unwrap().is_none(), "not kept yet");
    allow(&mut rec, b"{}");
    let rows = sqlite.rows(&tenant, &run).unwrap();
    let step = rows.last().unwrap().as_ref().unwrap();
    assert_eq!(step.observation_digest, Some(shown));
    assert!(
        sqlite.content(&shown).unwrap().is_some(),
        "kept with the record"
    );
}
