//! The HTTP API, `/v1`: the router, the handlers and the OpenAPI document generated from them.
//!
//! Every handler authenticates, checks the token's role, reads its input (each failure naming
//! the offending field), and runs the service's synchronous operation on the blocking pool.
//! A run another tenant or another agent holds answers exactly as a run that does not exist.

pub(crate) mod approvals;
mod boundaries;
mod checks;
mod cost;
mod decisions;
mod evidence;
pub mod extract;
mod hooks;
mod lanes;
mod policies;
mod runs;
mod tokens;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::error::{ApiError, ErrorBody, ErrorDetail, ServerCode};
use crate::service::Service;

pub use runs::{
    ObservationRequest, ObservationResponse, OpenRunRequest, OutcomeRequest, OutcomeResponse,
    ReceiptView, ReconcileRequest, RunView, StepRequestBody, StepResponse, TerminateRequest,
    TerminateResponse,
};
pub use tokens::{CreateTokenRequest, CreatedToken, TokenView};

/// The OpenAPI document of the API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Cairn",
        description = "Cairn's authority as a service: every tool call of an agent admitted by policy and lane, recorded as a hash-chained intent record before it runs, and every run closed with a signed checkpoint. Agents hold only a token.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        health, ready, openapi_json,
        runs::open_run, runs::list_runs, runs::get_run, runs::admit_step, runs::report_outcome,
        runs::observe, runs::terminate, runs::reconcile, boundaries::compact, boundaries::rehydrate,
        approvals::list_approvals, approvals::get_approval, approvals::approve, approvals::deny,
        approvals::revoke,
        evidence::verify_run, evidence::export_bundle, evidence::prove_step, evidence::show_step,
        evidence::verify_bundle, cost::cost_rollup,
        decisions::list_decisions, decisions::set_decision, decisions::approve_change,
        decisions::snapshot, decisions::compare, decisions::status,
        lanes::run_lanes, lanes::record_ruling, lanes::record_evidence, lanes::hand_off,
        policies::list_policies, policies::put_policy, policies::delete_policy,
        tokens::create_token, tokens::list_tokens, tokens::revoke_token,
        hooks::answer_hook,
        checks::check_continuity, checks::check_vce, checks::check_rlc,
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&BearerAuth),
    tags(
        (name = "runs", description = "Open runs, admit and record their steps, close them"),
        (name = "approvals", description = "Calls a policy holds for a person: people read the tenant's requests, approvers decide them"),
        (name = "evidence", description = "Verify runs and posted bundles, export bundles, prove records, roll up costs"),
        (name = "decisions", description = "The task decisions of the caller's tenant: set, approve changes, snapshot before a boundary, compare after it (people only)"),
        (name = "lanes", description = "A run's responsibility lanes: the book as its records left it; rulings, evidence and handoffs recorded by people"),
        (name = "policies", description = "The caller's tenant's policy set: the service's policies and the tenant's own (admin)"),
        (name = "tokens", description = "Tokens of the caller's tenant (admin)"),
        (name = "checks", description = "Decide continuity envelopes, VCE and RLC documents; nothing is stored"),
        (name = "hooks", description = "Claude Code and Codex hook events, for `cairn hook` as a thin client"),
        (name = "service", description = "Liveness, readiness and this document"),
    ),
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("cairn_<id>_<secret>")
                    .build(),
            ),
        );
    }
}

/// The OpenAPI document as served and committed (`docs/api/openapi.json`).
#[must_use]
pub fn openapi_document() -> String {
    let mut text = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// The API's router over `service`.
pub fn router(service: Arc<Service>) -> Router {
    let limit = service.max_body_bytes();
    Router::new()
        .route("/healthz", get(health))
        .route("/readyz", get(ready))
        .route("/v1/openapi.json", get(openapi_json))
        .route("/v1/runs", post(runs::open_run).get(runs::list_runs))
        .route("/v1/runs/{run}", get(runs::get_run))
        .route("/v1/runs/{run}/steps", post(runs::admit_step))
        .route(
            "/v1/runs/{run}/steps/{step}/outcome",
            post(runs::report_outcome),
        )
        .route("/v1/runs/{run}/observations", post(runs::observe))
        .route("/v1/runs/{run}/terminate", post(runs::terminate))
        .route("/v1/runs/{run}/reconcile", post(runs::reconcile))
        .route("/v1/runs/{run}/compact", post(boundaries::compact))
        .route("/v1/approvals", get(approvals::list_approvals))
        .route("/v1/approvals/{id}", get(approvals::get_approval))
        .route("/v1/approvals/{id}/approve", post(approvals::approve))
        .route("/v1/approvals/{id}/deny", post(approvals::deny))
        .route("/v1/approvals/{id}/revoke", post(approvals::revoke))
        .route("/v1/runs/{run}/rehydrate", post(boundaries::rehydrate))
        .route("/v1/runs/{run}/lanes", get(lanes::run_lanes))
        .route("/v1/runs/{run}/lanes/rulings", post(lanes::record_ruling))
        .route(
            "/v1/runs/{run}/lanes/{lane}/evidence",
            post(lanes::record_evidence),
        )
        .route("/v1/runs/{run}/lanes/{lane}/handoff", post(lanes::hand_off))
        .route("/v1/runs/{run}/steps/{step}", get(evidence::show_step))
        .route("/v1/runs/{run}/verify", get(evidence::verify_run))
        .route("/v1/runs/{run}/bundle", get(evidence::export_bundle))
        .route(
            "/v1/runs/{run}/steps/{step}/proof",
            get(evidence::prove_step),
        )
        .route(
            "/v1/tokens",
            post(tokens::create_token).get(tokens::list_tokens),
        )
        .route("/v1/bundles/verify", post(evidence::verify_bundle))
        .route("/v1/cost", get(cost::cost_rollup))
        .route("/v1/decisions", get(decisions::list_decisions))
        .route("/v1/decisions/snapshots", post(decisions::snapshot))
        .route("/v1/decisions/compare", get(decisions::compare))
        .route("/v1/decisions/status", get(decisions::status))
        .route("/v1/decisions/{key}", put(decisions::set_decision))
        .route(
            "/v1/decisions/{key}/approve-change",
            post(decisions::approve_change),
        )
        .route("/v1/tokens/{id}/revoke", post(tokens::revoke_token))
        .route("/v1/policies", get(policies::list_policies))
        .route(
            "/v1/policies/{name}",
            put(policies::put_policy).delete(policies::delete_policy),
        )
        .route("/v1/hooks/{host}", post(hooks::answer_hook))
        .route("/v1/continuity/check", post(checks::check_continuity))
        .route("/v1/vce/check", post(checks::check_vce))
        .route("/v1/rlc/check", post(checks::check_rlc))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(within_deadline))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&service),
            observe_request,
        ))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(service)
}

/// How long one request may take, its body's arrival included: a client that sends its body
/// a byte at a time holds a connection this long at most (a request's head is bounded by the
/// connection's own `listen::HEADER_TIMEOUT`).
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Answers `request_timeout` for a request not done within [`REQUEST_TIMEOUT`]. A call whose
/// admission is cut off this way is not admitted as far as the client knows (it denies it).
async fn within_deadline(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match tokio::time::timeout(REQUEST_TIMEOUT, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            ServerCode::REQUEST_TIMEOUT,
            format!(
                "the request was not done within {} s (its body came too slowly)",
                REQUEST_TIMEOUT.as_secs()
            ),
        )
        .into_response(),
    }
}

/// Counts, times and logs every request: its route's template, method and status, the
/// caller's token id and tenant when it authenticated — never its body, its token or a query.
async fn observe_request(
    axum::extract::State(service): axum::extract::State<Arc<Service>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let started = std::time::Instant::now();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let labels = crate::metrics::RequestLabels {
        route,
        method,
        status: response.status().as_u16(),
    };
    let metrics = service.metrics();
    metrics.requests.get_or_create(&labels).inc();
    metrics
        .request_seconds
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
    tracing::debug!(
        method = %labels.method,
        route = %labels.route,
        status = labels.status,
        micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

/// The router of the metrics listener (`--metrics-listen`): `GET /metrics` and nothing else.
pub fn metrics_router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(service)
}

/// The service's metrics, for Prometheus (OpenMetrics text). They name tenants, routes and
/// rules, never a run, a token or an argument: they are served on their own listener, which
/// only the operators' scraper reaches, never on the API's.
async fn metrics(axum::extract::State(service): axum::extract::State<Arc<Service>>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        service.metrics().encode(),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(
        ServerCode::ROUTE_NOT_FOUND,
        "no such endpoint (see /v1/openapi.json)",
    )
}

async fn method_not_allowed() -> Response {
    let error = ApiError::new(
        ServerCode::METHOD_NOT_ALLOWED,
        "the endpoint does not answer this method (see /v1/openapi.json)",
    );
    let mut response = error.into_response();
    *response.status_mut() = axum::http::StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// The service is up.
#[utoipa::path(get, path = "/healthz", tag = "service",
    responses((status = 200, description = "The process answers", body = String, content_type = "text/plain")))]
async fn health() -> &'static str {
    "ok\n"
}

/// The service can record: its store answers.
#[utoipa::path(get, path = "/readyz", tag = "service",
    responses(
        (status = 200, description = "The store answers", body = String, content_type = "text/plain"),
        (status = 503, description = "The store does not answer", body = ErrorBody),
    ))]
async fn ready(
    axum::extract::State(service): axum::extract::State<Arc<Service>>,
) -> Result<&'static str, ApiError> {
    extract::blocking(move || service.ready()).await?;
    Ok("ready\n")
}

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "service",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
async fn openapi_json() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        openapi_document(),
    )
        .into_response()
}
