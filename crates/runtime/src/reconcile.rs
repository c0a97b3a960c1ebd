//! Reconciliation (SPEC E-5): the outcome of a side effect left unknown (see
//! [`crate::effects`]) is observed in the external system, recorded with its evidence, and the
//! capability it blocked is unblocked. When the run's latest envelope was saved with that
//! effect unresolved, a superseding envelope is saved with the record.

use std::sync::Arc;

use cairn_core::{Clock, RunId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::record::{BoundaryEvent, Label};
use cairn_ledger::store::EnvelopeItem;

use crate::effects::{RECONCILIATION, Unresolved};
use crate::envelopes::{canonical_body, invalid, load_bound_envelope};
use crate::error::{RuntimeError, label};
use crate::executor::Executor;
use crate::recorder::{Durability, Receipt, Recorder, RecorderOptions};

/// What a reconciliation observed in the external system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservedOutcome {
    /// The effect happened (the ticket exists).
    Applied,
    /// The effect did not happen (nothing was created).
    NotExecuted,
}

impl ObservedOutcome {
    /// The side-effect status it resolves to.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::NotExecuted => "not_executed",
        }
    }
}

impl std::str::FromStr for ObservedOutcome {
    type Err = RuntimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "applied" | "side_effect_committed" => Ok(Self::Applied),
            "not_executed" | "not_started" => Ok(Self::NotExecuted),
            other => Err(RuntimeError::InvalidInput {
                field: "outcome",
                reason: format!("expected `applied` or `not_executed`, got `{other}`"),
            }),
        }
    }
}

/// The boundary event recording a reconciliation of `key`.
///
/// # Errors
/// When the key or the evidence reference is not a valid label.
pub fn reconciliation_event(
    key: &str,
    outcome: ObservedOutcome,
    evidence: &str,
) -> Result<BoundaryEvent, RuntimeError> {
    let mut event = BoundaryEvent::new(Label::new(RECONCILIATION)?);
    event.idempotency_key = Some(Label::new(key)?);
    event.side_effect_status = Some(Label::new(outcome.as_str())?);
    event.evidence_ref = Some(Label::new(evidence)?);
    Ok(event)
}

impl Executor {
    /// Records the reconciliation of an unknown side effect — the outcome observed in the
    /// external system and the evidence (for example its lookup by idempotency key) — and
    /// unblocks the capability.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidInput`] when `key` is not an unresolved side effect of this run.
    pub fn reconcile(
        &mut self,
        key: &str,
        outcome: ObservedOutcome,
        evidence: &str,
    ) -> Result<Receipt, RuntimeError> {
        if !self.unresolved.contains(key) {
            return Err(RuntimeError::InvalidInput {
                field: "key",
                reason: format!("`{key}` is not an unresolved side effect of this run"),
            });
        }
        let receipt = record_reconciliation(self.recorder(), key, outcome, evidence)?;
        self.unresolved.resolve(key);
        Ok(receipt)
    }
}

/// Records a reconciliation (E-5). When the run's latest envelope was saved with `key`
/// unresolved, a superseding envelope — the observed outcome, a new checkpoint — is saved with
/// the reconciliation record and linked to the one it replaces, so that rehydration loads it;
/// a stale envelope compared with the reconciled state would fail with
/// `side_effect_status_changed`.
///
/// # Errors
/// Store failures; an envelope that cannot be rebuilt valid.
fn record_reconciliation(
    recorder: &mut Recorder,
    key: &str,
    outcome: ObservedOutcome,
    evidence: &str,
) -> Result<Receipt, RuntimeError> {
    let mut event = reconciliation_event(key, outcome, evidence)?;
    let tenant = recorder.tenant_id().clone();
    let run = recorder.run_id().clone();
    let latest = load_bound_envelope(recorder.store(), &tenant, &run)?;
    let Some((saved, Some(mut value))) = latest else {
        return recorder.record_boundary(event, None);
    };
    if value.get("idempotency_key").and_then(|k| k.as_str()) != Some(key) {
        return recorder.record_boundary(event, None);
    }
    let step = recorder.next_step();
    let envelope_id = format!("ce-{run}-{step}");
    if let Some(object) = value.as_object_mut() {
        object.insert("envelope_id".to_owned(), serde_json::json!(envelope_id));
        object.insert(
            "side_effect_status".to_owned(),
            serde_json::json!(outcome.as_str()),
        );
        object.insert(
            "checkpoint_ref".to_owned(),
            serde_json::json!(format!("checkpoint:{run}:{step}")),
        );
    }
    let validated =
        cairn_continuity::validate_envelope(&value).map_err(|f| invalid("envelope", &f))?;
    let (body, digest) = canonical_body(&validated)?;
    event.envelope_id = Some(label(&envelope_id)?);
    event.envelope_digest = Some(digest);
    event.supersedes_envelope_id = Some(label(&saved.envelope_id)?);
    recorder.record_boundary_with_envelope(
        event,
        None,
        EnvelopeItem {
            envelope_id: &envelope_id,
            supersedes: Some(&saved.envelope_id),
            body: &body,
        },
    )
}
/// Reconciles an unknown side effect of a stored run from outside the agent process (the
/// `cairn reconcile` command): resumes the run's writer, checks that `key` is unresolved, and
/// records the observed outcome with its evidence.
///
/// # Errors
/// [`RuntimeError::InvalidInput`] when `key` is not unresolved in that run; store failures.
pub fn reconcile_run(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    tenant: &TenantId,
    run: &RunId,
    key: &str,
    outcome: ObservedOutcome,
    evidence: &str,
) -> Result<Receipt, RuntimeError> {
    let mut recorder = Recorder::resume(
        store,
        clock,
        tenant,
        run,
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )?;
    reconcile_with(&mut recorder, key, outcome, evidence)
}

/// Records the reconciliation of `key` with the writer of its run the caller holds — the
/// hooks, when the host itself reports how a call whose outcome was unknown ended (a
/// background task's end) — after checking against the run's records that `key` is
/// unresolved.
///
/// # Errors
/// [`RuntimeError::InvalidInput`] when `key` is not unresolved in the run; store failures.
pub fn reconcile_with(
    recorder: &mut Recorder,
    key: &str,
    outcome: ObservedOutcome,
    evidence: &str,
) -> Result<Receipt, RuntimeError> {
    let run = recorder.run_id().clone();
    let rows = recorder.store().rows(recorder.tenant_id(), &run)?;
    let unresolved = Unresolved::from_rows(&rows);
    if !unresolved.contains(key) {
        let open: Vec<&str> = unresolved.iter().map(|(k, _)| k).collect();
        return Err(RuntimeError::InvalidInput {
            field: "key",
            reason: if open.is_empty() {
                format!("run `{run}` has no unresolved side effect (`{key}` is not one)")
            } else {
                format!(
                    "`{key}` is not unresolved in run `{run}`; unresolved: {}",
                    open.join(", ")
                )
            },
        });
    }
    record_reconciliation(recorder, key, outcome, evidence)
}
