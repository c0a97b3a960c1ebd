//! Reading a request: the bearer token, the body (size-limited, every failure naming the
//! offending field), path and query parameters — each failure in the API's one error shape.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ServerCode};
use crate::service::Service;
use crate::tokens::{Caller, Role};

/// The caller, from `Authorization: Bearer <token>`.
pub struct Authenticated(pub Caller);

impl FromRequestParts<Arc<Service>> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        service: &Arc<Service>,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| {
                ApiError::new(
                    ServerCode::TOKEN_MISSING,
                    "send the token as `Authorization: Bearer <token>`",
                )
                .at("header.authorization")
            })?;
        let bearer = header
            .to_str()
            .ok()
            .and_then(|value| value.strip_prefix("Bearer "))
            .ok_or_else(|| {
                ApiError::new(
                    ServerCode::TOKEN_INVALID,
                    "the Authorization header is not `Bearer <token>`",
                )
                .at("header.authorization")
            })?;
        service.authenticate(bearer.trim()).map(Self)
    }
}

/// Who may call an endpoint, the sets the handlers name.
pub(crate) mod roles {
    use crate::tokens::Role;

    /// An agent only: it opens runs and writes in its own.
    pub const AGENT: &[Role] = &[Role::Agent];
    /// A person: an investigator or an admin, never the agent.
    pub const PEOPLE: &[Role] = &[Role::Investigator, Role::Admin];
    /// An admin only.
    pub const ADMIN: &[Role] = &[Role::Admin];
    /// Who reads the tenant's approval requests: a person, never the agent.
    pub const APPROVAL_READERS: &[Role] = &[Role::Investigator, Role::Approver, Role::Admin];
    /// Who decides them: an approver or an admin (an investigator sees, never decides).
    pub const APPROVERS: &[Role] = &[Role::Approver, Role::Admin];
    /// Any token.
    pub const ANYONE: &[Role] = &[Role::Agent, Role::Investigator, Role::Approver, Role::Admin];
}

impl Authenticated {
    /// The caller and the run the path names, when the caller's role is one of `roles` and
    /// the run is one it may see (another tenant's or agent's run reads as missing).
    ///
    /// # Errors
    /// `role_forbidden`; `run_not_found`; a path without a run.
    pub fn on_run(
        self,
        roles: &[Role],
        what: &str,
        path: &PathParams,
    ) -> Result<(Caller, cairn_core::RunId), ApiError> {
        let caller = self.with_role(roles, what)?;
        let run = Service::run_id(&caller, path.get("run")?)?;
        Ok((caller, run))
    }

    /// The caller, when its role is one of `roles`.
    ///
    /// # Errors
    /// `role_forbidden`.
    pub fn with_role(self, roles: &[Role], what: &str) -> Result<Caller, ApiError> {
        if roles.contains(&self.0.role) {
            Ok(self.0)
        } else {
            Err(ApiError::new(
                ServerCode::ROLE_FORBIDDEN,
                format!("a token of role `{}` may not {what}", self.0.role.as_str()),
            ))
        }
    }
}

/// A request's body as sent, at most the service's limit.
pub struct RawBody(pub Bytes);

impl FromRequest<Arc<Service>> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, service: &Arc<Service>) -> Result<Self, Self::Rejection> {
        let limit = service.max_body_bytes();
        Bytes::from_request(req, service)
            .await
            .map(Self)
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        ServerCode::BODY_TOO_LARGE,
                        format!("the body is larger than the service's limit of {limit} bytes"),
                    )
                    .at("body")
                } else {
                    ApiError::new(ServerCode::BODY_INVALID, rejection.body_text()).at("body")
                }
            })
    }
}

/// A JSON body of type `T`, at most the service's limit.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<Arc<Service>> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, service: &Arc<Service>) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, service).await?;
        parse_body(&bytes).map(Self)
    }
}

/// `bytes` as a `T`, a failure naming the JSON path of the offending field.
///
/// # Errors
/// `body_invalid`.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let field = if path == "." {
            "body".to_owned()
        } else {
            format!("body.{path}")
        };
        ApiError::new(ServerCode::BODY_INVALID, error.inner().to_string()).at(field)
    })?;
    deserializer
        .end()
        .map_err(|error| ApiError::new(ServerCode::BODY_INVALID, error.to_string()).at("body"))?;
    Ok(value)
}

/// The path parameters, by name.
pub struct PathParams(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for PathParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let raw = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|rejection| {
                ApiError::new(ServerCode::PARAMETER_INVALID, rejection.body_text()).at("path")
            })?;
        Ok(Self(
            raw.iter()
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .collect(),
        ))
    }
}

impl PathParams {
    /// The parameter `name` (routes declare every name their handlers read).
    ///
    /// # Errors
    /// `parameter_invalid` when the route has no such parameter.
    pub fn get(&self, name: &str) -> Result<&str, ApiError> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
            .ok_or_else(|| {
                ApiError::new(
                    ServerCode::PARAMETER_INVALID,
                    format!("no `{name}` in the path"),
                )
                .at(format!("path.{name}"))
            })
    }

    /// The parameter `name` as a step index.
    ///
    /// # Errors
    /// `parameter_invalid`.
    pub fn step(&self, name: &str) -> Result<u64, ApiError> {
        let text = self.get(name)?;
        text.parse().map_err(|_| {
            ApiError::new(
                ServerCode::PARAMETER_INVALID,
                format!("`{text}` is not a step index (a whole number from 0)"),
            )
            .at(format!("path.{name}"))
        })
    }
}

/// The query string as a `T`.
pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| Self(q.0))
            .map_err(|rejection| {
                ApiError::new(ServerCode::PARAMETER_INVALID, rejection.body_text()).at("query")
            })
    }
}

/// Runs `work` on the blocking pool (store calls and Cedar decisions block); a panic is an
/// internal error, so a client never mistakes it for an answer.
///
/// # Errors
/// `work`'s own; `internal` when it panicked.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|join| {
        ApiError::new(
            ServerCode::INTERNAL,
            if join.is_panic() {
                "the request's work panicked; nothing it did is acknowledged"
            } else {
                "the request's work was cancelled"
            },
        )
    })?
}

/// A count as JSON may write it (`3` or `3.0`: JSON Schema's `integer` admits both), or
/// `body_invalid` naming `field`.
///
/// # Errors
/// `body_invalid` for a negative, fractional or huge number.
pub fn whole_number(number: &serde_json::Number, field: &str) -> Result<u64, ApiError> {
    number
        .as_u64()
        .or_else(|| {
            number
                .as_f64()
                .filter(|f| f.fract() == 0.0 && (0.0..=1e15).contains(f))
                .map(|f| f as u64)
        })
        .ok_or_else(|| {
            ApiError::new(
                ServerCode::BODY_INVALID,
                format!("`{number}` is not a whole number"),
            )
            .at(field)
        })
}
