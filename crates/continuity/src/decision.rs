//! The rehydration decision (SPEC E-4): after a boundary, the envelope loaded from the store
//! is checked against the current durable state and the summary, in a fixed order where the
//! first failing check wins.
//!
//! INVARIANT: no decision authorises anything. [`ContinuityDecision`] has no `authorized`
//! field and [`ContinuityStatus`] has no authorising variant; serialisation writes the
//! constants `"authorized": false` and `"requires_reauthorization": true`. The best outcome,
//! `reauthorization_required`, only says continuity held: the next capability call still goes
//! through the policy gate afresh. The summary text is never parsed or interpreted — it is
//! only hashed — so instructions injected into it can change nothing but the digest check.

use std::fmt;

use cairn_core::{Digest, Timestamp};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::envelope::{ContinuityEnvelope, ValidatedEnvelope, validate_envelope};
use crate::finding::Finding;
use crate::state::ContinuityState;
use crate::summary::summary_sha256;
use crate::types::{ApprovalStatus, SideEffectStatus};

/// The outcome class of a rehydration. There is deliberately no "authorized" status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContinuityStatus {
    /// Continuity held; the next action must still be authorised by the gate.
    ReauthorizationRequired,
    /// An external effect may have happened; it must be reconciled first (E-5).
    BlockedOnReconciliation,
    /// Schema, summary, identity, policy, capability or approval checks failed.
    ContinuityValidationFailed,
}

impl ContinuityStatus {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ReauthorizationRequired => "reauthorization_required",
            Self::BlockedOnReconciliation => "blocked_on_reconciliation",
            Self::ContinuityValidationFailed => "continuity_validation_failed",
        }
    }
}

impl fmt::Display for ContinuityStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stable reason of a decision; each reason belongs to exactly one status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContinuityReason {
    /// Step 1: the envelope is invalid.
    SchemaInvalid,
    /// Step 2: the current side-effect state is `side_effect_unknown`.
    UnknownSideEffect,
    /// Step 2: the current side-effect state is `partial_side_effect`.
    PartialSideEffect,
    /// Step 3: the summary's digest differs from `summary_sha256`.
    SummaryDigestMismatch,
    /// Step 4: another tenant.
    TenantMismatch,
    /// Step 4: another principal.
    PrincipalMismatch,
    /// Step 4: another authorisation mode.
    AuthorizationModeChanged,
    /// Step 4: another delegated principal.
    DelegatedPrincipalChanged,
    /// Step 4: another delegated scope.
    DelegatedScopeChanged,
    /// Step 4: another policy version.
    PolicyVersionChanged,
    /// Step 4: another capability.
    CapabilityChanged,
    /// Step 4: another capability version.
    CapabilityVersionChanged,
    /// Step 4: another approval (or an approval added or removed).
    ApprovalBindingChanged,
    /// Step 4: the approval binds another action.
    ActionDigestChanged,
    /// Step 4: another idempotency key.
    IdempotencyKeyChanged,
    /// Step 4: the side-effect state moved (for example reconciled since the envelope).
    SideEffectStatusChanged,
    /// Step 4: another checkpoint.
    CheckpointChanged,
    /// Step 5: the approval was revoked.
    ApprovalRevoked,
    /// Step 5: the approval is not active (pending, expired, consumed, denied).
    ApprovalNotActive,
    /// Step 6: the approval expired (`expires_at <= now`).
    ApprovalExpired,
    /// Step 7: every check passed.
    ContinuityValidated,
}

impl ContinuityReason {
    /// Every reason, in the order E-4 checks them.
    pub const ALL: [Self; 21] = [
        Self::SchemaInvalid,
        Self::UnknownSideEffect,
        Self::PartialSideEffect,
        Self::SummaryDigestMismatch,
        Self::TenantMismatch,
        Self::PrincipalMismatch,
        Self::AuthorizationModeChanged,
        Self::DelegatedPrincipalChanged,
        Self::DelegatedScopeChanged,
        Self::PolicyVersionChanged,
        Self::CapabilityChanged,
        Self::CapabilityVersionChanged,
        Self::ApprovalBindingChanged,
        Self::ActionDigestChanged,
        Self::IdempotencyKeyChanged,
        Self::SideEffectStatusChanged,
        Self::CheckpointChanged,
        Self::ApprovalRevoked,
        Self::ApprovalNotActive,
        Self::ApprovalExpired,
        Self::ContinuityValidated,
    ];

    /// The stable `snake_case` code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SchemaInvalid => "schema_invalid",
            Self::UnknownSideEffect => "unknown_side_effect",
            Self::PartialSideEffect => "partial_side_effect",
            Self::SummaryDigestMismatch => "summary_digest_mismatch",
            Self::TenantMismatch => "tenant_mismatch",
            Self::PrincipalMismatch => "principal_mismatch",
            Self::AuthorizationModeChanged => "authorization_mode_changed",
            Self::DelegatedPrincipalChanged => "delegated_principal_changed",
            Self::DelegatedScopeChanged => "delegated_scope_changed",
            Self::PolicyVersionChanged => "policy_version_changed",
            Self::CapabilityChanged => "capability_changed",
            Self::CapabilityVersionChanged => "capability_version_changed",
            Self::ApprovalBindingChanged => "approval_binding_changed",
            Self::ActionDigestChanged => "action_digest_changed",
            Self::IdempotencyKeyChanged => "idempotency_key_changed",
            Self::SideEffectStatusChanged => "side_effect_status_changed",
            Self::CheckpointChanged => "checkpoint_changed",
            Self::ApprovalRevoked => "approval_revoked",
            Self::ApprovalNotActive => "approval_not_active",
            Self::ApprovalExpired => "approval_expired",
            Self::ContinuityValidated => "continuity_validated",
        }
    }

    /// The status this reason belongs to.
    #[must_use]
    pub const fn status(self) -> ContinuityStatus {
        match self {
            Self::ContinuityValidated => ContinuityStatus::ReauthorizationRequired,
            Self::UnknownSideEffect | Self::PartialSideEffect => {
                ContinuityStatus::BlockedOnReconciliation
            }
            _ => ContinuityStatus::ContinuityValidationFailed,
        }
    }
}

impl fmt::Display for ContinuityReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A trace event type the runtime writes for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContinuityEventType {
    /// Written before a boundary (E-3); listed for completeness, never by a decision.
    ContextCompaction,
    /// Written when continuity held.
    ContextRehydration,
    /// Written, with the reason, when a check failed.
    ContinuityValidationFailed,
}

impl ContinuityEventType {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ContextCompaction => "context_compaction",
            Self::ContextRehydration => "context_rehydration",
            Self::ContinuityValidationFailed => "continuity_validation_failed",
        }
    }
}

impl Serialize for ContinuityEventType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The result of a rehydration check. It cannot express authorisation: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinuityDecision {
    reason: ContinuityReason,
    side_effect_status: SideEffectStatus,
    findings: Vec<Finding>,
}

impl ContinuityDecision {
    fn new(reason: ContinuityReason, state: &ContinuityState) -> Self {
        Self {
            reason,
            side_effect_status: state.side_effect_status,
            findings: Vec::new(),
        }
    }

    /// The outcome class.
    #[must_use]
    pub const fn status(&self) -> ContinuityStatus {
        self.reason.status()
    }

    /// The stable reason.
    #[must_use]
    pub const fn reason(&self) -> ContinuityReason {
        self.reason
    }

    /// Always `false`: continuity never authorises.
    #[must_use]
    pub const fn authorized(&self) -> bool {
        false
    }

    /// Always `true`: the next capability call is decided by the gate afresh.
    #[must_use]
    pub const fn requires_reauthorization(&self) -> bool {
        true
    }

    /// The current durable side-effect state the decision was made against.
    #[must_use]
    pub const fn side_effect_status(&self) -> SideEffectStatus {
        self.side_effect_status
    }

    /// The envelope's findings (non-empty only for `schema_invalid`).
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The events the runtime writes for this decision: `context_rehydration` when continuity
    /// held, `continuity_validation_failed` on a failure, and none while blocked on
    /// reconciliation (no rehydration happens until the effect is reconciled).
    #[must_use]
    pub const fn event_types(&self) -> &'static [ContinuityEventType] {
        match self.status() {
            ContinuityStatus::ReauthorizationRequired => &[ContinuityEventType::ContextRehydration],
            ContinuityStatus::BlockedOnReconciliation => &[],
            ContinuityStatus::ContinuityValidationFailed => {
                &[ContinuityEventType::ContinuityValidationFailed]
            }
        }
    }

    /// The decision as JSON (see [`Serialize`]).
    #[must_use]
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for ContinuityDecision {
    /// Writes `{"status", "reason", "authorized": false, "requires_reauthorization": true,
    /// "side_effect_status", "event_types"}`, plus `"findings"` for `schema_invalid`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let with_findings = self.reason == ContinuityReason::SchemaInvalid;
        let mut map = serializer.serialize_map(Some(if with_findings { 7 } else { 6 }))?;
        map.serialize_entry("status", self.status().as_str())?;
        map.serialize_entry("reason", self.reason.as_str())?;
        map.serialize_entry("authorized", &false)?;
        map.serialize_entry("requires_reauthorization", &true)?;
        map.serialize_entry("side_effect_status", &self.side_effect_status)?;
        map.serialize_entry("event_types", self.event_types())?;
        if with_findings {
            map.serialize_entry("findings", &self.findings)?;
        }
        map.end()
    }
}

/// Decides a rehydration from a parsed envelope document (bare or wrapped), the current
/// durable state, the summary text and the caller's `now`, in the order of E-4.
#[must_use]
pub fn decide(
    envelope: &Value,
    state: &ContinuityState,
    summary: &str,
    now: Timestamp,
) -> ContinuityDecision {
    decide_checked(validate_envelope(envelope).as_ref(), state, summary, now)
}

/// As [`decide`], from the envelope's JSON text: oversized or malformed text is step 1's
/// `schema_invalid` with an `input_too_large` or `invalid_json` finding.
#[must_use]
pub fn decide_text(
    envelope: &str,
    state: &ContinuityState,
    summary: &str,
    now: Timestamp,
) -> ContinuityDecision {
    match crate::parse_json(envelope) {
        Ok(value) => decide(&value, state, summary, now),
        Err(findings) => schema_invalid(findings, state),
    }
}

/// As [`decide`], from a validation result already computed.
#[must_use]
pub fn decide_checked(
    envelope: Result<&ValidatedEnvelope, &Vec<Finding>>,
    state: &ContinuityState,
    summary: &str,
    now: Timestamp,
) -> ContinuityDecision {
    match envelope {
        Ok(envelope) => decide_validated(envelope, state, &summary_sha256(summary), now),
        Err(findings) => schema_invalid(findings.clone(), state),
    }
}

fn schema_invalid(findings: Vec<Finding>, state: &ContinuityState) -> ContinuityDecision {
    ContinuityDecision {
        findings,
        ..ContinuityDecision::new(ContinuityReason::SchemaInvalid, state)
    }
}

/// Steps 2–7 of E-4 for a validated envelope and the digest of the summary
/// ([`summary_sha256`]); step 1 is the validation that built `envelope`.
#[must_use]
pub fn decide_validated(
    envelope: &ValidatedEnvelope,
    state: &ContinuityState,
    summary_digest: &Digest,
    now: Timestamp,
) -> ContinuityDecision {
    let reason = first_failure(envelope.envelope(), state, summary_digest, now)
        .unwrap_or(ContinuityReason::ContinuityValidated);
    ContinuityDecision::new(reason, state)
}

/// The first failing check of steps 2–6, if any.
fn first_failure(
    env: &ContinuityEnvelope,
    state: &ContinuityState,
    summary_digest: &Digest,
    now: Timestamp,
) -> Option<ContinuityReason> {
    use ContinuityReason as R;
    // Step 2: the durable state, not the envelope, says whether an effect is unresolved.
    match state.side_effect_status {
        SideEffectStatus::SideEffectUnknown => return Some(R::UnknownSideEffect),
        SideEffectStatus::PartialSideEffect => return Some(R::PartialSideEffect),
        SideEffectStatus::NotExecuted | SideEffectStatus::Applied => {}
    }
    // Step 3.
    if env.summary_sha256 != *summary_digest {
        return Some(R::SummaryDigestMismatch);
    }
    // Step 4, in the listed order.
    let approval = state.approval.as_ref();
    let checks = [
        (env.tenant_id == state.tenant_id, R::TenantMismatch),
        (env.principal_id == state.principal_id, R::PrincipalMismatch),
        (
            env.authorization_mode == state.authorization_mode,
            R::AuthorizationModeChanged,
        ),
        (
            env.delegated_principal_id == state.delegated_principal_id,
            R::DelegatedPrincipalChanged,
        ),
        (
            env.delegated_scope == state.delegated_scope,
            R::DelegatedScopeChanged,
        ),
        (
            env.policy_version == state.policy_version,
            R::PolicyVersionChanged,
        ),
        (
            env.capability_name == state.capability_name,
            R::CapabilityChanged,
        ),
        (
            env.capability_version == state.capability_version,
            R::CapabilityVersionChanged,
        ),
        (
            env.approval_id.as_deref() == approval.map(|a| a.id.as_str()),
            R::ApprovalBindingChanged,
        ),
        (
            env.action_digest == approval.map(|a| a.action_digest),
            R::ActionDigestChanged,
        ),
        (
            env.idempotency_key == state.idempotency_key,
            R::IdempotencyKeyChanged,
        ),
        (
            env.side_effect_status == state.side_effect_status,
            R::SideEffectStatusChanged,
        ),
        (
            env.checkpoint_ref == state.checkpoint_ref,
            R::CheckpointChanged,
        ),
    ];
    if let Some((_, reason)) = checks.iter().find(|(same, _)| !same) {
        return Some(*reason);
    }
    // Steps 5 and 6 apply when an approval is bound (step 4 made both sides agree on that).
    let approval = approval?;
    match approval.status {
        ApprovalStatus::Active => {}
        ApprovalStatus::Revoked => return Some(R::ApprovalRevoked),
        _ => return Some(R::ApprovalNotActive),
    }
    // The earlier of the two expiries counts: the durable one, and the one the envelope saw.
    let expires_at = env
        .approval_expires_at
        .map_or(approval.expires_at, |e| e.min(approval.expires_at));
    (expires_at <= now).then_some(R::ApprovalExpired)
}
