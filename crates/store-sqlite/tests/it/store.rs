//! What only the SQLite store does: its migrations (tracked in `PRAGMA user_version`, WAL
//! mode) and read commands that never create a file. What every store does is the
//! conformance suite (`conformance.rs`).

use cairn_ledger::Store as _;
use cairn_store_sqlite::{CURRENT_VERSION, OpenMode, SqliteStore};

fn open(path: &std::path::Path) -> SqliteStore {
    SqliteStore::open(path, OpenMode::CreateIfMissing).unwrap()
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

/// A store written by an earlier Cairn — schema 1 (no envelopes, no kept heads) and schema 2
/// (no kept heads) — opens migrated to the current version with its runs intact: they read,
/// verify, resume from their records and go on.
#[test]
fn stores_of_each_earlier_version_are_migrated_with_their_runs() {
    use cairn_ledger::Store;
    use cairn_ledger::store::IndexColumns;
    use cairn_test_support::store_conformance::{append, at, ids, records_of, step};
    for version in 1..CURRENT_VERSION {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(format!("v{version}.db"));
        cairn_store_sqlite::create_at_version(&db, version).unwrap();
        let (tenant, run, task) = ids();
        let first = step(0, None, "a");
        let records = [first.clone(), step(1, Some(first.digest), "b")];
        {
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.execute(
                "INSERT INTO runs (tenant_id, run_id, task_id, opened_at_us) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![tenant.as_str(), run.as_str(), task.as_str(), at(0).unix_micros()],
            )
            .unwrap();
            for record in &records {
                let c = IndexColumns::of(record);
                conn.execute(
                    "INSERT INTO records VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    rusqlite::params![
                        tenant.as_str(),
                        run.as_str(),
                        record.step_index as i64,
                        c.kind,
                        c.task_id,
                        c.tool_name,
                        c.args_size,
                        c.decision,
                        c.termination_reason,
                        c.recorded_at_us,
                        c.digest.as_ref(),
                        record.to_json_line().unwrap(),
                    ],
                )
                .unwrap();
            }
        }
        let store = SqliteStore::open(&db, OpenMode::MustExist).unwrap();
        let version_now: i64 = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version_now, CURRENT_VERSION, "from version {version}");
        let rows = records_of(&store, &tenant, &run);
        assert_eq!(rows, records);
        let point = store.resume_point(&tenant, &run).unwrap().unwrap();
        assert_eq!((point.tree.len(), point.head), (2, Some(records[1].digest)));
        assert!(store.envelopes(&tenant, &run).unwrap().is_empty());
        append(&store, &[step(2, Some(records[1].digest), "c")]).unwrap();
        assert_eq!(store.run(&tenant, &run).unwrap().unwrap().records, 3);
    }
}

/// A database another writer holds past the busy timeout is a `store_timeout` — the code a
/// database server's statement timeout gives — and nothing is written.
#[test]
fn a_database_held_past_the_busy_timeout_is_a_timeout() {
    use cairn_ledger::Store;
    use cairn_ledger::store::RunMeta;
    use cairn_test_support::store_conformance::{at, ids};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("held.db");
    let store = open(&db);
    // The store waits 10 s for a busy database; the test, 50 ms.
    store.execute_raw("PRAGMA busy_timeout = 50").unwrap();
    let (tenant_id, run_id, task_id) = ids();
    let meta = RunMeta {
        tenant_id,
        run_id,
        task_id,
        opened_at: at(0),
    };
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store.open_run(&meta).unwrap_err();
    assert_eq!(cairn_core::ErrorCode::code(&err), "store_timeout", "{err}");
    holder.execute_batch("ROLLBACK").unwrap();
    assert!(store.run(&meta.tenant_id, &meta.run_id).unwrap().is_none());
}

/// Content kept ahead of its record is written without waiting for the disk, and the store
/// is back to syncing every commit afterwards: the next intent record is durable when its
/// commit returns.
#[test]
fn keeping_content_leaves_every_later_commit_synced() {
    use cairn_ledger::store::ContentItem;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("cairn.db"));
    assert!(store.is_fully_synchronous().unwrap());
    let bytes = b"{\"shown\":1}".to_vec();
    let item = ContentItem {
        digest: cairn_core::Digest::of(&bytes),
        bytes,
        stored_at: cairn_core::Timestamp::from_unix_micros(1).unwrap(),
        expires_at: cairn_core::Timestamp::from_unix_micros(2).unwrap(),
    };
    let (tenant, run) = ("t".parse().unwrap(), "r".parse().unwrap());
    store.keep_content(&tenant, &run, &[item]).unwrap();
    assert!(store.is_fully_synchronous().unwrap());
}

/// A long-lived writer (the hooks' resident server, `cairn serve`) keeps its connection: when a
/// newer Cairn migrates the store meanwhile, every later write is refused as
/// `store_schema_too_new` and writes nothing, instead of going on with the schema it checked
/// when it opened the store.
#[test]
fn a_store_migrated_by_a_newer_cairn_while_open_refuses_every_write() {
    use cairn_ledger::Store;
    use cairn_ledger::store::{ContentItem, RunMeta};
    use cairn_test_support::store_conformance::{append, at, ids, step};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cairn.db");
    let store = open(&db);
    let (tenant_id, run_id, task_id) = ids();
    let meta = RunMeta {
        tenant_id: tenant_id.clone(),
        run_id: run_id.clone(),
        task_id,
        opened_at: at(0),
    };
    store.open_run(&meta).unwrap();
    let first = step(0, None, "a");
    append(&store, std::slice::from_ref(&first)).unwrap();

    let newer = rusqlite::Connection::open(&db).unwrap();
    newer
        .execute_batch(&format!("PRAGMA user_version = {}", CURRENT_VERSION + 1))
        .unwrap();
    let too_new = |result: Result<(), cairn_ledger::StoreError>, what: &str| {
        let err = result.expect_err(what);
        assert_eq!(
            cairn_core::ErrorCode::code(&err),
            "store_schema_too_new",
            "{what}: {err}"
        );
    };
    too_new(
        append(&store, &[step(1, Some(first.digest), "b")]),
        "append",
    );
    let group = store.append_group(&[cairn_ledger::store::Commit::default()]);
    too_new(group.into_iter().next().unwrap(), "append_group");
    let other = RunMeta {
        run_id: "run-other".parse().unwrap(),
        ..meta
    };
    too_new(store.open_run(&other), "open_run");
    let bytes = b"{\"shown\":1}".to_vec();
    let item = ContentItem {
        digest: cairn_core::Digest::of(&bytes),
        bytes,
        stored_at: at(1),
        expires_at: at(2),
    };
    too_new(
        store.keep_content(&tenant_id, &run_id, &[item]),
        "keep_content",
    );
    too_new(store.gc_content(at(3)).map(|_| ()), "gc_content");

    // Nothing was written: the run still holds its one record, the other run does not exist.
    assert_eq!(store.run(&tenant_id, &run_id).unwrap().unwrap().records, 1);
    assert!(store.run(&tenant_id, &other.run_id).unwrap().is_none());
    let content: i64 = newer
        .query_row("SELECT COUNT(*) FROM content", [], |row| row.get(0))
        .unwrap();
    assert_eq!(content, 0);
}

/// A store remembers the heads of the runs it committed, and commits the next records of one
/// without reading it first (issue 34, 9: the service's group commit). Another writer on the
/// same file moving the head meanwhile is never overwritten: a commit continuing the stale
/// head is refused as a conflict, alone or in a group, and one continuing the real head lands.
#[test]
fn a_remembered_head_another_writer_moved_is_never_continued() {
    use cairn_ledger::Store;
    use cairn_ledger::store::{Commit, RunMeta};
    use cairn_test_support::store_conformance::{append, at, ids, records_of, sealed, step};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cairn.db");
    let (mine, theirs) = (open(&db), open(&db));
    let (tenant_id, run_id, task_id) = ids();
    mine.open_run(&RunMeta {
        tenant_id: tenant_id.clone(),
        run_id: run_id.clone(),
        task_id,
        opened_at: at(0),
    })
    .unwrap();
    let first = step(0, None, "a");
    append(&mine, std::slice::from_ref(&first)).unwrap();
    // The other writer continues the run; `mine` still remembers step 0 as the head.
    let second = step(1, Some(first.digest), "b");
    append(&theirs, std::slice::from_ref(&second)).unwrap();
    let stale = step(1, Some(first.digest), "c");
    let conflict = |result: Result<(), cairn_ledger::StoreError>| {
        assert_eq!(
            cairn_core::ErrorCode::code(&result.unwrap_err()),
            "step_conflict"
        );
    };
    conflict(append(&mine, std::slice::from_ref(&stale)));
    let stale_records = sealed(std::slice::from_ref(&stale));
    let group = mine.append_group(&[Commit {
        records: &stale_records,
        ..Commit::default()
    }]);
    conflict(group.into_iter().next().unwrap());
    // Continuing the real head lands, alone and in a group.
    let third = step(2, Some(second.digest), "d");
    append(&mine, std::slice::from_ref(&third)).unwrap();
    let fourth = step(3, Some(third.digest), "e");
    append(&theirs, std::slice::from_ref(&fourth)).unwrap();
    let fifth = step(4, Some(fourth.digest), "f");
    let fifth_records = sealed(std::slice::from_ref(&fifth));
    let group = mine.append_group(&[Commit {
        records: &fifth_records,
        ..Commit::default()
    }]);
    assert!(group.into_iter().all(|r| r.is_ok()));
    let stored: Vec<_> = records_of(&mine, &tenant_id, &run_id)
        .iter()
        .map(|r| r.digest)
        .collect();
    assert_eq!(
        stored,
        [first, second, third, fourth, fifth]
            .map(|r| r.digest)
            .to_vec()
    );
}

/// Issue 34, 13: a store created through a symbolic link to a file that does not exist yet
/// is owner-only, as one created at its own path is, whatever the umask.
#[test]
fn a_store_created_through_a_link_is_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.db");
    let link = dir.path().join("cairn.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    drop(open(&link));
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
}

/// A store is created with the pages its writer asked for (large by default, small for the
/// service), and keeps them when opened again by any writer.
#[test]
fn a_new_store_has_the_pages_asked_for_and_keeps_them() {
    use cairn_store_sqlite::Pages;
    let page_size = |db: &std::path::Path| -> i64 {
        rusqlite::Connection::open(db)
            .unwrap()
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let large = dir.path().join("large.db");
    let small = dir.path().join("small.db");
    drop(open(&large));
    drop(SqliteStore::open_with_pages(&small, OpenMode::CreateIfMissing, Pages::Small).unwrap());
    assert_eq!(page_size(&large), 16 * 1024);
    assert_eq!(page_size(&small), 4 * 1024);
    drop(SqliteStore::open_with_pages(&large, OpenMode::MustExist, Pages::Small).unwrap());
    drop(open(&small));
    assert_eq!(page_size(&large), 16 * 1024);
    assert_eq!(page_size(&small), 4 * 1024);
}
