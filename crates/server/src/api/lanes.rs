//! A run's responsibility lanes: the book as the run's records left it (whoever may see the
//! run), and the lane events a person records in it — a ruling, evidence for a done
//! condition, a handoff the service signs. An agent reads its run's lanes and is judged by
//! them; it records none of their events.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::extract::roles::{ANYONE, PEOPLE};
use super::extract::{Authenticated, JsonBody, PathParams, blocking};
use super::runs::ReceiptView;
use crate::error::{ApiError, ErrorBody};
use crate::service::{LaneState, Service};

/// A run's lanes.
#[derive(Debug, Serialize, ToSchema)]
pub struct LanesView {
    /// The lane calls are made in unless they name one.
    pub active_lane: Option<String>,
    /// Every lane (none when the service declares no lanes).
    pub lanes: Vec<LaneState>,
}

/// The run's lanes as its records left them: rulings, evidence and handoffs applied (the
/// agent that opened the run, investigator, admin).
#[utoipa::path(get, path = "/v1/runs/{run}/lanes", tag = "lanes",
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The lanes", body = LanesView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn run_lanes(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<LanesView>, ApiError> {
    let (caller, run) = caller.on_run(ANYONE, "read runs", &path)?;
    let (active_lane, lanes) = blocking(move || service.run_lanes(&caller, &run)).await?;
    Ok(Json(LanesView { active_lane, lanes }))
}

/// A person's ruling on a lane.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulingRequest {
    /// The ruling's reference (the authoritative event: a review, a ticket).
    #[schema(min_length = 1, max_length = 64)]
    pub ruling_ref: String,
    /// The lane as ruled (`cairn.lanes/v1` lane: `lane_id`, `owner_ref`, `objective`,
    /// `mutation_scope`, …); its `lane_id` names the lane.
    #[schema(value_type = Object)]
    pub definition: Value,
}

/// Records a ruling: the lane as ruled replaces its definition in the run, bound into the
/// chain by its digest (investigator, admin).
#[utoipa::path(post, path = "/v1/runs/{run}/lanes/rulings", tag = "lanes",
    request_body = RulingRequest,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = ReceiptView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn record_ruling(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<RulingRequest>,
) -> Result<Json<ReceiptView>, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "record lane rulings", &path)?;
    let receipt =
        blocking(move || service.record_ruling(&caller, &run, body.ruling_ref, body.definition))
            .await?;
    Ok(Json(ReceiptView::from(receipt)))
}

/// Evidence for a lane's done condition.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRequest {
    /// The evidence's reference (one of the done condition's, or a partial check).
    #[schema(min_length = 1, max_length = 64)]
    pub evidence_ref: String,
    /// Whether it passed.
    pub passed: bool,
}

/// Records evidence for a lane: once every done-condition ref has passed, the lane reads
/// `complete` (investigator, admin: evidence is observed, never the agent's own claim).
#[utoipa::path(post, path = "/v1/runs/{run}/lanes/{lane}/evidence", tag = "lanes",
    request_body = EvidenceRequest,
    params(
        ("run" = String, Path, description = "The run id"),
        ("lane" = String, Path, description = "The lane id"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = ReceiptView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn record_evidence(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<EvidenceRequest>,
) -> Result<Json<ReceiptView>, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "record lane evidence", &path)?;
    let lane = path.get("lane")?.to_owned();
    let receipt = blocking(move || {
        service.record_lane_evidence(&caller, &run, lane, body.evidence_ref, body.passed)
    })
    .await?;
    Ok(Json(ReceiptView::from(receipt)))
}

/// A lane's handoff to a new owner.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffRequest {
    /// The new owner (`agent:…`, `human:…`).
    #[schema(min_length = 1, max_length = 64)]
    pub to_owner: String,
    /// Why.
    #[schema(max_length = 256)]
    pub reason: String,
}

/// The recorded handoff.
#[derive(Debug, Serialize, ToSchema)]
pub struct HandoffView {
    /// Its record.
    pub receipt: ReceiptView,
    /// The handoff as a C2SP signed note, signed with the service's key.
    pub note: String,
}

/// Hands a lane from its current owner to a new one: the handoff, bound to the lane's
/// current digest, is signed with the service's key, verified and recorded (investigator,
/// admin).
#[utoipa::path(post, path = "/v1/runs/{run}/lanes/{lane}/handoff", tag = "lanes",
    request_body = HandoffRequest,
    params(
        ("run" = String, Path, description = "The run id"),
        ("lane" = String, Path, description = "The lane id"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = HandoffView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn hand_off(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<HandoffRequest>,
) -> Result<Json<HandoffView>, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "hand lanes over", &path)?;
    let lane = path.get("lane")?.to_owned();
    let (receipt, note) =
        blocking(move || service.hand_off_lane(&caller, &run, &lane, body.to_owner, body.reason))
            .await?;
    Ok(Json(HandoffView {
        receipt: ReceiptView::from(receipt),
        note,
    }))
}
