//! Appending a commit inside a transaction, and the run heads a store remembers between its
//! commits so that a commit continuing one need not read the run first.
//!
//! A commit of a run this store committed last — the common case: the service's group
//! commit and a resident hook server write the same runs again and again — starts from the
//! head it remembers ([`KnownHeads`]): its next step, its head digest and its tree frontier.
//! It skips the reads of the run's existence, its last record and its frontier, and writes
//! its records and the run's new head with the head it continues as a guard (`UPDATE … WHERE
//! head_digest = ?`). A head another writer moved meanwhile (another process on the same
//! file) fails the guard or the step's uniqueness, and the commit is done again from what
//! the file holds. A run whose last record is terminal is never remembered.

use std::collections::HashMap;
use std::sync::Mutex;

use cairn_core::Digest;
use cairn_ledger::StoreError;
use cairn_ledger::merkle::{RootBuilder, leaf_hash};
use cairn_ledger::record::{RecordKind, SealedRecord};
use cairn_ledger::store::{Commit, IndexColumns};
use rusqlite::{Connection, OptionalExtension, params};

use crate::{as_i64, backend, parse_col, put_content};

/// The most run heads remembered; past it the memory starts afresh.
const MAX_KNOWN: usize = 16_384;

/// A run's head as this store committed it last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunHead {
    /// The step the next record takes.
    next: u64,
    /// The last record's digest.
    head: String,
    /// The Merkle tree's frontier after it.
    frontier: Vec<u8>,
}

/// The run heads a store remembers, by `(tenant, run)`.
#[derive(Debug, Default)]
pub(crate) struct KnownHeads(Mutex<HashMap<(String, String), RunHead>>);

impl KnownHeads {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), RunHead>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The head remembered for `commit`'s run, if any.
    pub(crate) fn of(&self, commit: &Commit<'_>) -> Option<RunHead> {
        self.lock().get(&key(commit)?).cloned()
    }

    /// Notes how `commit` ended once its transaction is durable: its run's new head, or
    /// nothing (a terminal record, a failure) — the next commit reads the file.
    pub(crate) fn note(&self, commit: &Commit<'_>, head: Option<RunHead>) {
        let Some(key) = key(commit) else {
            return;
        };
        let mut known = self.lock();
        match head {
            Some(head) => {
                if known.len() >= MAX_KNOWN && !known.contains_key(&key) {
                    known.clear();
                }
                known.insert(key, head);
            }
            None => {
                known.remove(&key);
            }
        }
    }

    /// Forgets `commit`'s run (its transaction did not commit).
    pub(crate) fn forget(&self, commit: &Commit<'_>) {
        if let Some(key) = key(commit) {
            self.lock().remove(&key);
        }
    }
}

fn key(commit: &Commit<'_>) -> Option<(String, String)> {
    let first = commit.records.first().map(SealedRecord::record)?;
    Some((first.tenant_id.to_string(), first.run_id.to_string()))
}

/// Where a commit starts: the run's next step and tree, and the head it continues when that
/// came from memory (the guard of the head's update).
struct Start {
    next: u64,
    tree: RootBuilder,
    guard: Option<String>,
}

/// Appends `commit` inside the transaction (or savepoint) `tx`, from `known` (the head this
/// store remembers for the run) when it continues it, else after checking against the file
/// that the run exists, is open and continues at its next step; writes the records, the
/// content, the run's head and frontier, the envelope and the checkpoint. Returns the run's
/// new head (none after a terminal record).
pub(crate) fn append_in(
    tx: &Connection,
    commit: &Commit<'_>,
    known: Option<&RunHead>,
) -> Result<Option<RunHead>, StoreError> {
    let Some(first) = commit.records.first().map(SealedRecord::record) else {
        return Ok(None);
    };
    let (tenant, run) = (first.tenant_id.as_str(), first.run_id.as_str());
    let remembered = known.and_then(|head| {
        commit.check_continues(head.next).ok()?;
        let tree = RootBuilder::from_frontier(&head.frontier).filter(|t| t.len() == head.next)?;
        Some(Start {
            next: head.next,
            tree,
            guard: Some(head.head.clone()),
        })
    });
    let Start {
        next,
        mut tree,
        guard,
    } = match remembered {
        Some(start) => start,
        None => start_from_file(tx, commit, tenant, run)?,
    };
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO records (tenant_id, run_id, step_index, kind, task_id, tool_name,
                         args_size, decision, termination_reason, recorded_at_us, digest, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .map_err(backend)?;
        for sealed in commit.records {
            let (record, body) = (sealed.record(), sealed.json());
            let columns = IndexColumns::of(record);
            insert
                .execute(params![
                    tenant,
                    run,
                    as_i64(record.step_index),
                    columns.kind,
                    columns.task_id,
                    columns.tool_name,
                    columns.args_size,
                    columns.decision,
                    columns.termination_reason,
                    columns.recorded_at_us,
                    columns.digest,
                    body,
                ])
                .map_err(|e| match e.sqlite_error_code() {
                    Some(rusqlite::ErrorCode::ConstraintViolation) => StoreError::Conflict {
                        run: record.run_id.clone(),
                        step: record.step_index,
                    },
                    _ => backend(e),
                })?;
        }
        put_content(tx, commit.content)?;
    }
    for sealed in commit.records {
        tree.push(leaf_hash(sealed.record().digest.as_bytes()));
    }
    let head = commit
        .records
        .last()
        .map(|sealed| sealed.record().digest.to_string())
        .unwrap_or_default();
    let frontier = tree.frontier();
    // The run's head and tree frontier move with its records, in this transaction; from
    // memory, only if the file still has the head remembered.
    let moved = match &guard {
        Some(continued) => tx
            .prepare_cached(
                "UPDATE runs SET head_digest = ?3, frontier = ?4
                     WHERE tenant_id = ?1 AND run_id = ?2 AND head_digest = ?5",
            )
            .and_then(|mut stmt| stmt.execute(params![tenant, run, head, frontier, continued])),
        None => tx
            .prepare_cached(
                "UPDATE runs SET head_digest = ?3, frontier = ?4
                     WHERE tenant_id = ?1 AND run_id = ?2",
            )
            .and_then(|mut stmt| stmt.execute(params![tenant, run, head, frontier])),
    }
    .map_err(backend)?;
    if moved != 1 {
        return Err(StoreError::Conflict {
            run: first.run_id.clone(),
            step: next,
        });
    }
    let written = next + commit.records.len() as u64;
    if let Some(envelope) = commit.envelope {
        tx.execute(
            "INSERT INTO envelopes (tenant_id, run_id, envelope_id, step_index, supersedes, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                tenant,
                run,
                envelope.envelope_id,
                as_i64(written - 1),
                envelope.supersedes,
                envelope.body
            ],
        )
        .map_err(|e| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation) => StoreError::Backend(format!(
                "envelope `{}` of run `{run}` was saved before",
                envelope.envelope_id
            )),
            _ => backend(e),
        })?;
    }
    if let Some(note) = commit.checkpoint_note {
        tx.execute(
            "INSERT INTO checkpoints (tenant_id, run_id, tree_size, note) VALUES (?1, ?2, ?3, ?4)",
            params![tenant, run, as_i64(written), note],
        )
        .map_err(backend)?;
    }
    let terminal = commit
        .records
        .last()
        .is_some_and(|sealed| sealed.record().kind == RecordKind::Terminal);
    Ok((!terminal).then_some(RunHead {
        next: written,
        head,
        frontier,
    }))
}

/// Where `commit` starts, read from the file: the run must exist, be open and continue at
/// its next step; its tree comes from the kept frontier, or from the records.
fn start_from_file(
    tx: &Connection,
    commit: &Commit<'_>,
    tenant: &str,
    run: &str,
) -> Result<Start, StoreError> {
    let Some(first) = commit.records.first().map(SealedRecord::record) else {
        return Err(StoreError::Backend("an empty commit".to_owned()));
    };
    // Statements on the path of every commit are prepared once per connection.
    let stored: Option<Option<Vec<u8>>> = tx
        .prepare_cached("SELECT frontier FROM runs WHERE tenant_id = ?1 AND run_id = ?2")
        .and_then(|mut stmt| {
            stmt.query_row(params![tenant, run], |row| row.get(0))
                .optional()
        })
        .map_err(backend)?;
    let Some(stored) = stored else {
        return Err(StoreError::RunNotFound {
            run: first.run_id.clone(),
        });
    };
    let last: Option<(i64, String)> = tx
        .prepare_cached(
            "SELECT step_index, kind FROM records WHERE tenant_id = ?1 AND run_id = ?2
                 ORDER BY step_index DESC LIMIT 1",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![tenant, run], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(backend)?;
    if last
        .as_ref()
        .is_some_and(|(_, kind)| kind == RecordKind::Terminal.as_str())
    {
        return Err(StoreError::RunTerminated {
            run: first.run_id.clone(),
        });
    }
    let next = last.map_or(0, |(step, _)| u64::try_from(step).unwrap_or(0) + 1);
    commit.check_continues(next)?;
    let tree = match stored.as_deref().and_then(RootBuilder::from_frontier) {
        Some(tree) if tree.len() == next => tree,
        // No frontier yet (a run written before schema 3), or one that disagrees with the
        // records: rebuilt from the records, which are authoritative.
        _ => {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT digest FROM records WHERE tenant_id = ?1 AND run_id = ?2
                         AND step_index < ?3 ORDER BY step_index",
                )
                .map_err(backend)?;
            let mut tree = RootBuilder::new();
            let rows = stmt
                .query_map(params![tenant, run, as_i64(next)], |row| {
                    parse_col::<Digest>(row.get_ref(0)?.as_str()?)
                })
                .map_err(backend)?;
            for digest in rows {
                tree.push(leaf_hash(digest.map_err(backend)?.as_bytes()));
            }
            tree
        }
    };
    Ok(Start {
        next,
        tree,
        guard: None,
    })
}
