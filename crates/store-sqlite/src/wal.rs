//! The write-ahead log and the pages it logs: the page size a store is created with, and how
//! the log is checkpointed for each kind of writer (a process per commit, a long-lived
//! process, a writer committing without pause).

use std::time::Duration;

use cairn_ledger::StoreError;
use rusqlite::{Connection, OpenFlags};

use crate::{BUSY_TIMEOUT, SqliteStore, backend};

/// The size beyond which [`SqliteStore::tune_for_short_lived_process`] checkpoints and
/// truncates the write-ahead log when it opens the store, and
/// [`SqliteStore::tune_for_long_lived_process`] as it commits (1 MiB: 64 pages of 16 KiB).
pub const SHORT_LIVED_WAL_LIMIT: u64 = 1 << 20;

/// The size of the write-ahead log at which a writer checkpointed in the background
/// ([`SqliteStore::checkpoint_in_background`]) checkpoints it itself: 64 MiB.
pub const BACKGROUND_WAL_LIMIT: u64 = 64 << 20;

/// The page size a store is created with. It is fixed when the file is created: opening an
/// existing store keeps the size it has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pages {
    /// 16 KiB pages (the default): the fewest pages per record, for runs appended in groups of
    /// hundreds (`batch` appends 1.8× faster than with 4 KiB pages).
    #[default]
    Large,
    /// 4 KiB pages: a commit logs each page it dirties, so a commit of a few records writes a
    /// quarter of the bytes — for a writer committing small groups without pause (`cairn
    /// serve`, whose tail latency this halves).
    Small,
}

impl Pages {
    pub(crate) fn bytes(self) -> u32 {
        match self {
            Self::Large => 16 * 1024,
            Self::Small => 4 * 1024,
        }
    }
}

impl SqliteStore {
    /// Tunes the store for a writer that commits without pause (`cairn serve`'s group
    /// commit): the write-ahead log is checkpointed into the database by a thread of its own,
    /// on a connection of its own, so that a commit seldom pays for copying the log; the
    /// committing connection still checkpoints itself once the log reaches
    /// [`BACKGROUND_WAL_LIMIT`] (by then the thread has copied nearly all of it, so the copy is
    /// short, and the log starts over). The thread stops when the store is dropped.
    ///
    /// # Errors
    /// SQLite's, when the settings cannot be applied or the second connection not opened.
    pub fn checkpoint_in_background(self: &std::sync::Arc<Self>) -> Result<(), StoreError> {
        let page_size: i64 = self
            .conn()
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .map_err(backend)?;
        let pages = i64::try_from(BACKGROUND_WAL_LIMIT).unwrap_or(i64::MAX) / page_size.max(512);
        self.conn()
            .pragma_update(None, "wal_autocheckpoint", pages.max(1))
            .map_err(backend)?;
        let checkpointer = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(backend)?;
        checkpointer
            .busy_timeout(Duration::from_millis(50))
            .map_err(backend)?;
        let store = std::sync::Arc::downgrade(self);
        std::thread::Builder::new()
            .name("cairn-checkpoint".to_owned())
            .spawn(move || {
                while store.upgrade().is_some() {
                    let _ =
                        checkpointer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the checkpointer: {e}")))?;
        Ok(())
    }

    /// Tunes the connection for a process that opens the store for one commit and exits
    /// (the hooks: one process per tool call).
    ///
    /// By default the last connection to close checkpoints the write-ahead log into the
    /// database and deletes it, and the next process re-creates it: two `fsync`s, a deletion
    /// and a directory `fsync` on every call. Here the log is left in place when the
    /// connection closes, SQLite's automatic checkpoints are off (a new process rebuilds the
    /// log's index from the file and forgets what an earlier process checkpointed, so they
    /// would copy the same frames again and again), and the log is checkpointed and truncated
    /// when a process finds it larger than [`SHORT_LIVED_WAL_LIMIT`] bytes (when no other
    /// process is using the store at that instant). Durability is
    /// unchanged: a commit is durable once the log is synced.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite refuses a setting or the checkpoint.
    pub fn tune_for_short_lived_process(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(backend)?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(backend)?;
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let large = std::fs::metadata(&wal).is_ok_and(|m| m.len() > SHORT_LIVED_WAL_LIMIT);
        if large {
            // Best effort and without waiting: with another process reading or writing, the
            // log is left for a later process to truncate (a busy checkpoint must not delay,
            // let alone fail, the commit this process is opened for).
            conn.busy_timeout(Duration::ZERO).map_err(backend)?;
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        }
        Ok(())
    }

    /// Tunes the connection for a process that keeps the store open and commits again and
    /// again (the resident hook server): SQLite checkpoints the write-ahead log into the
    /// database once it holds [`SHORT_LIVED_WAL_LIMIT`] bytes of frames, and truncates it back
    /// to that size afterwards, so neither the log nor the time a reader spends on it grows
    /// with the session. (The long-lived process knows what it checkpointed, unlike a
    /// short-lived one; see [`SqliteStore::tune_for_short_lived_process`].)
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite refuses a setting.
    pub fn tune_for_long_lived_process(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        let page_size: i64 = conn
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .map_err(backend)?;
        let limit = i64::try_from(SHORT_LIVED_WAL_LIMIT).unwrap_or(i64::MAX);
        conn.pragma_update(
            None,
            "wal_autocheckpoint",
            (limit / page_size.max(512)).max(1),
        )
        .map_err(backend)?;
        conn.pragma_update(None, "journal_size_limit", limit)
            .map_err(backend)?;
        Ok(())
    }

    /// Whether the store's connection is in `synchronous=FULL` — each commit synced to disk
    /// before it returns — as it is between operations ([`cairn_ledger::Store::keep_content`] relaxes it
    /// for its one transaction only). For tests and diagnostics.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite does not answer.
    pub fn is_fully_synchronous(&self) -> Result<bool, StoreError> {
        let level: i64 = self
            .conn()
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .map_err(backend)?;
        Ok(level == 2)
    }
}
