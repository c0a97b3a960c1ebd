//! A `tools/call`: named, admitted by the session's runtime (one record before it is
//! forwarded), forwarded, and what came of it recorded; the tool results the model reads.

use super::*;

impl Gateway {
    pub(super) async fn listed_tools(&self) -> Result<Vec<Tool>, ErrorData> {
        let tools: Vec<(&Upstream, Tool)> = self
            .tools()
            .await?
            .into_iter()
            .filter_map(|(index, tool)| Some((self.inner.upstreams.get(index)?, tool)))
            .collect();
        let shown = if self.inner.config.tools_list == ToolsList::Hide {
            let admission = Arc::clone(&self.session.admission);
            let asked: Vec<(String, String)> = tools
                .iter()
                .map(|(upstream, tool)| (upstream.name.clone(), tool.name.to_string()))
                .collect();
            tokio::task::spawn_blocking(move || admission.admissible(&asked))
                .await
                .unwrap_or_default()
        } else {
            vec![true; tools.len()]
        };
        Ok(tools
            .into_iter()
            .zip(shown)
            .filter(|(_, shown)| *shown)
            .map(|((upstream, mut tool), _)| {
                tool.name = names::exposed(&upstream.name, &tool.name).into();
                tool
            })
            .collect())
    }

    /// A `tools/call`, in its span.
    pub(super) async fn call(
        &self,
        request: rmcp::model::CallToolRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let exposed = request.params.name.to_string();
        let mut span = self.span("tools/call", Some(&exposed), &context);
        let answer = self.call_in(request, &context, &mut span).await;
        span.end(error_type(&answer).as_deref());
        answer
    }

    /// The span of a request from the client.
    pub(super) fn span(
        &self,
        method: &str,
        target: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> RequestSpan {
        let protocol = context.protocol_version();
        RequestSpan::start(&RequestInfo {
            method,
            target,
            meta: &context.meta,
            request_id: &context.id.to_string(),
            protocol: protocol.as_ref().map(|version| version.as_str()),
            session: &self.session.admission.run(),
        })
    }

    pub(super) async fn call_in(
        &self,
        mut request: rmcp::model::CallToolRequest,
        context: &RequestContext<RoleServer>,
        span: &mut RequestSpan,
    ) -> Result<ServerResult, ErrorData> {
        let exposed = request.params.name.to_string();
        // An unknown tool is answered as the servers the gateway fronts answer one: a tool
        // result the model reads (`isError`), never forwarded and not recorded — no upstream
        // tool was named.
        let Some((server, tool)) = names::split(&exposed) else {
            return Ok(told(&format!(
                "unknown tool `{exposed}`: the tools through this gateway are named `<server>__<tool>` (see tools/list)"
            )));
        };
        let Some((_, upstream)) = self.upstream(server) else {
            return Ok(told(&format!(
                "unknown tool `{exposed}`: no upstream server is named `{server}` (see tools/list)"
            )));
        };
        let args = Value::Object(request.params.arguments.clone().unwrap_or_default());
        let call = CallRequest {
            server: server.to_owned(),
            tool: tool.to_owned(),
            exposed: exposed.clone(),
            version: upstream.version(),
            args: serde_json::to_vec(&args).unwrap_or_else(|_| b"{}".to_vec()),
            call_id: context
                .meta
                .get(CLAUDE_TOOL_USE_ID)
                .and_then(Value::as_str)
                .map_or_else(|| context.id.to_string(), ToOwned::to_owned),
            host_session: context
                .meta
                .get(CLAUDE_SESSION_ID)
                .and_then(Value::as_str)
                .map(ToOwned::to_owned),
        };
        // A call of a tool whose earlier call the client cancelled waits until that call's
        // unknown outcome is recorded: a retry never overtakes it (the client may send it the
        // moment it cancels).
        self.settle_cancelled(&exposed).await;
        let session = self.clone();
        let decided = tokio::task::spawn_blocking(move || {
            let admitted = session
                .learn()
                .and_then(|()| session.session.admission.admit(&call));
            (call, admitted)
        })
        .await;
        let (call, ticket) = match decided {
            Ok((call, Ok(Admit::Forward(ticket)))) => (call, ticket),
            Ok((_, Ok(Admit::Refuse(refusal)))) => {
                span.record(
                    &self.session.admission.run(),
                    refusal.step.unwrap_or_default(),
                    refusal.digest.as_deref().unwrap_or_default(),
                    "deny",
                    &refusal.rule_ids,
                );
                return Ok(refused_result(
                    &refusal.message,
                    &refusal.rule_ids,
                    &refusal.code,
                ));
            }
            Ok((_, Err(error))) => {
                let code = cairn_core::ErrorCode::code(&error);
                return Ok(refused_result(
                    &format!(
                        "{PREFIX} Cairn denied `{exposed}` because it could not decide it safely (error[{code}]: {error}). Nothing was run. Fix the cause and retry."
                    ),
                    &[],
                    code,
                ));
            }
            Err(_) => {
                return Ok(refused_result(
                    &format!(
                        "{PREFIX} Cairn denied `{exposed}` because deciding it failed (internal panic). Nothing was run."
                    ),
                    &[],
                    "mcp_internal_panic",
                ));
            }
        };
        span.record(
            &self.session.admission.run(),
            ticket.step,
            &ticket.digest,
            "allow",
            &[],
        );
        request.params.name = call.tool.clone().into();
        let flight = self.inner.next_call.fetch_add(1, Ordering::Relaxed);
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((exposed.clone(), context.ct.clone(), flight));
        let forwarded = self
            .forward(
                upstream,
                ClientRequest::CallToolRequest(request),
                context,
                true,
                span,
            )
            .await;
        let (settled, answer) = match forwarded {
            // A task the upstream runs on: the call's outcome comes later (`tasks/get`), so
            // for now it is unknown — never done.
            Ok(ServerResult::CreateTaskResult(created)) => {
                let task = created.task.task_id.clone();
                self.route(task.clone(), server);
                (
                    Settled::Unknown(format!(
                        "the upstream runs the call as task `{task}`; its outcome comes with tasks/get"
                    )),
                    Ok(ServerResult::CreateTaskResult(created)),
                )
            }
            // The upstream asks the client for input before it runs the call (the client
            // calls again with it, a call of its own).
            Ok(ServerResult::InputRequiredResult(input)) => (
                Settled::NotSent("the upstream asked for input before running it".to_owned()),
                Ok(ServerResult::InputRequiredResult(input)),
            ),
            Ok(result) => (
                Settled::Answered(serde_json::to_value(&result).unwrap_or(Value::Null)),
                Ok(result),
            ),
            Err(Forwarded::Error(error)) => (
                Settled::Unknown(format!(
                    "the upstream answered with error {}: {}",
                    error.code.0, error.message
                )),
                Err(error),
            ),
            Err(Forwarded::NotSent(reason)) => (
                Settled::NotSent(reason.clone()),
                Ok(told(&format!(
                    "`{exposed}` did not run: {reason}. Nothing was done; retry when the server is back."
                ))),
            ),
            Err(Forwarded::Lost(reason)) => (
                Settled::Unknown(reason.clone()),
                Ok(unknown_result(
                    &exposed,
                    &reason,
                    &self.session.admission.run(),
                    ticket.step,
                )),
            ),
        };
        let admission = Arc::clone(&self.session.admission);
        let recorded = tokio::task::spawn_blocking(move || admission.settle(ticket, settled)).await;
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(_, _, number)| *number != flight);
        self.inner.settled.notify_waiters();
        match recorded {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::error!(tool = %exposed, %error, "the outcome of a forwarded call could not be recorded")
            }
            Err(_) => {
                tracing::error!(tool = %exposed, "recording the outcome of a forwarded call panicked")
            }
        }
        answer
    }
}

impl Gateway {
    /// Waits (bounded by the call timeout) while a call of `exposed` the client cancelled is
    /// in flight, not yet settled.
    pub(super) async fn settle_cancelled(&self, exposed: &str) {
        let deadline = tokio::time::Instant::now() + self.inner.config.call_timeout;
        loop {
            let settled = self.inner.settled.notified();
            let waiting = self
                .inner
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|(tool, cancelled, _)| tool == exposed && cancelled.is_cancelled());
            if !waiting || tokio::time::timeout_at(deadline, settled).await.is_err() {
                return;
            }
        }
    }
}

pub(super) fn refused_result(message: &str, rules: &[String], code: &str) -> ServerResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.to_owned())]);
    result.structured_content = None;
    let mut meta = rmcp::model::MetaObject::new();
    meta.insert(
        "cairn".to_owned(),
        serde_json::json!({"decision": "deny", "code": code, "rules": rules}),
    );
    result.meta = Some(meta);
    ServerResult::CallToolResult(result)
}

/// A tool result with `isError` that tells the model `message`.
pub(super) fn told(message: &str) -> ServerResult {
    ServerResult::CallToolResult(CallToolResult::error(vec![ContentBlock::text(format!(
        "{PREFIX} {message}"
    ))]))
}

pub(super) fn unknown_result(exposed: &str, reason: &str, run: &str, step: u64) -> ServerResult {
    let key = cairn_runtime::effects::idempotency_key(run, step);
    ServerResult::CallToolResult(CallToolResult::error(vec![ContentBlock::text(format!(
        "{PREFIX} The outcome of this `{exposed}` call is unknown ({reason}): it may have taken effect. It is recorded as side_effect_unknown under idempotency key `{key}`. Do not run it again: calls of `{exposed}` are refused until a person checks the effect and runs `cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`."
    ))]))
}

/// A request's `error.type`: `tool_error` for a tool result with `isError`, the JSON-RPC
/// code of an error answer, nothing for success.
pub(super) fn error_type(answer: &Result<ServerResult, ErrorData>) -> Option<String> {
    match answer {
        Ok(result) if is_tool_error(result) => Some("tool_error".to_owned()),
        Ok(_) => None,
        Err(error) => Some(error.code.0.to_string()),
    }
}

/// Whether a result says its tool failed (`isError`), for the spans' `error.type`.
#[must_use]
pub(super) fn is_tool_error(result: &ServerResult) -> bool {
    matches!(
        result,
        ServerResult::CallToolResult(CallToolResult {
            is_error: Some(true),
            ..
        })
    )
}
