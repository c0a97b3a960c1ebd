//! Approval requests of the caller's tenant (SPEC T-4): people read them (investigator,
//! approver, admin) and approvers decide them (approver, admin). An agent token does
//! neither: it learns of its own held call from its step's answer. A request shows the tool,
//! the run and the digest of the exact arguments — never the arguments.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use cairn_runtime::approvals::{Decision, Listed, PersonDecision};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::roles::{APPROVAL_READERS, APPROVERS};
use super::extract::{Authenticated, JsonBody, PathParams, QueryParams, blocking, whole_number};
use crate::error::{ApiError, ErrorBody};
use crate::service::Service;

/// An approval request and what became of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalView {
    /// `apr-` and 24 hex digits.
    #[schema(example = "apr-0123456789abcdef01234567")]
    pub id: String,
    /// `pending`, `lapsed` (nobody decided in time), `active`, `refused`, `revoked`,
    /// `expired` or `used_up`.
    pub state: String,
    /// The tenant.
    pub tenant_id: String,
    /// The run whose call was held.
    pub run_id: String,
    /// Whether that run is closed.
    pub run_closed: bool,
    /// The held step.
    pub step: u64,
    /// The tool held.
    pub tool: String,
    /// Its version.
    pub tool_version: String,
    /// The digest of the exact action (tool, version, canonical arguments).
    pub action_digest: String,
    /// The policy-set version the call was held under.
    pub policy_set_version: Option<String>,
    /// The host's call id, when it gave one.
    pub call_id: Option<String>,
    /// When it was requested (RFC 3339).
    pub requested_at: String,
    /// Until when a person may decide it (RFC 3339).
    pub decide_by: String,
    /// `approved` or `refused`, once decided.
    pub decision: Option<String>,
    /// Who decided (`token:<id>`, `os:<user>`).
    pub decided_by: Option<String>,
    /// Until when an approval admits the call (RFC 3339).
    pub approval_expires_at: Option<String>,
    /// How many calls it admits.
    pub uses: Option<u64>,
    /// The steps it admitted.
    pub used: Vec<u64>,
    /// Who revoked it.
    pub revoked_by: Option<String>,
}

impl From<&Listed> for ApprovalView {
    fn from(listed: &Listed) -> Self {
        let approval = &listed.approval;
        let request = &approval.request;
        let (decision, uses) = match &approval.decision {
            Some(Decision::Granted { uses, .. }) => (Some("approved"), Some(*uses)),
            Some(Decision::Refused { .. }) => (Some("refused"), None),
            None => (None, None),
        };
        Self {
            id: request.id.to_string(),
            state: listed.state.as_str().to_owned(),
            tenant_id: request.tenant.to_string(),
            run_id: request.run.to_string(),
            run_closed: listed.run_closed,
            step: request.step,
            tool: request.tool.name.to_string(),
            tool_version: request.tool.version.to_string(),
            action_digest: request.action_digest.to_string(),
            policy_set_version: request.policy_set_version.map(|d| d.to_string()),
            call_id: request.call_id.clone(),
            requested_at: request.requested_at.to_string(),
            decide_by: request.expires_at.to_string(),
            decision: decision.map(str::to_owned),
            decided_by: match &approval.decision {
                Some(Decision::Granted { approver, .. } | Decision::Refused { approver, .. }) => {
                    Some(approver.clone())
                }
                None => None,
            },
            approval_expires_at: approval.expires_at().map(|t| t.to_string()),
            uses,
            used: approval.used.clone(),
            revoked_by: approval.revoked.as_ref().map(|(by, _)| by.clone()),
        }
    }
}

/// Which requests to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsQuery {
    /// Every request of the tenant's runs, decided ones and closed runs' too (default: only
    /// those waiting for a person).
    #[serde(default)]
    pub all: Option<bool>,
}

/// The tenant's requests waiting for a person, oldest first (`all=true`: every one).
#[utoipa::path(get, path = "/v1/approvals", tag = "approvals", params(ApprovalsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The requests", body = [ApprovalView]),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn list_approvals(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    QueryParams(query): QueryParams<ApprovalsQuery>,
) -> Result<Json<Vec<ApprovalView>>, ApiError> {
    let caller = caller.with_role(APPROVAL_READERS, "read approval requests")?;
    let all = query.all.unwrap_or(false);
    let listed = blocking(move || service.list_approvals(&caller, all)).await?;
    Ok(Json(listed.iter().map(ApprovalView::from).collect()))
}

/// One request of the tenant.
#[utoipa::path(get, path = "/v1/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "The request id (`apr-…`)", pattern = "^apr-[0-9a-f]{24}$")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The request", body = ApprovalView),
        (status = "4XX", description = "Refused, or no such request for this token", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn get_approval(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<ApprovalView>, ApiError> {
    let caller = caller.with_role(APPROVAL_READERS, "read approval requests")?;
    let id = path.get("id")?.to_owned();
    let listed = blocking(move || service.approval(&caller, &id)).await?;
    Ok(Json(ApprovalView::from(&listed)))
}

/// Approving a held call.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveRequest {
    /// How long the approval admits the call: a number and `s`, `m`, `h` or `d` (default
    /// `15m`).
    #[serde(default)]
    #[schema(example = "15m", pattern = "^[0-9]{1,6}[smhd]$")]
    pub expires_in: Option<String>,
    /// How many calls it admits (default 1: single use).
    #[serde(default)]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 1000)]
    pub uses: Option<serde_json::Number>,
    /// Why (kept in the content store; the record binds its digest).
    #[serde(default)]
    #[schema(max_length = 1024)]
    pub note: Option<String>,
}

/// Refusing a held call, or revoking an approval.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideRequest {
    /// Why (kept in the content store; the record binds its digest).
    #[serde(default)]
    #[schema(max_length = 1024)]
    pub note: Option<String>,
}

/// Approves exactly the held call (approver or admin): it admits the identical call of the
/// same run, under the same policies, `uses` times until it expires. The approver is the
/// token.
#[utoipa::path(post, path = "/v1/approvals/{id}/approve", tag = "approvals",
    params(("id" = String, Path, description = "The request id (`apr-…`)", pattern = "^apr-[0-9a-f]{24}$")),
    request_body = ApproveRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Approved", body = ApprovalView),
        (status = "4XX", description = "Refused: decided already, lapsed, its run closed, or not this token's to decide", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn approve(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<ApproveRequest>,
) -> Result<Json<ApprovalView>, ApiError> {
    let caller = caller.with_role(APPROVERS, "decide approval requests")?;
    let id = path.get("id")?.to_owned();
    let expires_in = cairn_runtime::duration::parse_duration(
        "expires_in",
        body.expires_in.as_deref().unwrap_or("15m"),
    )?;
    let uses = body
        .uses
        .as_ref()
        .map_or(Ok(1), |uses| whole_number(uses, "body.uses"))?;
    let decision = PersonDecision::Approve { expires_in, uses };
    let listed =
        blocking(move || service.decide_approval(&caller, &id, &decision, body.note.as_deref()))
            .await?;
    Ok(Json(ApprovalView::from(&listed)))
}

/// Refuses the held call (approver or admin).
#[utoipa::path(post, path = "/v1/approvals/{id}/deny", tag = "approvals",
    params(("id" = String, Path, description = "The request id (`apr-…`)", pattern = "^apr-[0-9a-f]{24}$")),
    request_body = DecideRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Refused", body = ApprovalView),
        (status = "4XX", description = "Refused: decided already, lapsed, its run closed, or not this token's to decide", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn deny(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<DecideRequest>,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(service, caller, &path, PersonDecision::Deny, body).await
}

/// Revokes an approval (approver or admin): it admits nothing more.
#[utoipa::path(post, path = "/v1/approvals/{id}/revoke", tag = "approvals",
    params(("id" = String, Path, description = "The request id (`apr-…`)", pattern = "^apr-[0-9a-f]{24}$")),
    request_body = DecideRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Revoked", body = ApprovalView),
        (status = "4XX", description = "Refused: nothing to revoke, its run closed, or not this token's to decide", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn revoke(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<DecideRequest>,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(service, caller, &path, PersonDecision::Revoke, body).await
}

async fn decide(
    service: Arc<Service>,
    caller: Authenticated,
    path: &PathParams,
    decision: PersonDecision,
    body: DecideRequest,
) -> Result<Json<ApprovalView>, ApiError> {
    let caller = caller.with_role(APPROVERS, "decide approval requests")?;
    let id = path.get("id")?.to_owned();
    let listed =
        blocking(move || service.decide_approval(&caller, &id, &decision, body.note.as_deref()))
            .await?;
    Ok(Json(ApprovalView::from(&listed)))
}
