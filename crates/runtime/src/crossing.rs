//! One compaction read for an investigator (`cairn ledger boundary`, the console's boundary
//! page): what the durable record says at the boundary — the envelope saved with the
//! `context_compaction` record, trusted only while it matches the digest that record holds —
//! beside the summary the model was given (retained content, re-hashed, and never more than
//! a derived, untrusted view), and what the run's records say happened after it: the
//! rehydration with its status and reason, a failed validation, a reconciliation.

use cairn_core::{Digest, RunId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::record::IntentRecord;

use crate::content::{Retained, retained};
use crate::error::RuntimeError;

/// The most records read after a compaction for what followed it.
pub const AFTER_SCAN: u64 = 500;

/// The boundary events that say how a run came back from a compaction.
const AFTER_EVENTS: [&str; 3] = [
    "context_rehydration",
    "continuity_validation_failed",
    "reconciliation",
];

/// The envelope saved with a compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum SavedEnvelope {
    /// Its JSON, which hashes to the digest the compaction record holds.
    Bound(serde_json::Value),
    /// Stored text that does not hash to that digest (or does not parse): the store was
    /// altered, and the envelope is not trusted.
    Altered {
        /// What the stored text hashes to.
        actual: Digest,
    },
    /// No envelope is stored for this compaction.
    Missing,
}

/// A compaction and what followed it.
#[derive(Debug, Clone)]
pub struct Crossing {
    /// The `context_compaction` record.
    pub compaction: IntentRecord,
    /// Whether that record's digest matches its content.
    pub digest_matches: bool,
    /// The envelope saved with it.
    pub envelope: SavedEnvelope,
    /// The summary the model was given, re-hashed (`None`: the record names none).
    pub summary: Option<Retained>,
    /// The rehydrations, failed validations and reconciliations recorded after it, before
    /// the next compaction (at most [`AFTER_SCAN`] records read).
    pub after: Vec<IntentRecord>,
    /// The step the records after it were read up to (exclusive).
    pub read_to: u64,
    /// The run's compaction before this one.
    pub previous: Option<u64>,
    /// The run's compaction after this one.
    pub next: Option<u64>,
}

/// The compaction recorded at `step` of `tenant`'s `run`; `None` when the run has no such
/// record.
///
/// # Errors
/// [`RuntimeError::InvalidInput`] (field `step`) when the record at `step` is not a
/// compaction or does not read; store failures.
pub fn crossing(
    store: &dyn Store,
    tenant: &TenantId,
    run: &RunId,
    step: u64,
    records: u64,
) -> Result<Option<Crossing>, RuntimeError> {
    let Some(row) = store.record(tenant, run, step)? else {
        return Ok(None);
    };
    let compaction = match row {
        Ok(record)
            if record
                .boundary
                .as_ref()
                .is_some_and(|b| b.event.as_str() == "context_compaction") =>
        {
            record
        }
        Ok(_) => {
            return Err(RuntimeError::InvalidInput {
                field: "step",
                reason: format!("step {step} of run `{run}` is not a compaction"),
            });
        }
        Err(fault) => {
            return Err(RuntimeError::InvalidInput {
                field: "step",
                reason: format!(
                    "step {step} of run `{run}` does not read ({}): verify the run",
                    fault.detail
                ),
            });
        }
    };
    let digest_matches = compaction.compute_digest().ok() == Some(compaction.digest);
    let boundary = compaction.boundary.as_ref();
    let bound = boundary.and_then(|b| b.envelope_digest);
    let envelopes = store.envelopes(tenant, run)?;
    let envelope = match envelopes.iter().find(|e| e.step_index == step) {
        None => SavedEnvelope::Missing,
        Some(saved) => {
            let actual = Digest::of(saved.body.as_bytes());
            match serde_json::from_str(&saved.body) {
                Ok(value) if Some(actual) == bound => SavedEnvelope::Bound(value),
                _ => SavedEnvelope::Altered { actual },
            }
        }
    };
    let summary = boundary
        .and_then(|b| b.summary_digest)
        .map(|digest| retained(store, &digest))
        .transpose()?;
    // A compaction's envelope supersedes none; a reconciliation's supersedes the one before.
    let compactions = envelopes.iter().filter(|e| e.supersedes.is_none());
    let previous = compactions
        .clone()
        .map(|e| e.step_index)
        .filter(|s| *s < step)
        .max();
    let next = compactions
        .map(|e| e.step_index)
        .filter(|s| *s > step)
        .min();
    let read_to = next
        .unwrap_or(records)
        .min(records)
        .min(step.saturating_add(1).saturating_add(AFTER_SCAN));
    let mut after = Vec::new();
    for later in step.saturating_add(1)..read_to {
        if let Some(Ok(record)) = store.record(tenant, run, later)?
            && record
                .boundary
                .as_ref()
                .is_some_and(|b| AFTER_EVENTS.contains(&b.event.as_str()))
        {
            after.push(record);
        }
    }
    Ok(Some(Crossing {
        compaction,
        digest_matches,
        envelope,
        summary,
        after,
        read_to,
        previous,
        next,
    }))
}
