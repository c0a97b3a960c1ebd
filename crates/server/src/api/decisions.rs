//! The task decisions of the token's tenant (SPEC §8): the book, set and approve-change,
//! snapshots, the comparison after a boundary, and its status. People only (investigator,
//! admin): an agent never sets, approves or even reads the decisions that bound it. No raw
//! value is ever answered or kept — only its keyed digest.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use cairn_core::Timestamp;
use cairn_runtime::decisions::CheckOutcome;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::extract::roles::PEOPLE;
use super::extract::{Authenticated, JsonBody, PathParams, QueryParams, blocking};
use crate::error::{ApiError, ErrorBody};
use crate::service::Service;

/// JSON of a library document, or the service's failure to write it.
fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value).map_err(|e| {
        ApiError::new(
            crate::error::ServerCode::INTERNAL,
            format!("cannot serialise: {e}"),
        )
    })
}

/// The token's tenant's decision book: each decision's key, revision, keyed digest, when it
/// was observed, its approval and source; the approved changes; the latest snapshot's name
/// (investigator, admin).
#[utoipa::path(get, path = "/v1/decisions", tag = "decisions",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`decisions`, `approvals`, `latest_snapshot`", body = Object),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn list_decisions(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
) -> Result<Json<Value>, ApiError> {
    let caller = caller.with_role(PEOPLE, "read task decisions")?;
    let state = blocking(move || service.decision_book(&caller)).await?;
    let current: Vec<_> = state.book.current().collect();
    Ok(Json(json!({
        "decisions": to_json(&current)?,
        "approvals": to_json(state.book.approvals())?,
        "latest_snapshot": state.latest_snapshot,
    })))
}

/// A decision's new value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetDecisionRequest {
    /// The value (any JSON); only its keyed digest is kept.
    pub value: Value,
    /// The reference of the approval of a change (a ticket, a review); without one a changed
    /// value is `conflicting` until approved.
    #[serde(default)]
    pub approval: Option<String>,
    /// Where the value comes from (`token:<id>` of the caller by default).
    #[serde(default)]
    pub source: Option<String>,
}

/// Sets a decision of the token's tenant (`scope`, `approval_boundary`, `target`,
/// `acceptance_test`, `constraint`, or a custom `x-…` kind): created, re-observed (same value)
/// or revised (investigator, admin).
#[utoipa::path(put, path = "/v1/decisions/{key}", tag = "decisions",
    request_body = SetDecisionRequest,
    params(("key" = String, Path, description = "The decision's kind")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The outcome: `created`, `reobserved` or `revised`, with the entry", body = Object),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn set_decision(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<SetDecisionRequest>,
) -> Result<Json<Value>, ApiError> {
    let caller = caller.with_role(PEOPLE, "set task decisions")?;
    let key = path.get("key")?.to_owned();
    let source = body
        .source
        .unwrap_or_else(|| format!("token:{}", caller.token_id));
    let outcome = blocking(move || {
        service.set_decision(
            &caller,
            &key,
            &body.value,
            body.approval.as_deref(),
            &source,
        )
    })
    .await?;
    Ok(Json(to_json(&outcome)?))
}

/// The approval of a decision's change from one revision to a later one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveChangeRequest {
    /// The revision approved away from.
    #[schema(minimum = 0, maximum = 4_294_967_295_u64)]
    pub from: u32,
    /// The revision approved.
    #[schema(minimum = 0, maximum = 4_294_967_295_u64)]
    pub to: u32,
    /// The approval's reference (a ticket, a review).
    pub approval: String,
}

/// Approves the change of a decision of the token's tenant from revision `from` to `to`,
/// which a comparison then calls `approved_change` instead of `conflicting` (investigator,
/// admin).
#[utoipa::path(post, path = "/v1/decisions/{key}/approve-change", tag = "decisions",
    request_body = ApproveChangeRequest,
    params(("key" = String, Path, description = "The decision's kind")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The approved change", body = Object),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn approve_change(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<ApproveChangeRequest>,
) -> Result<Json<Value>, ApiError> {
    let caller = caller.with_role(PEOPLE, "approve decision changes")?;
    let key = path.get("key")?.to_owned();
    let approved = blocking(move || {
        service.approve_decision_change(&caller, &key, (body.from, body.to), &body.approval)
    })
    .await?;
    Ok(Json(to_json(&approved)?))
}

/// A snapshot to take before a boundary.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRequest {
    /// Its name (a session or run id: ASCII letters, digits, `.`, `_`, `-`).
    #[schema(pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")]
    pub name: String,
    /// The boundary's instant (RFC 3339); now by default.
    #[serde(default)]
    pub boundary_at: Option<String>,
}

/// A snapshot that was saved.
#[derive(Debug, Serialize, ToSchema)]
pub struct SnapshotView {
    /// Its name.
    pub name: String,
    /// Its digest.
    pub snapshot_digest: String,
    /// When it was taken.
    pub taken_at: String,
    /// The boundary it was taken for.
    pub boundary_at: String,
    /// The decisions it holds, by key.
    pub decisions: Vec<String>,
}

/// Snapshots the token's tenant's decisions (3–7 of them) before a boundary. One the book
/// cannot give is refused (`snapshot_refused`, every finding in the message) and
/// recorded as missing, so that a comparison of that name says
/// `continuity_evidence_missing` (investigator, admin).
#[utoipa::path(post, path = "/v1/decisions/snapshots", tag = "decisions",
    request_body = SnapshotRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Saved", body = SnapshotView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn snapshot(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    JsonBody(body): JsonBody<SnapshotRequest>,
) -> Result<(StatusCode, Json<SnapshotView>), ApiError> {
    let caller = caller.with_role(PEOPLE, "snapshot task decisions")?;
    let boundary_at = body
        .boundary_at
        .as_deref()
        .map(|text| {
            text.parse::<Timestamp>()
                .map_err(|e| ApiError::from_error(&e).at("body.boundary_at"))
        })
        .transpose()?;
    let name = body.name.clone();
    let (snapshot, boundary_at) =
        blocking(move || service.snapshot_decisions(&caller, &body.name, boundary_at)).await?;
    Ok((
        StatusCode::CREATED,
        Json(SnapshotView {
            name,
            snapshot_digest: snapshot.digest().to_string(),
            taken_at: snapshot.taken_at().to_string(),
            boundary_at: boundary_at.to_string(),
            decisions: snapshot
                .decisions()
                .iter()
                .map(|entry| entry.key().as_str().to_owned())
                .collect(),
        }),
    ))
}

/// Which snapshot to compare with.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CompareQuery {
    /// The snapshot's name; the latest by default.
    #[serde(default)]
    pub name: Option<String>,
}

/// Compares the token's tenant's decisions now with a snapshot: each decision `preserved`,
/// `approved_change`, `dropped`, `conflicting` or `unverified`, the whole set by precedence,
/// with the safe action; no snapshot gives `continuity_evidence_missing` (investigator,
/// admin).
#[utoipa::path(get, path = "/v1/decisions/compare", tag = "decisions", params(CompareQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The comparison (`cairn.decision-comparison/v1`) and the snapshot's name", body = Object),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn compare(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    QueryParams(query): QueryParams<CompareQuery>,
) -> Result<Json<Value>, ApiError> {
    let caller = caller.with_role(PEOPLE, "compare task decisions")?;
    let (name, comparison) =
        blocking(move || service.compare_decisions(&caller, query.name.as_deref())).await?;
    let mut answer = to_json(&comparison)?;
    if let Value::Object(fields) = &mut answer {
        fields.insert("snapshot".to_owned(), json!(name));
    }
    Ok(Json(answer))
}

/// The continuity health of the token's tenant's decisions against the latest snapshot.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionStatusView {
    /// `preserved`, `approved_change`, `dropped`, `conflicting`, `unverified` or
    /// `continuity_evidence_missing`.
    pub continuity: String,
    /// `pass`, `review_required` or `blocked`.
    pub outcome: String,
    /// The reason's code.
    pub reason: String,
    /// The safe action.
    pub action: String,
    /// The decision that determined the state, if one did.
    pub determining_key: Option<String>,
    /// Whether consequential calls wait now — the hooks' answer, by the one rule
    /// (`ContinuityHealth::restricts_consequential`).
    pub restricts_consequential: bool,
    /// The snapshot compared with, if any.
    pub latest_snapshot: Option<String>,
}

/// The continuity health of the token's tenant's decisions now: the latest (or the named)
/// snapshot's comparison in one line — what a hook would block on (investigator, admin).
#[utoipa::path(get, path = "/v1/decisions/status", tag = "decisions", params(CompareQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The status", body = DecisionStatusView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn status(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    QueryParams(query): QueryParams<CompareQuery>,
) -> Result<Json<DecisionStatusView>, ApiError> {
    let caller = caller.with_role(PEOPLE, "read the decisions' status")?;
    let (name, comparison) =
        blocking(move || service.compare_decisions(&caller, query.name.as_deref())).await?;
    let state = comparison.state();
    Ok(Json(DecisionStatusView {
        continuity: state.as_str().to_owned(),
        outcome: match state.outcome() {
            CheckOutcome::Pass => "pass",
            CheckOutcome::ReviewRequired => "review_required",
            CheckOutcome::Blocked => "blocked",
        }
        .to_owned(),
        reason: comparison.reason().code().to_owned(),
        action: comparison.action().as_str().to_owned(),
        determining_key: comparison
            .determining_key()
            .map(|key| key.as_str().to_owned()),
        restricts_consequential: comparison.restricts_consequential(),
        latest_snapshot: name,
    }))
}
