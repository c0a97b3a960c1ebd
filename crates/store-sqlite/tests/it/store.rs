//! What only the SQLite store does: its migrations (tracked in `PRAGMA user_version`, WAL
//! mode) and read commands that never create a file. What every store does is the
//! conformance suite (`conformance.rs`).

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
