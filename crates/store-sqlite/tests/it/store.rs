//! The SQLite store's contract: atomic appends, one winner when writers race for a step, no
//! gaps, nothing after the terminal record, versioned migrations, content expiry, and
//! corrupted rows reported rather than hidden.

use std::path::Path;
use std::sync::{Arc, Barrier};

use cairn_core::{Digest, RunId, TaskId, TenantId, Timestamp};
use cairn_ledger::record::{
    Admission, AllowDeny, ArgsRef, DraftEvent, IntentRecord, Label, RecordDraft, SealedRecord,
    Termination, TerminationReason, ToolRef,
};
use cairn_ledger::store::{Commit, ContentItem, CostDimension, RunFilter, RunMeta};
use cairn_ledger::{Store, StoreError};
use cairn_store_sqlite::{CURRENT_VERSION, OpenMode, SqliteStore};

fn ids() -> (TenantId, RunId, TaskId) {
    (
        "acme".parse().unwrap(),
        "run-1".parse().unwrap(),
        "task-1".parse().unwrap(),
    )
}

fn at(second: u32) -> Timestamp {
    format!("2026-11-30T06:00:{second:02}Z").parse().unwrap()
}

fn step(index: u64, prev: Option<Digest>, tool: &str) -> IntentRecord {
    let (tenant_id, run_id, task_id) = ids();
    IntentRecord::seal(
        RecordDraft {
            tenant_id,
            run_id,
            task_id,
            event: DraftEvent::Step {
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
            },
            lane_id: None,
            observation_digest: None,
            recorded_at: at(index as u32 % 60),
        },
        index,
        prev,
    )
    .unwrap()
}

fn terminal(index: u64, prev: Digest) -> IntentRecord {
    let (tenant_id, run_id, task_id) = ids();
    IntentRecord::seal(
        RecordDraft {
            tenant_id,
            run_id,
            task_id,
            event: DraftEvent::Terminal(Termination {
                reason: TerminationReason::Completed,
                detail: None,
            }),
            lane_id: None,
            observation_digest: None,
            recorded_at: at(59),
        },
        index,
        Some(prev),
    )
    .unwrap()
}

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, OpenMode::CreateIfMissing).unwrap()
}

fn opened(path: &Path) -> SqliteStore {
    let store = open(path);
    let (tenant_id, run_id, task_id) = ids();
    store
        .open_run(&RunMeta {
            tenant_id,
            run_id,
            task_id,
            opened_at: at(0),
        })
        .unwrap();
    store
}

fn sealed(records: &[IntentRecord]) -> Vec<SealedRecord> {
    records
        .iter()
        .map(|r| SealedRecord::from_record(r.clone()).unwrap())
        .collect()
}

fn append(store: &SqliteStore, records: &[IntentRecord]) -> Result<(), StoreError> {
    store.append(&Commit {
        records: &sealed(records),
        ..Commit::default()
    })
}

#[test]
fn two_writers_racing_for_the_same_step_have_exactly_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("race.db");
    let first = step(0, None, "a");
    append(&opened(&db), std::slice::from_ref(&first)).unwrap();
    for round in 1..=40u64 {
        let barrier = Arc::new(Barrier::new(2));
        let prev = first.digest;
        let handles: Vec<_> = ["writer.x", "writer.y"]
            .into_iter()
            .map(|tool| {
                let (db, barrier) = (db.clone(), barrier.clone());
                std::thread::spawn(move || {
                    // Each writer has its own connection, as two processes would.
                    let store = open(&db);
                    let mut record = step(round, Some(prev), tool);
                    if round > 1 {
                        // Both extend the latest head they can see.
                        let digests = store.digests(&ids().0, &ids().1).unwrap();
                        record = step(round, digests.last().copied(), tool);
                    }
                    barrier.wait();
                    append(&store, &[record])
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
        let loser = results.into_iter().find_map(Result::err).unwrap();
        assert!(
            matches!(loser, StoreError::Conflict { step, .. } if step == round),
            "{loser:?}"
        );
        assert_eq!(cairn_core::ErrorCode::code(&loser), "step_conflict");
    }
    assert_eq!(open(&db).digests(&ids().0, &ids().1).unwrap().len(), 41);
}

#[test]
fn appends_are_contiguous_atomic_and_end_at_the_terminal_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = opened(&dir.path().join("s.db"));
    let r0 = step(0, None, "a");
    let r1 = step(1, Some(r0.digest), "b");
    let gap = step(2, Some(r1.digest), "c");
    // A batch with a gap is refused whole: nothing of it lands.
    let err = append(&store, &[r0.clone(), gap.clone()]).unwrap_err();
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
    assert!(store.rows(&ids().0, &ids().1).unwrap().is_empty());
    append(&store, &[r0.clone(), r1.clone()]).unwrap();
    let end = terminal(2, r1.digest);
    store
        .append(&Commit {
            records: &sealed(std::slice::from_ref(&end)),
            content: &[],
            checkpoint_note: Some("note"),
            envelope: None,
        })
        .unwrap();
    let after = step(3, Some(end.digest), "d");
    assert!(matches!(
        append(&store, &[after]),
        Err(StoreError::RunTerminated { .. })
    ));
    let info = store.run(&ids().0, &ids().1).unwrap().unwrap();
    assert_eq!(info.records, 3);
    assert_eq!(info.termination, Some(TerminationReason::Completed));
    assert!(info.checkpointed);
    assert_eq!(
        store.checkpoint(&ids().0, &ids().1).unwrap().as_deref(),
        Some("note")
    );
}

#[test]
fn records_of_an_unknown_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("s.db"));
    assert!(matches!(
        append(&store, &[step(0, None, "a")]),
        Err(StoreError::RunNotFound { .. })
    ));
    let (tenant_id, run_id, task_id) = ids();
    let meta = RunMeta {
        tenant_id,
        run_id,
        task_id,
        opened_at: at(0),
    };
    store.open_run(&meta).unwrap();
    assert!(matches!(
        store.open_run(&meta),
        Err(StoreError::RunExists { .. })
    ));
}

#[test]
fn migrations_are_versioned_idempotent_and_refuse_a_newer_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    drop(open(&db));
    drop(open(&db));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, CURRENT_VERSION);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch(&format!("PRAGMA user_version = {}", CURRENT_VERSION + 1))
        .unwrap();
    drop(conn);
    let err = SqliteStore::open(&db, OpenMode::MustExist).unwrap_err();
    assert_eq!(cairn_core::ErrorCode::code(&err), "store_schema_too_new");
}

#[test]
fn a_missing_store_is_not_created_by_read_commands() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("absent.db");
    let err = SqliteStore::open(&db, OpenMode::MustExist).unwrap_err();
    assert!(err.to_string().contains("absent.db"), "{err}");
    assert!(!db.exists());
}

#[test]
fn content_expires_on_its_own_schedule_and_a_later_expiry_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = opened(&dir.path().join("c.db"));
    let bytes = b"{\"q\":1}".to_vec();
    let digest = Digest::of(&bytes);
    let item = |expires| ContentItem {
        digest,
        bytes: bytes.clone(),
        stored_at: at(0),
        expires_at: at(expires),
    };
    let r0 = step(0, None, "a");
    store
        .append(&Commit {
            records: &sealed(std::slice::from_ref(&r0)),
            content: &[item(10)],
            checkpoint_note: None,
            envelope: None,
        })
        .unwrap();
    let r1 = step(1, Some(r0.digest), "b");
    store
        .append(&Commit {
            records: &sealed(&[r1]),
            content: &[item(30)],
            checkpoint_note: None,
            envelope: None,
        })
        .unwrap();
    assert_eq!(
        store.gc_content(at(20)).unwrap(),
        0,
        "the later expiry must win"
    );
    assert_eq!(store.content(&digest).unwrap().unwrap().bytes, bytes);
    assert_eq!(store.gc_content(at(30)).unwrap(), 1);
    assert!(store.content(&digest).unwrap().is_none());
    assert_eq!(
        store.rows(&ids().0, &ids().1).unwrap().len(),
        2,
        "gc never touches records"
    );
}

#[test]
fn a_corrupted_row_is_reported_as_a_fault_at_its_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = opened(&dir.path().join("f.db"));
    let r0 = step(0, None, "a");
    let r1 = step(1, Some(r0.digest), "b");
    append(&store, &[r0, r1]).unwrap();
    store
        .execute_raw("UPDATE records SET body = '{not json' WHERE step_index = 1")
        .unwrap();
    store
        .execute_raw("UPDATE records SET args_size = 999 WHERE step_index = 0")
        .unwrap();
    let rows = store.rows(&ids().0, &ids().1).unwrap();
    let fault0 = rows[0].as_ref().unwrap_err();
    assert_eq!(fault0.step_index, 0);
    assert!(fault0.detail.contains("args_size"), "{}", fault0.detail);
    assert_eq!(rows[1].as_ref().unwrap_err().step_index, 1);
}

#[test]
fn cost_rolls_up_calls_denials_and_argument_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = opened(&dir.path().join("k.db"));
    let r0 = step(0, None, "alpha");
    let r1 = step(1, Some(r0.digest), "deny.me");
    let r2 = step(2, Some(r1.digest), "alpha");
    append(&store, &[r0, r1, r2]).unwrap();
    let by_tool = store.cost(CostDimension::Tool).unwrap();
    let alpha = by_tool.iter().find(|r| r.key == "alpha").unwrap();
    assert_eq!((alpha.calls, alpha.denied, alpha.arg_bytes), (2, 0, 10));
    let deny = by_tool.iter().find(|r| r.key == "deny.me").unwrap();
    assert_eq!((deny.calls, deny.denied), (1, 1));
    let by_term = store.cost(CostDimension::Termination).unwrap();
    assert_eq!(by_term.len(), 1);
    assert_eq!(
        (by_term[0].key.as_str(), by_term[0].runs, by_term[0].calls),
        ("unterminated", 1, 3)
    );
    let unterminated = store
        .list_runs(&RunFilter {
            unterminated_only: true,
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(unterminated.len(), 1);
}

/// Issue 16: a run's head (last digest and Merkle frontier) is kept with it, so a writer
/// resumes without reading the run — and it always agrees with the records: a head that
/// disagrees with them (tampered, or from before schema 3) is ignored and rebuilt.
#[test]
fn the_resume_point_is_kept_with_the_run_and_agrees_with_the_records() {
    use cairn_ledger::store::ResumePoint;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = opened(&path);
    let (tenant, run, _) = ids();
    let mut records: Vec<IntentRecord> = Vec::new();
    let mut prev = None;
    for batch in [1_usize, 2, 5, 1, 9] {
        let start = records.len() as u64;
        let new: Vec<_> = (0..batch as u64)
            .map(|i| {
                let record = step(start + i, prev, "t");
                prev = Some(record.digest);
                record
            })
            .collect();
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
    // A frontier someone wrote over is not believed: the records decide.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE runs SET frontier = zeroblob(72)", [])
        .unwrap();
    let resumed = store.resume_point(&tenant, &run).unwrap().unwrap();
    assert_eq!(resumed.tree.root(), truth.tree.root());
    // Nor a head of another record, nor none at all (a run from before schema 3); the next
    // append rebuilds the frontier from the records.
    conn.execute("UPDATE runs SET head_digest = NULL, frontier = NULL", [])
        .unwrap();
    let resumed = store.resume_point(&tenant, &run).unwrap().unwrap();
    assert_eq!(resumed.tree.root(), truth.tree.root());
    let next = step(records.len() as u64, prev, "t");
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
    let frontier: Option<Vec<u8>> = conn
        .query_row("SELECT frontier FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(frontier.is_some(), "the append restored the kept frontier");
}
