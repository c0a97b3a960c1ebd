//! The durable current state an envelope is compared with: `continuity-state/v1`.
//!
//! The runtime builds this view from the store (the ledger, the approval records, the
//! reconciliation records) at the moment of rehydration; the CLI reads it from a file. It is
//! the system of truth the envelope is checked against, never the summary.
//!
//! # Format
//!
//! ```json
//! {
//!   "schema_version": "continuity-state/v1",
//!   "tenant_id": "tenant-acme",
//!   "principal_id": "user-42",
//!   "authorization_mode": "user_delegated",
//!   "delegated_principal_id": "user-42",
//!   "delegated_scope": "tickets:create",
//!   "policy_version": "policy-v4",
//!   "capability_name": "create_ticket",
//!   "capability_version": "create-ticket-v3",
//!   "approval": {
//!     "id": "apr-017",
//!     "action_digest": "sha256:<64 hex>",
//!     "status": "active",
//!     "expires_at": "2026-07-21T18:00:00Z"
//!   },
//!   "idempotency_key": "ticket-intent-017",
//!   "side_effect_status": "applied",
//!   "checkpoint_ref": "checkpoint:support-042-step-6"
//! }
//! ```
//!
//! The published reference keeps the same state flat, without `schema_version`; that form is
//! accepted too and mapped once onto this one: `approval` is written as `approval_id`,
//! `action_digest`, `approval_status` (`approved` for `active`, `rejected` for `denied`,
//! `revoked`, `pending`, `expired`) and `approval_expires_at`, all four unused (`null` or `""`)
//! when no approval is bound; the delegated fields and `idempotency_key` may be `""` when
//! unused. A document is read in that form when it has `approval_status` and no
//! `schema_version`.
//!
//! Every field is required (nullable ones as `null`); unknown fields are refused. `approval`
//! is `null` when no approval is bound; otherwise all four members are required and `status`
//! is one of `active, revoked, pending, expired, consumed, denied`. The same rules as the
//! envelope apply to delegation (`user_delegated` needs both delegated fields), to
//! `human_approved` (needs an approval), to side-effect aliases and to the idempotency key.

use cairn_core::{Digest, TenantId, Timestamp};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::authority::Authority;
use crate::fields::Fields;
use crate::finding::{Finding, FindingCode};
use crate::types::{ApprovalStatus, AuthorizationMode, SideEffectStatus};

/// The schema tag of the state document.
pub const STATE_SCHEMA_VERSION: &str = "continuity-state/v1";

/// The state's schema tag; single-valued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, JsonSchema)]
pub enum StateSchemaVersion {
    /// `continuity-state/v1`.
    #[default]
    #[serde(rename = "continuity-state/v1")]
    V1,
}

/// The durable status of the approval bound to the pending action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalState {
    /// The approval's identifier.
    pub id: String,
    /// The digest of the action it approves.
    pub action_digest: Digest,
    /// Whether it can be used now.
    pub status: ApprovalStatus,
    /// When it stops being usable.
    pub expires_at: Timestamp,
}

/// The current durable control state, as of rehydration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "continuity-state/v1")]
pub struct ContinuityState {
    /// Always `continuity-state/v1`.
    pub schema_version: StateSchemaVersion,
    /// The tenant.
    pub tenant_id: TenantId,
    /// The principal the run acts for.
    pub principal_id: String,
    /// Whose authority the run acts under.
    pub authorization_mode: AuthorizationMode,
    /// The delegating principal (required under `user_delegated`).
    pub delegated_principal_id: Option<String>,
    /// The delegated scope (required under `user_delegated`).
    pub delegated_scope: Option<String>,
    /// The policy-set version in force now.
    pub policy_version: String,
    /// The capability the pending action uses.
    pub capability_name: String,
    /// Its current version.
    pub capability_version: String,
    /// The approval bound to the pending action, if any.
    pub approval: Option<ApprovalState>,
    /// The idempotency key of the pending or last side-effecting call.
    pub idempotency_key: Option<String>,
    /// What is durably known about that call's effect now (after any reconciliation).
    pub side_effect_status: SideEffectStatus,
    /// The latest checkpoint.
    pub checkpoint_ref: String,
}

impl ContinuityState {
    /// Reads a state document from JSON text (at most [`crate::MAX_INPUT_BYTES`]).
    ///
    /// # Errors
    /// [`crate::ContinuityError::InvalidState`] with every finding, including
    /// `input_too_large` and `invalid_json`.
    pub fn from_json(text: &str) -> Result<Self, crate::ContinuityError> {
        let value = crate::parse_json(text)
            .map_err(|findings| crate::ContinuityError::InvalidState { findings })?;
        Self::from_value(&value)
            .map_err(|findings| crate::ContinuityError::InvalidState { findings })
    }

    /// Validates a parsed state document.
    ///
    /// # Errors
    /// Every finding, each with its code and JSON path.
    pub fn from_value(value: &Value) -> Result<Self, Vec<Finding>> {
        let mut findings = Vec::new();
        let state = read_state(value, &mut findings);
        match state {
            Some(state) if findings.is_empty() => Ok(state),
            _ => Err(findings),
        }
    }

    /// Checks a state built in code against the same rules as one read from JSON.
    ///
    /// # Errors
    /// Every finding.
    pub fn validated(self) -> Result<Self, Vec<Finding>> {
        let value = serde_json::to_value(&self).map_err(|e| {
            vec![Finding::new(
                FindingCode::WrongType,
                "$",
                format!("`$` cannot be serialised: {e}"),
            )]
        })?;
        Self::from_value(&value)
    }
}

fn read_state(value: &Value, findings: &mut Vec<Finding>) -> Option<ContinuityState> {
    // The reference's flat form has no `schema_version` and has `approval_status`; Cairn's
    // own always has the one and never the other.
    let flat = value.as_object().is_some_and(|object| {
        !object.contains_key("schema_version") && object.contains_key("approval_status")
    });
    let mut f = Fields::object(value, "$", findings)?;
    let schema_version = if flat {
        Some(StateSchemaVersion::V1)
    } else {
        f.parsed(
            "schema_version",
            FindingCode::BadSchemaVersion,
            "`continuity-state/v1`",
            |t| (t == STATE_SCHEMA_VERSION).then_some(StateSchemaVersion::V1),
        )
    };
    let authority = Authority::read(&mut f);
    let approval = if flat {
        read_flat_approval(&mut f)
    } else {
        read_approval(&mut f)
    };
    let idempotency_key = if flat {
        f.unused_or("idempotency_key", Fields::nullable_text)
    } else {
        f.nullable_text("idempotency_key")
    };
    let side_effect_status = f.parsed(
        "side_effect_status",
        FindingCode::BadSideEffectStatus,
        "one of `not_executed`, `applied`, `side_effect_unknown`, `partial_side_effect`",
        SideEffectStatus::parse,
    );
    let checkpoint_ref = f.text("checkpoint_ref");

    if authority.authorization_mode == Some(AuthorizationMode::UserDelegated) {
        for (key, value) in [
            ("delegated_principal_id", &authority.delegated_principal_id),
            ("delegated_scope", &authority.delegated_scope),
        ] {
            if matches!(value, Some(None)) {
                let path = f.path(key);
                let message =
                    format!("`{path}` is required when `authorization_mode` is `user_delegated`");
                f.push(FindingCode::DelegationIncomplete, path, message);
            }
        }
    }
    if authority.authorization_mode == Some(AuthorizationMode::HumanApproved)
        && matches!(approval, Some(None))
    {
        let path = f.path("approval");
        let message = format!("`{path}` is required when `authorization_mode` is `human_approved`");
        f.push(FindingCode::ApprovalRequired, path, message);
    }
    if let (Some(status), Some(None)) = (side_effect_status, &idempotency_key)
        && status != SideEffectStatus::NotExecuted
    {
        let path = f.path("idempotency_key");
        let message = format!("`{path}` is required when `side_effect_status` is `{status}`");
        f.push(FindingCode::IdempotencyKeyRequired, path, message);
    }
    f.finish();

    Some(ContinuityState {
        schema_version: schema_version?,
        tenant_id: authority.tenant_id?,
        principal_id: authority.principal_id?,
        authorization_mode: authority.authorization_mode?,
        delegated_principal_id: authority.delegated_principal_id?,
        delegated_scope: authority.delegated_scope?,
        policy_version: authority.policy_version?,
        capability_name: authority.capability_name?,
        capability_version: authority.capability_version?,
        approval: approval?,
        idempotency_key: idempotency_key?,
        side_effect_status: side_effect_status?,
        checkpoint_ref: checkpoint_ref?,
    })
}

/// The reference's flat approval: `approval_id`, `action_digest`, `approval_status`
/// (`approved`, `revoked`, `pending`, `expired`, `rejected`) and `approval_expires_at`, all
/// set, or all unused (`null` or `""`). Mapped once onto [`ApprovalState`]: `approved` is
/// `active`, `rejected` is `denied`, the rest keep their names.
fn read_flat_approval(f: &mut Fields<'_>) -> Option<Option<ApprovalState>> {
    let id = f.unused_or("approval_id", Fields::nullable_text);
    let action_digest = f.unused_or("action_digest", Fields::nullable_digest);
    let status = f.unused_or("approval_status", |f, key| {
        f.nullable_parsed(
            key,
            FindingCode::BadApprovalStatus,
            "one of `approved`, `revoked`, `pending`, `expired`, `rejected`",
            |text| match text {
                "approved" => Some(ApprovalStatus::Active),
                "revoked" => Some(ApprovalStatus::Revoked),
                "pending" => Some(ApprovalStatus::Pending),
                "expired" => Some(ApprovalStatus::Expired),
                "rejected" => Some(ApprovalStatus::Denied),
                _ => None,
            },
        )
    });
    let expires_at = f.unused_or("approval_expires_at", Fields::nullable_timestamp);
    let (id, action_digest, status, expires_at) = (id?, action_digest?, status?, expires_at?);
    let set = [
        ("approval_id", id.is_some()),
        ("action_digest", action_digest.is_some()),
        ("approval_status", status.is_some()),
        ("approval_expires_at", expires_at.is_some()),
    ];
    if set.iter().all(|(_, on)| !on) {
        return Some(None);
    }
    for (key, on) in set {
        if !on {
            let path = f.path(key);
            let message = format!(
                "`{path}` is unused but the approval is bound: `approval_id`, `action_digest`, \
                 `approval_status` and `approval_expires_at` are set together or all unused"
            );
            f.push(FindingCode::ApprovalIncomplete, path, message);
        }
    }
    Some(Some(ApprovalState {
        id: id?,
        action_digest: action_digest?,
        status: status?,
        expires_at: expires_at?,
    }))
}

/// `approval` is `null` or `{id, action_digest, status, expires_at}`.
fn read_approval(f: &mut Fields<'_>) -> Option<Option<ApprovalState>> {
    let value = f.present("approval")?;
    if value.is_null() {
        return Some(None);
    }
    let path = f.path("approval");
    let mut nested = Vec::new();
    let approval = Fields::object(value, &path, &mut nested).and_then(|mut a| {
        let id = a.text("id");
        let action_digest = a.digest("action_digest");
        let status = a.parsed(
            "status",
            FindingCode::BadApprovalStatus,
            "one of `active`, `revoked`, `pending`, `expired`, `consumed`, `denied`",
            ApprovalStatus::parse,
        );
        let expires_at = a.timestamp("expires_at");
        a.finish();
        Some(ApprovalState {
            id: id?,
            action_digest: action_digest?,
            status: status?,
            expires_at: expires_at?,
        })
    });
    let ok = nested.is_empty();
    for finding in nested {
        f.push(finding.code, finding.path, finding.message);
    }
    approval.filter(|_| ok).map(Some)
}
