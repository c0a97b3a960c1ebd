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
mod pool;
mod rows;
mod schema;
mod write;

use std::collections::HashMap;
use std::sync::Arc;

use cairn_core::{Digest, RunId, TenantId, Timestamp};
use cairn_ledger::merkle::{RootBuilder, leaf_hash};
use cairn_ledger::record::SealedRecord;
use cairn_ledger::store::{
    Commit, ContentItem, CostDimension, CostRow, KeptHead, OpenMode, ResumePoint, RunFilter,
    RunInfo, RunMeta, StoredContent, StoredEnvelope, StoredRow,
};
use cairn_ledger::{Store, StoreError};

pub use location::{MAX_PARTITIONS, Options, is_postgres_url, redact};
pub use schema::CURRENT_VERSION;

use pool::{Manager, Quiet, lost, mark_if_lost};
use rows::{
    ROW_COLUMNS, RUN_COLUMNS, as_i64, as_u64, envelope, get, parse, run_info, stored_row, time,
};
use write::{KNOWN_HEADS, KnownHead, LOCK_RUN, WRITE, write_commit};

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

impl PostgresStore {
    /// Opens the store at `url`, creating its tables in the connection's schema when they
    /// are missing (and `mode` allows) and applying pending migrations.
    ///
    /// # Errors
    /// [`StoreError::InvalidLocation`] for a malformed URL, [`StoreError::Unavailable`] when
    /// the server cannot be reached, [`StoreError::NotAStore`] when `mode` is
    /// [`OpenMode::MustExist`] and the schema holds no store, [`StoreError::SchemaTooNew`].
    pub fn open(url: &str, mode: OpenMode, options: &Options) -> Result<Self, StoreError> {
        let (config, tls) = location::config(url, options)?;
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
            .build_unchecked(Manager { config, tls });
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
        let mut conn = self.conn()?;
        conn.batch_execute(sql)
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
        let mut conn = self.conn()?;
        let rows = conn.query(&sql, params)?;
        rows.iter().map(run_info).collect()
    }
}

impl Store for PostgresStore {
    fn open_run(&self, meta: &RunMeta) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let insert = conn.statement(
            "INSERT INTO cairn_runs (tenant_id, run_id, task_id, opened_at_us, frontier)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )?;
        let inserted = conn.execute(
            &insert,
            &[
                &meta.tenant_id.as_str(),
                &meta.run_id.as_str(),
                &meta.task_id.as_str(),
                &meta.opened_at.unix_micros(),
                &RootBuilder::new().frontier(),
            ],
        )?;
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

    fn keep_content(
        &self,
        tenant: &TenantId,
        run: &RunId,
        content: &[ContentItem],
    ) -> Result<(), StoreError> {
        if content.is_empty() {
            return Ok(());
        }
        let rows = write::ContentRows::of(content);
        let mut lease = self.conn()?;
        let conn = &mut *lease;
        let keep = conn.statement(write::KEEP_CONTENT)?;
        let mut tx = conn
            .client
            .transaction()
            .map_err(|e| lost(&conn.broken, &e))?;
        // Not waited for on the server's disk: the next synchronous commit (the next call's
        // intent record) makes it durable, as the log is flushed in order.
        tx.batch_execute("SET LOCAL synchronous_commit = off")
            .map_err(|e| lost(&conn.broken, &e))?;
        tx.execute(
            &keep,
            &[
                &tenant.as_str(),
                &run.as_str(),
                &rows.digests,
                &rows.bytes,
                &rows.stored,
                &rows.expires,
            ],
        )
        .map_err(|e| lost(&conn.broken, &e))?;
        tx.commit().map_err(|e| lost(&conn.broken, &e))
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
            conn.query_opt(&select, &[&tenant.as_str(), &run.as_str()])?
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
        let mut conn = self.conn()?;
        let select = conn.statement(
            "SELECT step_index, body, kind, task_id, tool_name, args_size, decision,
                    termination_reason, recorded_at_us, digest
             FROM cairn_records WHERE tenant_id = $1 AND run_id = $2 ORDER BY step_index",
        )?;
        let rows = conn.query(&select, &[&tenant.as_str(), &run.as_str()])?;
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
        let mut conn = self.conn()?;
        let row = conn.query_opt(&sql, &[&tenant.as_str(), &run.as_str(), &as_i64(step)])?;
        row.as_ref().map(stored_row).transpose()
    }

    fn digests(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<Digest>, StoreError> {
        let mut conn = self.conn()?;
        let select = conn.statement(
            "SELECT digest FROM cairn_records WHERE tenant_id = $1 AND run_id = $2
             ORDER BY step_index",
        )?;
        let rows = conn.query(&select, &[&tenant.as_str(), &run.as_str()])?;
        rows.iter()
            .map(|row| parse(get(row, 0)?, "record digest"))
            .collect()
    }

    fn checkpoint(&self, tenant: &TenantId, run: &RunId) -> Result<Option<String>, StoreError> {
        let mut conn = self.conn()?;
        let row = conn.query_opt(
            "SELECT note FROM cairn_checkpoints WHERE tenant_id = $1 AND run_id = $2",
            &[&tenant.as_str(), &run.as_str()],
        )?;
        row.as_ref().map(|row| get(row, 0)).transpose()
    }

    fn envelopes(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredEnvelope>, StoreError> {
        let mut conn = self.conn()?;
        let rows = conn.query(
            "SELECT envelope_id, step_index, supersedes, body FROM cairn_envelopes
                 WHERE tenant_id = $1 AND run_id = $2
                 ORDER BY step_index, envelope_id COLLATE \"C\"",
            &[&tenant.as_str(), &run.as_str()],
        )?;
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
        let row = conn.query_opt(&select, &[&tenant.as_str(), &run.as_str()])?;
        row.as_ref().map(envelope).transpose()
    }

    fn content(&self, digest: &Digest) -> Result<Option<StoredContent>, StoreError> {
        // The same bytes kept by several runs: the earliest storing and the latest expiry.
        let mut conn = self.conn()?;
        let row = conn.query_opt(
            "SELECT (array_agg(bytes))[1], MIN(stored_at_us), MAX(expires_at_us)
                 FROM cairn_content WHERE digest = $1 HAVING COUNT(*) > 0",
            &[&digest.to_string()],
        )?;
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
        let mut conn = self.conn()?;
        conn.execute(
            "DELETE FROM cairn_content WHERE expires_at_us <= $1",
            &[&now.unix_micros()],
        )
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
             WHERE $1::text IS NULL OR r.tenant_id = $1::text
             GROUP BY k HAVING {key} IS NOT NULL ORDER BY ({key}) COLLATE \"C\""
        );
        let mut conn = self.conn()?;
        let rows = conn.query(&sql, &[&tenant.map(TenantId::as_str)])?;
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
