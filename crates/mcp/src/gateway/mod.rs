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

mod call;
mod handler;
mod route;

use call::error_type;
use route::{Forwarded, upstream_error};

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
    /// The tool calls forwarded and not yet settled: (exposed tool, the client's cancellation
    /// of the call, a number of its own); `settled` wakes whoever waits for one.
    in_flight: Mutex<Vec<(String, tokio_util::sync::CancellationToken, u64)>>,
    settled: tokio::sync::Notify,
    next_call: AtomicU64,
    /// Every session's run, to close those still open when the gateway stops.
    live: Mutex<Vec<std::sync::Weak<dyn Admission>>>,
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
                in_flight: Mutex::new(Vec::new()),
                settled: tokio::sync::Notify::new(),
                next_call: AtomicU64::new(0),
                live: Mutex::new(vec![Arc::downgrade(&session.admission)]),
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
        let mut missing = Vec::new();
        for (index, upstream) in self.inner.upstreams.iter().enumerate() {
            // A server whose connection broke is started again; one that cannot be, or does
            // not list its tools, is left out of this list (the others are not held back by
            // it) and asked again at the next one.
            let listed = match upstream.revive().await {
                Ok(()) => {
                    let has_tools = upstream
                        .peer()
                        .peer_info()
                        .is_some_and(|info| info.capabilities.tools.is_some());
                    if !has_tools {
                        continue;
                    }
                    upstream
                        .peer()
                        .list_all_tools()
                        .await
                        .map_err(|e| upstream_error(&upstream.name, &e))
                }
                Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
            };
            match listed {
                Ok(tools) => all.extend(tools.into_iter().map(|tool| (index, tool))),
                Err(error) => {
                    tracing::warn!(server = %upstream.name, error = %error.message, "an upstream's tools are left out of the list");
                    missing.push(error);
                }
            }
        }
        if missing.len() == self.inner.upstreams.len()
            && let Some(error) = missing.pop()
        {
            return Err(error);
        }
        if !missing.is_empty() {
            self.inner.relay.mark_tools_stale();
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
