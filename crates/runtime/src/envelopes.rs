//! The envelopes saved at a run's boundaries: the latest one, trusted only while it matches
//! the digest its boundary record holds, and the stored form of a new one.

use cairn_continuity::ValidatedEnvelope;
use cairn_core::canonical::jcs_value;
use cairn_core::{Digest, RunId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::store::StoredEnvelope;
use serde_json::Value;

use crate::error::RuntimeError;

/// The run's latest envelope with its JSON when it still matches the digest its boundary
/// record holds (`None` for the JSON when it does not: it must not be trusted).
///
/// # Errors
/// Store failures.
pub fn load_bound_envelope(
    store: &dyn Store,
    tenant: &TenantId,
    run: &RunId,
) -> Result<Option<(StoredEnvelope, Option<Value>)>, RuntimeError> {
    let Some(saved) = store.latest_envelope(tenant, run)? else {
        return Ok(None);
    };
    let bound = store
        .record(tenant, run, saved.step_index)?
        .and_then(Result::ok)
        .and_then(|r| r.boundary)
        .and_then(|b| b.envelope_digest);
    let value = (bound == Some(Digest::of(saved.body.as_bytes())))
        .then(|| serde_json::from_str(&saved.body).ok())
        .flatten();
    Ok(Some((saved, value)))
}

/// The envelope's stored text (its RFC 8785 form) and that text's digest, which the
/// boundary record saved with it carries.
pub(crate) fn canonical_body(
    envelope: &ValidatedEnvelope,
) -> Result<(String, Digest), RuntimeError> {
    let bytes = jcs_value(&envelope.to_json())?;
    let digest = Digest::of(&bytes);
    let body = String::from_utf8(bytes).map_err(|e| RuntimeError::InvalidInput {
        field: "envelope",
        reason: e.to_string(),
    })?;
    Ok((body, digest))
}

/// Every finding of a refused envelope or state, as one invalid-input error.
pub(crate) fn invalid(field: &'static str, findings: &[cairn_continuity::Finding]) -> RuntimeError {
    RuntimeError::InvalidInput {
        field,
        reason: findings
            .iter()
            .map(|f| format!("{}: {}", f.path, f.message))
            .collect::<Vec<_>>()
            .join("; "),
    }
}
