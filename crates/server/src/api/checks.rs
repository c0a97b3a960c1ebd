//! Checks that read and write nothing of any run, for agents and tools in any language: the
//! rehydration decision of SPEC E-4 from an envelope, a state and a summary (as `cairn
//! continuity check`), and VCE 0.1 / RLC 0.1 documents decided as their reference
//! implementations decide them (as `cairn vce check` / `cairn rlc check`). Any token may ask;
//! nothing is stored or logged but the request's route and status.

use std::sync::LazyLock;

use axum::Json;
use cairn_core::{CodedFinding, ErrorCode as _, Timestamp};
use cairn_interop::py_json::{self, PyJson};
use cairn_interop::request::{RequestShapeError, RlcRequest, VceRequest};
use cairn_interop::{RlcValidator, VceValidator};
use cairn_runtime::continuity::{ContinuityState, decide_text};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::extract::roles::ANYONE;
use super::extract::{Authenticated, JsonBody, RawBody, blocking};
use crate::error::{ApiError, ErrorBody, ServerCode};

/// A rehydration decision to make from documents.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinuityCheckRequest {
    /// The continuity envelope (bare or wrapped): the envelope itself, or its JSON text as a
    /// string, which is judged byte for byte — an envelope that is not valid is a decision
    /// (`continuity_validation_failed`), not a refused request.
    #[schema(value_type = serde_json::Value)]
    pub envelope: Box<RawValue>,
    /// The current durable state (`continuity-state/v1`): the object, or its JSON text.
    #[schema(value_type = serde_json::Value)]
    pub state: Box<RawValue>,
    /// The summary the model continues from, used byte for byte.
    pub summary: String,
    /// The instant to decide at (RFC 3339, any offset).
    #[schema(example = "2026-12-04T10:00:00Z")]
    pub now: String,
}

/// Decides whether a run may resume after a boundary from an envelope, the durable state and
/// the summary (SPEC E-4), as `cairn continuity check` does: `reauthorization_required` at
/// best, `blocked_on_reconciliation` or `continuity_validation_failed` with the reason and
/// every finding otherwise. The decision never authorises anything (any role).
#[utoipa::path(post, path = "/v1/continuity/check", tag = "checks", request_body = ContinuityCheckRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The decision (never an authorisation)", body = Object),
        (status = "4XX", description = "Refused: the state or `now` cannot be read", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn check_continuity(
    caller: Authenticated,
    JsonBody(body): JsonBody<ContinuityCheckRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    caller.with_role(ANYONE, "check documents")?;
    let now: Timestamp = body.now.parse().map_err(|e| {
        ApiError::new(
            cairn_core::CoreError::INVALID_TIMESTAMP,
            format!("`now`: {e}"),
        )
        .at("body.now")
    })?;
    let envelope = text_of(&body.envelope, "envelope")?;
    let state_text = text_of(&body.state, "state")?;
    let state = ContinuityState::from_json(&state_text)
        .map_err(|e| ApiError::from_error(&e).at("body.state"))?;
    let decision = blocking(move || Ok(decide_text(&envelope, &state, &body.summary, now))).await?;
    Ok(Json(decision.to_json()))
}

/// A member given either as a JSON value or as a string holding its JSON text: the text.
fn text_of(raw: &RawValue, member: &str) -> Result<String, ApiError> {
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str(text).map_err(|e| {
            ApiError::new(ServerCode::BODY_INVALID, e.to_string()).at(format!("body.{member}"))
        })
    } else {
        Ok(text.to_owned())
    }
}

/// A VCE 0.1 check, for the document only: the body is read as Python's `json.loads` reads
/// it, so that non-finite numbers and lone surrogates decide as in the reference.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "the request's shape, for the OpenAPI document")]
pub struct VceCheckRequest {
    /// The Verifiable Continuation Envelope.
    envelope: serde_json::Value,
    /// The restore results observed after the boundary.
    restore: Option<serde_json::Value>,
}

/// An RLC 0.1 check, for the document only (read as for [`VceCheckRequest`]).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "the request's shape, for the OpenAPI document")]
pub struct RlcCheckRequest {
    /// The Responsibility Lane extension.
    extension: serde_json::Value,
    /// The lane restore results (also accepted as `restore_results`, not both).
    restore: Option<serde_json::Value>,
    /// The VCE envelope the extension extends.
    vce: Option<serde_json::Value>,
}

/// One finding of a check.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckFinding {
    /// The stable code.
    pub code: String,
    /// What is wrong, naming the field.
    pub message: String,
}

/// A document's decision and every finding of the deciding stage, as `cairn vce check
/// --json` / `cairn rlc check --json` print them.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckReport {
    /// `RESUMABLE`, `REVIEW_REQUIRED` or `BLOCKED` (VCE); `PASSED`, `REVIEW_REQUIRED` or
    /// `BLOCKED` (RLC).
    pub decision: String,
    /// Every finding, in the order the reference reports them.
    pub findings: Vec<CheckFinding>,
}

impl CheckReport {
    fn new(decision: &str, findings: Vec<CodedFinding>) -> Self {
        Self {
            decision: decision.to_owned(),
            findings: findings
                .into_iter()
                .map(|f| CheckFinding {
                    code: f.code.to_owned(),
                    message: f.message,
                })
                .collect(),
        }
    }
}

static VCE: LazyLock<Result<VceValidator, String>> =
    LazyLock::new(|| VceValidator::new().map_err(|e| e.to_string()));
static RLC: LazyLock<Result<RlcValidator, String>> =
    LazyLock::new(|| RlcValidator::new().map_err(|e| e.to_string()));

/// Decides a VCE 0.1 envelope with its restore results, as the reference implementation
/// does (any role).
#[utoipa::path(post, path = "/v1/vce/check", tag = "checks", request_body = VceCheckRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The decision; a blocked envelope is a decision, not an error", body = CheckReport),
        (status = "4XX", description = "Refused: the body is not JSON, or not a check", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn check_vce(
    caller: Authenticated,
    RawBody(body): RawBody,
) -> Result<Json<CheckReport>, ApiError> {
    caller.with_role(ANYONE, "check documents")?;
    let request = VceRequest::from_document(document(&body)?).map_err(shape)?;
    blocking(move || {
        let validator = VCE.as_ref().map_err(|e| internal(e))?;
        let report = validator.check_read(&request.envelope, request.restore.as_ref());
        Ok(CheckReport::new(report.decision.as_str(), report.findings))
    })
    .await
    .map(Json)
}

/// Decides an RLC 0.1 extension with its lane restore results and VCE envelope, as the
/// reference implementation does (any role).
#[utoipa::path(post, path = "/v1/rlc/check", tag = "checks", request_body = RlcCheckRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The decision; a blocked extension is a decision, not an error", body = CheckReport),
        (status = "4XX", description = "Refused: the body is not JSON, or not a check", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn check_rlc(
    caller: Authenticated,
    RawBody(body): RawBody,
) -> Result<Json<CheckReport>, ApiError> {
    caller.with_role(ANYONE, "check documents")?;
    let request = RlcRequest::from_document(document(&body)?).map_err(shape)?;
    blocking(move || {
        let validator = RLC.as_ref().map_err(|e| internal(e))?;
        let report = validator.check_read(
            &request.extension,
            request.restore.as_ref(),
            request.vce.as_ref(),
        );
        Ok(CheckReport::new(report.decision.as_str(), report.findings))
    })
    .await
    .map(Json)
}

/// The body read as Python reads JSON.
fn document(body: &[u8]) -> Result<PyJson, ApiError> {
    let text = std::str::from_utf8(body).map_err(|e| {
        ApiError::new(
            ServerCode::BODY_INVALID,
            format!("the body is not UTF-8: {e}"),
        )
        .at("body")
    })?;
    py_json::parse(text)
        .map_err(|e| ApiError::new(e.error_code(), format!("the body is not JSON: {e}")).at("body"))
}

fn shape(error: RequestShapeError) -> ApiError {
    let field = error
        .member
        .as_ref()
        .map_or_else(|| "body".to_owned(), |member| format!("body.{member}"));
    ApiError::new(ServerCode::BODY_INVALID, format!("the request {error}")).at(field)
}

fn internal(error: &str) -> ApiError {
    ApiError::new(
        ServerCode::INTERNAL,
        format!("the validator cannot be built: {error}"),
    )
}
