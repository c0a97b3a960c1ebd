//! The gateway as a client of each upstream server: connecting (a child process over
//! stdio, or Streamable HTTP with headers), and relaying what an upstream sends on its own —
//! requests to the client (sampling, roots, elicitation) and notifications (progress, logs,
//! list changes, resource updates, task status) — to the client.
//!
//! Sampling, roots and logging are deprecated by the protocol's SEP-2577 but still spoken by
//! the servers users run (`server-everything` among them): the gateway relays them as long
//! as the SDK does.
#![expect(
    deprecated,
    reason = "the gateway relays sampling, roots and logging while upstream servers still use them"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, ErrorData, Implementation, ProgressToken,
    ServerNotification, ServerRequest,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleClient, RoleServer, RunningService, Service,
    ServiceExt,
};

use crate::config::{Transport, Upstream as UpstreamConfig};
use crate::error::GatewayError;

/// What the upstreams' handlers share with the gateway: the clients to relay to (each
/// session's, once it connected), which of them has a call in flight to which upstream, the
/// progress tokens of forwarded requests, and which lists went stale.
#[derive(Default)]
pub struct Relay {
    next_id: AtomicU64,
    downstreams: Mutex<HashMap<u64, Downstream>>,
    /// (server, the gateway's progress token on its request) → (session, the client's token).
    progress: Mutex<HashMap<(String, ProgressToken), (u64, ProgressToken)>>,
    /// An upstream changed its tools since the gateway last listed them.
    tools_stale: AtomicBool,
    /// Notifications being relayed now (received, not yet handed to the client).
    relaying: AtomicU64,
}

struct Downstream {
    peer: Peer<RoleServer>,
    /// Calls in flight, by upstream.
    calls: HashMap<String, usize>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("tools_stale", &self.tools_stale)
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// A new session's id.
    pub fn session_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Downstream>> {
        self.downstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Session `id`'s client, once it connected.
    pub fn connect_downstream(&self, id: u64, peer: &Peer<RoleServer>) {
        self.lock().entry(id).or_insert_with(|| Downstream {
            peer: peer.clone(),
            calls: HashMap::new(),
        });
    }

    /// Session `id` ended.
    pub fn disconnect_downstream(&self, id: u64) {
        self.lock().remove(&id);
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, (session, _)| *session != id);
    }

    /// Session `id` sends a request to `server` (what `server` asks meanwhile goes to it).
    pub fn begin(&self, id: u64, server: &str) {
        if let Some(downstream) = self.lock().get_mut(&id) {
            *downstream.calls.entry(server.to_owned()).or_default() += 1;
        }
    }

    /// Session `id`'s request to `server` was answered.
    pub fn end(&self, id: u64, server: &str) {
        if let Some(downstream) = self.lock().get_mut(&id)
            && let Some(calls) = downstream.calls.get_mut(server)
        {
            *calls = calls.saturating_sub(1);
        }
    }

    /// The client `server`'s own request goes to: the session with a request to it in
    /// flight, else the only session.
    fn downstream_for(&self, server: &str) -> Option<Peer<RoleServer>> {
        let downstreams = self.lock();
        let busy = downstreams
            .values()
            .find(|downstream| downstream.calls.get(server).is_some_and(|calls| *calls > 0));
        match busy {
            Some(downstream) => Some(downstream.peer.clone()),
            None if downstreams.len() == 1 => downstreams.values().next().map(|d| d.peer.clone()),
            None => None,
        }
    }

    fn everyone(&self) -> Vec<Peer<RoleServer>> {
        self.lock().values().map(|d| d.peer.clone()).collect()
    }

    /// Relays `server`'s progress on the request the gateway sent with `ours` to session
    /// `id`'s client as its own `theirs`.
    pub fn track_progress(
        &self,
        server: &str,
        ours: ProgressToken,
        id: u64,
        theirs: ProgressToken,
    ) {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((server.to_owned(), ours), (id, theirs));
    }

    /// Stops relaying progress of the request whose token is `ours`.
    pub fn untrack_progress(&self, server: &str, ours: &ProgressToken) {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(server.to_owned(), ours.clone()));
    }

    /// Waits (briefly, bounded) until the notifications an upstream sent before the answer the
    /// gateway just received are handed to the client, so that the client sees them in the
    /// order the upstream sent them (the SDK handles each notification on a task of its own).
    pub async fn drain(&self) {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(200);
        while self.relaying.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// Says the tools must be listed again (an upstream was started again, or left out).
    pub fn mark_tools_stale(&self) {
        self.tools_stale.store(true, Ordering::SeqCst);
    }

    /// Whether some upstream changed its tools since the last call (and forgets it).
    pub fn take_tools_stale(&self) -> bool {
        self.tools_stale.swap(false, Ordering::SeqCst)
    }
}

/// One upstream's side of the gateway: it acts as the client would.
pub struct UpstreamHandler {
    server: String,
    relay: Arc<Relay>,
}

impl Service<RoleClient> for UpstreamHandler {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        if let ServerRequest::PingRequest(_) = request {
            return Ok(ClientResult::empty(()));
        }
        let Some(downstream) = self.relay.downstream_for(&self.server) else {
            return Err(ErrorData::internal_error(
                "the gateway has no client this request belongs to (none is connected, or several are and none has a call in flight to this server)",
                None,
            ));
        };
        // A client that did not declare what the upstream asks for is not asked: the
        // upstream gets the answer the client itself would give.
        if let Some(info) = downstream.peer_info() {
            let capabilities = &info.capabilities;
            let declared = match &request {
                ServerRequest::ListRootsRequest(_) => capabilities.roots.is_some(),
                ServerRequest::CreateMessageRequest(_) => capabilities.sampling.is_some(),
                ServerRequest::ElicitRequest(_) => capabilities.elicitation.is_some(),
                _ => true,
            };
            if !declared {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                    format!("the client did not declare `{}`", request_method(&request)),
                    None,
                ));
            }
        }
        downstream
            .send_request(request)
            .await
            .map_err(|error| match error {
                rmcp::ServiceError::McpError(error) => error,
                other => ErrorData::internal_error(
                    format!("the gateway could not relay the request to its client: {other}"),
                    None,
                ),
            })
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        self.relay.relaying.fetch_add(1, Ordering::SeqCst);
        self.relay_notification(notification).await;
        self.relay.relaying.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    fn get_info(&self) -> ClientConfig {
        client_config()
    }
}

impl UpstreamHandler {
    async fn relay_notification(&self, notification: ServerNotification) {
        let relayed = match notification {
            ServerNotification::ProgressNotification(mut progress) => {
                let mapped = self
                    .relay
                    .progress
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&(self.server.clone(), progress.params.progress_token.clone()))
                    .cloned();
                let Some((session, theirs)) = mapped else {
                    return;
                };
                let peer = self.relay.lock().get(&session).map(|d| d.peer.clone());
                progress.params.progress_token = theirs;
                if let Some(peer) = peer {
                    let _ = peer
                        .send_notification(ServerNotification::ProgressNotification(progress))
                        .await;
                }
                return;
            }
            ServerNotification::ToolListChangedNotification(changed) => {
                self.relay.tools_stale.store(true, Ordering::SeqCst);
                ServerNotification::ToolListChangedNotification(changed)
            }
            ServerNotification::LoggingMessageNotification(mut log) => {
                let logger = log.params.logger.take();
                log.params.logger = Some(match logger {
                    Some(logger) => format!("{}/{logger}", self.server),
                    None => self.server.clone(),
                });
                ServerNotification::LoggingMessageNotification(log)
            }
            // Its ids are the gateway's requests to the upstream, unknown to the client.
            ServerNotification::CancelledNotification(_) => return,
            other => other,
        };
        for downstream in self.relay.everyone() {
            if let Err(error) = downstream.send_notification(relayed.clone()).await {
                tracing::debug!(server = %self.server, %error, "a notification could not be relayed");
            }
        }
    }
}

/// What the gateway tells each upstream it is: a client that can answer roots, sampling and
/// elicitation (it relays them to its own client, or answers as a client that lacks them).
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::builder()
            .enable_roots()
            .enable_roots_list_changed()
            .enable_sampling()
            .enable_elicitation()
            .build(),
        Implementation::new("cairn-mcp-gateway", env!("CARGO_PKG_VERSION")),
    )
}

/// The method of a request an upstream asks the client, for the error that says the client
/// did not declare it.
const fn request_method(request: &ServerRequest) -> &'static str {
    match request {
        ServerRequest::ListRootsRequest(_) => "roots/list",
        ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        ServerRequest::ElicitRequest(_) => "elicitation/create",
        _ => "the request",
    }
}

/// How soon after one start a crashed upstream is started again (a server that dies at
/// once is not restarted in a loop: the calls meanwhile are answered "not sent").
const RESTART_INTERVAL: Duration = Duration::from_secs(1);

/// An upstream server: its connection, started again when it broke (a child that exited, an
/// HTTP session that ended) at the next request that needs it.
pub struct Upstream {
    /// Its name.
    pub name: String,
    config: UpstreamConfig,
    root: PathBuf,
    relay: Arc<Relay>,
    connection: RwLock<Arc<Connection>>,
    /// When it was last started (restarts are serialised and spaced by it).
    started: tokio::sync::Mutex<Instant>,
    restarts: AtomicU64,
}

/// One connection to an upstream.
struct Connection {
    /// Its version (`serverInfo.version`).
    version: String,
    service: RunningService<RoleClient, UpstreamHandler>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("version", &self.version())
            .field("restarts", &self.restarts())
            .finish_non_exhaustive()
    }
}

impl Upstream {
    fn current(&self) -> Arc<Connection> {
        Arc::clone(
            &self
                .connection
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The upstream as a peer to send requests to (the current connection).
    #[must_use]
    pub fn peer(&self) -> Peer<RoleClient> {
        self.current().service.peer().clone()
    }

    /// Its version (`serverInfo.version`), recorded as each of its tools'.
    #[must_use]
    pub fn version(&self) -> String {
        self.current().version.clone()
    }

    /// How often it was started again after its connection broke.
    #[must_use]
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::SeqCst)
    }

    /// Whether the current connection broke (the child exited, the HTTP session ended).
    fn broken(&self) -> bool {
        let current = self.current();
        current.service.is_closed() || current.service.peer().is_transport_closed()
    }

    /// Starts the upstream again when its connection broke — once for every request that
    /// finds it broken, and not sooner than [`RESTART_INTERVAL`] after its last start. Its
    /// tools are listed again at the next `tools/list` (a restarted server may offer others).
    ///
    /// # Errors
    /// [`GatewayError::Upstream`] when it is broken and cannot be started now.
    pub async fn revive(&self) -> Result<(), GatewayError> {
        if !self.broken() {
            return Ok(());
        }
        let mut started = self.started.lock().await;
        if !self.broken() {
            return Ok(()); // another request restarted it meanwhile
        }
        let since = started.elapsed();
        if since < RESTART_INTERVAL {
            return Err(GatewayError::Upstream {
                server: self.name.clone(),
                reason: format!(
                    "its connection broke and it was started {} ms ago; it is started again after {} ms",
                    since.as_millis(),
                    RESTART_INTERVAL.as_millis()
                ),
            });
        }
        *started = Instant::now();
        let connection = open(&self.config, Arc::clone(&self.relay), &self.root).await?;
        tracing::warn!(server = %self.name, "the upstream's connection broke; it was started again");
        let old = std::mem::replace(
            &mut *self
                .connection
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            Arc::new(connection),
        );
        old.service.cancellation_token().cancel();
        self.restarts.fetch_add(1, Ordering::SeqCst);
        self.relay.mark_tools_stale();
        Ok(())
    }

    /// Stops it (a child process is killed).
    pub fn stop(&self) {
        self.current().service.cancellation_token().cancel();
    }
}

/// Starts or reaches `config`'s server (a child runs in `root`, or its own `cwd` below it)
/// and initializes the session with it.
///
/// # Errors
/// [`GatewayError::Upstream`] when it cannot be started, reached or initialized.
pub async fn connect(
    config: &UpstreamConfig,
    relay: Arc<Relay>,
    root: &Path,
) -> Result<Upstream, GatewayError> {
    let connection = open(config, Arc::clone(&relay), root).await?;
    Ok(Upstream {
        name: config.name.clone(),
        config: config.clone(),
        root: root.to_path_buf(),
        relay,
        connection: RwLock::new(Arc::new(connection)),
        started: tokio::sync::Mutex::new(Instant::now()),
        restarts: AtomicU64::new(0),
    })
}

/// One connection to `config`'s server.
async fn open(
    config: &UpstreamConfig,
    relay: Arc<Relay>,
    root: &Path,
) -> Result<Connection, GatewayError> {
    let fail = |reason: String| GatewayError::Upstream {
        server: config.name.clone(),
        reason,
    };
    let handler = UpstreamHandler {
        server: config.name.clone(),
        relay,
    };
    let service = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(env)
                .current_dir(
                    cwd.as_ref()
                        .map_or_else(|| root.to_path_buf(), |cwd| root.join(cwd)),
                )
                .kill_on_drop(true);
            let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map_err(|e| fail(format!("cannot start `{command}`: {e}")))?;
            handler
                .serve(transport)
                .await
                .map_err(|e| fail(format!("the MCP session did not start: {e}")))?
        }
        Transport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            // reqwest's rustls takes the process's provider: ring's, as everywhere in Cairn
            // (a provider already installed stays).
            let _ = rustls::crypto::ring::default_provider().install_default();
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = http::HeaderName::try_from(name.as_str())
                    .map_err(|e| fail(format!("header `{name}`: {e}")))?;
                let value = http::HeaderValue::try_from(value.as_str())
                    .map_err(|e| fail(format!("header `{name}`: {e}")))?;
                custom.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            handler
                .serve(transport)
                .await
                .map_err(|e| fail(format!("the MCP session with {url} did not start: {e}")))?
        }
    };
    let version = service
        .peer()
        .peer_info()
        .and_then(|info| {
            info.server_info
                .as_ref()
                .map(|server| server.version.clone())
        })
        .filter(|version| !version.is_empty())
        .unwrap_or_else(|| "unversioned".to_owned());
    Ok(Connection { version, service })
}
