//! The one error shape of the API, and the one place an error's class becomes an HTTP status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cairn_core::{Code, ErrorClass, ErrorCode};
use serde::Serialize;
use utoipa::ToSchema;

/// The HTTP status of every error of `class`: the one place the service decides it, as the
/// CLI's `failure::exit_code` decides the exit code.
#[must_use]
pub const fn status_of(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Invalid => StatusCode::BAD_REQUEST,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::Tamper => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorClass::Forbidden => StatusCode::FORBIDDEN,
        ErrorClass::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
    }
}

/// The codes the service answers with itself; the libraries' errors declare their own.
#[derive(Debug)]
pub struct ServerCode;

cairn_core::error_codes! {
    ServerCode {
        /// No `Authorization: Bearer …` header.
        TOKEN_MISSING = Unauthenticated("token_missing");
        /// A token that is malformed, unknown or revoked (which of the three is not said).
        TOKEN_INVALID = Unauthenticated("token_invalid");
        /// The token's role may not call this endpoint.
        ROLE_FORBIDDEN = Forbidden("role_forbidden");
        /// The request body is larger than the service accepts.
        BODY_TOO_LARGE = TooLarge("body_too_large");
        /// The request body is not the JSON the endpoint reads.
        BODY_INVALID = Invalid("body_invalid");
        /// A path or query parameter does not read.
        PARAMETER_INVALID = Invalid("parameter_invalid");
        /// No admitted call waits for its outcome at that step.
        OUTCOME_NOT_AWAITED = NotFound("outcome_not_awaited");
        /// The key names no side effect of the run that waits for reconciliation.
        EFFECT_NOT_UNRESOLVED = Conflict("side_effect_not_unresolved");
        /// The run has no record at that step.
        RECORD_NOT_FOUND = NotFound("record_not_found");
        /// The run has no signed checkpoint yet (proofs need a closed run).
        RUN_NOT_CLOSED = Conflict("run_not_closed");
        /// A stored record does not read back (verify the run).
        STORED_RECORD_UNREADABLE = Tamper("stored_record_unreadable");
        /// A posted bundle is of another tenant than the token's.
        BUNDLE_OTHER_TENANT = Forbidden("bundle_other_tenant");
        /// No such endpoint.
        ROUTE_NOT_FOUND = NotFound("route_not_found");
        /// The endpoint does not answer this method.
        METHOD_NOT_ALLOWED = Invalid("method_not_allowed");
        /// The service's own configuration (tokens, keys, policies) could not be read or written.
        SERVICE_CONFIG = Internal("service_config");
        /// The service was started without a hooks engine.
        HOOKS_UNAVAILABLE = NotFound("hooks_unavailable");
        /// The service was started without a folder for task decisions.
        DECISIONS_UNAVAILABLE = NotFound("decisions_unavailable");
        /// The service was started without managed policy sets.
        POLICIES_UNAVAILABLE = NotFound("policies_unavailable");
        /// A policy file name that is not `[a-z0-9_-]{1,64}` followed by `.cedar`.
        POLICY_NAME_INVALID = Invalid("policy_name_invalid");
        /// The tenant has no policy file of that name.
        POLICY_NOT_FOUND = NotFound("policy_not_found");
        /// A hook host that is not `claude-code` or `codex`.
        HOOK_HOST_UNKNOWN = NotFound("hook_host_unknown");
        /// The service is shutting down or the request's work could not be scheduled.
        SERVICE_UNAVAILABLE = Unavailable("service_unavailable");
        /// The request's record was not committed in time (the call is not admitted).
        NOT_COMMITTED = Unavailable("record_not_committed");
        /// The request took longer than the service allows (its body came too slowly).
        REQUEST_TIMEOUT = Unavailable("request_timeout");
        /// A bug: a task panicked.
        INTERNAL = Internal("service_internal");
    }
}

/// Every error the API answers: `{"error": {"code", "message", "field"}}`.
#[derive(Debug, Clone)]
pub struct ApiError {
    code: Code,
    message: String,
    field: Option<String>,
}

/// The JSON body of an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// The stable code (matched by clients; never changes once published).
    #[schema(example = "run_not_found")]
    pub code: String,
    /// What happened, for people.
    pub message: String,
    /// The offending input's path (`body.arguments`, `path.step`, `query.older_than`), when
    /// one input is at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    /// An error with `code` and `message`.
    #[must_use]
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            field: None,
        }
    }

    /// Names the offending input.
    #[must_use]
    pub fn at(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// A library error, with its own code and class.
    #[must_use]
    pub fn from_error<E: ErrorCode + std::fmt::Display>(error: &E) -> Self {
        Self::new(error.error_code(), error.to_string())
    }

    /// The stable code.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        self.code.name()
    }

    /// What went wrong, in words.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status.
    #[must_use]
    pub const fn status(&self) -> StatusCode {
        status_of(self.code.class())
    }

    /// The body.
    #[must_use]
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.name().to_owned(),
                message: self.message.clone(),
                field: self.field.clone(),
            },
        }
    }

    /// No run under that id for this caller.
    #[must_use]
    pub fn run_not_found(run: &str) -> Self {
        // The store's own code: a run hidden from the caller reads exactly as a missing one.
        Self::new(
            cairn_runtime::ledger::StoreError::RUN_NOT_FOUND,
            format!("no run `{run}`"),
        )
        .at("path.run")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl From<cairn_runtime::RuntimeError> for ApiError {
    fn from(error: cairn_runtime::RuntimeError) -> Self {
        let api = Self::from_error(&error);
        match error {
            // An input the runtime refused names its field in the request body.
            cairn_runtime::RuntimeError::InvalidInput { field, .. } => {
                api.at(format!("body.{field}"))
            }
            _ => api,
        }
    }
}

impl From<cairn_runtime::ledger::StoreError> for ApiError {
    fn from(error: cairn_runtime::ledger::StoreError) -> Self {
        Self::from_error(&error)
    }
}

impl From<cairn_runtime::ledger::bundle::BundleError> for ApiError {
    fn from(error: cairn_runtime::ledger::bundle::BundleError) -> Self {
        Self::from_error(&error).at("body")
    }
}

impl From<cairn_runtime::decision_files::DecisionFilesError> for ApiError {
    fn from(error: cairn_runtime::decision_files::DecisionFilesError) -> Self {
        Self::from_error(&error)
    }
}

impl From<cairn_core::CoreError> for ApiError {
    fn from(error: cairn_core::CoreError) -> Self {
        Self::from_error(&error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(code = self.code.name(), message = %self.message, "request failed");
        }
        (status, axum::Json(self.body())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_status_of_its_own_family() {
        assert_eq!(status_of(ErrorClass::Invalid), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(ErrorClass::NotFound), StatusCode::NOT_FOUND);
        assert_eq!(status_of(ErrorClass::Conflict), StatusCode::CONFLICT);
        assert_eq!(
            status_of(ErrorClass::Unavailable),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            status_of(ErrorClass::Unauthenticated),
            StatusCode::UNAUTHORIZED
        );
        assert!(status_of(ErrorClass::Internal).is_server_error());
        assert!(status_of(ErrorClass::TooLarge).is_client_error());
    }

    #[test]
    fn a_runtime_input_error_names_its_field() {
        let error = cairn_runtime::RuntimeError::InvalidInput {
            field: "lane",
            reason: "no such lane".to_owned(),
        };
        let api = ApiError::from(error);
        assert_eq!(api.status(), StatusCode::BAD_REQUEST);
        assert_eq!(api.body().error.field.as_deref(), Some("body.lane"));
    }
}
