//! The store conformance suite (`cairn_test_support::store_conformance`) on the SQLite store.

use std::sync::atomic::{AtomicUsize, Ordering};

use cairn_store_sqlite::{OpenMode, SqliteStore};
use cairn_test_support::store_conformance::{Harness, Tamper};

/// Stores in one temporary folder, one file each.
struct Sqlite {
    dir: tempfile::TempDir,
    made: AtomicUsize,
}

impl Sqlite {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            made: AtomicUsize::new(0),
        }
    }
}

fn raw(store: &SqliteStore) -> rusqlite::Connection {
    rusqlite::Connection::open(store.path()).unwrap()
}

impl Harness for Sqlite {
    type Store = SqliteStore;

    fn fresh(&self) -> SqliteStore {
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("store-{n}.db"));
        SqliteStore::open(path, OpenMode::CreateIfMissing).unwrap()
    }

    fn again(&self, store: &SqliteStore) -> SqliteStore {
        SqliteStore::open(store.path(), OpenMode::MustExist).unwrap()
    }

    fn tamper(&self, store: &SqliteStore, what: Tamper) {
        let sql = match what {
            Tamper::BodyNotJson { step } => {
                format!("UPDATE records SET body = '{{not json' WHERE step_index = {step}")
            }
            Tamper::ArgsSizeColumn { step, size } => {
                format!("UPDATE records SET args_size = {size} WHERE step_index = {step}")
            }
            Tamper::FrontierGarbage => String::from("UPDATE runs SET frontier = zeroblob(72)"),
            Tamper::HeadForgotten => {
                String::from("UPDATE runs SET head_digest = NULL, frontier = NULL")
            }
        };
        raw(store).execute_batch(&sql).unwrap();
    }

    fn every_run_keeps_a_frontier(&self, store: &SqliteStore) -> bool {
        let missing: i64 = raw(store)
            .query_row(
                "SELECT COUNT(*) FROM runs WHERE frontier IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        missing == 0
    }
}

cairn_test_support::store_conformance!(Some(Sqlite::new()));
