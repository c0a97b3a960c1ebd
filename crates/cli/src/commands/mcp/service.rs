//! The MCP gateway's way into the runtime when the runtime is `cairn serve`'s
//! (`CAIRN_SERVER` and an agent's `CAIRN_TOKEN`): each call is decided and recorded by the
//! service, which holds the policies, the key and the store — the gateway holds none of
//! them. The session's run is the agent's `<token id>.mcp-<session>`, opened at its first
//! call; the service's tool catalog declares the MCP tools' argument fields (the gateway's
//! learned ones stay local to it and are not used).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use cairn_mcp::{Admission, Admit, CallRequest, Ended, GatewayError, Refusal, Settled, Ticket};
use cairn_runtime::restrictions::ToolClasses;
use cairn_server::client::{Endpoint, send};
use serde_json::{Value, json};

/// How long the service has to answer one request (a held call's hold comes on top).
const DEADLINE: Duration = Duration::from_secs(30);

/// Where a session's run at the service stands.
#[derive(Debug)]
enum RunState {
    /// No call yet: not opened.
    NotOpen,
    /// Opened, with the id the service gave it.
    Open(String),
    /// Closed (or never opened before the session ended).
    Closed,
}

/// One MCP session's run in `cairn serve`.
#[derive(Debug)]
pub struct ServiceAdmission {
    endpoint: Endpoint,
    token: String,
    name: String,
    hold: Duration,
    /// Which tools the gateway's configuration says only read (told to the service with
    /// each call, for its continuity restrictions).
    read_only: ToolClasses,
    /// The session's run at the service.
    run: Mutex<RunState>,
    /// The runtime the requests are sent on (from whatever thread asks: the gateway's
    /// blocking pool, or a session's closing thread).
    runtime: tokio::runtime::Handle,
}

impl ServiceAdmission {
    /// The session `session` of the agent whose token is `token`, at `endpoint`; the tools
    /// `read_only` names only read.
    pub fn new(
        endpoint: Endpoint,
        token: String,
        session: &str,
        (hold, read_only): (Duration, ToolClasses),
        runtime: tokio::runtime::Handle,
    ) -> Self {
        Self {
            endpoint,
            token,
            name: format!("mcp-{session}"),
            hold,
            read_only,
            run: Mutex::new(RunState::NotOpen),
            runtime,
        }
    }

    /// One request to the service, from the gateway's blocking pool.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: &Value,
        extra: Duration,
    ) -> Result<Value, GatewayError> {
        let fail = |reason: String| GatewayError::Upstream {
            server: "cairn serve".to_owned(),
            reason,
        };
        let answer = self
            .runtime
            .block_on(send(
                &self.endpoint,
                method,
                path,
                Some(self.token.trim()),
                Some(body.to_string().into_bytes()),
                DEADLINE + extra,
            ))
            .map_err(|e| fail(e.to_string()))?;
        let value = answer.json();
        if (200..300).contains(&answer.status) {
            Ok(value)
        } else {
            Err(fail(format!(
                "{} {path} answered {}: {}",
                method,
                answer.status,
                value
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            )))
        }
    }

    /// The run, opened at the service on first use.
    fn run_id(&self) -> Result<String, GatewayError> {
        let mut run = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        match &*run {
            RunState::Closed => Err(GatewayError::Upstream {
                server: "cairn serve".to_owned(),
                reason: "the session's run is closed".to_owned(),
            }),
            RunState::Open(id) => Ok(id.clone()),
            RunState::NotOpen => {
                let opened = self.call(
                    "POST",
                    "/v1/runs",
                    &json!({"name": self.name}),
                    Duration::ZERO,
                )?;
                let id = opened
                    .get("run_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if id.is_empty() {
                    return Err(GatewayError::Upstream {
                        server: "cairn serve".to_owned(),
                        reason: "the service opened a run without an id".to_owned(),
                    });
                }
                *run = RunState::Open(id.clone());
                Ok(id)
            }
        }
    }
}

impl Admission for ServiceAdmission {
    fn run(&self) -> String {
        match &*self.run.lock().unwrap_or_else(PoisonError::into_inner) {
            RunState::Open(id) => id.clone(),
            RunState::NotOpen | RunState::Closed => self.name.clone(),
        }
    }

    fn admit(&self, call: &CallRequest) -> Result<Admit, GatewayError> {
        let run = self.run_id()?;
        let arguments: Value =
            serde_json::from_slice(&call.args).map_err(|e| GatewayError::Upstream {
                server: "gateway".to_owned(),
                reason: format!("the call's arguments do not read: {e}"),
            })?;
        let mut body = json!({
            "tool": call.exposed,
            "version": call.version,
            "arguments": arguments,
            "call_id": call.call_id,
            "mcp": {
                "server": call.server,
                "tool": call.tool,
                "read_only": !self.read_only.is_consequential(&call.exposed),
            },
        });
        if !self.hold.is_zero()
            && let Some(object) = body.as_object_mut()
        {
            object.insert("hold_seconds".to_owned(), json!(self.hold.as_secs()));
        }
        let answer = self.call("POST", &format!("/v1/runs/{run}/steps"), &body, self.hold)?;
        let step = answer
            .get("step")
            .and_then(Value::as_u64)
            .unwrap_or_default();
        if answer.get("decision").and_then(Value::as_str) == Some("allow") {
            let digest = answer
                .get("digest")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Ok(Admit::Forward(Ticket::new(step, digest.to_owned(), None)));
        }
        let rule_ids: Vec<String> = answer
            .get("rule_ids")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .filter_map(Value::as_str)
                    .map(ToOwned::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let told = answer.get("message").and_then(Value::as_str).map_or_else(
            || {
                format!(
                    "Cairn denied `{}` (rules {}).",
                    call.exposed,
                    rule_ids.join(", ")
                )
            },
            ToOwned::to_owned,
        );
        Ok(Admit::Refuse(Refusal {
            code: answer
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("denied")
                .to_owned(),
            message: format!("{told} (Cairn recorded this refusal as step {step} of run `{run}`.)"),
            rule_ids,
            step: Some(step),
            digest: answer
                .get("digest")
                .and_then(Value::as_str)
                .map(ToOwned::to_owned),
        }))
    }

    fn settle(&self, ticket: Ticket, outcome: Settled) -> Result<(), GatewayError> {
        let run = self.run_id()?;
        let body = match outcome {
            Settled::Answered(result) => json!({"status": "applied", "result": result}),
            Settled::NotSent(error) => json!({"status": "failed", "error": error}),
            Settled::Unknown(error) => json!({"status": "unknown", "error": error}),
        };
        self.call(
            "POST",
            &format!("/v1/runs/{run}/steps/{}/outcome", ticket.step),
            &body,
            Duration::ZERO,
        )?;
        Ok(())
    }

    fn admissible(&self, tools: &[(String, String)]) -> Vec<bool> {
        vec![true; tools.len()]
    }

    fn learn(&self, _tools: &[cairn_runtime::config::LearnedTool]) -> Result<(), GatewayError> {
        Ok(())
    }

    fn close(&self, ended: Ended) -> Result<(), GatewayError> {
        // The state stays locked until the service answers: a second close waits, then finds
        // the run closed.
        let mut run = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        if let RunState::Open(id) = &*run {
            let reason = match ended {
                Ended::Closed => "completed",
                Ended::Cancelled => "cancelled",
            };
            self.call(
                "POST",
                &format!("/v1/runs/{id}/terminate"),
                &json!({"reason": reason}),
                Duration::ZERO,
            )?;
        }
        *run = RunState::Closed;
        Ok(())
    }
}
