//! The boundary protocol, before the boundary (SPEC E-3): stop at a safe point and flush,
//! record the control state without summarising it — identity, policy, capability, approval,
//! idempotency, side effect, checkpoint, sandbox, budget — bind the derived summary to the
//! source events by its digest, and write the envelope together with the `context_compaction`
//! record that names and digests it.
//!
//! After the boundary (E-4), [`Executor::rehydrate`] loads the latest envelope from the store —
//! never from the summary — checks it against the digest its record holds, derives the current
//! durable state the same way, decides, and records `context_rehydration` or
//! `continuity_validation_failed` (nothing while blocked on reconciliation).
//!
//! What a session knows that Cairn's records do not (who delegated what, the approval in
//! force, the objective and the references to exact constraints) comes in as
//! [`SessionFacts`]; everything else is derived from the run's durable records.

use cairn_continuity::{
    ApprovalStatus, AuthorizationMode, ContinuityDecision, ContinuityEnvelope, ContinuityState,
    ContinuityStatus, EnvelopeSchemaVersion, EventRef, ReauthorizationRequired, SideEffectStatus,
    SourceEventRange, ValidatedEnvelope, summary_sha256,
};

use cairn_core::{Digest, Timestamp};
use cairn_ledger::record::{BoundaryEvent, EventRange};
use cairn_ledger::store::EnvelopeItem;

use crate::approvals::{ApprovalBook, ApprovalId};
use crate::effects::reconciled_outcome;
use crate::envelopes::{canonical_body, invalid, load_bound_envelope};
use crate::error::{RuntimeError, label};
use crate::executor::Executor;
use crate::recorder::Receipt;

/// An approval in force for the capability in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalFacts {
    /// The approval's id.
    pub id: String,
    /// The digest of the one action it approves.
    pub action_digest: Digest,
    /// When it expires.
    pub expires_at: Timestamp,
    /// Its state in the approval system now (active, revoked, …).
    pub status: ApprovalStatus,
}

impl ApprovalFacts {
    /// What `approval` is at `now`, as a continuity envelope and state carry it: its id, the
    /// action it binds, until when it admits calls (until when it may be decided, before a
    /// person decided) and its status.
    #[must_use]
    pub fn of(approval: &crate::approvals::Approval, now: Timestamp) -> Self {
        Self {
            id: approval.request.id.as_str().to_owned(),
            action_digest: approval.request.action_digest,
            expires_at: approval.expires_at().unwrap_or(approval.request.expires_at),
            status: approval.state(now).status(),
        }
    }
}

/// The session's control facts that the run's records do not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFacts {
    /// The host's session id.
    pub session_id: String,
    /// Who the run acts for.
    pub principal_id: String,
    /// How authority was granted.
    pub authorization_mode: AuthorizationMode,
    /// Who delegated (required when user-delegated).
    pub delegated_principal_id: Option<String>,
    /// What was delegated (required when user-delegated).
    pub delegated_scope: Option<String>,
    /// The capability in flight.
    pub capability_name: String,
    /// Its version.
    pub capability_version: String,
    /// The approval in force, if any. `None` lets the runtime read it from the run's
    /// records: at a compaction the approval in force then, after it the live state of the
    /// approval the envelope carried.
    pub approval: Option<ApprovalFacts>,
    /// The task's objective, as the user authorised it.
    pub objective: String,
    /// References to the exact constraints (kept in the store, never copied here).
    pub exact_constraint_refs: Vec<String>,
    /// Work that must not be forgotten.
    pub pending_obligations: Vec<String>,
    /// The sandbox snapshot to resume from, if any.
    pub sandbox_snapshot_ref: Option<String>,
    /// What is left of the budget, if tracked.
    pub budget_remaining: Option<u64>,
}

/// What a compaction wrote.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The `context_compaction` record.
    pub receipt: Receipt,
    /// The envelope saved with it.
    pub envelope: ValidatedEnvelope,
    /// The digest of the envelope's RFC 8785 form, recorded in the boundary record.
    pub envelope_digest: Digest,
}

/// The classes of control state an envelope preserves (E-8: classes, never values).
const PRESERVED: [&str; 9] = [
    "identity",
    "policy",
    "capability",
    "approval",
    "idempotency",
    "side_effect",
    "checkpoint",
    "sandbox",
    "budget",
];

/// The policy-set version an envelope and a current state record.
fn policy_version(gate: &dyn crate::Gate) -> String {
    gate.policy_set_version()
        .map_or_else(|| "unversioned".to_owned(), |d| d.to_string())
}

impl Executor {
    /// Prepares a boundary (E-3): flushes, builds the envelope from the durable state and
    /// `facts`, binds `summary` by digest to the events it was derived from, and writes the
    /// envelope with its `context_compaction` record in one commit.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidInput`] naming every finding when the facts do not make a valid
    /// envelope (for example a user-delegated session without its delegation); store failures.
    pub fn compact(
        &mut self,
        facts: &SessionFacts,
        summary: &str,
        trigger: &str,
    ) -> Result<Compaction, RuntimeError> {
        self.recorder().flush()?;
        let step = self.recorder().next_step();
        let run = self.recorder().run_id().to_string();
        let tenant = self.recorder().tenant_id().clone();
        let (idempotency_key, side_effect_status) = match self.unresolved().iter().next() {
            Some((key, _)) => (Some(key.to_owned()), SideEffectStatus::SideEffectUnknown),
            None => (None, SideEffectStatus::NotExecuted),
        };
        let policy_version = policy_version(self.gate());
        let summary_digest = summary_sha256(summary);
        // The summary is user content: only its digest goes into the envelope and the record;
        // the text goes to the content store under the run's retention, and nowhere else.
        let stripped = cairn_continuity::strip_summary(summary);
        if !stripped.is_empty() {
            self.recorder()
                .keep_content(summary_digest, stripped.as_bytes().to_vec());
        }
        let envelope_id = format!("ce-{run}-{step}");
        let approval = match &facts.approval {
            Some(approval) => Some(approval.clone()),
            None => {
                let recorder = self.recorder_ref();
                let rows = recorder.store().rows(&tenant, recorder.run_id())?;
                let now = recorder.now();
                let book = ApprovalBook::from_rows(&rows);
                // A session whose authority is a person's approval binds the latest one even
                // when none is in force: rehydration then finds it not active, and the next
                // consequential call waits for a person again.
                book.in_force(now)
                    .or_else(|| {
                        (facts.authorization_mode == AuthorizationMode::HumanApproved)
                            .then(|| book.latest())
                            .flatten()
                    })
                    .map(|a| ApprovalFacts::of(a, now))
            }
        };
        let envelope = ContinuityEnvelope {
            schema_version: EnvelopeSchemaVersion::default(),
            envelope_id: envelope_id.clone(),
            session_id: facts.session_id.clone(),
            source_trace_id: format!("trace:{run}"),
            reset_reason: "context_compaction".to_owned(),
            objective: facts.objective.clone(),
            exact_constraint_refs: facts.exact_constraint_refs.clone(),
            pending_obligations: facts.pending_obligations.clone(),
            tenant_id: tenant,
            principal_id: facts.principal_id.clone(),
            authorization_mode: facts.authorization_mode,
            delegated_principal_id: facts.delegated_principal_id.clone(),
            delegated_scope: facts.delegated_scope.clone(),
            policy_version,
            capability_name: facts.capability_name.clone(),
            capability_version: facts.capability_version.clone(),
            approval_id: approval.as_ref().map(|a| a.id.clone()),
            action_digest: approval.as_ref().map(|a| a.action_digest),
            approval_expires_at: approval.as_ref().map(|a| a.expires_at),
            idempotency_key,
            side_effect_status,
            checkpoint_ref: format!("checkpoint:{run}:{step}"),
            sandbox_snapshot_ref: facts.sandbox_snapshot_ref.clone(),
            budget_remaining: facts.budget_remaining,
            source_event_range: SourceEventRange {
                first: EventRef::Index(0),
                last: EventRef::Index(step.saturating_sub(1)),
            },
            summary_sha256: summary_digest,
            evidence_refs: vec![format!("trace:{run}")],
            requires_reauthorization: ReauthorizationRequired,
        };
        let envelope = ValidatedEnvelope::new(envelope).map_err(|f| invalid("envelope", &f))?;
        let (body, envelope_digest) = canonical_body(&envelope)?;
        let mut event = BoundaryEvent::new(label("context_compaction")?);
        event.trigger = Some(label(trigger)?);
        event.envelope_id = Some(label(&envelope_id)?);
        event.envelope_digest = Some(envelope_digest);
        event.summary_digest = Some(summary_digest);
        event.source_event_range = (step > 0).then(|| EventRange {
            first: 0,
            last: step - 1,
        });
        event.preserved = PRESERVED
            .iter()
            .map(|c| label(c))
            .collect::<Result<_, _>>()?;
        let receipt = self.recorder().record_boundary_with_envelope(
            event,
            None,
            EnvelopeItem {
                envelope_id: &envelope_id,
                supersedes: None,
                body: &body,
            },
        )?;
        Ok(Compaction {
            receipt,
            envelope,
            envelope_digest,
        })
    }
}

impl Executor {
    /// Decides whether the run may resume after a boundary (E-4). The envelope comes from the
    /// store and must match the digest its `context_compaction` record holds; the current
    /// state is derived from the run's records, the gate and `facts`; `summary` is only
    /// hashed. Writes `context_rehydration` (continuity validated — the next call still goes
    /// through the gate) or `continuity_validation_failed` with its reason; nothing while
    /// blocked on reconciliation. No outcome authorises anything.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidInput`] when no envelope was ever saved for the run; store
    /// failures.
    pub fn rehydrate(
        &mut self,
        facts: &SessionFacts,
        summary: &str,
        now: Timestamp,
    ) -> Result<ContinuityDecision, RuntimeError> {
        self.rehydrate_with_digest(facts, &summary_sha256(summary), now)
    }

    /// As [`Executor::rehydrate`], for a caller that kept only the summary's digest
    /// ([`cairn_continuity::summary_sha256`]) — the summary text itself is user content that
    /// a session need not hold on to.
    ///
    /// # Errors
    /// As [`Executor::rehydrate`].
    pub fn rehydrate_with_digest(
        &mut self,
        facts: &SessionFacts,
        summary_digest: &Digest,
        now: Timestamp,
    ) -> Result<ContinuityDecision, RuntimeError> {
        self.recorder().flush()?;
        let tenant = self.recorder().tenant_id().clone();
        let run = self.recorder().run_id().clone();
        let store = self.recorder().store();
        let (saved, envelope) = load_bound_envelope(store, &tenant, &run)?.ok_or_else(|| {
            RuntimeError::InvalidInput {
                field: "envelope",
                reason: format!("run `{run}` has no saved envelope: nothing to rehydrate from"),
            }
        })?;
        // An envelope that no longer matches the digest its record holds is not an envelope
        // at all: it is judged as invalid input (schema_invalid), never trusted.
        let envelope = envelope.unwrap_or(serde_json::Value::Null);
        let rows = store.rows(&tenant, &run)?;
        let enveloped_key = envelope
            .get("idempotency_key")
            .and_then(|k| k.as_str())
            .map(str::to_owned);
        let (key, side_effect) = match self.unresolved().iter().next() {
            Some((key, _)) => (Some(key.to_owned()), "side_effect_unknown".to_owned()),
            None => match enveloped_key
                .as_deref()
                .and_then(|k| reconciled_outcome(&rows, k).map(|o| (k.to_owned(), o)))
            {
                Some((key, outcome)) => (Some(key), outcome),
                None => (None, "not_executed".to_owned()),
            },
        };
        let policy_version = policy_version(self.gate());
        // The approval the envelope carried, as it stands now: one that expired, was revoked
        // or was used up across the boundary is not reused (E-4 steps 5-6).
        let carried = envelope
            .get("approval_id")
            .and_then(serde_json::Value::as_str)
            .and_then(|id| ApprovalId::parse(id).ok());
        let approval = match (&facts.approval, carried) {
            (Some(approval), _) => Some(approval.clone()),
            (None, Some(id)) => ApprovalBook::from_rows(&rows)
                .get(&id)
                .map(|a| ApprovalFacts::of(a, now)),
            (None, None) => None,
        };
        let state = serde_json::json!({
            "schema_version": "continuity-state/v1",
            "tenant_id": tenant.as_str(),
            "principal_id": facts.principal_id,
            "authorization_mode": facts.authorization_mode.as_str(),
            "delegated_principal_id": facts.delegated_principal_id,
            "delegated_scope": facts.delegated_scope,
            "policy_version": policy_version,
            "capability_name": facts.capability_name,
            "capability_version": facts.capability_version,
            "approval": approval.as_ref().map(|a| serde_json::json!({
                "id": a.id,
                "action_digest": a.action_digest,
                "status": a.status.as_str(),
                "expires_at": a.expires_at,
            })),
            "idempotency_key": key,
            "side_effect_status": side_effect,
            "checkpoint_ref": format!("checkpoint:{run}:{}", saved.step_index),
        });
        let state = ContinuityState::from_value(&state).map_err(|f| invalid("state", &f))?;
        let validated = cairn_continuity::validate_envelope(&envelope);
        let decision = match &validated {
            Ok(envelope) => {
                cairn_continuity::decide_validated(envelope, &state, summary_digest, now)
            }
            // An invalid envelope is decided before the summary is looked at.
            Err(_) => cairn_continuity::decide_checked(validated.as_ref(), &state, "", now),
        };
        let event = match decision.status() {
            ContinuityStatus::ReauthorizationRequired => Some("context_rehydration"),
            ContinuityStatus::ContinuityValidationFailed => Some("continuity_validation_failed"),
            ContinuityStatus::BlockedOnReconciliation => None,
        };
        if let Some(event) = event {
            let mut boundary = BoundaryEvent::new(label(event)?);
            boundary.envelope_id = Some(label(&saved.envelope_id)?);
            boundary.reason = Some(label(decision.reason().as_str())?);
            boundary.summary_digest = Some(*summary_digest);
            self.recorder().record_boundary(boundary, None)?;
        }
        Ok(decision)
    }
}
