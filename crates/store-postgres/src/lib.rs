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
}

impl Conn {
    /// The statement `sql`, prepared once per connection.
    fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).map_err(|e| backend(&e))?;
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
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.client.is_closed()
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
/// frontier.
const LOCK_RUN: &str = "SELECT next_step, terminated, frontier FROM cairn_runs
                        WHERE tenant_id = $1 AND run_id = $2 FOR UPDATE";

/// Everything an append writes, in one statement (data-modifying `WITH` parts run once each).
const WRITE: &str = "
WITH rec AS (
    INSERT INTO cairn_records (tenant_id, run_id, step_index, kind, task_id, tool_name,
        args_size, decision, termination_reason, recorded_at_us, digest, body)
    SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[],
        $7::bigint[], $8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[])
), con AS (
    INSERT INTO cairn_content (tenant_id, run_id, digest, bytes, size, stored_at_us,
        expires_at_us)
    SELECT $1, $2, d, b, length(b), s, e
    FROM unnest($13::text[], $14::bytea[], $15::bigint[], $16::bigint[]) AS c(d, b, s, e)
    ON CONFLICT (tenant_id, run_id, digest) DO UPDATE
        SET expires_at_us = GREATEST(cairn_content.expires_at_us, excluded.expires_at_us)
), env AS (
    INSERT INTO cairn_envelopes (tenant_id, run_id, envelope_id, step_index, supersedes, body)
    SELECT $1, $2, $17, $18, $19, $20 WHERE $17::text IS NOT NULL
), chk AS (
    INSERT INTO cairn_checkpoints (tenant_id, run_id, tree_size, note)
    SELECT $1, $2, $21, $22 WHERE $22::text IS NOT NULL
)
UPDATE cairn_runs SET
    next_step = $21,
    head_digest = $23,
    frontier = $24,
    last_recorded_at_us = $25,
    termination_reason = COALESCE($26, termination_reason),
    terminated = terminated OR $26::text IS NOT NULL,
    checkpointed = checkpointed OR $22::text IS NOT NULL
WHERE tenant_id = $1 AND run_id = $2";

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
        self.conn()?
            .client
            .batch_execute(sql)
            .map_err(|e| backend(&e))
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

    fn run_infos(
        &self,
        where_clause: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<RunInfo>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM cairn_runs r {where_clause}
             ORDER BY r.opened_at_us, r.tenant_id COLLATE \"C\", r.run_id COLLATE \"C\""
        );
        let rows = self
            .conn()?
            .client
            .query(&sql, params)
            .map_err(|e| backend(&e))?;
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

impl Store for PostgresStore {
    fn open_run(&self, meta: &RunMeta) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
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
            .map_err(|e| backend(&e))?;
        if inserted == 0 {
            return Err(StoreError::RunExists {
                run: meta.run_id.clone(),
            });
        }
        Ok(())
    }

    fn append(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
        let Some(first) = commit.records.first().map(SealedRecord::record) else {
            return Ok(());
        };
        let (tenant, run) = (first.tenant_id.as_str(), first.run_id.as_str());
        let mut conn = self.conn()?;
        let lock = conn.statement(LOCK_RUN)?;
        let write = conn.statement(WRITE)?;
        let mut tx = conn.client.transaction().map_err(|e| backend(&e))?;
        let Some(head) = tx
            .query_opt(&lock, &[&tenant, &run])
            .map_err(|e| backend(&e))?
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
        let mut tree = match kept.and_then(RootBuilder::from_frontier) {
            Some(tree) if tree.len() == next => tree,
            _ => {
                let mut tree = RootBuilder::new();
                let rows = tx
                    .query(
                        "SELECT digest FROM cairn_records WHERE tenant_id = $1 AND run_id = $2
                         AND step_index < $3 ORDER BY step_index",
                        &[&tenant, &run, &as_i64(next)],
                    )
                    .map_err(|e| backend(&e))?;
                for row in &rows {
                    let digest: Digest = parse(get(row, 0)?, "record digest")?;
                    tree.push(leaf_hash(digest.as_bytes()));
                }
                tree
            }
        };
        let records: Vec<_> = commit.records.iter().map(SealedRecord::record).collect();
        let columns: Vec<IndexColumns<'_>> = records.iter().map(|r| IndexColumns::of(r)).collect();
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
        let size = next + records.len() as u64;
        let last = records.last().copied().unwrap_or(first);
        let envelope_step = as_i64(size.saturating_sub(1));
        let head_digest = last.digest.to_string();
        let terminal_reason = last.termination.as_ref().map(|t| t.reason.as_str());
        let envelope = commit.envelope;
        tx.execute(
            &write,
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
            ],
        )
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
        tx.commit().map_err(|e| backend(&e))
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
            let mut conn = self.conn()?;
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
                .map_err(|e| backend(&e))?
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
        // (`cairn_runs_idle` for unterminated and idle runs, the key for a tenant).
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
        let mut conn = self.conn()?;
        let select = conn.statement(
            "SELECT step_index, body, kind, task_id, tool_name, args_size, decision,
                    termination_reason, recorded_at_us, digest
             FROM cairn_records WHERE tenant_id = $1 AND run_id = $2 ORDER BY step_index",
        )?;
        let rows = conn
            .client
            .query(&select, &[&tenant.as_str(), &run.as_str()])
            .map_err(|e| backend(&e))?;
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
        let row = self
            .conn()?
            .client
            .query_opt(&sql, &[&tenant.as_str(), &run.as_str(), &as_i64(step)])
            .map_err(|e| backend(&e))?;
        row.as_ref().map(stored_row).transpose()
    }

    fn digests(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<Digest>, StoreError> {
        let mut conn = self.conn()?;
        let select = conn.statement(
            "SELECT digest FROM cairn_records WHERE tenant_id = $1 AND run_id = $2
             ORDER BY step_index",
        )?;
        let rows = conn
            .client
            .query(&select, &[&tenant.as_str(), &run.as_str()])
            .map_err(|e| backend(&e))?;
        rows.iter()
            .map(|row| parse(get(row, 0)?, "record digest"))
            .collect()
    }

    fn checkpoint(&self, tenant: &TenantId, run: &RunId) -> Result<Option<String>, StoreError> {
        let row = self
            .conn()?
            .client
            .query_opt(
                "SELECT note FROM cairn_checkpoints WHERE tenant_id = $1 AND run_id = $2",
                &[&tenant.as_str(), &run.as_str()],
            )
            .map_err(|e| backend(&e))?;
        row.as_ref().map(|row| get(row, 0)).transpose()
    }

    fn envelopes(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredEnvelope>, StoreError> {
        let rows = self
            .conn()?
            .client
            .query(
                "SELECT envelope_id, step_index, supersedes, body FROM cairn_envelopes
                 WHERE tenant_id = $1 AND run_id = $2
                 ORDER BY step_index, envelope_id COLLATE \"C\"",
                &[&tenant.as_str(), &run.as_str()],
            )
            .map_err(|e| backend(&e))?;
        rows.iter().map(envelope).collect()
    }

    fn latest_envelope(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<StoredEnvelope>, StoreError> {
        let mut conn = self.conn()?;
        let select = conn.statement(
            "SELECT envelope_id, step_index, supersedes, body FROM cairn_envelopes
             WHERE tenant_id = $1 AND run_id = $2 ORDER BY step_index DESC LIMIT 1",
        )?;
        let row = conn
            .client
            .query_opt(&select, &[&tenant.as_str(), &run.as_str()])
            .map_err(|e| backend(&e))?;
        row.as_ref().map(envelope).transpose()
    }

    fn content(&self, digest: &Digest) -> Result<Option<StoredContent>, StoreError> {
        // The same bytes kept by several runs: the earliest storing and the latest expiry.
        let row = self
            .conn()?
            .client
            .query_opt(
                "SELECT (array_agg(bytes))[1], MIN(stored_at_us), MAX(expires_at_us)
                 FROM cairn_content WHERE digest = $1 HAVING COUNT(*) > 0",
                &[&digest.to_string()],
            )
            .map_err(|e| backend(&e))?;
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
        self.conn()?
            .client
            .execute(
                "DELETE FROM cairn_content WHERE expires_at_us <= $1",
                &[&now.unix_micros()],
            )
            .map_err(|e| backend(&e))
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
        let rows = self
            .conn()?
            .client
            .query(&sql, &[])
            .map_err(|e| backend(&e))?;
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
