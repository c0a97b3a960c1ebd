//! The tenant's tokens, managed by its admins: create, list, revoke. A token's secret is
//! shown once, when it is created; the service keeps only its digest.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::roles::ADMIN;
use super::extract::{Authenticated, JsonBody, PathParams, blocking};
use crate::error::{ApiError, ErrorBody};
use crate::service::Service;
use crate::tokens::{Role, TokenEntry};

/// A token as listed: never its secret nor its digest.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenView {
    /// Its id (the public part of the token).
    pub id: String,
    /// Its tenant.
    pub tenant: String,
    /// Its role.
    pub role: Role,
    /// Who or what holds it.
    pub label: Option<String>,
    /// When it was created.
    pub created_at: String,
    /// When it was revoked.
    pub revoked_at: Option<String>,
}

impl From<&TokenEntry> for TokenView {
    fn from(entry: &TokenEntry) -> Self {
        Self {
            id: entry.id.clone(),
            tenant: entry.tenant.to_string(),
            role: entry.role,
            label: entry.label.clone(),
            created_at: entry.created_at.clone(),
            revoked_at: entry.revoked_at.clone(),
        }
    }
}

/// A token to create in the caller's tenant.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    /// Its role.
    pub role: Role,
    /// Who or what will hold it.
    #[serde(default)]
    pub label: Option<String>,
}

/// A token just created.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The bearer token: shown this once, stored nowhere.
    pub token: String,
    /// What is kept of it.
    pub entry: TokenView,
}

/// Creates a token in the caller's tenant (admin).
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens", request_body = CreateTokenRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Created; the secret is in this answer only", body = CreatedToken),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn create_token(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    JsonBody(body): JsonBody<CreateTokenRequest>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let caller = caller.with_role(ADMIN, "manage tokens")?;
    let made = blocking(move || service.create_token(&caller, body.role, body.label)).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            token: made.token,
            entry: TokenView::from(&made.entry),
        }),
    ))
}

/// Lists the caller's tenant's tokens (admin).
#[utoipa::path(get, path = "/v1/tokens", tag = "tokens",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tokens", body = Vec<TokenView>),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn list_tokens(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
) -> Result<Json<Vec<TokenView>>, ApiError> {
    let caller = caller.with_role(ADMIN, "manage tokens")?;
    let tokens = blocking(move || service.list_tokens(&caller)).await?;
    Ok(Json(tokens.iter().map(TokenView::from).collect()))
}

/// Revokes a token of the caller's tenant (admin); it authenticates nothing from then on.
#[utoipa::path(post, path = "/v1/tokens/{id}/revoke", tag = "tokens",
    params(("id" = String, Path, description = "The token's id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Revoked", body = TokenView),
        (status = "4XX", description = "Refused, or no such token in the tenant", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn revoke_token(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<TokenView>, ApiError> {
    let caller = caller.with_role(ADMIN, "manage tokens")?;
    let id = path.get("id")?.to_owned();
    let entry = blocking(move || service.revoke_token(&caller, &id)).await?;
    Ok(Json(TokenView::from(&entry)))
}
