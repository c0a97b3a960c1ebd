//! Versioned schema migrations of the SQLite store, tracked in `PRAGMA user_version`.
//!
//! A migration is applied inside one transaction together with the version bump, so a crash
//! mid-migration leaves the previous version intact. A store newer than this build is refused
//! rather than guessed at.

use rusqlite::Connection;

use cairn_ledger::StoreError;

use crate::{OpenMode, backend};

/// The migrations in order; the version after applying `MIGRATIONS[i]` is `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: runs, records (structural; no payloads), checkpoints, content by digest.
    r"
    CREATE TABLE runs (
        tenant_id    TEXT NOT NULL,
        run_id       TEXT NOT NULL,
        task_id      TEXT NOT NULL,
        opened_at_us INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, run_id)
    ) WITHOUT ROWID;
    CREATE INDEX runs_by_run ON runs (run_id);

    -- The body is the record's JSON, the only source verification trusts; the other columns
    -- are index copies that verification checks against the body.
    CREATE TABLE records (
        tenant_id          TEXT NOT NULL,
        run_id             TEXT NOT NULL,
        step_index         INTEGER NOT NULL,
        kind               TEXT NOT NULL,
        task_id            TEXT NOT NULL,
        tool_name          TEXT,
        args_size          INTEGER,
        decision           TEXT,
        termination_reason TEXT,
        recorded_at_us     INTEGER NOT NULL,
        digest             TEXT NOT NULL,
        body               TEXT NOT NULL,
        PRIMARY KEY (tenant_id, run_id, step_index)
    ) WITHOUT ROWID;

    CREATE TABLE checkpoints (
        tenant_id  TEXT NOT NULL,
        run_id     TEXT NOT NULL,
        tree_size  INTEGER NOT NULL,
        note       TEXT NOT NULL,
        PRIMARY KEY (tenant_id, run_id)
    ) WITHOUT ROWID;

    CREATE TABLE content (
        digest        TEXT PRIMARY KEY,
        bytes         BLOB NOT NULL,
        size          INTEGER NOT NULL,
        stored_at_us  INTEGER NOT NULL,
        expires_at_us INTEGER NOT NULL
    );
    CREATE INDEX content_by_expiry ON content (expires_at_us);
    ",
    // 2: continuity envelopes, each saved with the boundary record that names (and digests) it.
    r"
    CREATE TABLE envelopes (
        tenant_id   TEXT NOT NULL,
        run_id      TEXT NOT NULL,
        envelope_id TEXT NOT NULL,
        step_index  INTEGER NOT NULL,
        supersedes  TEXT,
        body        TEXT NOT NULL,
        PRIMARY KEY (tenant_id, run_id, envelope_id)
    ) WITHOUT ROWID;
    CREATE INDEX envelopes_by_step ON envelopes (tenant_id, run_id, step_index);
    ",
    // 3: each run's head — the digest of its last record and the frontier of the Merkle tree
    // over its record digests — kept in the transaction that appends, so a writer resumes a
    // run of any length without reading it (NULL for runs written before: computed from the
    // records on their next append).
    r"
    ALTER TABLE runs ADD COLUMN head_digest TEXT;
    ALTER TABLE runs ADD COLUMN frontier BLOB;
    ",
];

/// The schema version this build writes.
pub const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// Begins a write transaction (`BEGIN IMMEDIATE`) on a store this build understands.
///
/// The schema was checked when the store was opened, but a long-lived writer (the hooks'
/// resident server, `cairn serve`) keeps its connection while a newer Cairn may migrate the
/// file; writing records a newer schema does not expect would be worse than refusing. So
/// every write re-reads `PRAGMA user_version` under the write lock — a read of the cached
/// header page — and refuses a version it does not know.
///
/// # Errors
/// [`StoreError::SchemaTooNew`]; SQLite's when the transaction cannot begin.
pub fn begin_write(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>, StoreError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(backend)?;
    let found: i64 = tx
        .prepare_cached("PRAGMA user_version")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(backend)?;
    if found > CURRENT_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: CURRENT_VERSION,
        });
    }
    Ok(tx)
}

/// Refuses a database that is not a Cairn store before anything touches it: one of another
/// application (version 0 with tables), a file that is not SQLite at all, or — when the caller
/// only reads — an empty one.
pub fn ensure_cairn_store(conn: &Connection, path: &str, mode: OpenMode) -> Result<(), StoreError> {
    let not_a_store = |reason: String| StoreError::NotAStore {
        path: path.to_owned(),
        reason,
    };
    let (version, tables): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), (SELECT COUNT(*) FROM sqlite_master)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(|e| {
            // A file that starts as a SQLite database but no longer reads as one was one: its
            // pages are damaged. Anything else never was a store.
            if crate::is_corruption(&e) && has_sqlite_header(path) {
                StoreError::Corrupt(format!("`{path}`: {e}"))
            } else {
                not_a_store(e.to_string())
            }
        })?;
    if version == 0 && tables > 0 {
        return Err(not_a_store(
            "it holds tables of another application".to_owned(),
        ));
    }
    if version == 0 && mode == OpenMode::MustExist {
        return Err(not_a_store(
            "it is empty (create a store with `cairn demo` or by recording a run)".to_owned(),
        ));
    }
    Ok(())
}

/// Whether the file at `path` starts with SQLite's 16-byte header string.
fn has_sqlite_header(path: &str) -> bool {
    use std::io::Read as _;
    let mut header = [0_u8; 16];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut header))
        .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// Brings the database up to [`CURRENT_VERSION`].
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    migrate_to(conn, CURRENT_VERSION)
}

/// Brings the database up to `target` (at most [`CURRENT_VERSION`]): a store as an earlier
/// Cairn left it, for the tests of the migrations from each earlier version.
pub fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), StoreError> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(backend)?;
    if found > CURRENT_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: CURRENT_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(found).unwrap_or(0))
        .take_while(|(index, _)| (*index as i64) < target)
    {
        let version = index as i64 + 1;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(backend)?;
        // Re-check under the write lock: another process may have migrated meanwhile.
        let now: i64 = tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(backend)?;
        if now >= version {
            continue;
        }
        tx.execute_batch(sql).map_err(backend)?;
        tx.execute_batch(&format!("PRAGMA user_version = {version}"))
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
    }
    Ok(())
}
