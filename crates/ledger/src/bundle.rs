//! Evidence bundles: a run exported as JSON lines — its records in step order, then one
//! line holding the signed checkpoint — verifiable offline against trusted public keys.
//!
//! The same file is the evaluator's step sequence (I-5): each record line carries the tool,
//! the decision and the admitting rule ids.

use cairn_core::{Code, ErrorCode, RunId, TenantId};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::record::IntentRecord;
use crate::store::{RowFault, StoredRow};
use crate::verify::CheckpointPolicy;

/// The longest line a bundle may have; longer lines are reported, not parsed.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The schema tag of a bundle's checkpoint line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointSchema {
    /// `cairn.checkpoint/v1`.
    #[serde(rename = "cairn.checkpoint/v1")]
    V1,
}

/// The last line of a bundle: the run's signed checkpoint note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointLine {
    /// Always `cairn.checkpoint/v1`.
    pub schema: CheckpointSchema,
    /// The run's tenant (a hint; the signed origin line is authoritative).
    pub tenant_id: TenantId,
    /// The run (a hint; the signed origin line is authoritative).
    pub run_id: RunId,
    /// The C2SP signed note whose body is the tlog checkpoint.
    pub note: String,
}

impl CheckpointLine {
    /// Builds the line for a run's note.
    #[must_use]
    pub fn new(tenant_id: TenantId, run_id: RunId, note: String) -> Self {
        Self {
            schema: CheckpointSchema::V1,
            tenant_id,
            run_id,
            note,
        }
    }

    /// The line as compact JSON without a trailing newline.
    #[must_use]
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A bundle read back: the rows in file order and the checkpoint, if present.
#[derive(Debug)]
pub struct ParsedBundle {
    /// The run's tenant, from the checkpoint line or else the first readable record.
    pub tenant_id: TenantId,
    /// The run, likewise.
    pub run_id: RunId,
    /// Every record line in file order; unreadable lines are faults, not errors.
    pub rows: Vec<StoredRow>,
    /// The signed checkpoint note.
    pub checkpoint_note: Option<String>,
}

impl ParsedBundle {
    /// Verifies the bundle against `trusted`: its chain, its records and its signed
    /// checkpoint, which an evidence bundle must carry ([`CheckpointPolicy::Required`]).
    #[must_use]
    pub fn verify(&self, trusted: &crate::keys::TrustedKeys) -> crate::verify::RunReport {
        crate::verify::verify_run(
            &self.tenant_id,
            &self.run_id,
            &self.rows,
            self.checkpoint_note.as_deref(),
            trusted,
            CheckpointPolicy::Required,
        )
    }
}

/// Errors that make a file unusable as a bundle at all. Each is evidence of tampering or
/// corruption of an exported bundle (the CLI exits 5 on them), and names its line.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BundleError {
    /// No record and no checkpoint.
    #[error("the bundle has no records and no checkpoint")]
    Empty,
    /// Lines, none of which reads as a record or a checkpoint.
    #[error("no line of the bundle reads as a record or a checkpoint; the first: {first}")]
    Unreadable {
        /// What is wrong with the first line (its number included).
        first: String,
    },
    /// More than one checkpoint line.
    #[error("line {line} (after step {after_step}): a second checkpoint line")]
    DuplicateCheckpoint {
        /// 1-based line number.
        line: usize,
        /// How many record lines came before it.
        after_step: u64,
    },
    /// The checkpoint line is not valid.
    #[error("line {line} (after step {after_step}): invalid checkpoint line: {reason}")]
    InvalidCheckpoint {
        /// 1-based line number.
        line: usize,
        /// How many record lines came before it.
        after_step: u64,
        /// Why.
        reason: String,
    },
}

cairn_core::error_codes! {
    BundleError {
        /// A bundle with no records.
        BUNDLE_EMPTY = Tamper("bundle_empty");
        /// A bundle line that does not parse.
        BUNDLE_UNREADABLE = Tamper("bundle_unreadable");
        /// Two checkpoints for one run.
        BUNDLE_DUPLICATE_CHECKPOINT = Tamper("bundle_duplicate_checkpoint");
        /// A checkpoint line that does not parse.
        BUNDLE_INVALID_CHECKPOINT = Tamper("bundle_invalid_checkpoint");
    }
}

impl ErrorCode for BundleError {
    fn error_code(&self) -> Code {
        match self {
            Self::Empty => Self::BUNDLE_EMPTY,
            Self::Unreadable { .. } => Self::BUNDLE_UNREADABLE,
            Self::DuplicateCheckpoint { .. } => Self::BUNDLE_DUPLICATE_CHECKPOINT,
            Self::InvalidCheckpoint { .. } => Self::BUNDLE_INVALID_CHECKPOINT,
        }
    }
}

/// A run's bundle: each row as a JSON line in step order, then the checkpoint line when the
/// run has its signed checkpoint `note`.
///
/// # Errors
/// The first row that does not read back (a bundle never leaves a record out silently).
pub fn write_bundle(
    tenant: &TenantId,
    run: &RunId,
    rows: &[StoredRow],
    note: Option<String>,
) -> Result<String, RowFault> {
    let mut text = String::with_capacity(rows.len() * 700);
    for row in rows {
        let record = row.as_ref().map_err(Clone::clone)?;
        let line = record.to_json_line().map_err(|e| RowFault {
            step_index: record.step_index,
            detail: e.to_string(),
        })?;
        text.push_str(&line);
        text.push('\n');
    }
    if let Some(note) = note {
        text.push_str(&CheckpointLine::new(tenant.clone(), run.clone(), note).to_json_line());
        text.push('\n');
    }
    Ok(text)
}

/// Parses a bundle's text; see [`parse_bundle_bytes`].
///
/// # Errors
/// As [`parse_bundle_bytes`].
pub fn parse_bundle(text: &str) -> Result<ParsedBundle, BundleError> {
    parse_bundle_bytes(text.as_bytes())
}

/// The schema tag of a line, when it is a JSON object with a string `schema` member.
#[derive(Deserialize)]
struct Probe {
    schema: Option<serde_json::Value>,
}

/// Parses a bundle. Lines that are not valid records — not UTF-8, not JSON, not a record —
/// become [`RowFault`]s at their position, so that verification reports them where they are
/// instead of refusing the whole file. A line is the checkpoint line when it parses as a JSON
/// object whose `schema` is `cairn.checkpoint/v1` — decided by parsing, so a record whose
/// tool is named `cairn.checkpoint/v1` is still a record.
///
/// # Errors
/// [`BundleError`] when the file cannot be a bundle at all (no line, a second or an invalid
/// checkpoint line), naming the line.
pub fn parse_bundle_bytes(bytes: &[u8]) -> Result<ParsedBundle, BundleError> {
    let mut rows = Vec::new();
    let mut checkpoint: Option<CheckpointLine> = None;
    let lines = bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    for (number, line) in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let position = rows.len() as u64;
        let fault = |detail: String| {
            Err(RowFault {
                step_index: position,
                detail,
            })
        };
        if line.len() > MAX_LINE_BYTES {
            rows.push(fault(format!(
                "line {number} is longer than {MAX_LINE_BYTES} bytes"
            )));
            continue;
        }
        let line = match std::str::from_utf8(line) {
            Ok(line) => line,
            Err(e) => {
                rows.push(fault(format!("line {number} is not UTF-8: {e}")));
                continue;
            }
        };
        match serde_json::from_str::<IntentRecord>(line) {
            Ok(record) => rows.push(Ok(record)),
            Err(record_error) => {
                let is_checkpoint = serde_json::from_str::<Probe>(line).is_ok_and(|probe| {
                    probe.schema.as_ref().and_then(serde_json::Value::as_str)
                        == Some("cairn.checkpoint/v1")
                });
                if !is_checkpoint {
                    rows.push(fault(format!(
                        "line {number} is not a valid cairn.intent/v1 record: {record_error}"
                    )));
                    continue;
                }
                match serde_json::from_str::<CheckpointLine>(line) {
                    Ok(parsed) if checkpoint.is_none() => checkpoint = Some(parsed),
                    Ok(_) => {
                        return Err(BundleError::DuplicateCheckpoint {
                            line: number,
                            after_step: position,
                        });
                    }
                    Err(e) => {
                        return Err(BundleError::InvalidCheckpoint {
                            line: number,
                            after_step: position,
                            reason: e.to_string(),
                        });
                    }
                }
            }
        }
    }
    let (tenant_id, run_id) = match (&checkpoint, rows.iter().find_map(|r| r.as_ref().ok())) {
        (Some(cp), _) => (cp.tenant_id.clone(), cp.run_id.clone()),
        (None, Some(record)) => (record.tenant_id.clone(), record.run_id.clone()),
        (None, None) => {
            return Err(match rows.first() {
                Some(Err(fault)) => BundleError::Unreadable {
                    first: fault.detail.clone(),
                },
                _ => BundleError::Empty,
            });
        }
    };
    Ok(ParsedBundle {
        tenant_id,
        run_id,
        rows,
        checkpoint_note: checkpoint.map(|c| c.note),
    })
}
