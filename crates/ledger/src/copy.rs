//! Copying a run from one store to another (`cairn store copy`): a team moving its ledgers
//! off the laptop store, or between databases.
//!
//! A run is copied only when it verifies where it is, and counts as copied only when it
//! verifies where it went: records byte for byte in step order, the content they name that
//! is still retained (with its own retention), every continuity envelope with the boundary
//! record that saved it, and the signed checkpoint with the terminal record. A copy that was
//! interrupted is resumed: records already in the target must be the start of the run, and
//! the copy goes on after them. A run already copied whole is left as it is.

use std::collections::{BTreeMap, HashSet};

use thiserror::Error;

use crate::keys::TrustedKeys;
use crate::record::{IntentRecord, SealedRecord};
use crate::store::{Commit, ContentItem, EnvelopeItem, RunInfo, RunMeta, Store, StoreError};
use crate::verify::{CheckpointPolicy, RunReport, verify_run};

/// The most records one commit of a copy carries.
const COMMIT_RECORDS: usize = 512;

/// What copying a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// Records written to the target (0 when it had the whole run already).
    pub records: u64,
    /// Records the target had before (a resumed or repeated copy).
    pub already: u64,
    /// Content items written.
    pub content: u64,
    /// Envelopes written.
    pub envelopes: u64,
}

/// Why a run was not copied.
#[derive(Debug, Error)]
pub enum CopyError {
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run does not verify in the source: it is not copied (rows that do not read cannot
    /// be written again, and a copy must not launder a tampered run).
    #[error("the run does not verify in the source ({} finding(s)); it was not copied", .0.findings.len())]
    SourceNotIntact(Box<RunReport>),
    /// The target holds a different run under the same id.
    #[error("the target holds another run under this id: {0}")]
    TargetDiffers(String),
    /// The copy does not verify in the target.
    #[error("the copy does not verify in the target ({} finding(s))", .0.findings.len())]
    CopyNotIntact(Box<RunReport>),
}

cairn_core::error_codes! {
    CopyError {
        /// The source run does not verify.
        SOURCE_NOT_INTACT = Tamper("copy_source_not_intact");
        /// The target holds another run with the id.
        TARGET_DIFFERS = Conflict("copy_target_differs");
        /// The copy does not verify.
        COPY_NOT_INTACT = Tamper("copy_not_intact");
    }
}

impl cairn_core::ErrorCode for CopyError {
    fn error_code(&self) -> cairn_core::Code {
        match self {
            Self::Store(e) => e.error_code(),
            Self::SourceNotIntact(_) => Self::SOURCE_NOT_INTACT,
            Self::TargetDiffers(_) => Self::TARGET_DIFFERS,
            Self::CopyNotIntact(_) => Self::COPY_NOT_INTACT,
        }
    }
}

/// Copies the run `info` of `from` into `to`, checking checkpoints with `trusted`.
///
/// # Errors
/// See [`CopyError`]; a store error part way leaves a prefix of the run in the target, which
/// the next copy resumes.
pub fn copy_run(
    from: &dyn Store,
    to: &dyn Store,
    info: &RunInfo,
    trusted: &TrustedKeys,
) -> Result<Copied, CopyError> {
    let (tenant, run) = (&info.meta.tenant_id, &info.meta.run_id);
    let rows = from.rows(tenant, run)?;
    let note = from.checkpoint(tenant, run)?;
    let report = verify_run(
        tenant,
        run,
        &rows,
        note.as_deref(),
        trusted,
        CheckpointPolicy::WhenTerminated,
    );
    if !report.is_intact() {
        return Err(CopyError::SourceNotIntact(Box::new(report)));
    }
    let records: Vec<IntentRecord> = rows.into_iter().filter_map(Result::ok).collect();
    let already = match to.run(tenant, run)? {
        None => {
            to.open_run(&info.meta)?;
            0
        }
        Some(there) => resume_at(to, &there.meta, &info.meta, &records)?,
    };
    let envelopes = envelopes_by_step(from, info)?;
    let mut copied = Copied {
        records: 0,
        already: already as u64,
        content: 0,
        envelopes: 0,
    };
    let mut start = already;
    while start < records.len() {
        // A commit ends at the record an envelope was saved with, and is never longer than
        // COMMIT_RECORDS.
        let mut end = (start + COMMIT_RECORDS).min(records.len());
        if let Some((&step, _)) = envelopes.range(start as u64..end as u64).next() {
            end = usize::try_from(step).unwrap_or(end) + 1;
        }
        let chunk = records.get(start..end).unwrap_or_default();
        let sealed = chunk
            .iter()
            .map(|record| SealedRecord::from_record(record.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::Backend(format!("a record does not serialise: {e}")))?;
        let content = content_of(from, chunk)?;
        let envelope = envelopes.get(&(end as u64 - 1));
        let closes = end == records.len() && info.terminated();
        to.append(&Commit {
            records: &sealed,
            content: &content,
            checkpoint_note: if closes { note.as_deref() } else { None },
            envelope: envelope.map(|(id, supersedes, body)| EnvelopeItem {
                envelope_id: id,
                supersedes: supersedes.as_deref(),
                body,
            }),
        })?;
        copied.records += chunk.len() as u64;
        copied.content += content.len() as u64;
        copied.envelopes += u64::from(envelope.is_some());
        start = end;
    }
    let rows = to.rows(tenant, run)?;
    let there = to.checkpoint(tenant, run)?;
    let report = verify_run(
        tenant,
        run,
        &rows,
        there.as_deref(),
        trusted,
        CheckpointPolicy::WhenTerminated,
    );
    if !report.is_intact() || rows.len() != records.len() || there != note {
        return Err(CopyError::CopyNotIntact(Box::new(report)));
    }
    Ok(copied)
}

/// Where a copy into a target that has the run already goes on: after the records it has,
/// which must be the start of the source's run (same opening, same digests).
fn resume_at(
    to: &dyn Store,
    there: &RunMeta,
    here: &RunMeta,
    records: &[IntentRecord],
) -> Result<usize, CopyError> {
    if there != here {
        return Err(CopyError::TargetDiffers(String::from(
            "it was opened with another task or at another time",
        )));
    }
    let digests = to.digests(&here.tenant_id, &here.run_id)?;
    let same_start = digests.len() <= records.len()
        && digests
            .iter()
            .zip(records)
            .all(|(digest, record)| *digest == record.digest);
    if !same_start {
        return Err(CopyError::TargetDiffers(format!(
            "its {} record(s) are not the start of this run",
            digests.len()
        )));
    }
    Ok(digests.len())
}

/// The run's envelopes by the step of the boundary record each was saved with.
type EnvelopesByStep = BTreeMap<u64, (String, Option<String>, String)>;

fn envelopes_by_step(from: &dyn Store, info: &RunInfo) -> Result<EnvelopesByStep, CopyError> {
    let mut by_step = BTreeMap::new();
    for envelope in from.envelopes(&info.meta.tenant_id, &info.meta.run_id)? {
        let step = envelope.step_index;
        if by_step
            .insert(
                step,
                (envelope.envelope_id, envelope.supersedes, envelope.body),
            )
            .is_some()
        {
            return Err(CopyError::Store(StoreError::Corrupt(format!(
                "two envelopes were saved with step {step}"
            ))));
        }
    }
    Ok(by_step)
}

/// The content the records name (arguments, observations) that the source still keeps.
fn content_of(from: &dyn Store, records: &[IntentRecord]) -> Result<Vec<ContentItem>, CopyError> {
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    let digests = records.iter().flat_map(|record| {
        record
            .args
            .as_ref()
            .map(|args| args.digest)
            .into_iter()
            .chain(record.observation_digest)
    });
    for digest in digests {
        if !seen.insert(digest) {
            continue;
        }
        if let Some(kept) = from.content(&digest)? {
            items.push(ContentItem {
                digest,
                bytes: kept.bytes,
                stored_at: kept.stored_at,
                expires_at: kept.expires_at,
            });
        }
    }
    Ok(items)
}
