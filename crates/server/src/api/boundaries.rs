//! Boundaries an agent marks in its own runs: a compaction (the continuity envelope, bound to
//! the summary's digest, written with its `context_compaction` record) and the rehydration
//! after it (decided from the stored envelope and the run's records; it can at best require
//! reauthorization — it never authorises).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use cairn_runtime::boundary::SessionFacts;
use cairn_runtime::continuity::AuthorizationMode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::roles::AGENT;
use super::extract::{Authenticated, JsonBody, PathParams, blocking};
use crate::error::{ApiError, ErrorBody};
use crate::service::Service;
use crate::tokens::Caller;

/// How the run's authority was granted.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Authorization {
    /// The platform's own authority.
    #[default]
    PlatformOwned,
    /// A user's authority, delegated (give `delegated_principal_id` and `delegated_scope`).
    UserDelegated,
    /// A person's approval of each call: the run was opened so, and every call it makes the
    /// policies permit waits for a person (`/v1/approvals`).
    HumanApproved,
}

/// The session's control facts the run's records do not hold. Who the run acts for is the
/// token's, never the request's.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FactsBody {
    /// The host's session id (default: the run's id).
    #[serde(default)]
    pub session_id: Option<String>,
    /// How authority was granted.
    #[serde(default)]
    pub authorization: Authorization,
    /// Who delegated, for `user_delegated`.
    #[serde(default)]
    pub delegated_principal_id: Option<String>,
    /// What was delegated, for `user_delegated`.
    #[serde(default)]
    pub delegated_scope: Option<String>,
    /// The capability in flight (default: none named).
    #[serde(default)]
    pub capability_name: Option<String>,
    /// Its version.
    #[serde(default)]
    pub capability_version: Option<String>,
    /// The task's objective, as the user authorised it.
    #[serde(default)]
    pub objective: Option<String>,
    /// References to the exact constraints.
    #[serde(default)]
    pub exact_constraint_refs: Vec<String>,
    /// Work that must not be forgotten.
    #[serde(default)]
    pub pending_obligations: Vec<String>,
    /// The sandbox snapshot to resume from.
    #[serde(default)]
    pub sandbox_snapshot_ref: Option<String>,
    /// What is left of the budget.
    #[serde(default)]
    pub budget_remaining: Option<u64>,
}

impl FactsBody {
    fn facts(self, caller: &Caller, run: &str) -> SessionFacts {
        SessionFacts {
            session_id: self.session_id.unwrap_or_else(|| run.to_owned()),
            principal_id: format!("{}:{}", caller.role.as_str(), caller.token_id),
            authorization_mode: match self.authorization {
                Authorization::PlatformOwned => AuthorizationMode::PlatformOwned,
                Authorization::UserDelegated => AuthorizationMode::UserDelegated,
                Authorization::HumanApproved => AuthorizationMode::HumanApproved,
            },
            delegated_principal_id: self.delegated_principal_id,
            delegated_scope: self.delegated_scope,
            capability_name: self.capability_name.unwrap_or_else(|| "none".to_owned()),
            capability_version: self.capability_version.unwrap_or_else(|| "none".to_owned()),
            approval: None,
            objective: self.objective.unwrap_or_else(|| "unstated".to_owned()),
            exact_constraint_refs: self.exact_constraint_refs,
            pending_obligations: self.pending_obligations,
            sandbox_snapshot_ref: self.sandbox_snapshot_ref,
            budget_remaining: self.budget_remaining,
        }
    }
}

/// A compaction about to happen.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    /// The summary the model will continue from: only its digest is recorded (the text is
    /// kept in the content store under the run's retention).
    pub summary: String,
    /// `manual` or `auto`.
    #[serde(default)]
    #[schema(
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 64
    )]
    pub trigger: Option<String>,
    /// The session's facts.
    #[serde(default)]
    pub facts: Option<FactsBody>,
}

/// What a compaction recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompactResponse {
    /// The `context_compaction` record's step.
    pub step: u64,
    /// Its digest.
    pub digest: String,
    /// The envelope saved with it.
    pub envelope_id: String,
    /// The digest of the envelope's RFC 8785 form.
    pub envelope_digest: String,
    /// The summary's digest, as bound in the envelope.
    pub summary_digest: String,
}

/// Records a compaction: the continuity envelope, built from the durable state and the facts,
/// bound to the summary's digest (agent, in its own runs).
#[utoipa::path(post, path = "/v1/runs/{run}/compact", tag = "runs", request_body = CompactRequest,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = CompactResponse),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed; nothing was recorded", body = ErrorBody),
    ))]
pub(super) async fn compact(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<CompactRequest>,
) -> Result<Json<CompactResponse>, ApiError> {
    let (caller, run) = caller.on_run(AGENT, "mark boundaries", &path)?;
    let facts = body.facts.unwrap_or_default().facts(&caller, run.as_str());
    let trigger = body.trigger.unwrap_or_else(|| "manual".to_owned());
    let summary_digest = cairn_runtime::continuity::summary_sha256(&body.summary).to_string();
    let done =
        blocking(move || service.compact(&caller, &run, &facts, &body.summary, &trigger)).await?;
    Ok(Json(CompactResponse {
        step: done.receipt.step_index,
        digest: done.receipt.digest.to_string(),
        envelope_id: done.envelope.envelope().envelope_id.clone(),
        envelope_digest: done.envelope_digest.to_string(),
        summary_digest,
    }))
}

/// A rehydration after a compaction.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RehydrateRequest {
    /// The summary the model continues from (only hashed).
    pub summary: String,
    /// The session's facts now.
    #[serde(default)]
    pub facts: Option<FactsBody>,
}

/// Decides whether the run may resume after its last compaction (E-4): `validated` at best —
/// which still requires reauthorization; `blocked_on_reconciliation` or
/// `continuity_validation_failed` with the reason otherwise (agent, in its own runs).
#[utoipa::path(post, path = "/v1/runs/{run}/rehydrate", tag = "runs", request_body = RehydrateRequest,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The decision (never an authorisation)", body = Object),
        (status = "4XX", description = "Refused, or no envelope saved for the run", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn rehydrate(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<RehydrateRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (caller, run) = caller.on_run(AGENT, "mark boundaries", &path)?;
    let facts = body.facts.unwrap_or_default().facts(&caller, run.as_str());
    let decision =
        blocking(move || service.rehydrate(&caller, &run, &facts, &body.summary)).await?;
    Ok(Json(serde_json::to_value(&decision).unwrap_or_default()))
}
