//! The gateway as a server to its client: every `tools/call` admitted by the runtime (one
//! intent record before it is forwarded), everything else passed through to the upstream it
//! belongs to.
//!
//! Tools and prompts of several upstreams share one list, each under `<server>__<name>`;
//! resources keep their URIs and are routed by the upstream that listed them; a task is
//! routed by the upstream that created it; `logging/setLevel` and `roots/list_changed` go to
//! every upstream. A call the runtime refuses is never forwarded: the client gets a tool
//! result with `isError: true` whose text names the rule (what the model reads next).
#![expect(
    deprecated,
    reason = "logging (SEP-2577) is relayed while upstream servers still use it"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientNotification,
    ClientRequest, CompleteRequestParams, CompleteResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    Prompt, ReadResourceRequestParams, ReadResourceResponse, Reference, RequestMetaObject,
    ServerCapabilities, ServerResult, SetLevelRequestParams, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RoleServer};
use serde_json::Value;

use crate::admission::{Admission, Admit, CallRequest, Settled};
use crate::config::{GatewayConfig, ToolsList};
use crate::names;
use crate::spans::{RequestInfo, RequestSpan};
use crate::upstream::{Relay, Upstream};
use cairn_runtime::config::LearnedTool;
use std::sync::atomic::{AtomicU64, Ordering};

/// The gateway's name in its `serverInfo`.
pub const SERVER_NAME: &str = "cairn-mcp-gateway";

/// Where Claude Code puts the hooks' id of a tool call in a `tools/call`'s `_meta`.
const CLAUDE_TOOL_USE_ID: &str = "claudecode/toolUseId";
/// Where Claude Code puts its session id in a request's `_meta`.
const CLAUDE_SESSION_ID: &str = "claudecode/sessionId";

/// The text a refused or unknown-outcome tool result starts with.
const PREFIX: &str = "[Cairn]";

/// One client session of the gateway: what all sessions share (the upstreams, their tools,
/// the routes) and the session's own way into the runtime (its run).
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
    session: Arc<Session>,
}

struct Inner {
    upstreams: Vec<Upstream>,
    relay: Arc<Relay>,
    config: GatewayConfig,
    info: InitializeResult,
    /// Each upstream's tools as it last listed them (`None`: list again).
    tools: RwLock<Option<Vec<(usize, Tool)>>>,
    /// The upstreams' tools as the policies learn them, and how often they changed.
    learned: RwLock<(u64, Vec<LearnedTool>)>,
    /// Which upstream a resource URI or template, or a task, belongs to.
    routes: Mutex<HashMap<String, usize>>,
    /// Every session's run, to close those still open when the gateway stops.
    live: Mutex<Vec<std::sync::Weak<dyn Admission>>>,
}

fn admission_of(session: &Session) -> Arc<dyn Admission> {
    Arc::clone(&session.admission)
}

/// A session's own part: its id at the relay and its run.
struct Session {
    id: u64,
    admission: Arc<dyn Admission>,
    relay: Arc<Relay>,
    /// The generation of the learned tools this session's policies know.
    learned: AtomicU64,
}

impl Drop for Session {
    /// A session that ends (its client left, its HTTP session expired) closes its run; a
    /// run already closed stays as it is.
    fn drop(&mut self) {
        self.relay.disconnect_downstream(self.id);
        let admission = Arc::clone(&self.admission);
        let _ = std::thread::Builder::new()
            .name("cairn-mcp-close".to_owned())
            .stack_size(cairn_runtime::limits::STACK_BYTES)
            .spawn(move || {
                if let Err(error) = admission.close(crate::admission::Ended::Closed) {
                    tracing::warn!(run = %admission.run(), %error, "the session's run could not be closed; it is found unterminated later");
                }
            });
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstreams", &self.inner.upstreams)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// The gateway over the connected `upstreams`, admitting calls through `admission`.
    #[must_use]
    pub fn new(
        upstreams: Vec<Upstream>,
        relay: Arc<Relay>,
        admission: Arc<dyn Admission>,
        config: GatewayConfig,
    ) -> Self {
        let info = server_info(&upstreams);
        let session = Arc::new(Session {
            id: relay.session_id(),
            admission,
            relay: Arc::clone(&relay),
            learned: AtomicU64::new(0),
        });
        Self {
            inner: Arc::new(Inner {
                upstreams,
                relay,
                config,
                info,
                tools: RwLock::new(None),
                learned: RwLock::new((0, Vec::new())),
                routes: Mutex::new(HashMap::new()),
                live: Mutex::new(vec![Arc::downgrade(&admission_of(&session))]),
            }),
            session,
        }
    }

    /// Another client session over the same upstreams, admitting its calls through
    /// `admission` (its own run).
    #[must_use]
    pub fn session(&self, admission: Arc<dyn Admission>) -> Self {
        let mut live = self
            .inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        live.retain(|weak| weak.strong_count() > 0);
        live.push(Arc::downgrade(&admission));
        drop(live);
        Self {
            inner: Arc::clone(&self.inner),
            session: Arc::new(Session {
                id: self.inner.relay.session_id(),
                admission,
                relay: Arc::clone(&self.inner.relay),
                learned: AtomicU64::new(0),
            }),
        }
    }

    /// Closes the run of every session still open (the gateway is stopping).
    pub fn close_all(&self, ended: crate::admission::Ended) {
        let live: Vec<_> = self
            .inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        for admission in live {
            if let Err(error) = admission.close(ended) {
                tracing::warn!(run = %admission.run(), %error, "a session's run could not be closed; it is found unterminated later");
            }
        }
    }

    /// The runtime side of the session.
    #[must_use]
    pub fn admission(&self) -> &Arc<dyn Admission> {
        &self.session.admission
    }

    /// Teaches this session's policies the upstreams' tools when they changed since it last
    /// learned them (call it on the blocking pool: it loads the policies).
    fn learn(&self) -> Result<(), crate::error::GatewayError> {
        let (generation, tools) = self
            .inner
            .learned
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if self.session.learned.load(Ordering::SeqCst) == generation {
            return Ok(());
        }
        self.session.admission.learn(&tools)?;
        self.session.learned.store(generation, Ordering::SeqCst);
        Ok(())
    }

    fn connected(&self, peer: &rmcp::service::Peer<RoleServer>) {
        self.inner.relay.connect_downstream(self.session.id, peer);
    }

    /// The gateway's configuration.
    #[must_use]
    pub fn config(&self) -> &GatewayConfig {
        &self.inner.config
    }

    /// The upstreams.
    #[must_use]
    pub fn upstreams(&self) -> &[Upstream] {
        &self.inner.upstreams
    }

    fn upstream(&self, name: &str) -> Option<(usize, &Upstream)> {
        self.inner
            .upstreams
            .iter()
            .enumerate()
            .find(|(_, upstream)| upstream.name == name)
    }

    /// Every upstream's tools, listed again when one said they changed; the policies learn
    /// their declared argument fields.
    ///
    /// # Errors
    /// An upstream that does not list its tools.
    pub async fn tools(&self) -> Result<Vec<(usize, Tool)>, ErrorData> {
        let stale = self.inner.relay.take_tools_stale();
        if !stale
            && let Some(tools) = self
                .inner
                .tools
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
        {
            return Ok(tools.clone());
        }
        let mut all = Vec::new();
        for (index, upstream) in self.inner.upstreams.iter().enumerate() {
            let has_tools = upstream
                .peer()
                .peer_info()
                .is_some_and(|info| info.capabilities.tools.is_some());
            if !has_tools {
                continue;
            }
            let tools = upstream
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            all.extend(tools.into_iter().map(|tool| (index, tool)));
        }
        let learned: Vec<LearnedTool> = all
            .iter()
            .filter_map(|(index, tool)| {
                let upstream = self.inner.upstreams.get(*index)?;
                Some((
                    names::exposed(&upstream.name, &tool.name),
                    declared_args(tool),
                ))
            })
            .collect();
        {
            let mut kept = self
                .inner
                .learned
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            *kept = (kept.0 + 1, learned);
        }
        let session = self.clone();
        let learnt = tokio::task::spawn_blocking(move || session.learn()).await;
        match learnt {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "the policies do not load with the upstreams' tools; every call is refused until they do")
            }
            Err(_) => tracing::warn!(
                "learning the upstreams' tools panicked; every call is refused until they load"
            ),
        }
        *self
            .inner
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(all.clone());
        Ok(all)
    }

    async fn listed_tools(&self) -> Result<Vec<Tool>, ErrorData> {
        let tools = self.tools().await?;
        let mut listed = Vec::with_capacity(tools.len());
        for (index, mut tool) in tools {
            let Some(upstream) = self.inner.upstreams.get(index) else {
                continue;
            };
            if self.inner.config.tools_list == ToolsList::Hide {
                let admission = Arc::clone(&self.session.admission);
                let (server, name) = (upstream.name.clone(), tool.name.to_string());
                let shown =
                    tokio::task::spawn_blocking(move || admission.could_admit(&server, &name))
                        .await
                        .unwrap_or(false);
                if !shown {
                    continue;
                }
            }
            tool.name = names::exposed(&upstream.name, &tool.name).into();
            listed.push(tool);
        }
        Ok(listed)
    }

    /// A `tools/call`, in its span.
    async fn call(
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
    fn span(
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

    async fn call_in(
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
            version: upstream.version.clone(),
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
            Ok(result) => {
                if let ServerResult::CreateTaskResult(created) = &result {
                    self.route(created.task.task_id.clone(), server);
                }
                (
                    Settled::Answered(serde_json::to_value(&result).unwrap_or(Value::Null)),
                    Ok(result),
                )
            }
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

    /// Sends `request` to `upstream` on behalf of the client's request `context`: its
    /// `_meta` carried (trace context included), its progress relayed, its cancellation
    /// passed on, and — for a tool call — the configured time limit.
    async fn forward(
        &self,
        upstream: &Upstream,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
        timed: bool,
        span: &RequestSpan,
    ) -> Result<ServerResult, Forwarded> {
        self.connected(&context.peer);
        let mut meta: RequestMetaObject = context.meta.clone();
        let theirs = meta.get_progress_token();
        meta.remove("progressToken");
        // The upstream's work is a child of the gateway's span.
        if let Some(traceparent) = span.traceparent() {
            meta.insert("traceparent".to_owned(), Value::String(traceparent));
        }
        let mut options = PeerRequestOptions::no_options().with_meta(meta);
        if timed {
            options.timeout = Some(self.inner.config.call_timeout);
        }
        let handle = upstream
            .peer()
            .send_request_with_option(request, options)
            .await
            .map_err(|e| {
                Forwarded::NotSent(format!(
                    "the upstream server `{}` is not available ({e}); the call was not sent",
                    upstream.name
                ))
            })?;
        let ours = handle.progress_token.clone();
        if let Some(theirs) = theirs {
            self.inner
                .relay
                .track_progress(&upstream.name, ours.clone(), self.session.id, theirs);
        }
        self.inner.relay.begin(self.session.id, &upstream.name);
        let id = handle.id.clone();
        let peer = upstream.peer().clone();
        let answer = tokio::select! {
            answer = handle.await_response() => answer.map_err(|error| match error {
                rmcp::ServiceError::McpError(error) => Forwarded::Error(error),
                rmcp::ServiceError::Timeout { timeout } => Forwarded::Lost(format!(
                    "`{}` did not answer within {} s", upstream.name, timeout.as_secs()
                )),
                other => Forwarded::Lost(format!("`{}` broke off: {other}", upstream.name)),
            }),
            () = context.ct.cancelled() => {
                let cancel = rmcp::model::CancelledNotification::new(
                    rmcp::model::CancelledNotificationParam::new(Some(id), Some("cancelled by the client".to_owned())),
                );
                let _ = peer.send_notification(cancel.into()).await;
                Err(Forwarded::Lost(format!("the client cancelled the request after it was forwarded to `{}`", upstream.name)))
            }
        };
        // What the upstream sent before its answer reaches the client before the answer.
        self.inner.relay.drain().await;
        self.inner.relay.untrack_progress(&upstream.name, &ours);
        self.inner.relay.end(self.session.id, &upstream.name);
        answer
    }

    /// Forwards a request that is not a tool call, as it is, to `upstream`.
    async fn pass(
        &self,
        upstream: &Upstream,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let span = self.span(request.method(), None, context);
        let answer = self
            .forward(upstream, request, context, false, &span)
            .await
            .map_err(|error| match error {
                Forwarded::Error(error) => error,
                Forwarded::NotSent(reason) | Forwarded::Lost(reason) => {
                    ErrorData::internal_error(reason, None)
                }
            });
        span.end(error_type(&answer).as_deref());
        answer
    }

    fn route(&self, key: String, server: &str) {
        if let Some((index, _)) = self.upstream(server) {
            self.inner
                .routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, index);
        }
    }

    /// The upstream a resource URI (or a task id) belongs to: the one that listed it, or a
    /// template's whose fixed prefix it starts with, or the only upstream with resources.
    fn routed(&self, key: &str) -> Option<&Upstream> {
        let routes = self
            .inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = routes.get(key) {
            return self.inner.upstreams.get(*index);
        }
        let by_template = routes
            .iter()
            .filter_map(|(template, index)| {
                let prefix = template.split('{').next().unwrap_or_default();
                (template.contains('{') && !prefix.is_empty() && key.starts_with(prefix))
                    .then_some((prefix.len(), *index))
            })
            .max();
        drop(routes);
        if let Some((_, index)) = by_template {
            return self.inner.upstreams.get(index);
        }
        let mut with_resources = self.inner.upstreams.iter().filter(|upstream| {
            upstream
                .peer()
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some())
        });
        match (with_resources.next(), with_resources.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    fn unrouted(what: &str, key: &str) -> ErrorData {
        ErrorData::invalid_params(
            format!("no upstream server is known for the {what} `{key}` (list it first)"),
            None,
        )
    }

    async fn prompts(&self) -> Result<ListPromptsResult, ErrorData> {
        let mut listed: Vec<Prompt> = Vec::new();
        for upstream in self.with_capability(|caps| caps.prompts.is_some()) {
            let prompts = upstream
                .peer()
                .list_all_prompts()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            listed.extend(prompts.into_iter().map(|mut prompt| {
                prompt.name = names::exposed_prompt(&upstream.name, &prompt.name);
                prompt
            }));
        }
        Ok(ListPromptsResult::with_all_items(listed))
    }

    async fn resources(&self) -> Result<ListResourcesResult, ErrorData> {
        let mut listed = Vec::new();
        for upstream in self.with_capability(|caps| caps.resources.is_some()) {
            let resources = upstream
                .peer()
                .list_all_resources()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            for resource in &resources {
                self.route(resource.uri.clone(), &upstream.name);
            }
            listed.extend(resources);
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn resource_templates(&self) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut listed = Vec::new();
        for upstream in self.with_capability(|caps| caps.resources.is_some()) {
            let templates = upstream
                .peer()
                .list_all_resource_templates()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            for template in &templates {
                self.route(template.uri_template.clone(), &upstream.name);
            }
            listed.extend(templates);
        }
        Ok(ListResourceTemplatesResult::with_all_items(listed))
    }

    fn with_capability(&self, has: impl Fn(&ServerCapabilities) -> bool) -> Vec<&Upstream> {
        self.inner
            .upstreams
            .iter()
            .filter(|upstream| {
                upstream
                    .peer()
                    .peer_info()
                    .is_some_and(|info| has(&info.capabilities))
            })
            .collect()
    }

    /// The only upstream, for a request the gateway cannot route by name.
    fn only(&self, method: &str) -> Result<&Upstream, ErrorData> {
        match self.inner.upstreams.as_slice() {
            [only] => Ok(only),
            _ => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "`{method}` cannot be routed to one of the gateway's several upstream servers"
                ),
                None,
            )),
        }
    }
}

/// How a forwarded request failed.
enum Forwarded {
    /// It could not be sent: the upstream is gone.
    NotSent(String),
    /// The upstream answered with a JSON-RPC error.
    Error(ErrorData),
    /// No answer: it broke off, timed out, or the client cancelled.
    Lost(String),
}

/// A result of the kind `pick` takes, or an error naming what the upstream sent instead.
fn expect<T>(
    result: ServerResult,
    pick: impl FnOnce(ServerResult) -> Result<T, Box<ServerResult>>,
) -> Result<T, ErrorData> {
    pick(result).map_err(|other| {
        ErrorData::internal_error(
            format!(
                "the upstream answered with an unexpected result: {}",
                serde_json::to_string(&other)
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect::<String>()
            ),
            None,
        )
    })
}

/// The client's request params as the request the gateway forwards.
fn request<M: Default, P>(params: P) -> rmcp::model::Request<M, P> {
    rmcp::model::Request::new(params)
}

/// The gateway speaks the protocol through the SDK's server handler, which negotiates each
/// revision (the `initialize` lifecycle and the stateless 2026-07-28 one), checks per-request
/// metadata and capabilities, and shapes every result for the revision the client speaks.
impl ServerHandler for Gateway {
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.connected(&context.peer);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.connected(&context.peer);
        Ok(ListToolsResult::with_all_items(self.listed_tools().await?))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.connected(&context.peer);
        let result = self.call(request(params), context).await?;
        expect(result, |result| match result {
            ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
            ServerResult::CreateTaskResult(task) => Ok(CallToolResponse::Task(task)),
            ServerResult::InputRequiredResult(input) => Ok(CallToolResponse::InputRequired(input)),
            other => Err(Box::new(other)),
        })
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.connected(&context.peer);
        self.prompts().await
    }

    async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (upstream, prompt) = self.by_prompt(&params.name)?;
        params.name = prompt;
        let result = self
            .pass(
                upstream,
                ClientRequest::GetPromptRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::GetPromptResult(result) => Ok(GetPromptResponse::Complete(result)),
            ServerResult::InputRequiredResult(input) => Ok(GetPromptResponse::InputRequired(input)),
            other => Err(Box::new(other)),
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.connected(&context.peer);
        self.resources().await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.connected(&context.peer);
        self.resource_templates().await
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let upstream = self.by_uri(&params.uri)?;
        let result = self
            .pass(
                upstream,
                ClientRequest::ReadResourceRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::ReadResourceResult(result) => Ok(ReadResourceResponse::Complete(result)),
            ServerResult::InputRequiredResult(input) => {
                Ok(ReadResourceResponse::InputRequired(input))
            }
            other => Err(Box::new(other)),
        })
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_uri(&params.uri)?;
        self.pass(
            upstream,
            ClientRequest::SubscribeRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_uri(&params.uri)?;
        self.pass(
            upstream,
            ClientRequest::UnsubscribeRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn complete(
        &self,
        mut params: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let upstream = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (upstream, name) = self.by_prompt(&prompt.name)?;
                prompt.name = name;
                upstream
            }
            Reference::Resource(template) => self
                .routed(&template.uri)
                .ok_or_else(|| Self::unrouted("resource template", &template.uri))?,
            _ => self.only("completion/complete")?,
        };
        let result = self
            .pass(
                upstream,
                ClientRequest::CompleteRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::CompleteResult(result) => Ok(result),
            other => Err(Box::new(other)),
        })
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.connected(&context.peer);
        for upstream in self.with_capability(|caps| caps.logging.is_some()) {
            self.pass(
                upstream,
                ClientRequest::SetLevelRequest(request(params.clone())),
                &context,
            )
            .await?;
        }
        Ok(())
    }

    async fn get_task(
        &self,
        params: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let upstream = self.by_task(&params.task_id)?;
        let result = self
            .pass(
                upstream,
                ClientRequest::GetTaskRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::GetTaskResult(result) => Ok(result),
            other => Err(Box::new(other)),
        })
    }

    async fn update_task(
        &self,
        params: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_task(&params.task_id)?;
        self.pass(
            upstream,
            ClientRequest::UpdateTaskRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn cancel_task(
        &self,
        params: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_task(&params.task_id)?;
        self.pass(
            upstream,
            ClientRequest::CancelTaskRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn on_custom_request(
        &self,
        custom: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = custom.method.clone();
        let upstream = self.only(&method)?;
        let result = self
            .pass(upstream, ClientRequest::CustomRequest(custom), &context)
            .await?;
        expect(result, |result| match result {
            ServerResult::CustomResult(result) => Ok(result),
            other => Err(Box::new(other)),
        })
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.connected(&context.peer);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.connected(&context.peer);
        for upstream in &self.inner.upstreams {
            let _ = upstream
                .peer()
                .send_notification(ClientNotification::RootsListChangedNotification(
                    rmcp::model::RootsListChangedNotification::default(),
                ))
                .await;
        }
    }

    fn get_info(&self) -> InitializeResult {
        self.inner.info.clone()
    }
}

impl Gateway {
    fn by_uri(&self, uri: &str) -> Result<&Upstream, ErrorData> {
        self.routed(uri)
            .ok_or_else(|| Self::unrouted("resource", uri))
    }

    fn by_task(&self, task: &str) -> Result<&Upstream, ErrorData> {
        self.routed_task(task)
            .ok_or_else(|| Self::unrouted("task", task))
    }

    /// The upstream of an exposed prompt's name, and the prompt's own name there.
    fn by_prompt(&self, exposed: &str) -> Result<(&Upstream, String), ErrorData> {
        let (server, name) =
            names::split(exposed).ok_or_else(|| Self::unrouted("prompt", exposed))?;
        let (_, upstream) = self
            .upstream(server)
            .ok_or_else(|| Self::unrouted("prompt", exposed))?;
        Ok((upstream, name.to_owned()))
    }

    fn routed_task(&self, task: &str) -> Option<&Upstream> {
        let index = *self
            .inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task)?;
        self.inner.upstreams.get(index)
    }
}

/// The gateway's `initialize` answer: what its upstreams offer together, tools always (it
/// tells the client when an upstream's tools change).
fn server_info(upstreams: &[Upstream]) -> InitializeResult {
    let mut capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .build();
    let mut instructions = Vec::new();
    for upstream in upstreams {
        let Some(info) = upstream.peer().peer_info() else {
            continue;
        };
        let theirs = &info.capabilities;
        if theirs.prompts.is_some() {
            capabilities.prompts = theirs.prompts.clone();
        }
        if theirs.resources.is_some() {
            capabilities.resources = theirs.resources.clone();
        }
        if theirs.completions.is_some() {
            capabilities.completions = theirs.completions.clone();
        }
        if theirs.logging.is_some() {
            capabilities.logging = theirs.logging.clone();
        }
        if let Some(text) = &info.instructions {
            instructions.push(format!("[{}] {text}", upstream.name));
        }
    }
    let mut info = InitializeResult::new(capabilities)
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")));
    if !instructions.is_empty() {
        info = info.with_instructions(instructions.join("\n\n"));
    }
    info
}

/// The argument fields an upstream tool declares in its input schema, with the types a
/// policy can read: a string, an integer or a boolean property (optionally nullable).
fn declared_args(tool: &Tool) -> Vec<(String, cairn_runtime::config::ArgType)> {
    use cairn_runtime::config::ArgType;
    let Some(Value::Object(properties)) = tool.input_schema.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .filter_map(|(name, schema)| {
            let kind = match schema.get("type") {
                Some(Value::String(kind)) => kind.as_str(),
                Some(Value::Array(kinds)) => {
                    let mut kinds = kinds
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|k| *k != "null");
                    match (kinds.next(), kinds.next()) {
                        (Some(kind), None) => kind,
                        _ => return None,
                    }
                }
                _ => return None,
            };
            let ty = match kind {
                "string" => ArgType::String,
                "integer" => ArgType::Long,
                "boolean" => ArgType::Bool,
                _ => return None,
            };
            Some((name.clone(), ty))
        })
        .collect()
}

fn refused_result(message: &str, rules: &[String], code: &str) -> ServerResult {
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
fn told(message: &str) -> ServerResult {
    ServerResult::CallToolResult(CallToolResult::error(vec![ContentBlock::text(format!(
        "{PREFIX} {message}"
    ))]))
}

fn unknown_result(exposed: &str, reason: &str, run: &str, step: u64) -> ServerResult {
    let key = cairn_runtime::effects::idempotency_key(run, step);
    ServerResult::CallToolResult(CallToolResult::error(vec![ContentBlock::text(format!(
        "{PREFIX} The outcome of this `{exposed}` call is unknown ({reason}): it may have taken effect. It is recorded as side_effect_unknown under idempotency key `{key}`. Do not run it again: calls of `{exposed}` are refused until a person checks the effect and runs `cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`."
    ))]))
}

fn upstream_error(server: &str, error: &rmcp::ServiceError) -> ErrorData {
    match error {
        rmcp::ServiceError::McpError(error) => error.clone(),
        other => {
            ErrorData::internal_error(format!("the upstream server `{server}`: {other}"), None)
        }
    }
}

/// A request's `error.type`: `tool_error` for a tool result with `isError`, the JSON-RPC
/// code of an error answer, nothing for success.
fn error_type(answer: &Result<ServerResult, ErrorData>) -> Option<String> {
    match answer {
        Ok(result) if is_tool_error(result) => Some("tool_error".to_owned()),
        Ok(_) => None,
        Err(error) => Some(error.code.0.to_string()),
    }
}

/// Whether a result says its tool failed (`isError`), for the spans' `error.type`.
#[must_use]
pub fn is_tool_error(result: &ServerResult) -> bool {
    matches!(
        result,
        ServerResult::CallToolResult(CallToolResult {
            is_error: Some(true),
            ..
        })
    )
}
