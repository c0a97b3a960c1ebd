//! Evidence of a run for people: its verification, its bundle, a record's inclusion proof.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::extract::roles::PEOPLE;
use super::extract::{Authenticated, PathParams, RawBody, blocking};
use crate::error::{ApiError, ErrorBody};
use crate::service::Service;

/// A run's verification.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerificationView {
    /// Whether nothing was found.
    pub intact: bool,
    /// The report: records examined, terminated, the checkpoint's state, every finding.
    #[schema(value_type = Object)]
    pub report: serde_json::Value,
}

impl From<&cairn_runtime::ledger::verify::RunReport> for VerificationView {
    fn from(report: &cairn_runtime::ledger::verify::RunReport) -> Self {
        Self {
            intact: report.is_intact(),
            report: serde_json::to_value(report).unwrap_or_default(),
        }
    }
}

/// Verifies a stored run: its chain, its records and its signed checkpoint against the
/// service's trusted keys (investigator, admin).
#[utoipa::path(get, path = "/v1/runs/{run}/verify", tag = "evidence",
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The verification (a tampered run is `intact: false`, not an error)", body = VerificationView),
        (status = "4XX", description = "Refused, or no such run", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn verify_run(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<VerificationView>, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "verify runs", &path)?;
    let report = blocking(move || service.verify(&caller, &run)).await?;
    Ok(Json(VerificationView::from(&report)))
}

/// Verifies an evidence bundle posted as it was exported (JSON lines): its chain, its records
/// and its signed checkpoint, which it must carry, against the service's trusted keys — the
/// store is not read (investigator, admin; a bundle of the token's tenant). Offline, `cairn
/// ledger verify --bundle` does the same.
#[utoipa::path(post, path = "/v1/bundles/verify", tag = "evidence",
    request_body(content = String, content_type = "text/plain",
        description = "The bundle as `GET /v1/runs/{run}/bundle` exports it (JSON lines; any content type is read as the same bytes, `application/x-ndjson` too)"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The verification (a tampered bundle is `intact: false`, not an error)", body = VerificationView),
        (status = "4XX", description = "Refused, or not a bundle at all (`bundle_*`: no record, no line that reads, a second or an invalid checkpoint line)", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn verify_bundle(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    RawBody(body): RawBody,
) -> Result<Json<VerificationView>, ApiError> {
    let caller = caller.with_role(PEOPLE, "verify bundles")?;
    let report = blocking(move || service.verify_bundle(&caller, &body)).await?;
    Ok(Json(VerificationView::from(&report)))
}

/// Exports a run as an evidence bundle: its records as JSON lines in step order, then its
/// signed checkpoint (investigator, admin). Verify it offline with `cairn ledger verify
/// --bundle`.
#[utoipa::path(get, path = "/v1/runs/{run}/bundle", tag = "evidence",
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The bundle", body = String, content_type = "application/x-ndjson"),
        (status = "4XX", description = "Refused, or no such run", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn export_bundle(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Response, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "export runs", &path)?;
    let text = blocking(move || service.bundle(&caller, &run)).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/x-ndjson")],
        text,
    )
        .into_response())
}

/// The inclusion proof of one record in its closed run's signed checkpoint (investigator,
/// admin).
#[utoipa::path(get, path = "/v1/runs/{run}/steps/{step}/proof", tag = "evidence",
    params(("run" = String, Path, description = "The run id"),
           ("step" = u64, Path, description = "The record's step")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The proof (`cairn.inclusion-proof/v1`)", body = Object),
        (status = "4XX", description = "Refused, no such run or step, or the run is not closed", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn prove_step(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "prove records", &path)?;
    let step = path.step("step")?;
    let proof = blocking(move || service.prove(&caller, &run, step)).await?;
    Ok(Json(serde_json::to_value(&proof).unwrap_or_default()))
}

/// One step for an incident, as `cairn ledger show` reads it: the record, whether its digest
/// matches its content, and its retained arguments and observation re-hashed against the
/// digests the record holds (investigator, approver, admin: deciding needs the exact
/// arguments).
#[utoipa::path(get, path = "/v1/runs/{run}/steps/{step}", tag = "evidence",
    params(("run" = String, Path, description = "The run id"),
           ("step" = u64, Path, description = "The record's step")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The step (`record`, `digest_matches_content`, `args`, `observation`; each content `matches` with its `text`, `altered` with its `actual_digest`, or `not_retained`)", body = Object),
        (status = "4XX", description = "Refused, no such run or step, or a record that does not read", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn show_step(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<serde_json::Value>, ApiError> {
    use super::extract::roles::APPROVAL_READERS;
    let (caller, run) = caller.on_run(APPROVAL_READERS, "read a step's content", &path)?;
    let step = path.step("step")?;
    let view = blocking(move || service.step_view(&caller, &run, step)).await?;
    let text = view.to_text().map_err(|fault| {
        ApiError::new(
            crate::error::ServerCode::STORED_RECORD_UNREADABLE,
            format!(
                "step {step} does not read: {} (verify the run)",
                fault.detail
            ),
        )
        .at("path.step")
    })?;
    Ok(Json(serde_json::to_value(&text).unwrap_or_default()))
}
