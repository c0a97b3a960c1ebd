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
pub mod gateway;
pub mod local;
pub mod names;
pub mod upstream;

pub use admission::{Admission, Admit, CallRequest, Ended, Refusal, Settled, Ticket};
pub use config::{GatewayConfig, ToolsList, Transport};
pub use error::GatewayError;
pub use gateway::Gateway;
pub use local::{LocalAdmission, LocalSessions, LocalSettings};

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ServiceExt as _;

/// Connects `config`'s upstreams (children run in `root`), serves one client on this
/// process's stdin and stdout until it leaves or `shutdown` completes, and says how the
/// session ended. The caller closes the session's run ([`Admission::close`]).
///
/// # Errors
/// An upstream that cannot be started or reached, or a client that does not start a session.
pub async fn serve_stdio(
    config: GatewayConfig,
    root: PathBuf,
    admission: Arc<dyn Admission>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<Ended, GatewayError> {
    let relay = Arc::new(upstream::Relay::default());
    let mut upstreams = Vec::with_capacity(config.upstreams.len());
    for upstream in &config.upstreams {
        upstreams.push(upstream::connect(upstream, Arc::clone(&relay), &root).await?);
    }
    let gateway = Gateway::new(upstreams, relay, admission, config);
    // The policies learn the upstreams' tools before the first call.
    if let Err(error) = gateway.tools().await {
        tracing::warn!(%error, "an upstream did not list its tools");
    }
    let running = gateway
        .clone()
        .serve((tokio::io::stdin(), tokio::io::stdout()))
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
    for upstream in gateway.upstreams() {
        upstream.service.cancellation_token().cancel();
    }
    Ok(ended)
}
