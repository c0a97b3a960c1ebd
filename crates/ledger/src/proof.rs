//! Inclusion proofs: one record shown to an auditor with the audit path to the run's signed
//! Merkle root, without the rest of the run (I-3).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use cairn_core::{Code, ErrorCode};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::checkpoint::{Checkpoint, VerifiedCheckpoint, open};
use crate::keys::TrustedKeys;
use crate::merkle::{Hash, inclusion_proof, leaf_hash, verify_inclusion};
use crate::record::IntentRecord;

/// The schema tag of a proof document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProofSchema {
    /// `cairn.inclusion-proof/v1`.
    #[serde(rename = "cairn.inclusion-proof/v1")]
    V1,
}

/// A self-contained inclusion proof document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InclusionProof {
    /// Always `cairn.inclusion-proof/v1`.
    pub schema: ProofSchema,
    /// The record being proven.
    pub record: IntentRecord,
    /// Its leaf index (its step index).
    pub leaf_index: u64,
    /// The size of the tree the path leads to.
    pub tree_size: u64,
    /// The RFC 6962 audit path, base64 hashes from the leaf upwards.
    pub audit_path: Vec<String>,
    /// The run's signed checkpoint note.
    pub checkpoint: String,
}

/// The longest audit path a proof may hold: RFC 6962 paths have one hash per level of the
/// tree, and a tree of up to 2^64 records (tree sizes are 64-bit) has at most 64 levels.
pub const MAX_AUDIT_PATH: usize = 64;

/// The largest proof document accepted, in bytes: one record, one signed checkpoint and at
/// most [`MAX_AUDIT_PATH`] hashes fit in far less.
pub const MAX_PROOF_BYTES: u64 = 1 << 20;

/// Errors building or checking a proof.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ProofError {
    /// The step is not in the run's checkpointed tree.
    #[error("step {step} is not covered by the checkpoint (size {size})")]
    NotCovered {
        /// The step asked for.
        step: u64,
        /// The checkpoint's size.
        size: u64,
    },
    /// The record's content does not match its digest.
    #[error("the proven record's content does not match its digest")]
    RecordModified,
    /// The checkpoint is not trusted or not for this record's run.
    #[error("checkpoint rejected: {0}")]
    Checkpoint(String),
    /// The audit path does not lead to the signed root.
    #[error("the audit path does not lead to the signed root: {0}")]
    PathMismatch(String),
    /// A path element is not a base64 SHA-256 hash.
    #[error("audit_path[{index}] is not a base64 SHA-256 hash")]
    BadHash {
        /// Position in the path.
        index: usize,
    },
    /// The audit path is longer than any tree this format describes can need.
    #[error(
        "the audit path holds {len} hashes; an RFC 6962 audit path has at most {MAX_AUDIT_PATH} (one per level of a tree of up to 2^64 records)"
    )]
    PathTooLong {
        /// How many hashes it holds.
        len: usize,
    },
    /// The proof's index or size disagrees with the record or checkpoint.
    #[error("{0}")]
    Inconsistent(String),
}

cairn_core::error_codes! {
    ProofError {
        /// The step is beyond what the checkpoint covers.
        STEP_NOT_COVERED = Invalid("step_not_covered");
        /// The record does not hash to the leaf the proof proves.
        RECORD_MODIFIED = Tamper("record_modified");
        /// The checkpoint in the proof does not verify.
        CHECKPOINT_REJECTED = Tamper("checkpoint_rejected");
        /// The inclusion path does not lead to the checkpoint's root.
        PROOF_MISMATCH = Tamper("proof_mismatch");
        /// The proof document is not of the right shape.
        PROOF_MALFORMED = Invalid("proof_malformed");
        /// The proof's parts contradict each other.
        PROOF_INCONSISTENT = Tamper("proof_inconsistent");
    }
}

impl ErrorCode for ProofError {
    fn error_code(&self) -> Code {
        match self {
            Self::NotCovered { .. } => Self::STEP_NOT_COVERED,
            Self::RecordModified => Self::RECORD_MODIFIED,
            Self::Checkpoint(_) => Self::CHECKPOINT_REJECTED,
            Self::PathMismatch(_) => Self::PROOF_MISMATCH,
            Self::BadHash { .. } | Self::PathTooLong { .. } => Self::PROOF_MALFORMED,
            Self::Inconsistent(_) => Self::PROOF_INCONSISTENT,
        }
    }
}

/// Builds the proof for `record` from the digests of every record in the run, in step order,
/// and the run's checkpoint note (whose size must equal the number of digests).
///
/// # Errors
/// [`ProofError::NotCovered`] if the record is outside the tree.
pub fn build_proof(
    record: IntentRecord,
    run_digests: &[cairn_core::Digest],
    checkpoint_note: String,
) -> Result<InclusionProof, ProofError> {
    let leaves: Vec<Hash> = run_digests
        .iter()
        .map(|d| leaf_hash(d.as_bytes()))
        .collect();
    let size = leaves.len() as u64;
    let path = inclusion_proof(&leaves, record.step_index).map_err(|_| ProofError::NotCovered {
        step: record.step_index,
        size,
    })?;
    Ok(InclusionProof {
        schema: ProofSchema::V1,
        leaf_index: record.step_index,
        tree_size: size,
        audit_path: path.iter().map(|h| STANDARD.encode(h)).collect(),
        record,
        checkpoint: checkpoint_note,
    })
}

/// Checks a proof: the record matches its digest, the checkpoint (the proof's own, or
/// `external_checkpoint` held by the auditor) is signed by a trusted key and is for the
/// record's run, and the audit path leads from the record to the signed root.
///
/// # Errors
/// The first [`ProofError`] found.
pub fn verify_proof(
    proof: &InclusionProof,
    external_checkpoint: Option<&str>,
    trusted: &TrustedKeys,
) -> Result<VerifiedCheckpoint, ProofError> {
    let record = &proof.record;
    if record.compute_digest().ok() != Some(record.digest) {
        return Err(ProofError::RecordModified);
    }
    let note = external_checkpoint.unwrap_or(&proof.checkpoint);
    let verified = open(note, trusted).map_err(|e| ProofError::Checkpoint(e.to_string()))?;
    let cp = verified.checkpoint();
    let origin = Checkpoint::origin_for(&record.tenant_id, &record.run_id);
    if cp.origin != origin {
        return Err(ProofError::Checkpoint(format!(
            "it is for `{}`, not `{origin}`",
            cp.origin
        )));
    }
    if proof.leaf_index != record.step_index {
        return Err(ProofError::Inconsistent(format!(
            "leaf_index {} differs from the record's step_index {}",
            proof.leaf_index, record.step_index
        )));
    }
    if proof.tree_size != cp.size {
        return Err(ProofError::Inconsistent(format!(
            "tree_size {} differs from the checkpoint's size {}",
            proof.tree_size, cp.size
        )));
    }
    if proof.audit_path.len() > MAX_AUDIT_PATH {
        return Err(ProofError::PathTooLong {
            len: proof.audit_path.len(),
        });
    }
    let mut path = Vec::with_capacity(proof.audit_path.len());
    for (index, text) in proof.audit_path.iter().enumerate() {
        let bytes = STANDARD
            .decode(text)
            .map_err(|_| ProofError::BadHash { index })?;
        let hash: Hash = bytes
            .try_into()
            .map_err(|_| ProofError::BadHash { index })?;
        path.push(hash);
    }
    verify_inclusion(
        &leaf_hash(record.digest.as_bytes()),
        proof.leaf_index,
        cp.size,
        &path,
        &cp.root,
    )
    .map_err(|e| ProofError::PathMismatch(e.to_string()))?;
    Ok(verified)
}
