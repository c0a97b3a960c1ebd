//! Hook events of Claude Code and Codex, forwarded by `cairn hook` as a thin client: the
//! service answers them with the hooks engine it was given (the server itself never reads a
//! host's hook JSON), recording under the agent token's tenant, in runs named after it.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use super::extract::roles::AGENT;
use super::extract::{Authenticated, PathParams, RawBody, blocking};
use crate::error::{ApiError, ErrorBody, ServerCode};
use crate::service::Service;

/// Answers one hook event of `host` (`claude-code` or `codex`) exactly as `cairn hook` would
/// locally: the body is the event's JSON as the host sent it; the answer is what `cairn hook`
/// prints and the exit code it exits with (agent).
#[utoipa::path(post, path = "/v1/hooks/{host}", tag = "hooks",
    params(("host" = String, Path, description = "`claude-code` or `codex`")),
    request_body(content = Object, description = "The hook event's JSON, as the host sent it"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The hook's answer: `exit` (0 or 2), `stdout`, `stderr`, `denies`", body = Object),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed: a tool call must be denied", body = ErrorBody),
    ))]
pub(super) async fn answer_hook(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    RawBody(body): RawBody,
) -> Result<Json<serde_json::Value>, ApiError> {
    let caller = caller.with_role(AGENT, "send hook events")?;
    let host = path.get("host")?.to_owned();
    let Some(hooks) = service.config.hooks.clone() else {
        return Err(ApiError::new(
            ServerCode::HOOKS_UNAVAILABLE,
            "this service answers no hook events",
        ));
    };
    let answer = blocking(move || hooks.answer(&caller, &host, &body)).await?;
    Ok(Json(answer))
}
