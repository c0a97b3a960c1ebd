//! The embedded SQLite store (bundled SQLite, WAL): Cairn's default `Store`.
//!
//! A store is one file, created owner-only:
//!
//! ```
//! use cairn_ledger::Store;
//! use cairn_ledger::store::RunFilter;
//! use cairn_store_sqlite::{OpenMode, SqliteStore};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("cairn.db");
//! let store = SqliteStore::open(&path, OpenMode::CreateIfMissing)?;
//! assert!(store.list_runs(&RunFilter::default())?.is_empty());
//! // Reading commands open an existing store only.
//! assert!(SqliteStore::open(dir.path().join("missing.db"), OpenMode::MustExist).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every commit is one `BEGIN IMMEDIATE` transaction with `synchronous=FULL`, so an
//! acknowledged append survives a crash or `kill -9`; each checks first that no newer Cairn
//! has migrated the store since it was opened (`store_schema_too_new`). `batch` durability
//! is group commit: the runtime hands several records to one [`Store::append`], paying one
//! fsync for all.

mod append;
mod files;
mod schema;
mod wal;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use cairn_core::{Digest, RunId, TaskId, TenantId, Timestamp};
use cairn_ledger::store::{
    Commit, ContentItem, CostDimension, CostRow, IndexColumns, KeptHead, ResumePoint, RunFilter,
    RunInfo, RunMeta, StoredContent, StoredEnvelope, StoredRow,
};
use cairn_ledger::{Store, StoreError};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

pub use files::SqliteFiles;
pub use schema::CURRENT_VERSION;
pub use wal::{BACKGROUND_WAL_LIMIT, Pages, SHORT_LIVED_WAL_LIMIT};

/// Creates the database at `path` as the Cairn whose schema was `version` left it (for tests
/// of the migrations from each earlier version; Cairn itself always migrates to
/// [`CURRENT_VERSION`]).
///
/// # Errors
/// SQLite's, or a `version` newer than this build's.
#[doc(hidden)]
pub fn create_at_version(path: &Path, version: i64) -> Result<(), StoreError> {
    if version > CURRENT_VERSION {
        return Err(StoreError::SchemaTooNew {
            found: version,
            supported: CURRENT_VERSION,
        });
    }
    let mut conn = Connection::open(path).map_err(backend)?;
    schema::migrate_to(&mut conn, version)
}

/// How long a writer waits for another writer's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether opening may create the database file (and its folder).
pub use cairn_ledger::store::OpenMode;

/// A SQLite-backed [`Store`].
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Set while the connection may not be `synchronous=FULL` ([`Store::keep_content`] relaxes
    /// it for one transaction): every durable commit makes sure of FULL first.
    relaxed: std::sync::atomic::AtomicBool,
    /// The heads of the runs this store committed last (see `append`).
    known: append::KnownHeads,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Keeps `content` inside the transaction `tx` (an item kept already has its expiry extended).
fn put_content(tx: &Connection, content: &[ContentItem]) -> Result<(), StoreError> {
    let mut put = tx
        .prepare_cached(
            "INSERT INTO content (digest, bytes, size, stored_at_us, expires_at_us)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (digest) DO UPDATE
                   SET expires_at_us = MAX(expires_at_us, excluded.expires_at_us)",
        )
        .map_err(backend)?;
    for item in content {
        put.execute(params![
            item.digest.to_string(),
            item.bytes,
            as_i64(item.bytes.len() as u64),
            micros(item.stored_at),
            micros(item.expires_at),
        ])
        .map_err(backend)?;
    }
    Ok(())
}

pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        _ if is_corruption(&e) => StoreError::Corrupt(e.to_string()),
        // Another writer held the database past the busy timeout.
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Timeout(e.to_string())
        }
        Some(rusqlite::ErrorCode::ReadOnly) => StoreError::ReadOnly(e.to_string()),
        _ => StoreError::Backend(e.to_string()),
    }
}

/// Whether SQLite reports damaged pages or structure (`SQLITE_CORRUPT`), or a file that was
/// a database and no longer reads as one (`SQLITE_NOTADB`).
pub(crate) fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

fn micros(ts: Timestamp) -> i64 {
    ts.unix_micros()
}

fn from_micros(us: i64) -> Result<Timestamp, rusqlite::Error> {
    Timestamp::from_unix_micros(us).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Integer, Box::new(e))
    })
}

fn parse_col<T: std::str::FromStr>(text: &str) -> Result<T, rusqlite::Error>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    text.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl SqliteStore {
    /// Opens (or creates, with [`Pages::Large`]) the store at `path`, applying pending
    /// migrations.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the file cannot be opened, is not a Cairn store, or (in
    /// [`OpenMode::MustExist`]) does not exist; [`StoreError::SchemaTooNew`].
    pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<Self, StoreError> {
        Self::open_with_pages(path, mode, Pages::Large)
    }

    /// [`SqliteStore::open`], creating a new store with `pages`.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn open_with_pages(
        path: impl AsRef<Path>,
        mode: OpenMode,
        pages: Pages,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        match mode {
            OpenMode::CreateIfMissing => {
                files::create_owner_only(&path)?;
                flags |= OpenFlags::SQLITE_OPEN_CREATE;
            }
            OpenMode::MustExist => {
                if !path.exists() {
                    return Err(StoreError::NotFound {
                        path: path.display().to_string(),
                    });
                }
            }
        }
        let mut conn = Connection::open_with_flags(&path, flags)
            .map_err(|e| StoreError::Backend(format!("cannot open `{}`: {e}", path.display())))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        let display = path.display().to_string();
        // Before changing anything (WAL mode rewrites the header), make sure the file is ours.
        schema::ensure_cairn_store(&conn, &display, mode)?;
        conn.execute_batch(&format!(
            "PRAGMA page_size = {};
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             PRAGMA foreign_keys = ON;",
            pages.bytes()
        ))
        .map_err(backend)?;
        conn.set_prepared_statement_cache_capacity(32);
        schema::migrate(&mut conn)?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
            relaxed: std::sync::atomic::AtomicBool::new(false),
            known: append::KnownHeads::default(),
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every commit of `commits` in one transaction, without savepoints, each from the head
    /// this store remembers when it has one: the runs' new heads, or `None` when any commit
    /// fails (nothing is then written, and the caller commits them one by one).
    fn append_all_known(
        &self,
        conn: &mut Connection,
        commits: &[Commit<'_>],
    ) -> Option<Vec<Option<append::RunHead>>> {
        let tx = schema::begin_write(conn).ok()?;
        let mut heads = Vec::with_capacity(commits.len());
        for commit in commits {
            let known = self.known.of(commit);
            heads.push(append::append_in(&tx, commit, known.as_ref()).ok()?);
        }
        tx.commit().ok()?;
        Some(heads)
    }

    /// The connection, `synchronous=FULL` for a commit that must be durable when it returns.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when FULL cannot be restored after [`Store::keep_content`]:
    /// nothing is committed then as if it were durable.
    fn durable_conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        let conn = self.conn();
        if self.relaxed.load(std::sync::atomic::Ordering::SeqCst) {
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(backend)?;
            self.relaxed
                .store(false, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(conn)
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (transactions roll
        // back on drop), so a poisoned lock is still safe to use.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs SQL (one or more statements; rows they answer with are ignored) outside the
    /// ledger API, on the store's own connection. For tests and tooling that need to reach
    /// under the API (tamper experiments, migrations checks); never used by Cairn itself.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite refuses it.
    pub fn execute_raw(&self, sql: &str) -> Result<(), StoreError> {
        self.conn().execute_batch(sql).map_err(backend)
    }

    fn run_infos(
        &self,
        where_clause: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<RunInfo>, StoreError> {
        Ok(self
            .run_rows(where_clause, args, false)?
            .into_iter()
            .map(|(info, _)| info)
            .collect())
    }

    /// The runs `where_clause` selects and, when `with_head`, what the runs table keeps of
    /// each one's head (else nothing of it is read).
    fn run_rows(
        &self,
        where_clause: &str,
        args: &[&dyn rusqlite::ToSql],
        with_head: bool,
    ) -> Result<Vec<(RunInfo, KeptColumns)>, StoreError> {
        let conn = self.conn();
        let head = if with_head {
            "r.head_digest, r.frontier, last.digest"
        } else {
            "NULL, NULL, NULL"
        };
        let sql = format!(
            "SELECT r.tenant_id, r.run_id, r.task_id, r.opened_at_us,
                    last.step_index, last.recorded_at_us, last.kind, last.termination_reason,
                    EXISTS (SELECT 1 FROM checkpoints c
                            WHERE c.tenant_id = r.tenant_id AND c.run_id = r.run_id),
                    {head}
             FROM runs r
             LEFT JOIN records last
               ON last.tenant_id = r.tenant_id AND last.run_id = r.run_id
              AND last.step_index = (SELECT MAX(step_index) FROM records x
                                     WHERE x.tenant_id = r.tenant_id AND x.run_id = r.run_id)
             {where_clause}
             ORDER BY r.opened_at_us, r.tenant_id, r.run_id"
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
        let rows = stmt
            .query_map(args, |row| {
                let last_step: Option<i64> = row.get(4)?;
                let last_at: Option<i64> = row.get(5)?;
                let kind: Option<String> = row.get(6)?;
                let reason: Option<String> = row.get(7)?;
                let termination = match (kind.as_deref(), reason) {
                    (Some("terminal"), Some(reason)) => Some(parse_col(&reason)?),
                    _ => None,
                };
                let info = RunInfo {
                    meta: RunMeta {
                        tenant_id: parse_col::<TenantId>(&row.get::<_, String>(0)?)?,
                        run_id: parse_col::<RunId>(&row.get::<_, String>(1)?)?,
                        task_id: parse_col::<TaskId>(&row.get::<_, String>(2)?)?,
                        opened_at: from_micros(row.get(3)?)?,
                    },
                    records: last_step.map_or(0, |s| u64::try_from(s).unwrap_or(0) + 1),
                    last_recorded_at: last_at.map(from_micros).transpose()?,
                    termination,
                    checkpointed: row.get(8)?,
                };
                Ok((info, (row.get(9)?, row.get(10)?, row.get(11)?)))
            })
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }
}

/// What the runs table keeps of a run's head — the head digest and the tree frontier — and
/// the digest of the run's last record, to check them against.
type KeptColumns = (Option<String>, Option<Vec<u8>>, Option<String>);

/// Reads a row through [`IndexColumns::read_row`]: the body is authoritative.
fn read_row(row: &rusqlite::Row<'_>) -> Result<StoredRow, rusqlite::Error> {
    let step: i64 = row.get(0)?;
    let body = row.get_ref(1)?.as_str()?;
    let columns = IndexColumns {
        kind: row.get_ref(2)?.as_str()?,
        task_id: row.get_ref(3)?.as_str()?,
        tool_name: row.get_ref(4)?.as_str_or_null()?,
        args_size: row.get(5)?,
        decision: row.get_ref(6)?.as_str_or_null()?,
        termination_reason: row.get_ref(7)?.as_str_or_null()?,
        recorded_at_us: row.get(8)?,
        digest: std::borrow::Cow::Borrowed(row.get_ref(9)?.as_str()?),
    };
    Ok(columns.read_row(u64::try_from(step).unwrap_or(0), body))
}

fn read_envelope(row: &rusqlite::Row<'_>) -> Result<StoredEnvelope, rusqlite::Error> {
    Ok(StoredEnvelope {
        envelope_id: row.get(0)?,
        step_index: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
        supersedes: row.get(2)?,
        body: row.get(3)?,
    })
}

const ROW_COLUMNS: &str = "step_index, body, kind, task_id, tool_name, args_size, decision, \
                           termination_reason, recorded_at_us, digest";

impl Store for SqliteStore {
    fn open_run(&self, meta: &RunMeta) -> Result<(), StoreError> {
        let mut conn = self.durable_conn()?;
        let tx = schema::begin_write(&mut conn)?;
        let inserted = tx
            .execute(
                "INSERT INTO runs (tenant_id, run_id, task_id, opened_at_us) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
                params![
                    meta.tenant_id.as_str(),
                    meta.run_id.as_str(),
                    meta.task_id.as_str(),
                    micros(meta.opened_at)
                ],
            )
            .map_err(backend)?;
        if inserted == 0 {
            return Err(StoreError::RunExists {
                run: meta.run_id.clone(),
            });
        }
        tx.commit().map_err(backend)
    }

    fn append(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
        if commit.records.is_empty() {
            return Ok(());
        }
        let mut conn = self.durable_conn()?;
        let tx = schema::begin_write(&mut conn)?;
        let known = self.known.of(commit);
        let appended = match append::append_in(&tx, commit, known.as_ref()) {
            Err(_) if known.is_some() => {
                // The remembered head is stale (another writer): from the file, afresh.
                drop(tx);
                self.known.forget(commit);
                let tx = schema::begin_write(&mut conn)?;
                let head = append::append_in(&tx, commit, None)?;
                tx.commit().map_err(backend)?;
                head
            }
            Err(error) => {
                self.known.forget(commit);
                return Err(error);
            }
            Ok(head) => {
                tx.commit().map_err(backend)?;
                head
            }
        };
        self.known.note(commit, appended);
        Ok(())
    }

    fn keep_content(
        &self,
        _tenant: &TenantId,
        _run: &RunId,
        content: &[ContentItem],
    ) -> Result<(), StoreError> {
        if content.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn();
        // Written to the log without waiting for the disk: the next synced commit (the next
        // call's intent record) makes it durable — the log is synced as a whole. Marked
        // first, so that no durable commit runs on a connection left relaxed.
        self.relaxed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        let kept = schema::begin_write(&mut conn).and_then(|tx| {
            put_content(&tx, content)?;
            tx.commit().map_err(backend)
        });
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(backend)?;
        self.relaxed
            .store(false, std::sync::atomic::Ordering::SeqCst);
        kept
    }

    fn append_group(&self, commits: &[Commit<'_>]) -> Vec<Result<(), StoreError>> {
        // One transaction, one sync to disk, for every commit; each commit inside a savepoint
        // of its own, so that one that fails (a step taken, a run closed) leaves the others.
        let mut conn = match self.durable_conn() {
            Ok(conn) => conn,
            Err(error) => {
                let text = error.to_string();
                return commits
                    .iter()
                    .map(|_| Err(StoreError::Backend(text.clone())))
                    .collect();
            }
        };
        let all_failed = |error: StoreError| {
            let text = error.to_string();
            let mut results = vec![Err(error)];
            results.extend(
                commits
                    .iter()
                    .skip(1)
                    .map(|_| Err(StoreError::Backend(text.clone()))),
            );
            results
        };
        // First all together from the heads this store remembers, no savepoint between them:
        // the common case of a service committing the runs it writes, round after round.
        if let Some(heads) = self.append_all_known(&mut conn, commits) {
            for (commit, head) in commits.iter().zip(heads) {
                self.known.note(commit, head);
            }
            return commits.iter().map(|_| Ok(())).collect();
        }
        let mut tx = match schema::begin_write(&mut conn) {
            Ok(tx) => tx,
            Err(e) => return all_failed(e),
        };
        let mut results = Vec::with_capacity(commits.len());
        for commit in commits {
            let result = tx.savepoint().map_err(backend).and_then(|mut savepoint| {
                match append::append_in(&savepoint, commit, None) {
                    Ok(head) => savepoint.commit().map_err(backend).map(|()| head),
                    Err(e) => {
                        let _ = savepoint.rollback();
                        Err(e)
                    }
                }
            });
            results.push(result);
        }
        match tx.commit() {
            Ok(()) => commits
                .iter()
                .zip(results)
                .map(|(commit, result)| {
                    let head = result?;
                    self.known.note(commit, head);
                    Ok(())
                })
                .collect(),
            Err(e) => {
                for commit in commits {
                    self.known.forget(commit);
                }
                all_failed(backend(e))
            }
        }
    }

    fn run(&self, tenant: &TenantId, run: &RunId) -> Result<Option<RunInfo>, StoreError> {
        let found = self.run_infos(
            "WHERE r.tenant_id = ?1 AND r.run_id = ?2",
            &[&tenant.as_str(), &run.as_str()],
        )?;
        Ok(found.into_iter().next())
    }

    /// From the run's head: its summary, the digest and frontier kept with it, checked
    /// against the last record (its step and digest) — without reading the run. A head that
    /// disagrees with the records, or a run written before schema 3, is resumed from the
    /// records themselves.
    fn resume_point(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<ResumePoint>, StoreError> {
        // The run and its kept head in one read.
        let found = self.run_rows(
            "WHERE r.tenant_id = ?1 AND r.run_id = ?2",
            &[&tenant.as_str(), &run.as_str()],
            true,
        )?;
        let Some((info, kept)) = found.into_iter().next() else {
            return Ok(None);
        };
        let (head, frontier, last_record) = &kept;
        let kept = KeptHead {
            head: head.as_deref(),
            frontier: frontier.as_deref(),
            last_record: last_record.as_deref(),
        };
        if let Some(point) = kept.resume(&info) {
            return Ok(Some(point));
        }
        let digests = self.digests(tenant, run)?;
        Ok(Some(ResumePoint::from_digests(info, &digests)))
    }

    fn find_runs(&self, run: &RunId) -> Result<Vec<RunInfo>, StoreError> {
        self.run_infos("WHERE r.run_id = ?1", &[&run.as_str()])
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        let tenant = filter.tenant_id.as_ref().map(TenantId::as_str);
        let runs = self.run_infos("WHERE (?1 IS NULL OR r.tenant_id = ?1)", &[&tenant])?;
        Ok(runs
            .into_iter()
            .filter(|info| !filter.unterminated_only || !info.terminated())
            .filter(|info| {
                filter.idle_before.is_none_or(|limit| {
                    info.last_recorded_at.unwrap_or(info.meta.opened_at) < limit
                })
            })
            .collect())
    }

    fn rows(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM records WHERE tenant_id = ?1 AND run_id = ?2
                 ORDER BY step_index"
            ))
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![tenant.as_str(), run.as_str()], read_row)
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }

    fn record(
        &self,
        tenant: &TenantId,
        run: &RunId,
        step: u64,
    ) -> Result<Option<StoredRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM records
                 WHERE tenant_id = ?1 AND run_id = ?2 AND step_index = ?3"
            ))
            .map_err(backend)?;
        stmt.query_row(
            params![tenant.as_str(), run.as_str(), as_i64(step)],
            read_row,
        )
        .optional()
        .map_err(backend)
    }

    fn digests(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<Digest>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT digest FROM records WHERE tenant_id = ?1 AND run_id = ?2 ORDER BY step_index",
            )
            .map_err(backend)?;
        let rows = stmt
            // Borrowed, not copied into a `String` per row: a hook resumes its run on every
            // tool call, and this reads the whole run.
            .query_map(params![tenant.as_str(), run.as_str()], |row| {
                parse_col::<Digest>(row.get_ref(0)?.as_str()?)
            })
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }

    fn checkpoint(&self, tenant: &TenantId, run: &RunId) -> Result<Option<String>, StoreError> {
        self.conn()
            .query_row(
                "SELECT note FROM checkpoints WHERE tenant_id = ?1 AND run_id = ?2",
                params![tenant.as_str(), run.as_str()],
                |row| row.get(0),
            )
            .optional()
            .map_err(backend)
    }

    fn envelopes(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredEnvelope>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT envelope_id, step_index, supersedes, body FROM envelopes
                 WHERE tenant_id = ?1 AND run_id = ?2 ORDER BY step_index, envelope_id",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![tenant.as_str(), run.as_str()], read_envelope)
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }

    fn latest_envelope(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<StoredEnvelope>, StoreError> {
        self.conn()
            .query_row(
                "SELECT envelope_id, step_index, supersedes, body FROM envelopes
                 WHERE tenant_id = ?1 AND run_id = ?2 ORDER BY step_index DESC LIMIT 1",
                params![tenant.as_str(), run.as_str()],
                read_envelope,
            )
            .optional()
            .map_err(backend)
    }

    fn content(&self, digest: &Digest) -> Result<Option<StoredContent>, StoreError> {
        self.conn()
            .query_row(
                "SELECT bytes, stored_at_us, expires_at_us FROM content WHERE digest = ?1",
                params![digest.to_string()],
                |row| {
                    Ok(StoredContent {
                        digest: *digest,
                        bytes: row.get(0)?,
                        stored_at: from_micros(row.get(1)?)?,
                        expires_at: from_micros(row.get(2)?)?,
                    })
                },
            )
            .optional()
            .map_err(backend)
    }

    fn gc_content(&self, now: Timestamp) -> Result<u64, StoreError> {
        let mut conn = self.conn();
        let tx = schema::begin_write(&mut conn)?;
        let removed = tx
            .execute(
                "DELETE FROM content WHERE expires_at_us <= ?1",
                params![micros(now)],
            )
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(removed as u64)
    }

    fn cost(
        &self,
        by: CostDimension,
        tenant: Option<&TenantId>,
    ) -> Result<Vec<CostRow>, StoreError> {
        let key = match by {
            CostDimension::Task => "r.task_id",
            CostDimension::Tenant => "r.tenant_id",
            CostDimension::Tool => "x.tool_name",
            CostDimension::Termination => {
                "COALESCE((SELECT t.termination_reason FROM records t
                           WHERE t.tenant_id = r.tenant_id AND t.run_id = r.run_id
                             AND t.kind = 'terminal'), 'unterminated')"
            }
        };
        let step_filter = if by == CostDimension::Tool {
            "AND x.kind = 'step'"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {key} AS k,
                    COUNT(DISTINCT r.tenant_id || '/' || r.run_id),
                    COALESCE(SUM(x.kind = 'step'), 0),
                    COALESCE(SUM(x.decision = 'deny'), 0),
                    COALESCE(SUM(x.args_size), 0)
             FROM runs r
             LEFT JOIN records x ON x.tenant_id = r.tenant_id AND x.run_id = r.run_id {step_filter}
             WHERE ?1 IS NULL OR r.tenant_id = ?1
             GROUP BY k HAVING k IS NOT NULL ORDER BY k"
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql).map_err(backend)?;
        let rows = stmt
            .query_map(params![tenant.map(TenantId::as_str)], |row| {
                let count = |i| row.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
                Ok(CostRow {
                    key: row.get(0)?,
                    runs: count(1)?,
                    calls: count(2)?,
                    denied: count(3)?,
                    arg_bytes: count(4)?,
                })
            })
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }
}
