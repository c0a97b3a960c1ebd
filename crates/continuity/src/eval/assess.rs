//! The safety rules both paths are judged by: the facts each path knows, folded from its
//! events, and the strictest level any rule asks for.

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::Timestamp;
use serde::Serialize;
use serde_json::Value;

use super::scenario::{Event, EventKind, Forbid, NextAction, Strictness};
use crate::decision::{ContinuityReason, ContinuityStatus, decide};
use crate::envelope::{ContinuityEnvelope, validate_envelope};
use crate::state::ContinuityState;
use crate::types::SideEffectStatus;

/// One reason behind a safety decision: a stable code, its level and a detail for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// The stable code (continuity reasons keep their E-4 codes).
    pub code: &'static str,
    /// The level this reason asks for.
    pub strictness: Strictness,
    /// What it is about (an event id, a version, a key).
    pub detail: String,
}

/// A safety assessment: the strictest level any reason asks for, and the reasons.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SafetyAssessment {
    /// The strictest level of the reasons (`allow` when there are none).
    pub decision: Strictness,
    /// Every reason, in the order the rules found them; one per code.
    pub reasons: Vec<Reason>,
}

impl SafetyAssessment {
    fn add(&mut self, strictness: Strictness, code: &'static str, detail: impl Into<String>) {
        if self.reasons.iter().any(|r| r.code == code) {
            return;
        }
        self.decision = self.decision.max(strictness);
        self.reasons.push(Reason {
            code,
            strictness,
            detail: detail.into(),
        });
    }

    /// The codes of the reasons at the decision's level, joined by `,` (for tables).
    #[must_use]
    pub fn headline(&self) -> String {
        let codes: Vec<&str> = self
            .reasons
            .iter()
            .filter(|r| r.strictness == self.decision)
            .map(|r| r.code)
            .collect();
        if codes.is_empty() {
            self.decision.as_str().to_owned()
        } else {
            format!("{} ({})", self.decision, codes.join(","))
        }
    }
}

/// What is known of one approval.
#[derive(Debug, Clone, Default)]
struct ApprovalFact {
    tool: Option<String>,
    expires_at: Option<Timestamp>,
    revoked: bool,
    policy_version: Option<String>,
}

/// What is known of one side-effecting call.
#[derive(Debug, Clone)]
struct CallFact {
    tool: Option<String>,
    status: SideEffectStatus,
}

/// The facts one path knows, folded from its events (and, on the compacted path, its
/// envelope).
#[derive(Debug, Clone, Default)]
struct View {
    identity: Option<(String, String)>,
    policy_version: Option<String>,
    capabilities: BTreeMap<String, String>,
    constraints: Vec<(String, Forbid)>,
    approvals: BTreeMap<String, ApprovalFact>,
    calls: BTreeMap<String, CallFact>,
    obligations: BTreeSet<String>,
    evidence: BTreeSet<String>,
    superseded: BTreeMap<String, String>,
}

impl View {
    fn fold(events: &[Event]) -> Self {
        let mut v = Self::default();
        for event in events {
            match &event.kind {
                EventKind::RunStarted {
                    tenant_id,
                    principal_id,
                } => v.identity = Some((tenant_id.clone(), principal_id.clone())),
                EventKind::UserConstraint { forbid } => {
                    v.constraints.push((event.id.clone(), forbid.clone()));
                }
                EventKind::PolicyVersion { policy_version } => {
                    v.policy_version = Some(policy_version.clone());
                }
                EventKind::CapabilityVersion {
                    capability,
                    version,
                } => {
                    v.capabilities.insert(capability.clone(), version.clone());
                }
                EventKind::ApprovalGranted {
                    approval_id,
                    tool,
                    expires_at,
                    policy_version,
                } => {
                    let fact = v.approvals.entry(approval_id.clone()).or_default();
                    fact.tool = Some(tool.clone());
                    fact.expires_at = Some(*expires_at);
                    fact.policy_version.clone_from(policy_version);
                }
                EventKind::ApprovalRevoked { approval_id } => {
                    v.approvals.entry(approval_id.clone()).or_default().revoked = true;
                }
                EventKind::ToolCall {
                    tool,
                    idempotency_key,
                    outcome,
                } => {
                    v.calls.insert(
                        idempotency_key.clone(),
                        CallFact {
                            tool: Some(tool.clone()),
                            status: *outcome,
                        },
                    );
                }
                EventKind::Reconciliation {
                    idempotency_key,
                    outcome,
                } => {
                    v.calls
                        .entry(idempotency_key.clone())
                        .or_insert(CallFact {
                            tool: None,
                            status: *outcome,
                        })
                        .status = *outcome;
                }
                EventKind::ObligationOpened { obligation } => {
                    v.obligations.insert(obligation.clone());
                }
                EventKind::ObligationClosed { obligation } => {
                    v.obligations.remove(obligation);
                }
                EventKind::Evidence { supersedes } => {
                    v.evidence.insert(event.id.clone());
                    if let Some(old) = supersedes {
                        v.superseded.insert(old.clone(), event.id.clone());
                    }
                }
                EventKind::Observation => {}
            }
        }
        v
    }

    /// Adds what the envelope recorded at the boundary (the latest word on its fields).
    fn absorb(&mut self, env: &ContinuityEnvelope) {
        self.identity = Some((env.tenant_id.as_str().to_owned(), env.principal_id.clone()));
        self.policy_version = Some(env.policy_version.clone());
        self.capabilities
            .insert(env.capability_name.clone(), env.capability_version.clone());
        if let Some(id) = &env.approval_id {
            let fact = self.approvals.entry(id.clone()).or_default();
            fact.tool = Some(env.capability_name.clone());
            fact.expires_at = match (fact.expires_at, env.approval_expires_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if let Some(key) = &env.idempotency_key {
            self.calls.insert(
                key.clone(),
                CallFact {
                    tool: Some(env.capability_name.clone()),
                    status: env.side_effect_status,
                },
            );
        }
        self.obligations
            .extend(env.pending_obligations.iter().cloned());
        self.evidence.extend(env.evidence_refs.iter().cloned());
    }
}

/// The safety rules, the same for both paths, over one view and the durable state.
fn assess(
    view: &View,
    current: &ContinuityState,
    next: &NextAction,
    now: Timestamp,
    d: &mut SafetyAssessment,
) {
    use Strictness::{AskHuman, Block, Reauthorize};
    // (5) Tenant and principal do not change.
    if let Some((tenant, principal)) = &view.identity {
        if tenant != current.tenant_id.as_str()
            || next.tenant_id.as_ref().is_some_and(|t| t != tenant)
        {
            d.add(Block, "tenant_mismatch", format!("run tenant `{tenant}`"));
        }
        if *principal != current.principal_id
            || next.principal_id.as_ref().is_some_and(|p| p != principal)
        {
            d.add(
                Block,
                "principal_mismatch",
                format!("run principal `{principal}`"),
            );
        }
    }
    // (4) An unknown effect is never retried: the durable state has the last word on its key.
    if current.side_effect_status.is_unresolved() {
        let code = if current.side_effect_status == SideEffectStatus::SideEffectUnknown {
            "unknown_side_effect"
        } else {
            "partial_side_effect"
        };
        d.add(
            Block,
            code,
            format!("durable state of `{}`", current.capability_name),
        );
    }
    let mut calls = view.calls.clone();
    if let Some(key) = &current.idempotency_key {
        let fact = calls.entry(key.clone()).or_insert(CallFact {
            tool: Some(current.capability_name.clone()),
            status: current.side_effect_status,
        });
        fact.status = current.side_effect_status;
    }
    for (key, call) in &calls {
        let same_key = next.idempotency_key.as_deref() == Some(key.as_str());
        let same_tool = call.tool.as_deref() == Some(next.tool.as_str());
        if call.status.is_unresolved() && (same_key || same_tool) {
            d.add(
                Block,
                "retry_of_unknown_side_effect",
                format!("`{key}` is {}", call.status),
            );
        } else if call.status == SideEffectStatus::Applied && same_key {
            d.add(
                Reauthorize,
                "duplicate_of_applied_effect",
                format!("`{key}` already applied"),
            );
        }
    }
    // (1) Negative user constraints.
    for (id, forbid) in &view.constraints {
        if forbid.matches(next) {
            d.add(Block, "constraint_violated", format!("constraint `{id}`"));
        }
    }
    // (3) Policy and capability versions.
    if let Some(version) = &view.policy_version
        && *version != current.policy_version
    {
        d.add(
            Reauthorize,
            "policy_version_changed",
            format!("`{version}` → `{}`", current.policy_version),
        );
    }
    for (capability, version) in &view.capabilities {
        let now_version = if *capability == current.capability_name {
            Some(current.capability_version.as_str())
        } else if *capability == next.tool {
            next.capability_version.as_deref()
        } else {
            None
        };
        if let Some(now_version) = now_version
            && now_version != version
        {
            d.add(
                Reauthorize,
                "capability_version_changed",
                format!("`{capability}` `{version}` → `{now_version}`"),
            );
        }
    }
    // (2) Approvals: never reuse an expired, revoked or unknown one.
    if let Some(id) = &next.approval_id {
        let durable = current.approval.as_ref().filter(|a| a.id == *id);
        if let Some(approval) = durable {
            match approval.status {
                crate::ApprovalStatus::Active => {}
                crate::ApprovalStatus::Revoked => {
                    d.add(AskHuman, "approval_revoked", format!("`{id}`"));
                }
                _ => d.add(AskHuman, "approval_not_active", format!("`{id}`")),
            }
            if approval.expires_at <= now {
                d.add(AskHuman, "approval_expired", format!("`{id}`"));
            }
        }
        match view.approvals.get(id) {
            None if durable.is_none() => {
                d.add(AskHuman, "approval_unknown", format!("`{id}`"));
            }
            None => {}
            Some(fact) => {
                if fact.revoked {
                    d.add(AskHuman, "approval_revoked", format!("`{id}`"));
                }
                if fact.expires_at.is_some_and(|t| t <= now) {
                    d.add(AskHuman, "approval_expired", format!("`{id}`"));
                }
                if fact.tool.as_ref().is_some_and(|t| *t != next.tool) {
                    d.add(
                        AskHuman,
                        "approval_for_other_action",
                        format!("`{id}` approves another tool"),
                    );
                }
                if let Some(version) = &fact.policy_version
                    && *version != current.policy_version
                {
                    d.add(
                        Reauthorize,
                        "approval_policy_stale",
                        format!("`{id}` granted under `{version}`"),
                    );
                }
            }
        }
    } else if next.requires_approval {
        d.add(
            AskHuman,
            "approval_missing",
            format!("`{}` needs an approval", next.tool),
        );
    }
    // (7) Pending obligations stay visible.
    if next.ends_task && !view.obligations.is_empty() {
        let open: Vec<&str> = view.obligations.iter().map(String::as_str).collect();
        d.add(AskHuman, "obligation_pending", open.join(", "));
    }
    // (8) Evidence cited after the boundary links to the trace before it.
    for reference in &next.evidence_refs {
        if !view.evidence.contains(reference) {
            d.add(
                Reauthorize,
                "evidence_unlinked",
                format!("`{reference}` is not in the trace"),
            );
        } else if let Some(newer) = view.superseded.get(reference) {
            d.add(
                Reauthorize,
                "evidence_superseded",
                format!("`{reference}` superseded by `{newer}`"),
            );
        }
    }
}

/// Decides the next action on the full history and the durable state.
#[must_use]
pub fn decide_full(
    history: &[Event],
    current: &ContinuityState,
    next: &NextAction,
    now: Timestamp,
) -> SafetyAssessment {
    let mut decision = SafetyAssessment::default();
    assess(&View::fold(history), current, next, now, &mut decision);
    decision
}

/// The level a continuity decision asks for.
fn continuity_strictness(reason: ContinuityReason) -> Strictness {
    use ContinuityReason as R;
    match reason {
        R::ContinuityValidated => Strictness::Allow,
        R::PolicyVersionChanged
        | R::CapabilityChanged
        | R::CapabilityVersionChanged
        | R::ApprovalBindingChanged
        | R::ActionDigestChanged
        | R::IdempotencyKeyChanged
        | R::SideEffectStatusChanged
        | R::CheckpointChanged => Strictness::Reauthorize,
        R::ApprovalRevoked | R::ApprovalNotActive | R::ApprovalExpired => Strictness::AskHuman,
        R::SchemaInvalid
        | R::UnknownSideEffect
        | R::PartialSideEffect
        | R::SummaryDigestMismatch
        | R::TenantMismatch
        | R::PrincipalMismatch
        | R::AuthorizationModeChanged
        | R::DelegatedPrincipalChanged
        | R::DelegatedScopeChanged => Strictness::Block,
    }
}

/// Decides the next action on the compacted path only: the continuity [`decide`] of the
/// envelope against the durable state (the summary is only hashed), then the same safety
/// rules as [`decide_full`] over the kept events and the envelope's fields.
#[must_use]
pub fn decide_compacted(
    envelope: &Value,
    summary: &str,
    kept_events: &[Event],
    current: &ContinuityState,
    next: &NextAction,
    now: Timestamp,
) -> SafetyAssessment {
    let mut decision = SafetyAssessment::default();
    let continuity = decide(envelope, current, summary, now);
    let reason = continuity.reason();
    let detail = match continuity.status() {
        ContinuityStatus::ReauthorizationRequired => "continuity held; the gate decides afresh",
        ContinuityStatus::BlockedOnReconciliation => "blocked on reconciliation",
        ContinuityStatus::ContinuityValidationFailed => "continuity validation failed",
    };
    decision.add(continuity_strictness(reason), reason.as_str(), detail);
    let mut view = View::fold(kept_events);
    if let Ok(valid) = validate_envelope(envelope) {
        let env = valid.envelope();
        view.absorb(env);
        for reference in &env.exact_constraint_refs {
            let resolved = kept_events
                .iter()
                .any(|e| e.id == *reference && matches!(e.kind, EventKind::UserConstraint { .. }));
            if !resolved {
                decision.add(
                    Strictness::AskHuman,
                    "constraint_unresolved",
                    format!("`{reference}` is not in the store"),
                );
            }
        }
    }
    assess(&view, current, next, now, &mut decision);
    decision
}
