//! The PostgreSQL store: one ledger for agents on many hosts, behaving as the embedded SQLite
//! store does (the same conformance suite runs on both).
//!
//! ```no_run
//! use cairn_ledger::Store;
//! use cairn_ledger::store::{OpenMode, RunFilter};
//! use cairn_store_postgres::{Options, PostgresStore};
//!
//! let store = PostgresStore::open(
//!     "postgres://cairn@db.internal/ledger",
//!     OpenMode::CreateIfMissing,
//!     &Options::default(),
//! )?;
//! println!("{} runs in {}", store.list_runs(&RunFilter::default())?.len(), store.location());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Writers.** Any number of processes may append to one run. An append is one
//! transaction: it locks the run's row (`SELECT … FOR UPDATE`, the only lock it takes, so
//! runs never wait on each other), checks the records continue the run's head, writes the
//! records, their content, the run's new head and Merkle frontier, the envelope and the
//! checkpoint in one statement, and commits. A writer that lost the race meets the new head
//! and gets [`StoreError::Conflict`] or [`StoreError::NonContiguous`]; it resumes from the
//! store (`Store::resume_point`) and seals again. Nothing is half-written.
//!
//! **Durability.** Every session runs with `synchronous_commit=on`: an acknowledged append
//! is in the server's write-ahead log on disk. `batch` durability is the caller's group
//! commit, as with SQLite.
//!
//! **Faults** are errors with stable codes, never a hang: a server that cannot be reached
//! or a lost connection is [`StoreError::Unavailable`], a statement past the statement
//! timeout [`StoreError::Timeout`], a read-only server [`StoreError::ReadOnly`]. A URL's
//! password never appears in an error ([`redact`]).

mod error;
mod location;
mod schema;

use std::collections::HashMap;
use std::sync::Arc;

use cairn_core::{Digest, RunId, TaskId, TenantId, Timestamp};
use cairn_ledger::merkle::{RootBuilder, leaf_hash};
use cairn_ledger::record::SealedRecord;
use cairn_ledger::store::{
    Commit, ContentItem, CostDimension, CostRow, IndexColumns, KeptHead, OpenMode, ResumePoint,
    RunFilter, RunInfo, RunMeta, StoredContent, StoredEnvelope, StoredRow,
};
use cairn_ledger::{Store, StoreError};
use postgres::{Client, NoTls, Row, Statement};

pub use location::{MAX_PARTITIONS, Options, is_postgres_url, redact};
pub use schema::CURRENT_VERSION;

use error::{backend, violates};

/// A PostgreSQL-backed [`Store`].
pub struct PostgresStore {
    location: String,
    pool: r2d2::Pool<Manager>,
    partitions: u32,
    /// The heads this process last saw or wrote, by `(tenant, run)`: an append that
    /// continues one is written by one guarded statement, without locking and reading the
    /// run first. Only a hint — the statement checks it against the run's row.
    heads: std::sync::Mutex<HashMap<(String, String), KnownHead>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

/// One connection and the statements prepared on it.
struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Set when a statement failed because the session is gone, so the pool drops the
    /// connection instead of handing it to the next call (the client itself only notices a
    /// closed socket when it next reads).
    broken: std::cell::Cell<bool>,
}

impl Conn {
    /// The statement `sql`, prepared once per connection.
    fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self
            .client
            .prepare(sql)
            .map_err(|e| lost(&self.broken, &e))?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Opens connections for the pool.
struct Manager {
    config: postgres::Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
            broken: std::cell::Cell::new(false),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken.get() || conn.client.is_closed()
    }
}

/// The store error for a failed statement on a connection whose `broken` flag is `broken`:
/// a session that is gone marks its connection for the pool to drop.
fn lost(broken: &std::cell::Cell<bool>, e: &postgres::Error) -> StoreError {
    let error = backend(e);
    mark_if_lost(broken, &error);
    error
}

/// Marks the connection broken when `error` says its session is gone.
fn mark_if_lost(broken: &std::cell::Cell<bool>, error: &StoreError) {
    if matches!(error, StoreError::Unavailable(_)) {
        broken.set(true);
    }
}

/// Pool errors are reported by the store itself, not logged by the pool.
#[derive(Debug)]
struct Quiet;

impl r2d2::HandleError<postgres::Error> for Quiet {
    fn handle_error(&self, _: postgres::Error) {}
}

fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A column that must parse (an id, a time): a value that does not is a damaged row.
fn parse<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, StoreError>
where
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e| StoreError::Corrupt(format!("a stored {what} does not read: {e}")))
}

fn time(us: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_micros(us)
        .map_err(|e| StoreError::Corrupt(format!("a stored time does not read: {e}")))
}

fn get<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, index: usize) -> Result<T, StoreError> {
    row.try_get(index).map_err(|e| backend(&e))
}

const RUN_COLUMNS: &str = "r.tenant_id, r.run_id, r.task_id, r.opened_at_us, r.next_step, \
                           r.last_recorded_at_us, r.termination_reason, r.terminated, r.checkpointed";

/// A run's summary from the columns [`RUN_COLUMNS`] names, at the start of `row`.
fn run_info(row: &Row) -> Result<RunInfo, StoreError> {
    let terminated: bool = get(row, 7)?;
    let reason: Option<&str> = get(row, 6)?;
    let termination = match (terminated, reason) {
        (true, Some(reason)) => Some(parse(reason, "termination reason")?),
        _ => None,
    };
    Ok(RunInfo {
        meta: RunMeta {
            tenant_id: parse(get(row, 0)?, "tenant id")?,
            run_id: parse(get(row, 1)?, "run id")?,
            task_id: parse::<TaskId>(get(row, 2)?, "task id")?,
            opened_at: time(get(row, 3)?)?,
        },
        records: as_u64(get(row, 4)?),
        last_recorded_at: get::<Option<i64>>(row, 5)?.map(time).transpose()?,
        termination,
        checkpointed: get(row, 8)?,
    })
}

const ROW_COLUMNS: &str = "step_index, body, kind, task_id, tool_name, args_size, decision, \
                           termination_reason, recorded_at_us, digest";

/// A stored record from the columns [`ROW_COLUMNS`] names, checked against its body.
fn stored_row(row: &Row) -> Result<StoredRow, StoreError> {
    let columns = IndexColumns {
        kind: get(row, 2)?,
        task_id: get(row, 3)?,
        tool_name: get(row, 4)?,
        args_size: get(row, 5)?,
        decision: get(row, 6)?,
        termination_reason: get(row, 7)?,
        recorded_at_us: get(row, 8)?,
        digest: std::borrow::Cow::Borrowed(get(row, 9)?),
    };
    Ok(columns.read_row(as_u64(get(row, 0)?), get(row, 1)?))
}

fn envelope(row: &Row) -> Result<StoredEnvelope, StoreError> {
    Ok(StoredEnvelope {
        envelope_id: get(row, 0)?,
        step_index: as_u64(get(row, 1)?),
        supersedes: get(row, 2)?,
        body: get(row, 3)?,
    })
}

/// The run's row, locked for this transaction: its next step, whether it ended, its kept
/// frontier and head.
const LOCK_RUN: &str = "SELECT next_step, terminated, frontier, head_digest FROM cairn_runs
                        WHERE tenant_id = $1 AND run_id = $2 FOR UPDATE";

/// Everything an append writes, in one statement (data-modifying `WITH` parts run once each),
/// guarded: the run's row is updated only while its next step and head are the ones the
/// writer sealed its records after (`$27`, `$28`) and it has not ended, and nothing else is
/// written unless it was. The statement answers how many rows it updated (0 or 1).
const WRITE: &str = "
WITH upd AS (
    UPDATE cairn_runs SET
        next_step = $21,
        head_digest = $23,
        frontier = $24,
        last_recorded_at_us = $25,
        termination_reason = COALESCE($26, termination_reason),
        terminated = terminated OR $26::text IS NOT NULL,
        checkpointed = checkpointed OR $22::text IS NOT NULL
    WHERE tenant_id = $1 AND run_id = $2 AND next_step = $27
      AND head_digest IS NOT DISTINCT FROM $28 AND NOT terminated
    RETURNING 1
), rec AS (
    INSERT INTO cairn_records (tenant_id, run_id, step_index, kind, task_id, tool_name,
        args_size, decision, termination_reason, recorded_at_us, digest, body)
    SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[],
        $7::bigint[], $8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[])
    WHERE EXISTS (SELECT 1 FROM upd)
), con AS (
    INSERT INTO cairn_content (tenant_id, run_id, digest, bytes, size, stored_at_us,
        expires_at_us)
    SELECT $1, $2, d, b, length(b), s, e
    FROM unnest($13::text[], $14::bytea[], $15::bigint[], $16::bigint[]) AS c(d, b, s, e)
    WHERE EXISTS (SELECT 1 FROM upd)
    ON CONFLICT (tenant_id, run_id, digest) DO UPDATE
        SET expires_at_us = GREATEST(cairn_content.expires_at_us, excluded.expires_at_us)
), env AS (
    INSERT INTO cairn_envelopes (tenant_id, run_id, envelope_id, step_index, supersedes, body)
    SELECT $1, $2, $17, $18, $19, $20
    WHERE $17::text IS NOT NULL AND EXISTS (SELECT 1 FROM upd)
), chk AS (
    INSERT INTO cairn_checkpoints (tenant_id, run_id, tree_size, note)
    SELECT $1, $2, $21, $22 WHERE $22::text IS NOT NULL AND EXISTS (SELECT 1 FROM upd)
)
SELECT COUNT(*) FROM upd";

/// What a writer knows of a run's head: its next step, the digest of its last record, and
/// the Merkle frontier over its records.
#[derive(Clone)]
struct KnownHead {
    next: u64,
    head: Option<String>,
    tree: RootBuilder,
}

/// The most runs whose heads a store remembers (a long-lived process writes many runs).
const KNOWN_HEADS: usize = 4096;

impl PostgresStore {
    /// Opens the store at `url`, creating its tables in the connection's schema when they
    /// are missing (and `mode` allows) and applying pending migrations.
    ///
    /// # Errors
    /// [`StoreError::InvalidLocation`] for a malformed URL, [`StoreError::Unavailable`] when
    /// the server cannot be reached, [`StoreError::NotAStore`] when `mode` is
    /// [`OpenMode::MustExist`] and the schema holds no store, [`StoreError::SchemaTooNew`].
    pub fn open(url: &str, mode: OpenMode, options: &Options) -> Result<Self, StoreError> {
        let config = location::config(url, options)?;
        let location = redact(url);
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .min_idle(Some(0))
            .test_on_check_out(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .connection_timeout(options.connect_timeout)
            .error_handler(Box::new(Quiet))
            .thread_pool(Arc::new(scheduled_thread_pool::ScheduledThreadPool::new(1)))
            .build_unchecked(Manager { config });
        let mut store = Self {
            location,
            pool,
            partitions: options.partitions,
            heads: std::sync::Mutex::default(),
        };
        {
            let mut conn = store.conn()?;
            match mode {
                OpenMode::CreateIfMissing => schema::migrate(&mut conn.client, options.partitions)?,
                OpenMode::MustExist => {
                    schema::ensure_exists(&mut conn.client, &store.location)?;
                    schema::migrate(&mut conn.client, options.partitions)?;
                }
            }
            store.partitions = schema::partitions(&mut conn.client)?;
        }
        Ok(store)
    }

    /// The store's URL, with any password masked.
    #[must_use]
    pub fn location(&self) -> &str {
        &self.location
    }

    /// How many hash partitions the record and content tables have.
    #[must_use]
    pub const fn partitions(&self) -> u32 {
        self.partitions
    }

    /// Runs SQL outside the ledger API. For tests and tooling that need to reach under the
    /// API (tamper experiments, fault injection); never used by Cairn itself.
    ///
    /// # Errors
    /// The server's refusal, as a store error.
    pub fn execute_raw(&self, sql: &str) -> Result<(), StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        conn.client
            .batch_execute(sql)
            .map_err(|e| lost(&conn.broken, &e))
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        self.pool.get().map_err(|e| {
            StoreError::Unavailable(format!(
                "no connection to `{}`: {}",
                self.location,
                location::without(&e.to_string(), &self.location)
            ))
        })
    }

    fn heads(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), KnownHead>> {
        self.heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn known(&self, tenant: &str, run: &str) -> Option<KnownHead> {
        self.heads()
            .get(&(tenant.to_owned(), run.to_owned()))
            .cloned()
    }

    fn remember(&self, tenant: &str, run: &str, head: Option<KnownHead>) {
        let mut heads = self.heads();
        let key = (tenant.to_owned(), run.to_owned());
        match head {
            Some(head) => {
                if heads.len() >= KNOWN_HEADS && !heads.contains_key(&key) {
                    heads.clear();
                }
                heads.insert(key, head);
            }
            None => {
                heads.remove(&key);
            }
        }
    }

    fn run_infos(
        &self,
        where_clause: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<RunInfo>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM cairn_runs r {where_clause}
             ORDER BY r.opened_at_us, r.tenant_id COLLATE \"C\", r.run_id COLLATE \"C\""
        );
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let rows = conn
            .client
            .query(&sql, params)
            .map_err(|e| lost(&conn.broken, &e))?;
        rows.iter().map(run_info).collect()
    }
}

/// The content of one commit as the write statement's arrays, one row per digest (one
/// statement may not touch a row twice): the earliest storing time and the latest expiry
/// win, as when the items are stored one after the other.
#[derive(Default)]
struct ContentRows<'a> {
    digests: Vec<String>,
    bytes: Vec<&'a [u8]>,
    stored: Vec<i64>,
    expires: Vec<i64>,
}

impl<'a> ContentRows<'a> {
    fn of(content: &'a [ContentItem]) -> Self {
        let mut rows = Self::default();
        let mut seen: HashMap<Digest, usize> = HashMap::with_capacity(content.len());
        for item in content {
            let (stored, expires) = (item.stored_at.unix_micros(), item.expires_at.unix_micros());
            if let Some(&index) = seen.get(&item.digest) {
                if let Some(kept) = rows.stored.get_mut(index) {
                    *kept = (*kept).min(stored);
                }
                if let Some(kept) = rows.expires.get_mut(index) {
                    *kept = (*kept).max(expires);
                }
                continue;
            }
            seen.insert(item.digest, rows.digests.len());
            rows.digests.push(item.digest.to_string());
            rows.bytes.push(&item.bytes);
            rows.stored.push(stored);
            rows.expires.push(expires);
        }
        rows
    }
}

/// Runs the guarded [`WRITE`] of `commit` after the head `known`: the head after it, or
/// `None` when the run's row no longer has that head (nothing was written).
fn write_commit(
    client: &mut impl postgres::GenericClient,
    write: &Statement,
    commit: &Commit<'_>,
    known: &KnownHead,
) -> Result<Option<KnownHead>, StoreError> {
    let Some(first) = commit.records.first().map(SealedRecord::record) else {
        return Ok(Some(known.clone()));
    };
    commit.check_continues(known.next)?;
    let (tenant, run) = (first.tenant_id.as_str(), first.run_id.as_str());
    let records: Vec<_> = commit.records.iter().map(SealedRecord::record).collect();
    let columns: Vec<IndexColumns<'_>> = records.iter().map(|r| IndexColumns::of(r)).collect();
    let mut tree = known.tree.clone();
    for record in &records {
        tree.push(leaf_hash(record.digest.as_bytes()));
    }
    let steps: Vec<i64> = records.iter().map(|r| as_i64(r.step_index)).collect();
    let kinds: Vec<&str> = columns.iter().map(|c| c.kind).collect();
    let tasks: Vec<&str> = columns.iter().map(|c| c.task_id).collect();
    let tools: Vec<Option<&str>> = columns.iter().map(|c| c.tool_name).collect();
    let sizes: Vec<Option<i64>> = columns.iter().map(|c| c.args_size).collect();
    let decisions: Vec<Option<&str>> = columns.iter().map(|c| c.decision).collect();
    let reasons: Vec<Option<&str>> = columns.iter().map(|c| c.termination_reason).collect();
    let times: Vec<i64> = columns.iter().map(|c| c.recorded_at_us).collect();
    let digests: Vec<&str> = columns.iter().map(|c| c.digest.as_ref()).collect();
    let bodies: Vec<&str> = commit.records.iter().map(SealedRecord::json).collect();
    let content = ContentRows::of(commit.content);
    let size = known.next + records.len() as u64;
    let last = records.last().copied().unwrap_or(first);
    let envelope_step = as_i64(size.saturating_sub(1));
    let head_digest = last.digest.to_string();
    let terminal_reason = last.termination.as_ref().map(|t| t.reason.as_str());
    let envelope = commit.envelope;
    let updated: i64 = client
        .query_one(
            write,
            &[
                &tenant,
                &run,
                &steps,
                &kinds,
                &tasks,
                &tools,
                &sizes,
                &decisions,
                &reasons,
                &times,
                &digests,
                &bodies,
                &content.digests,
                &content.bytes,
                &content.stored,
                &content.expires,
                &envelope.map(|e| e.envelope_id),
                &envelope_step,
                &envelope.and_then(|e| e.supersedes),
                &envelope.map(|e| e.body),
                &as_i64(size),
                &commit.checkpoint_note,
                &head_digest,
                &tree.frontier(),
                &last.recorded_at.unix_micros(),
                &terminal_reason,
                &as_i64(known.next),
                &known.head,
            ],
        )
        .and_then(|row| row.try_get(0))
        .map_err(|e| {
            if violates(&e, "cairn_records") {
                StoreError::Conflict {
                    run: first.run_id.clone(),
                    step: first.step_index,
                }
            } else if violates(&e, "cairn_envelopes") {
                StoreError::Backend(format!(
                    "envelope `{}` of run `{run}` was saved before",
                    envelope.map_or("", |e| e.envelope_id)
                ))
            } else {
                backend(&e)
            }
        })?;
    Ok((updated == 1).then_some(KnownHead {
        next: size,
        head: Some(head_digest),
        tree,
    }))
}

impl Store for PostgresStore {
    fn open_run(&self, meta: &RunMeta) -> Result<(), StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let insert = conn.statement(
            "INSERT INTO cairn_runs (tenant_id, run_id, task_id, opened_at_us, frontier)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )?;
        let inserted = conn
            .client
            .execute(
                &insert,
                &[
                    &meta.tenant_id.as_str(),
                    &meta.run_id.as_str(),
                    &meta.task_id.as_str(),
                    &meta.opened_at.unix_micros(),
                    &RootBuilder::new().frontier(),
                ],
            )
            .map_err(|e| lost(&conn.broken, &e))?;
        if inserted == 0 {
            return Err(StoreError::RunExists {
                run: meta.run_id.clone(),
            });
        }
        self.remember(
            meta.tenant_id.as_str(),
            meta.run_id.as_str(),
            Some(KnownHead {
                next: 0,
                head: None,
                tree: RootBuilder::new(),
            }),
        );
        Ok(())
    }

    fn append(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
        let Some(first) = commit.records.first().map(SealedRecord::record) else {
            return Ok(());
        };
        let (tenant, run) = (first.tenant_id.as_str(), first.run_id.as_str());
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let write = conn.statement(WRITE)?;
        // The common case — this process wrote or resumed the run last — is one statement,
        // committed on its own: the guard in it stands in for the lock.
        if let Some(known) = self.known(tenant, run)
            && known.next == first.step_index
        {
            match write_commit(&mut conn.client, &write, commit, &known)
                .inspect_err(|e| mark_if_lost(&conn.broken, e))?
            {
                Some(after) => {
                    self.remember(tenant, run, Some(after));
                    return Ok(());
                }
                None => self.remember(tenant, run, None),
            }
        }
        // Otherwise the run's row is locked and read, and the commit checked against it.
        let lock = conn.statement(LOCK_RUN)?;
        let mut tx = conn
            .client
            .transaction()
            .map_err(|e| lost(&conn.broken, &e))?;
        let Some(head) = tx
            .query_opt(&lock, &[&tenant, &run])
            .map_err(|e| lost(&conn.broken, &e))?
        else {
            return Err(StoreError::RunNotFound {
                run: first.run_id.clone(),
            });
        };
        if get::<bool>(&head, 1)? {
            return Err(StoreError::RunTerminated {
                run: first.run_id.clone(),
            });
        }
        let next = as_u64(get(&head, 0)?);
        commit.check_continues(next)?;
        // The frontier kept with the run, or — when it is missing or disagrees with the run's
        // length — rebuilt from the records, which are authoritative.
        let kept: Option<&[u8]> = get(&head, 2)?;
        let tree = match kept.and_then(RootBuilder::from_frontier) {
            Some(tree) if tree.len() == next => tree,
            _ => {
                let mut tree = RootBuilder::new();
                let rows = tx
                    .query(
                        "SELECT digest FROM cairn_records WHERE tenant_id = $1 AND run_id = $2
                         AND step_index < $3 ORDER BY step_index",
                        &[&tenant, &run, &as_i64(next)],
                    )
                    .map_err(|e| lost(&conn.broken, &e))?;
                for row in &rows {
                    let digest: Digest = parse(get(row, 0)?, "record digest")?;
                    tree.push(leaf_hash(digest.as_bytes()));
                }
                tree
            }
        };
        let known = KnownHead {
            next,
            head: get::<Option<String>>(&head, 3)?,
            tree,
        };
        let Some(after) = write_commit(&mut tx, &write, commit, &known)
            .inspect_err(|e| mark_if_lost(&conn.broken, e))?
        else {
            return Err(StoreError::Backend(format!(
                "run `{run}` changed while it was locked"
            )));
        };
        tx.commit().map_err(|e| lost(&conn.broken, &e))?;
        self.remember(tenant, run, Some(after));
        Ok(())
    }

    fn run(&self, tenant: &TenantId, run: &RunId) -> Result<Option<RunInfo>, StoreError> {
        let found = self.run_infos(
            "WHERE r.tenant_id = $1 AND r.run_id = $2",
            &[&tenant.as_str(), &run.as_str()],
        )?;
        Ok(found.into_iter().next())
    }

    /// From the run's row: its summary and the head and frontier kept with it, checked
    /// against the last record's digest — without reading the run. A head that disagrees
    /// with the records is resumed from the records themselves.
    fn resume_point(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<ResumePoint>, StoreError> {
        let row = {
            let mut lease = self.conn()?;
            let conn = &mut *lease;
            let select = conn.statement(
                "SELECT r.tenant_id, r.run_id, r.task_id, r.opened_at_us, r.next_step,
                        r.last_recorded_at_us, r.termination_reason, r.terminated,
                        r.checkpointed, r.head_digest, r.frontier,
                        (SELECT x.digest FROM cairn_records x
                          WHERE x.tenant_id = r.tenant_id AND x.run_id = r.run_id
                            AND x.step_index = r.next_step - 1)
                 FROM cairn_runs r WHERE r.tenant_id = $1 AND r.run_id = $2",
            )?;
            conn.client
                .query_opt(&select, &[&tenant.as_str(), &run.as_str()])
                .map_err(|e| lost(&conn.broken, &e))?
        };
        let Some(row) = row else {
            return Ok(None);
        };
        let info = run_info(&row)?;
        let kept = KeptHead {
            head: get(&row, 9)?,
            frontier: get(&row, 10)?,
            last_record: get(&row, 11)?,
        };
        if let Some(point) = kept.resume(&info) {
            self.remember(
                tenant.as_str(),
                run.as_str(),
                Some(KnownHead {
                    next: point.tree.len(),
                    head: point.head.map(|digest| digest.to_string()),
                    tree: point.tree.clone(),
                }),
            );
            return Ok(Some(point));
        }
        let digests = self.digests(tenant, run)?;
        Ok(Some(ResumePoint::from_digests(info, &digests)))
    }

    fn find_runs(&self, run: &RunId) -> Result<Vec<RunInfo>, StoreError> {
        self.run_infos("WHERE r.run_id = $1", &[&run.as_str()])
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        // One statement per combination of filters, so that each is served by its index
        // (`cairn_runs_unterminated` for unterminated and idle runs, the key for a tenant).
        let tenant = filter.tenant_id.as_ref().map(TenantId::as_str);
        let idle_before = filter.idle_before.map(|at| at.unix_micros());
        let mut conditions = Vec::new();
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = Vec::new();
        if let Some(tenant) = &tenant {
            params.push(tenant);
            conditions.push(format!("r.tenant_id = ${}", params.len()));
        }
        if filter.unterminated_only {
            conditions.push(String::from("NOT r.terminated"));
        }
        if let Some(limit) = &idle_before {
            params.push(limit);
            conditions.push(format!(
                "COALESCE(r.last_recorded_at_us, r.opened_at_us) < ${}",
                params.len()
            ));
        }
        let where_clause = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        self.run_infos(&where_clause, &params)
    }

    fn rows(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredRow>, StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let select = conn.statement(
            "SELECT step_index, body, kind, task_id, tool_name, args_size, decision,
                    termination_reason, recorded_at_us, digest
             FROM cairn_records WHERE tenant_id = $1 AND run_id = $2 ORDER BY step_index",
        )?;
        let rows = conn
            .client
            .query(&select, &[&tenant.as_str(), &run.as_str()])
            .map_err(|e| lost(&conn.broken, &e))?;
        rows.iter().map(stored_row).collect()
    }

    fn record(
        &self,
        tenant: &TenantId,
        run: &RunId,
        step: u64,
    ) -> Result<Option<StoredRow>, StoreError> {
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM cairn_records
             WHERE tenant_id = $1 AND run_id = $2 AND step_index = $3"
        );
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let row = conn
            .client
            .query_opt(&sql, &[&tenant.as_str(), &run.as_str(), &as_i64(step)])
            .map_err(|e| lost(&conn.broken, &e))?;
        row.as_ref().map(stored_row).transpose()
    }

    fn digests(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<Digest>, StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let select = conn.statement(
            "SELECT digest FROM cairn_records WHERE tenant_id = $1 AND run_id = $2
             ORDER BY step_index",
        )?;
        let rows = conn
            .client
            .query(&select, &[&tenant.as_str(), &run.as_str()])
            .map_err(|e| lost(&conn.broken, &e))?;
        rows.iter()
            .map(|row| parse(get(row, 0)?, "record digest"))
            .collect()
    }

    fn checkpoint(&self, tenant: &TenantId, run: &RunId) -> Result<Option<String>, StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let row = conn
            .client
            .query_opt(
                "SELECT note FROM cairn_checkpoints WHERE tenant_id = $1 AND run_id = $2",
                &[&tenant.as_str(), &run.as_str()],
            )
            .map_err(|e| lost(&conn.broken, &e))?;
        row.as_ref().map(|row| get(row, 0)).transpose()
    }

    fn envelopes(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredEnvelope>, StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let rows = conn
            .client
            .query(
                "SELECT envelope_id, step_index, supersedes, body FROM cairn_envelopes
                 WHERE tenant_id = $1 AND run_id = $2
                 ORDER BY step_index, envelope_id COLLATE \"C\"",
                &[&tenant.as_str(), &run.as_str()],
            )
            .map_err(|e| lost(&conn.broken, &e))?;
        rows.iter().map(envelope).collect()
    }

    fn latest_envelope(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<StoredEnvelope>, StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let select = conn.statement(
            "SELECT envelope_id, step_index, supersedes, body FROM cairn_envelopes
             WHERE tenant_id = $1 AND run_id = $2 ORDER BY step_index DESC LIMIT 1",
        )?;
        let row = conn
            .client
            .query_opt(&select, &[&tenant.as_str(), &run.as_str()])
            .map_err(|e| lost(&conn.broken, &e))?;
        row.as_ref().map(envelope).transpose()
    }

    fn content(&self, digest: &Digest) -> Result<Option<StoredContent>, StoreError> {
        // The same bytes kept by several runs: the earliest storing and the latest expiry.
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let row = conn
            .client
            .query_opt(
                "SELECT (array_agg(bytes))[1], MIN(stored_at_us), MAX(expires_at_us)
                 FROM cairn_content WHERE digest = $1 HAVING COUNT(*) > 0",
                &[&digest.to_string()],
            )
            .map_err(|e| lost(&conn.broken, &e))?;
        row.map(|row| {
            Ok(StoredContent {
                digest: *digest,
                bytes: get(&row, 0)?,
                stored_at: time(get(&row, 1)?)?,
                expires_at: time(get(&row, 2)?)?,
            })
        })
        .transpose()
    }

    fn gc_content(&self, now: Timestamp) -> Result<u64, StoreError> {
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        conn.client
            .execute(
                "DELETE FROM cairn_content WHERE expires_at_us <= $1",
                &[&now.unix_micros()],
            )
            .map_err(|e| lost(&conn.broken, &e))
    }

    fn cost(&self, by: CostDimension) -> Result<Vec<CostRow>, StoreError> {
        let key = match by {
            CostDimension::Task => "r.task_id",
            CostDimension::Tenant => "r.tenant_id",
            CostDimension::Tool => "x.tool_name",
            CostDimension::Termination => {
                "CASE WHEN r.terminated THEN r.termination_reason ELSE 'unterminated' END"
            }
        };
        let step_filter = if by == CostDimension::Tool {
            "AND x.kind = 'step'"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {key} AS k,
                    COUNT(DISTINCT (r.tenant_id, r.run_id)),
                    COALESCE(SUM((x.kind = 'step')::int), 0)::bigint,
                    COALESCE(SUM((x.decision = 'deny')::int), 0)::bigint,
                    COALESCE(SUM(x.args_size), 0)::bigint
             FROM cairn_runs r
             LEFT JOIN cairn_records x
               ON x.tenant_id = r.tenant_id AND x.run_id = r.run_id {step_filter}
             GROUP BY k HAVING {key} IS NOT NULL ORDER BY ({key}) COLLATE \"C\""
        );
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let rows = conn
            .client
            .query(&sql, &[])
            .map_err(|e| lost(&conn.broken, &e))?;
        rows.iter()
            .map(|row| {
                Ok(CostRow {
                    key: get(row, 0)?,
                    runs: as_u64(get(row, 1)?),
                    calls: as_u64(get(row, 2)?),
                    denied: as_u64(get(row, 3)?),
                    arg_bytes: as_u64(get(row, 4)?),
                })
            })
            .collect()
    }
}
