//! Writing an append: the run's lock, the one guarded statement that writes everything, and
//! what a writer knows of a run's head.

use std::collections::HashMap;

use cairn_core::Digest;
use cairn_ledger::StoreError;
use cairn_ledger::merkle::{RootBuilder, leaf_hash};
use cairn_ledger::record::SealedRecord;
use cairn_ledger::store::{Commit, ContentItem, IndexColumns};
use postgres::Statement;

use crate::error::{backend, violates};
use crate::rows::as_i64;

/// The run's row, locked for this transaction: its next step, whether it ended, its kept
/// frontier and head.
pub(crate) const LOCK_RUN: &str = "SELECT next_step, terminated, frontier, head_digest
    FROM cairn_runs WHERE tenant_id = $1 AND run_id = $2 FOR UPDATE";

/// Everything an append writes, in one statement (data-modifying `WITH` parts run once each),
/// guarded: the run's row is updated only while its next step and head are the ones the
/// writer sealed its records after (`$27`, `$28`) and it has not ended, and nothing else is
/// written unless it was. The statement answers how many rows it updated (0 or 1).
pub(crate) const WRITE: &str = "
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

/// Content kept ahead of the record that carries its digest (`Store::keep_content`): in the
/// run's partition, its expiry extended when it is kept already.
pub(crate) const KEEP_CONTENT: &str = "
INSERT INTO cairn_content (tenant_id, run_id, digest, bytes, size, stored_at_us, expires_at_us)
SELECT $1, $2, d, b, length(b), s, e
FROM unnest($3::text[], $4::bytea[], $5::bigint[], $6::bigint[]) AS c(d, b, s, e)
ON CONFLICT (tenant_id, run_id, digest) DO UPDATE
    SET expires_at_us = GREATEST(cairn_content.expires_at_us, excluded.expires_at_us)";

/// What a writer knows of a run's head: its next step, the digest of its last record, and
/// the Merkle frontier over its records.
#[derive(Clone)]
pub(crate) struct KnownHead {
    pub(crate) next: u64,
    pub(crate) head: Option<String>,
    pub(crate) tree: RootBuilder,
}

/// The most runs whose heads a store remembers (a long-lived process writes many runs).
pub(crate) const KNOWN_HEADS: usize = 4096;

/// The content of one commit as the write statement's arrays, one row per digest (one
/// statement may not touch a row twice): the earliest storing time and the latest expiry
/// win, as when the items are stored one after the other.
#[derive(Default)]
pub(crate) struct ContentRows<'a> {
    pub(crate) digests: Vec<String>,
    pub(crate) bytes: Vec<&'a [u8]>,
    pub(crate) stored: Vec<i64>,
    pub(crate) expires: Vec<i64>,
}

impl<'a> ContentRows<'a> {
    pub(crate) fn of(content: &'a [ContentItem]) -> Self {
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
pub(crate) fn write_commit(
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
