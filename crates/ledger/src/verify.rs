//! Chain and checkpoint verification (I-3): detects modified, deleted, inserted, reordered
//! and truncated records and records spliced in from another run, and says where.
//!
//! Verification has two passes. The fast pass streams over the rows once and confirms the
//! common case — every digest, link, index and the signed Merkle root match — doing little
//! more than hashing. Only when it finds a problem does the diagnostic pass look at the whole
//! run to name what happened and where.

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::{Digest, RunId, TenantId};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, VerifiedCheckpoint, open};
use crate::keys::TrustedKeys;
use crate::merkle::{RootBuilder, leaf_hash};
use crate::record::{IntentRecord, RecordKind};
use crate::store::StoredRow;

/// What kind of tampering (or damage) a finding reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TamperKind {
    /// A record's content no longer matches its digest, or no longer matches the digest its
    /// successor (or the signed checkpoint) committed to, or cannot be read.
    Modified,
    /// Records are missing from the middle of the run.
    Deleted,
    /// A record was added: a second record for a step, or records past the signed end.
    Inserted,
    /// Records appear out of step order.
    Reordered,
    /// The run ends before the signed checkpoint says it does.
    Truncated,
    /// A record belongs to another run or tenant.
    Spliced,
    /// The checkpoint is missing, unsigned by a trusted key, or for another run.
    Checkpoint,
}

impl TamperKind {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Modified => "modified",
            Self::Deleted => "deleted",
            Self::Inserted => "inserted",
            Self::Reordered => "reordered",
            Self::Truncated => "truncated",
            Self::Spliced => "spliced",
            Self::Checkpoint => "checkpoint",
        }
    }
}

/// One problem found, located at a step where possible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What happened.
    pub kind: TamperKind,
    /// The step where it happened (the first step of a range).
    pub step: Option<u64>,
    /// A sentence for people naming the run, the step and the evidence.
    pub message: String,
}

/// The state of a run's signed checkpoint after verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CheckpointState {
    /// Signed by a trusted key and matching the records.
    Verified {
        /// Records covered.
        size: u64,
        /// `name+keyid` of each trusted signer.
        signers: Vec<String>,
    },
    /// The run has no checkpoint (it is not closed, or the checkpoint was removed).
    Absent,
    /// The checkpoint could not be trusted or does not match.
    Failed {
        /// Why.
        reason: String,
    },
}

/// The outcome of verifying one run (read back from a service's answer by the CLI, which
/// prints it as it prints its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    /// The tenant verified.
    pub tenant_id: TenantId,
    /// The run verified.
    pub run_id: RunId,
    /// Rows examined.
    pub records: u64,
    /// Whether the run ends with its terminal record.
    pub terminated: bool,
    /// The checkpoint's state.
    pub checkpoint: CheckpointState,
    /// Every problem found, in step order; empty when intact.
    pub findings: Vec<Finding>,
}

impl RunReport {
    /// True when nothing was found.
    #[must_use]
    pub fn is_intact(&self) -> bool {
        self.findings.is_empty()
    }

    /// The proof that the run verified, or the report explaining why it did not.
    ///
    /// # Errors
    /// The report itself, when it has findings.
    pub fn into_verified(self) -> Result<VerifiedChain, Self> {
        if self.is_intact() {
            Ok(VerifiedChain { report: self })
        } else {
            Err(self)
        }
    }
}

/// Proof that a run's chain (and its checkpoint, if it has one) verified. Only
/// [`RunReport::into_verified`] on an intact report builds one.
#[derive(Debug, Clone)]
pub struct VerifiedChain {
    report: RunReport,
}

impl VerifiedChain {
    /// The intact report.
    #[must_use]
    pub const fn report(&self) -> &RunReport {
        &self.report
    }
}

/// Whether a missing checkpoint is a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointPolicy {
    /// A store: an unterminated run has no checkpoint yet; a terminated one must.
    WhenTerminated,
    /// An evidence bundle: it must carry a signed checkpoint, or truncation cannot be ruled out.
    Required,
}

/// Verifies one run's rows (in stored order) against its expected identity, its signed
/// checkpoint note if any, and the trusted keys.
#[must_use]
pub fn verify_run(
    tenant: &TenantId,
    run: &RunId,
    rows: &[StoredRow],
    checkpoint_note: Option<&str>,
    trusted: &TrustedKeys,
    policy: CheckpointPolicy,
) -> RunReport {
    let checkpoint = checkpoint_note.map(|note| open_for(note, tenant, run, trusted));
    let fast = fast_pass(tenant, run, rows);
    let terminated = fast.terminated;
    let mut findings = Vec::new();
    let mut state = CheckpointState::Absent;
    match &checkpoint {
        None => {
            if policy == CheckpointPolicy::Required || terminated {
                findings.push(Finding {
                    kind: TamperKind::Checkpoint,
                    step: rows.len().checked_sub(1).map(|s| s as u64),
                    message: format!(
                        "run `{tenant}/{run}` has no signed checkpoint{}: truncation cannot be ruled out",
                        if terminated { " although it is terminated" } else { "" }
                    ),
                });
            }
        }
        Some(Err(reason)) => {
            findings.push(Finding {
                kind: TamperKind::Checkpoint,
                step: None,
                message: format!("run `{tenant}/{run}`: {reason}"),
            });
            state = CheckpointState::Failed {
                reason: reason.clone(),
            };
        }
        Some(Ok(verified)) => {
            let cp = verified.checkpoint();
            let matches = fast.ok && cp.size == rows.len() as u64 && cp.root == fast.root;
            if matches {
                state = CheckpointState::Verified {
                    size: cp.size,
                    signers: verified
                        .signers()
                        .iter()
                        .map(crate::keys::VerifierKey::id_label)
                        .collect(),
                };
            } else {
                state = CheckpointState::Failed {
                    reason: "the records do not match the signed checkpoint".to_owned(),
                };
            }
        }
    }
    let signed = match &checkpoint {
        Some(Ok(verified)) => Some(verified.checkpoint()),
        _ => None,
    };
    let checkpoint_mismatch =
        signed.is_some_and(|cp| cp.size != rows.len() as u64 || cp.root != fast.root);
    if !fast.ok || checkpoint_mismatch {
        findings.extend(diagnose(tenant, run, rows, signed));
        findings.sort_by_key(|f| (f.step.unwrap_or(u64::MAX), f.kind));
        findings.dedup();
    }
    RunReport {
        tenant_id: tenant.clone(),
        run_id: run.clone(),
        records: rows.len() as u64,
        terminated,
        checkpoint: state,
        findings,
    }
}

fn open_for(
    note: &str,
    tenant: &TenantId,
    run: &RunId,
    trusted: &TrustedKeys,
) -> Result<VerifiedCheckpoint, String> {
    let verified = open(note, trusted).map_err(|e| format!("checkpoint rejected: {e}"))?;
    let want = Checkpoint::origin_for(tenant, run);
    if verified.checkpoint().origin != want {
        return Err(format!(
            "checkpoint is for `{}`, not `{want}`",
            verified.checkpoint().origin
        ));
    }
    Ok(verified)
}

struct FastPass {
    ok: bool,
    terminated: bool,
    root: crate::merkle::Hash,
}

/// One streaming pass: every check the common case needs, nothing more.
fn fast_pass(tenant: &TenantId, run: &RunId, rows: &[StoredRow]) -> FastPass {
    let mut builder = RootBuilder::new();
    let mut prev: Option<Digest> = None;
    let mut ok = true;
    let last = rows.len().saturating_sub(1);
    let mut terminated = false;
    for (position, row) in rows.iter().enumerate() {
        let Ok(record) = row else {
            ok = false;
            continue;
        };
        terminated = record.kind == RecordKind::Terminal;
        let good = record.tenant_id == *tenant
            && record.run_id == *run
            && record.step_index == position as u64
            && record.prev_digest == prev
            && (record.kind != RecordKind::Terminal || position == last)
            && record.check_shape().is_ok()
            && record.compute_digest().ok() == Some(record.digest);
        ok &= good;
        prev = Some(record.digest);
        builder.push(leaf_hash(record.digest.as_bytes()));
    }
    FastPass {
        ok,
        terminated,
        root: builder.root(),
    }
}

/// A record under diagnosis with what is known about it.
struct Entry<'a> {
    position: usize,
    record: &'a IntentRecord,
    self_consistent: bool,
}

/// Names every problem in a run whose fast pass failed. See the module comment.
fn diagnose(
    tenant: &TenantId,
    run: &RunId,
    rows: &[StoredRow],
    signed: Option<&Checkpoint>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut finding = |kind, step: Option<u64>, message: String| {
        out.push(Finding {
            kind,
            step,
            message,
        });
    };
    let name = format!("{tenant}/{run}");
    let mut entries = Vec::new();
    // Steps whose rows exist but cannot be read: reported as modified, never also as deleted.
    let unreadable: BTreeSet<u64> = rows
        .iter()
        .filter_map(|row| row.as_ref().err().map(|fault| fault.step_index))
        .collect();
    for (position, row) in rows.iter().enumerate() {
        match row {
            Err(fault) => finding(
                TamperKind::Modified,
                Some(fault.step_index),
                format!(
                    "run `{name}` step {}: the stored record cannot be read: {}",
                    fault.step_index, fault.detail
                ),
            ),
            Ok(record) if record.tenant_id != *tenant || record.run_id != *run => finding(
                TamperKind::Spliced,
                Some(record.step_index),
                format!(
                    "run `{name}` position {position}: a record of run `{}/{}` (its step {}) was spliced in",
                    record.tenant_id, record.run_id, record.step_index
                ),
            ),
            Ok(record) => {
                let self_consistent = record.compute_digest().ok() == Some(record.digest);
                if !self_consistent {
                    finding(
                        TamperKind::Modified,
                        Some(record.step_index),
                        format!(
                            "run `{name}` step {}: the record's content does not match its digest",
                            record.step_index
                        ),
                    );
                } else if let Err(shape) = record.check_shape() {
                    finding(
                        TamperKind::Modified,
                        Some(record.step_index),
                        format!(
                            "run `{name}` step {}: malformed record: {shape}",
                            record.step_index
                        ),
                    );
                }
                entries.push(Entry {
                    position,
                    record,
                    self_consistent,
                });
            }
        }
    }

    // Duplicated step indexes: keep the record its neighbours link to; the rest were inserted.
    let mut by_index: BTreeMap<u64, Vec<&Entry<'_>>> = BTreeMap::new();
    for entry in &entries {
        by_index
            .entry(entry.record.step_index)
            .or_default()
            .push(entry);
    }
    let mut kept: BTreeMap<u64, &Entry<'_>> = BTreeMap::new();
    for (&index, candidates) in &by_index {
        let genuine = pick_genuine(index, candidates, &by_index);
        for candidate in candidates {
            if candidate.position != genuine.position {
                finding(
                    TamperKind::Inserted,
                    Some(index),
                    format!(
                        "run `{name}` step {index}: an extra record claims this step (position {})",
                        candidate.position
                    ),
                );
            }
        }
        kept.insert(index, genuine);
    }

    // Order: every kept record should sit after the kept records of lower steps.
    let mut highest_seen: Option<u64> = None;
    let kept_positions: BTreeSet<usize> = kept.values().map(|e| e.position).collect();
    for entry in entries
        .iter()
        .filter(|e| kept_positions.contains(&e.position))
    {
        let index = entry.record.step_index;
        if let Some(high) = highest_seen
            && index < high
        {
            finding(
                TamperKind::Reordered,
                Some(index),
                format!(
                    "run `{name}` step {index} appears after step {high} (position {})",
                    entry.position
                ),
            );
        }
        highest_seen = Some(highest_seen.map_or(index, |h| h.max(index)));
    }

    // Gaps in the step sequence (an unreadable row still occupies its step).
    let occupied: BTreeSet<u64> = kept
        .keys()
        .copied()
        .chain(unreadable.iter().copied())
        .collect();
    let max_index = occupied.iter().next_back().copied();
    let mut expected = 0u64;
    for &index in &occupied {
        if index > expected {
            finding(
                TamperKind::Deleted,
                Some(expected),
                format!(
                    "run `{name}`: {} missing",
                    describe_range(expected, index - 1)
                ),
            );
        }
        expected = index.saturating_add(1);
    }

    // Links between consecutive steps that are both present.
    let mut previous: Option<(u64, &Entry<'_>)> = None;
    for (&index, entry) in &kept {
        if let Some((prev_index, prev_entry)) = previous
            && prev_index + 1 == index
            && entry.record.prev_digest != Some(prev_entry.record.digest)
            && prev_entry.self_consistent
            && entry.self_consistent
        {
            finding(
                TamperKind::Modified,
                Some(prev_index),
                format!(
                    "run `{name}` step {prev_index}: the record was rewritten; step {index} committed to a different digest"
                ),
            );
        }
        previous = Some((index, entry));
    }

    // Records after the terminal record.
    if let Some((&terminal_index, _)) = kept
        .iter()
        .find(|(_, e)| e.record.kind == RecordKind::Terminal)
    {
        for (&index, _) in kept.range(terminal_index + 1..) {
            finding(
                TamperKind::Inserted,
                Some(index),
                format!(
                    "run `{name}` step {index}: a record follows the terminal record (step {terminal_index})"
                ),
            );
        }
    }

    if let Some(cp) = signed {
        let present = max_index.map_or(0, |m| m + 1);
        if present < cp.size {
            finding(
                TamperKind::Truncated,
                Some(present),
                format!(
                    "run `{name}`: the signed checkpoint covers {} records but only {present} remain; {} missing from the end",
                    cp.size,
                    describe_range(present, cp.size - 1)
                ),
            );
        } else if present > cp.size {
            finding(
                TamperKind::Inserted,
                Some(cp.size),
                format!(
                    "run `{name}`: {} past the {} records the signed checkpoint covers",
                    describe_range(cp.size, present - 1),
                    cp.size
                ),
            );
        }
    }
    if out.is_empty() {
        // The chain is internally consistent yet does not match the signed root. Since every
        // record commits to its predecessor, a rewritten suffix must include the last record.
        let last = rows.len().checked_sub(1).map(|s| s as u64);
        out.push(Finding {
            kind: TamperKind::Modified,
            step: last,
            message: format!(
                "run `{name}` step {}: the final records were rewritten; they do not match the signed checkpoint's Merkle root",
                last.map_or_else(|| "-".to_owned(), |s| s.to_string())
            ),
        });
    }
    out
}

fn describe_range(first: u64, last: u64) -> String {
    if first == last {
        format!("step {first} is")
    } else {
        format!("steps {first}..={last} are")
    }
}

/// Among records claiming the same step, the one its neighbours link to.
fn pick_genuine<'e, 'a>(
    index: u64,
    candidates: &[&'e Entry<'a>],
    by_index: &BTreeMap<u64, Vec<&'e Entry<'a>>>,
) -> &'e Entry<'a> {
    let score = |entry: &Entry<'_>| {
        let mut score = u8::from(entry.self_consistent);
        if let Some(next) = index.checked_add(1).and_then(|n| by_index.get(&n))
            && next
                .iter()
                .any(|n| n.record.prev_digest == Some(entry.record.digest))
        {
            score += 2;
        }
        if let Some(prev) = index.checked_sub(1).and_then(|p| by_index.get(&p))
            && prev
                .iter()
                .any(|p| entry.record.prev_digest == Some(p.record.digest))
        {
            score += 1;
        }
        score
    };
    // The first of the best-scoring candidates (stable, so the earliest position wins a tie).
    let mut best = candidates.first().copied();
    for &candidate in candidates {
        if best.is_none_or(|b| score(candidate) > score(b)) {
            best = Some(candidate);
        }
    }
    #[expect(clippy::expect_used, reason = "by_index only holds non-empty groups")]
    best.expect("a step index group is never empty")
}
