//! The continuity envelope `continuity-envelope/v1` (SPEC E-1): the structured control state
//! saved at a boundary, and its validation into the proof type [`ValidatedEnvelope`].
//!
//! # Format
//!
//! A JSON object with exactly the fields of [`ContinuityEnvelope`], either bare or wrapped as
//! `{"continuity_envelope": {...}}`. Every field must be present; unknown fields are refused.
//! Nullability, decided here and published in the JSON Schema
//! (`schemas/continuity-envelope.v1.schema.json`):
//!
//! - `approval_id`, `action_digest`, `approval_expires_at` are all set (an approval is bound)
//!   or all `null` (no approval); a mix is `approval_incomplete`. `human_approved` requires
//!   them (`approval_required`).
//! - `delegated_principal_id` and `delegated_scope` may be unused — `null`, or `""` as the
//!   published reference writes them — except under `user_delegated`, where both must be
//!   non-empty strings (`delegation_incomplete`).
//! - `idempotency_key` may be `null` only while `side_effect_status` is `not_executed`: an
//!   effect that happened, or may have, is always recorded under its key (E-2).
//! - `sandbox_snapshot_ref` and `budget_remaining` may be `null` (no sandbox, no budget).
//! - `requires_reauthorization` must be `true` (`reauthorization_disabled`).
//! - `approval_expires_at` is RFC 3339 with an offset; it is kept as an instant, compared
//!   across offsets and written back in UTC.
//! - `action_digest` and `summary_sha256` are `sha256:<64 lowercase hex>`.
//! - `side_effect_status` accepts the aliases `not_started` and `side_effect_committed` and
//!   is written back under its canonical name.
//!
//! Identifiers and references are non-empty strings of at most 256 bytes with no control
//! characters; `tenant_id` follows Cairn's identifier alphabet (`[A-Za-z0-9._:@-]`, at most
//! 128); `objective` is free text of at most 4096 bytes.

use cairn_core::{Digest, TenantId, Timestamp};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::authority::Authority;
use crate::fields::{Fields, MAX_TEXT_BYTES};
use crate::finding::{Finding, FindingCode};
use crate::types::{
    AuthorizationMode, EventRef, ReauthorizationRequired, SideEffectStatus, SourceEventRange,
};

/// The fields of `continuity-envelope/v1` (SPEC E-1), in the specification's order.
pub const ENVELOPE_FIELDS: [&str; 28] = [
    "schema_version",
    "envelope_id",
    "session_id",
    "source_trace_id",
    "reset_reason",
    "objective",
    "exact_constraint_refs",
    "pending_obligations",
    "tenant_id",
    "principal_id",
    "authorization_mode",
    "delegated_principal_id",
    "delegated_scope",
    "policy_version",
    "capability_name",
    "capability_version",
    "approval_id",
    "action_digest",
    "approval_expires_at",
    "idempotency_key",
    "side_effect_status",
    "checkpoint_ref",
    "sandbox_snapshot_ref",
    "budget_remaining",
    "source_event_range",
    "summary_sha256",
    "evidence_refs",
    "requires_reauthorization",
];

/// The schema tag of the envelope.
pub const ENVELOPE_SCHEMA_VERSION: &str = "continuity-envelope/v1";

/// The key under which a wrapped envelope is found.
pub const ENVELOPE_WRAPPER_KEY: &str = "continuity_envelope";

/// The envelope's schema tag; a single-valued type, so another version cannot be represented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, JsonSchema)]
pub enum EnvelopeSchemaVersion {
    /// `continuity-envelope/v1`.
    #[default]
    #[serde(rename = "continuity-envelope/v1")]
    V1,
}

/// One continuity envelope, field for field as E-1 lists them. Build one with the fields you
/// recorded, then [`ValidatedEnvelope::new`] it; read one with [`validate_envelope`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "continuity-envelope/v1",
    description = "Structured control state saved at a boundary (compaction, reset, restart, handoff). It carries references and digests, never authority: requires_reauthorization is always true."
)]
pub struct ContinuityEnvelope {
    /// Always `continuity-envelope/v1`.
    pub schema_version: EnvelopeSchemaVersion,
    /// This envelope's identifier.
    #[schemars(length(min = 1, max = 256))]
    pub envelope_id: String,
    /// The session the envelope continues.
    #[schemars(length(min = 1, max = 256))]
    pub session_id: String,
    /// The trace the source events belong to.
    #[schemars(length(min = 1, max = 256))]
    pub source_trace_id: String,
    /// Why the boundary happened (`context_compaction`, `context_reset`, `restart`, `handoff`, …).
    #[schemars(length(min = 1, max = 256))]
    pub reset_reason: String,
    /// The task's objective, in a sentence.
    #[schemars(length(min = 1, max = 4096))]
    pub objective: String,
    /// References to the exact user constraints in the store (never their text).
    pub exact_constraint_refs: Vec<String>,
    /// Work the run owes and must not lose across the boundary.
    pub pending_obligations: Vec<String>,
    /// The tenant.
    pub tenant_id: TenantId,
    /// The principal the run acts for.
    #[schemars(length(min = 1, max = 256))]
    pub principal_id: String,
    /// Whose authority the run acts under.
    pub authorization_mode: AuthorizationMode,
    /// The delegating principal; required under `user_delegated`.
    #[schemars(length(min = 1, max = 256))]
    pub delegated_principal_id: Option<String>,
    /// The delegated scope; required under `user_delegated`.
    #[schemars(length(min = 1, max = 256))]
    pub delegated_scope: Option<String>,
    /// The policy-set version in force when the envelope was written.
    #[schemars(length(min = 1, max = 256))]
    pub policy_version: String,
    /// The capability the pending action uses.
    #[schemars(length(min = 1, max = 256))]
    pub capability_name: String,
    /// Its version.
    #[schemars(length(min = 1, max = 256))]
    pub capability_version: String,
    /// The approval bound to the action, if any (set together with the next two).
    #[schemars(length(min = 1, max = 256))]
    pub approval_id: Option<String>,
    /// The digest of the approved action.
    pub action_digest: Option<Digest>,
    /// When the approval expires (RFC 3339 with an offset; written in UTC).
    #[schemars(schema_with = "nullable_offset_time")]
    pub approval_expires_at: Option<Timestamp>,
    /// The key the side-effecting call is (or was) made under.
    #[schemars(length(min = 1, max = 256))]
    pub idempotency_key: Option<String>,
    /// What is known about the call's external effect.
    pub side_effect_status: SideEffectStatus,
    /// The named checkpoint to resume from.
    #[schemars(length(min = 1, max = 256))]
    pub checkpoint_ref: String,
    /// The sandbox snapshot, if the run has a sandbox.
    #[schemars(length(min = 1, max = 256))]
    pub sandbox_snapshot_ref: Option<String>,
    /// The remaining budget, if the run has one.
    pub budget_remaining: Option<u64>,
    /// The source events the derived summary was made from.
    pub source_event_range: SourceEventRange,
    /// `sha256:` + SHA-256 of the stripped summary (see [`crate::summary_sha256`]).
    pub summary_sha256: Digest,
    /// References to evidence (traces, approvals, lookups).
    pub evidence_refs: Vec<String>,
    /// Always `true`.
    pub requires_reauthorization: ReauthorizationRequired,
}

fn nullable_offset_time(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["string", "null"],
        "format": "date-time",
        "description": "An RFC 3339 time with a mandatory offset (Z or ±hh:mm), compared as an instant."
    })
}

/// An envelope that passed validation. Only [`validate_envelope`] and
/// [`ValidatedEnvelope::new`] build one; its fields are private so it cannot be forged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ValidatedEnvelope {
    envelope: ContinuityEnvelope,
}

impl ValidatedEnvelope {
    /// Validates an envelope built in code, through the same rules as one read from JSON.
    ///
    /// # Errors
    /// Every finding, as [`validate_envelope`] reports them.
    pub fn new(envelope: ContinuityEnvelope) -> Result<Self, Vec<Finding>> {
        let value = serde_json::to_value(&envelope).map_err(|e| {
            vec![Finding::new(
                FindingCode::WrongType,
                "$",
                format!("`$` cannot be serialised: {e}"),
            )]
        })?;
        validate_envelope(&value)
    }

    /// The validated fields.
    #[must_use]
    pub const fn envelope(&self) -> &ContinuityEnvelope {
        &self.envelope
    }

    /// The validated fields, by value.
    #[must_use]
    pub fn into_envelope(self) -> ContinuityEnvelope {
        self.envelope
    }

    /// The envelope in its canonical output form (bare, canonical status names, UTC times).
    #[must_use]
    pub fn to_json(&self) -> Value {
        serde_json::to_value(&self.envelope).unwrap_or(Value::Null)
    }
}

/// Validates a parsed JSON document, bare or wrapped, into a [`ValidatedEnvelope`].
///
/// # Errors
/// Every finding, each with its stable code and the JSON path of the offending value.
pub fn validate_envelope(input: &Value) -> Result<ValidatedEnvelope, Vec<Finding>> {
    let mut findings = Vec::new();
    let envelope = unwrap_envelope(input, &mut findings)
        .and_then(|(value, base)| read_envelope(value, &base, &mut findings));
    match envelope {
        Some(envelope) if findings.is_empty() => Ok(ValidatedEnvelope { envelope }),
        _ => Err(findings),
    }
}

/// Finds the envelope object: the document itself, or its `continuity_envelope` member.
fn unwrap_envelope<'a>(
    input: &'a Value,
    findings: &mut Vec<Finding>,
) -> Option<(&'a Value, String)> {
    let Value::Object(object) = input else {
        let mut fields = Vec::new();
        let _ = Fields::object(input, "$", &mut fields);
        findings.extend(fields);
        return None;
    };
    let Some(inner) = object.get(ENVELOPE_WRAPPER_KEY) else {
        return Some((input, String::from("$")));
    };
    // A wrapper holds the envelope and nothing else.
    let mut wrapper = Fields::new(object, "$", findings);
    let _ = wrapper.present(ENVELOPE_WRAPPER_KEY);
    wrapper.finish();
    Some((inner, format!("$.{ENVELOPE_WRAPPER_KEY}")))
}

/// Reads every field, recording findings; returns the envelope only when all are well formed.
fn read_envelope(
    value: &Value,
    base: &str,
    findings: &mut Vec<Finding>,
) -> Option<ContinuityEnvelope> {
    let mut f = Fields::object(value, base, findings)?;
    let schema_version = f.parsed(
        "schema_version",
        FindingCode::BadSchemaVersion,
        "`continuity-envelope/v1`",
        |t| (t == ENVELOPE_SCHEMA_VERSION).then_some(EnvelopeSchemaVersion::V1),
    );
    let envelope_id = f.text("envelope_id");
    let session_id = f.text("session_id");
    let source_trace_id = f.text("source_trace_id");
    let reset_reason = f.text("reset_reason");
    let objective = f.text_limited("objective", MAX_TEXT_BYTES, true);
    let exact_constraint_refs = f.text_list("exact_constraint_refs");
    let pending_obligations = f.text_list("pending_obligations");
    let authority = Authority::read(&mut f);
    let approval_id = f.nullable_text("approval_id");
    let action_digest = f.nullable_digest("action_digest");
    let approval_expires_at = f.nullable_timestamp("approval_expires_at");
    let idempotency_key = f.nullable_text("idempotency_key");
    let side_effect_status = f.parsed(
        "side_effect_status",
        FindingCode::BadSideEffectStatus,
        "one of `not_executed`, `applied`, `side_effect_unknown`, `partial_side_effect`",
        SideEffectStatus::parse,
    );
    let checkpoint_ref = f.text("checkpoint_ref");
    let sandbox_snapshot_ref = f.nullable_text("sandbox_snapshot_ref");
    let budget_remaining = f.nullable_count("budget_remaining");
    let source_event_range = read_range(&mut f);
    let summary_sha256 = f.digest("summary_sha256");
    let evidence_refs = f.text_list("evidence_refs");
    let requires_reauthorization = read_reauthorization(&mut f);

    check_delegation(
        &mut f,
        authority.authorization_mode,
        &authority.delegated_principal_id,
        &authority.delegated_scope,
    );
    check_approval(
        &mut f,
        authority.authorization_mode,
        &approval_id,
        &action_digest,
        &approval_expires_at,
    );
    check_idempotency(&mut f, side_effect_status, &idempotency_key);
    f.finish();

    Some(ContinuityEnvelope {
        schema_version: schema_version?,
        envelope_id: envelope_id?,
        session_id: session_id?,
        source_trace_id: source_trace_id?,
        reset_reason: reset_reason?,
        objective: objective?,
        exact_constraint_refs: exact_constraint_refs?,
        pending_obligations: pending_obligations?,
        tenant_id: authority.tenant_id?,
        principal_id: authority.principal_id?,
        authorization_mode: authority.authorization_mode?,
        delegated_principal_id: authority.delegated_principal_id?,
        delegated_scope: authority.delegated_scope?,
        policy_version: authority.policy_version?,
        capability_name: authority.capability_name?,
        capability_version: authority.capability_version?,
        approval_id: approval_id?,
        action_digest: action_digest?,
        approval_expires_at: approval_expires_at?,
        idempotency_key: idempotency_key?,
        side_effect_status: side_effect_status?,
        checkpoint_ref: checkpoint_ref?,
        sandbox_snapshot_ref: sandbox_snapshot_ref?,
        budget_remaining: budget_remaining?,
        source_event_range: source_event_range?,
        summary_sha256: summary_sha256?,
        evidence_refs: evidence_refs?,
        requires_reauthorization: requires_reauthorization?,
    })
}

/// `requires_reauthorization` must be the boolean `true`.
fn read_reauthorization(f: &mut Fields<'_>) -> Option<ReauthorizationRequired> {
    let value = f.present("requires_reauthorization")?;
    let path = f.path("requires_reauthorization");
    match value {
        Value::Bool(true) => Some(ReauthorizationRequired),
        Value::Bool(false) => {
            let message = format!("`{path}` must be true: continuity never carries authority");
            f.push(FindingCode::ReauthorizationDisabled, path, message);
            None
        }
        _ => {
            let message = format!("`{path}` must be the boolean true");
            f.push(FindingCode::WrongType, path, message);
            None
        }
    }
}

/// `source_event_range` is `{first, last}`, each an event id or a step index.
fn read_range(f: &mut Fields<'_>) -> Option<SourceEventRange> {
    let value = f.present("source_event_range")?;
    let path = f.path("source_event_range");
    let mut nested = Vec::new();
    let range = Fields::object(value, &path, &mut nested).and_then(|mut r| {
        let first = read_event_ref(&mut r, "first");
        let last = read_event_ref(&mut r, "last");
        r.finish();
        Some(SourceEventRange {
            first: first?,
            last: last?,
        })
    });
    let ok = nested.is_empty();
    for finding in nested {
        f.push(finding.code, finding.path, finding.message);
    }
    range.filter(|_| ok)
}

fn read_event_ref(f: &mut Fields<'_>, key: &'static str) -> Option<EventRef> {
    let value = f.present(key)?;
    let path = f.path(key);
    match value {
        Value::Number(n) => {
            let index = n.as_u64();
            if index.is_none() {
                let message = format!("`{path}` must be a non-negative integer, found `{n}`");
                f.push(FindingCode::BadNumber, path, message);
            }
            index.map(EventRef::Index)
        }
        Value::String(text) if text.trim().is_empty() => {
            let message = format!("`{path}` must not be empty");
            f.push(FindingCode::EmptyValue, path, message);
            None
        }
        Value::String(text) if text.len() > 256 || text.chars().any(char::is_control) => {
            let message = format!("`{path}` must be at most 256 bytes with no control characters");
            f.push(FindingCode::BadText, path, message);
            None
        }
        Value::String(text) => Some(EventRef::Id(text.clone())),
        _ => {
            let message = format!("`{path}` must be an event id or a step index");
            f.push(FindingCode::WrongType, path, message);
            None
        }
    }
}

/// Under `user_delegated`, both delegated fields are required.
fn check_delegation(
    f: &mut Fields<'_>,
    mode: Option<AuthorizationMode>,
    principal: &Option<Option<String>>,
    scope: &Option<Option<String>>,
) {
    if mode != Some(AuthorizationMode::UserDelegated) {
        return;
    }
    for (key, value) in [
        ("delegated_principal_id", principal),
        ("delegated_scope", scope),
    ] {
        if matches!(value, Some(None)) {
            let path = f.path(key);
            let message =
                format!("`{path}` is required when `authorization_mode` is `user_delegated`");
            f.push(FindingCode::DelegationIncomplete, path, message);
        }
    }
}

/// The approval triple is all set or all null; `human_approved` requires it.
fn check_approval(
    f: &mut Fields<'_>,
    mode: Option<AuthorizationMode>,
    id: &Option<Option<String>>,
    digest: &Option<Option<Digest>>,
    expires: &Option<Option<Timestamp>>,
) {
    // Only fields that were well formed take part; a malformed one already has its finding.
    let set = [
        ("approval_id", id.as_ref().map(Option::is_some)),
        ("action_digest", digest.as_ref().map(Option::is_some)),
        ("approval_expires_at", expires.as_ref().map(Option::is_some)),
    ];
    let any_set = set.iter().any(|(_, s)| *s == Some(true));
    if any_set {
        for (key, state) in set {
            if state == Some(false) {
                let path = f.path(key);
                let message = format!(
                    "`{path}` is null but the approval is bound: `approval_id`, `action_digest` and `approval_expires_at` are set together or all null"
                );
                f.push(FindingCode::ApprovalIncomplete, path, message);
            }
        }
    } else if mode == Some(AuthorizationMode::HumanApproved)
        && set.iter().all(|(_, s)| *s == Some(false))
    {
        let path = f.path("approval_id");
        let message = format!("`{path}` is required when `authorization_mode` is `human_approved`");
        f.push(FindingCode::ApprovalRequired, path, message);
    }
}

/// An effect that happened, or may have, is recorded under its idempotency key.
fn check_idempotency(
    f: &mut Fields<'_>,
    status: Option<SideEffectStatus>,
    key: &Option<Option<String>>,
) {
    if let (Some(status), Some(None)) = (status, key)
        && status != SideEffectStatus::NotExecuted
    {
        let path = f.path("idempotency_key");
        let message = format!("`{path}` is required when `side_effect_status` is `{status}`");
        f.push(FindingCode::IdempotencyKeyRequired, path, message);
    }
}
