//! The token's tenant's policy set (admin): the service's policies apply to every tenant, and
//! a tenant's admin adds policy files of its own beside them. A file is taken only when the
//! whole set with it loads, and is in force for the tenant's next decision, runs already open
//! included. An admin of one tenant neither reads nor changes another's.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use super::extract::roles::ADMIN;
use super::extract::{Authenticated, PathParams, RawBody, blocking};
use crate::error::{ApiError, ErrorBody, ServerCode};
use crate::service::{PolicySetView, Service};

/// The policy set in force for the token's tenant: its version, the service's files' names and
/// the tenant's own files (admin).
#[utoipa::path(get, path = "/v1/policies", tag = "policies",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The set in force", body = PolicySetView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn list_policies(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
) -> Result<Json<PolicySetView>, ApiError> {
    let caller = caller.with_role(ADMIN, "read policies")?;
    Ok(Json(blocking(move || service.policy_set(&caller)).await?))
}

/// Adds or replaces the tenant's policy file `name` (`[a-z0-9_-]{1,64}.cedar`) with the Cedar
/// text of the body; refused, and nothing changed, unless the whole set with it loads (a
/// located `policy_parse` / `policy_invalid`) (admin).
#[utoipa::path(put, path = "/v1/policies/{name}", tag = "policies",
    params(("name" = String, Path, description = "The file's name, e.g. `no-prod-writes.cedar`")),
    request_body(content = String, content_type = "text/plain", description = "Cedar policies"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "In force: the tenant's set now", body = PolicySetView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn put_policy(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    RawBody(body): RawBody,
) -> Result<Json<PolicySetView>, ApiError> {
    let caller = caller.with_role(ADMIN, "change policies")?;
    let name = path.get("name")?.to_owned();
    let text = String::from_utf8(body.to_vec()).map_err(|_| {
        ApiError::new(ServerCode::BODY_INVALID, "the policy text is not UTF-8").at("body")
    })?;
    Ok(Json(
        blocking(move || service.put_policy(&caller, &name, &text)).await?,
    ))
}

/// Removes the tenant's policy file `name` (admin).
#[utoipa::path(delete, path = "/v1/policies/{name}", tag = "policies",
    params(("name" = String, Path, description = "The file's name")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Removed: the tenant's set now", body = PolicySetView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn delete_policy(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<PolicySetView>, ApiError> {
    let caller = caller.with_role(ADMIN, "change policies")?;
    let name = path.get("name")?.to_owned();
    Ok(Json(
        blocking(move || service.delete_policy(&caller, &name)).await?,
    ))
}
