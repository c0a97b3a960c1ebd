//! The CLI as the service's client. With `CAIRN_SERVER` set (and no `--store` naming a store
//! of its own), the read and review commands — `runs list`, `ledger show|verify|export`,
//! `status`, `cost`, `approvals …` — ask the service, with the token of `CAIRN_TOKEN` (an
//! investigator's, an approver's or an admin's), and print what they print on a local store.
//! What the service refuses comes back as the CLI's own error, with its code and exit code.

use std::time::Duration;

use cairn_core::Code;
use cairn_server::client::{Endpoint, send_blocking};
use serde_json::Value;

use crate::context::Context;
use crate::failure::{CliCode, Failure};

/// How long the service has to answer one request.
const DEADLINE: Duration = Duration::from_secs(60);

/// The service `CAIRN_SERVER` names, with the token of `CAIRN_TOKEN`.
pub struct Remote {
    endpoint: Endpoint,
    token: String,
}

impl Remote {
    /// The service to ask instead of a local store: `None` when `CAIRN_SERVER` is not set or
    /// `--store` names a store. `who` says whose token the command needs, when it is missing.
    ///
    /// # Errors
    /// A malformed `CAIRN_SERVER`, or no `CAIRN_TOKEN`.
    pub fn from_env(ctx: &Context, who: &str) -> Result<Option<Self>, Failure> {
        if ctx.explicit_store.is_some() {
            return Ok(None);
        }
        let Some(server) = std::env::var_os("CAIRN_SERVER").filter(|s| !s.is_empty()) else {
            return Ok(None);
        };
        let (endpoint, token) = crate::context::service_endpoint(&server, who)?;
        Ok(Some(Self {
            endpoint,
            token: token.trim().to_owned(),
        }))
    }

    /// `method path` with `body`: the answer's bytes when it succeeded, else the service's
    /// refusal as the CLI's error.
    ///
    /// # Errors
    /// The service cannot be reached or refused.
    pub fn bytes(&self, method: &str, path: &str, body: Option<Value>) -> Result<Vec<u8>, Failure> {
        let answer = send_blocking(
            &self.endpoint,
            method,
            path,
            Some(&self.token),
            body.map(|b| b.to_string().into_bytes()),
            DEADLINE,
        )
        .map_err(|e| Failure::from_error(&e))?;
        if (200..300).contains(&answer.status) {
            Ok(answer.body)
        } else {
            Err(refusal(&answer.json(), answer.status))
        }
    }

    /// As [`Remote::bytes`], the answer read as JSON.
    ///
    /// # Errors
    /// As [`Remote::bytes`]; an answer that is not JSON.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, Failure> {
        let bytes = self.bytes(method, path, body)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Failure::new(
                CliCode::SERVICE_REFUSED,
                format!("the service's answer to {method} {path} is not JSON: {e}"),
            )
        })
    }

    /// `GET path`, read as `T`.
    ///
    /// # Errors
    /// As [`Remote::call`]; an answer not of the shape of `T`.
    pub fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, Failure> {
        let value = self.call("GET", path, None)?;
        serde_json::from_value(value).map_err(|e| {
            Failure::new(
                CliCode::SERVICE_REFUSED,
                format!("the service's answer to GET {path} is not what this CLI reads: {e}"),
            )
        })
    }
}

/// A path segment or query value, percent-encoded.
pub fn encoded(text: &str) -> String {
    cairn_server::console::url_encode(text)
}

/// The service's refusal as the CLI's: its code when the CLI knows it (and so its exit
/// code), else `service_refused`.
fn refusal(body: &Value, status: u16) -> Failure {
    let name = body
        .pointer("/error/code")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = body
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map_or_else(|| format!("the service answered {status}"), str::to_owned);
    let known: Option<Code> = [
        cairn_runtime::approvals::ApprovalError::CODES,
        cairn_server::ServerCode::CODES,
        cairn_runtime::RuntimeError::CODES,
        cairn_runtime::ledger::StoreError::CODES,
    ]
    .iter()
    .flat_map(|codes| codes.iter())
    .find(|code| code.name() == name)
    .copied();
    match known {
        Some(code) => Failure::new(code, message),
        None => Failure::new(CliCode::SERVICE_REFUSED, format!("{name}: {message}")),
    }
}
