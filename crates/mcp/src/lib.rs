//! Cairn's MCP gateway (`cairn mcp proxy`): between an MCP client and its MCP servers, each
//! `tools/call` goes through the same gate, lanes, reconciliation state and approvals as a
//! hook's call and gets one intent record before it is forwarded; everything else passes
//! through unchanged.
//!
//! - [`config`] reads `.cairn/mcp.json` (the upstreams, and how calls are admitted).
//! - [`upstream`] connects each upstream (a child process over stdio, or Streamable HTTP)
//!   and relays what it sends on its own to the client.
//! - [`gateway`] is the server the client talks to: tools and prompts under
//!   `<server>__<name>` ([`names`]), the rest routed to the upstream it belongs to.
//! - [`admission`] is the gateway's one way into the runtime, and [`local`] its
//!   implementation on a project's own store.
//!
//! This is the only crate that knows MCP; it reaches the ledger and the policies only
//! through `cairn-runtime`.

pub mod admission;
pub mod config;
pub mod error;
pub mod framing;
pub mod gateway;
pub mod local;
pub mod names;
pub mod spans;
pub mod upstream;

pub use admission::{Admission, Admit, CallRequest, Ended, Refusal, Settled, Ticket};
pub use config::{GatewayConfig, ToolsList, Transport};
pub use error::GatewayError;
pub use gateway::Gateway;
pub use local::{LocalAdmission, LocalSessions, LocalSettings};

use std::sync::Arc;

use rmcp::ServiceExt as _;

/// Connects `config`'s upstreams (children run in `root`) and puts the gateway in front of
/// them, its policies having learned their tools.
///
/// # Errors
/// An upstream that cannot be started or reached.
pub async fn start(
    config: GatewayConfig,
    root: &std::path::Path,
    admission: Arc<dyn Admission>,
) -> Result<Gateway, GatewayError> {
    let relay = Arc::new(upstream::Relay::default());
    let mut upstreams = Vec::with_capacity(config.upstreams.len());
    for upstream in &config.upstreams {
        upstreams.push(upstream::connect(upstream, Arc::clone(&relay), root).await?);
    }
    let gateway = Gateway::new(upstreams, relay, admission, config);
    // The policies learn the upstreams' tools before the first call.
    if let Err(error) = gateway.tools().await {
        tracing::warn!(%error, "an upstream did not list its tools");
    }
    Ok(gateway)
}

/// Serves one client with `gateway` on `transport` (this process's stdin and stdout, or
/// any other byte stream), each line checked first ([`framing`]) until it leaves or `shutdown` completes, then stops the upstreams,
/// closes the session's run, and says how the session ended.
///
/// # Errors
/// A client that does not start a session.
pub async fn serve<R, W>(
    gateway: Gateway,
    transport: (R, W),
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<Ended, GatewayError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (read, write, guarded) =
        framing::guard(transport.0, transport.1, gateway.config().max_message_bytes);
    let running =
        gateway
            .clone()
            .serve((read, write))
            .await
            .map_err(|e| GatewayError::Upstream {
                server: "client".to_owned(),
                reason: format!("the MCP client did not start a session: {e}"),
            })?;
    let cancel = running.cancellation_token();
    let ended = tokio::select! {
        _ = running.waiting() => Ended::Closed,
        () = shutdown => {
            cancel.cancel();
            Ended::Cancelled
        }
    };
    // The run is closed first: a host that ends its MCP server kills it soon after closing
    // its input, and what follows may not get to run.
    let admission = Arc::clone(gateway.admission());
    match tokio::task::spawn_blocking(move || admission.close(ended)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::warn!(%error, "the session's run could not be closed; it is found unterminated later")
        }
        Err(_) => {
            tracing::warn!("closing the session's run panicked; it is found unterminated later")
        }
    }
    for upstream in gateway.upstreams() {
        upstream.stop();
    }
    if ended == Ended::Closed {
        // What the protocol wrote last reaches the client (bounded: a client that stopped
        // reading does not hold the gateway).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), guarded).await;
    } else {
        guarded.abort();
    }
    Ok(ended)
}

/// How the HTTP listener admits its clients.
#[derive(Clone, Default)]
pub struct HttpAccess {
    /// `Host`s accepted besides the loopback names (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// When set, every request must carry `Authorization: Bearer <token>` (compared in
    /// constant time); others are answered 401.
    pub bearer: Option<String>,
}

impl std::fmt::Debug for HttpAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAccess")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("bearer", &self.bearer.as_ref().map(|_| "…"))
            .finish()
    }
}

/// Whether `request` carries `Authorization: Bearer <token>`.
fn bears(request: &axum::extract::Request, token: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|presented| bool::from(presented.as_bytes().ct_eq(token.as_bytes())))
}

/// Serves MCP over Streamable HTTP at `/mcp` on `listener` until `shutdown` completes: each
/// client session is a session of `gateway` over the same upstreams, admitting its calls
/// through the admission `open` gives it (its own run, closed when the session ends or
/// expires after `idle` without a request). Only loopback `Host`s are accepted unless
/// `access` names others (DNS rebinding), and with a bearer token only requests that carry
/// it.
///
/// # Errors
/// The listener fails.
pub async fn serve_http(
    gateway: Gateway,
    open: impl Fn() -> Result<Arc<dyn Admission>, GatewayError> + Send + Sync + 'static,
    listener: tokio::net::TcpListener,
    access: HttpAccess,
    idle: std::time::Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), GatewayError> {
    let HttpAccess {
        allowed_hosts,
        bearer,
    } = access;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = cancel.clone();
    config.max_request_body_bytes = gateway.config().max_message_bytes;
    if !allowed_hosts.is_empty() {
        config = config.with_allowed_hosts(
            ["localhost", "127.0.0.1", "::1"]
                .into_iter()
                .map(ToOwned::to_owned)
                .chain(allowed_hosts),
        );
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(idle);
    let service = StreamableHttpService::new(
        move || {
            let admission = open().map_err(std::io::Error::other)?;
            Ok(gateway.session(admission))
        },
        Arc::new(sessions),
        config,
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(token) = bearer {
        let token: Arc<str> = token.into();
        router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let token = Arc::clone(&token);
                async move {
                    if bears(&request, &token) {
                        next.run(request).await
                    } else {
                        use axum::response::IntoResponse as _;
                        (
                            http::StatusCode::UNAUTHORIZED,
                            [(http::header::WWW_AUTHENTICATE, "Bearer")],
                            "this MCP gateway needs `Authorization: Bearer <token>`\n",
                        )
                            .into_response()
                    }
                }
            },
        ));
    }
    let local = listener.local_addr().ok();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            cancel.cancel();
        })
        .await
        .map_err(|e| GatewayError::Upstream {
            server: "gateway".to_owned(),
            reason: format!(
                "serving Streamable HTTP on {}: {e}",
                local.map_or_else(String::new, |a| a.to_string())
            ),
        })
}
