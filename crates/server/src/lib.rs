//! `cairn serve`: Cairn's authority as a service. The service holds the policies, the signing
//! key and the store; agents reach it only with a token bound to one tenant and one role, over
//! HTTP on TCP or a Unix socket. It decides and records every step exactly as the library
//! does — the same [`cairn_runtime::Executor`] — and closes runs with its own signed
//! checkpoint.
//!
//! A service on a temporary SQLite store, an agent token, one admitted call:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use cairn_core::SystemClock;
//! use cairn_runtime::ledger::keys::{SigningKey, TrustedKeys};
//! use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
//! use cairn_server::client::{Endpoint, send};
//! use cairn_server::tokens::{Role, TokenBook, TokenFileEditor};
//! use cairn_server::{Listen, Server, Service, ServiceConfig};
//! use cairn_store_sqlite::{OpenMode, SqliteStore};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("cairn.db"), OpenMode::CreateIfMissing)?;
//! let policy = r#"@id("read-ok") permit(principal, action == Action::"files.read", resource);"#;
//! let catalog = ToolCatalog::from_json("tools.json", r#"{"tools": {"files.read": {"args": {"path": "String"}}}}"#)?;
//! let gate = PolicyGate::load(&[PolicySource::new("policy.cedar", policy)], &catalog)?;
//! let tokens = dir.path().join("tokens.json");
//! let agent = TokenFileEditor::new(&tokens)
//!     .create("acme".parse()?, Role::Agent, None, jiff::Timestamp::now())?;
//! let service = Service::new(ServiceConfig {
//!     store: Arc::new(store),
//!     gate: Arc::new(gate),
//!     signing_key: SigningKey::generate(&mut rand_core::OsRng, "cairn.example")?,
//!     trusted: TrustedKeys::default(),
//!     tokens: TokenBook::load(&tokens)?,
//!     durability: cairn_server::Commit::Group,
//!     content_retention: None,
//!     clock: Arc::new(SystemClock),
//!     max_body_bytes: 1 << 20,
//!     hooks: None,
//!     traces: cairn_server::traces::Traces::none(),
//!     decisions: None,
//!     lanes: None,
//!     policies: None,
//!     approvals: cairn_server::ApprovalSettings::default(),
//! });
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! runtime.block_on(async {
//!     let server = Server::bind(&[Listen::Tcp("127.0.0.1:0".parse()?)], 0o660).await?;
//!     let Listen::Tcp(addr) = server.addresses()[0].clone() else { unreachable!() };
//!     let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//!     let running = tokio::spawn(server.run(Arc::new(service), async { let _ = stopped.await; }));
//!
//!     let at = Endpoint::Tcp(addr.to_string());
//!     let token = Some(agent.token.as_str());
//!     let second = Duration::from_secs(5);
//!     let opened = send(&at, "POST", "/v1/runs", token, Some(br#"{"name": "s1"}"#.to_vec()), second).await?;
//!     assert_eq!(opened.status, 201);
//!     let run = opened.json()["run_id"].as_str().unwrap_or_default().to_owned();
//!     let step = br#"{"tool": "files.write", "arguments": {"path": "x"}}"#.to_vec();
//!     let decided = send(&at, "POST", &format!("/v1/runs/{run}/steps"), token, Some(step), second).await?;
//!     assert_eq!(decided.json()["decision"], "deny"); // nothing permits writing
//!
//!     let _ = stop.send(());
//!     running.await??;
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(())
//! # }
//! ```

pub mod api;
pub mod client;
pub mod console;
pub mod error;
pub mod listen;
pub mod metrics;
pub mod service;
pub mod tls;
pub mod tokens;
pub mod traces;

pub use api::{ApiDoc, openapi_document, router};
pub use error::{ApiError, ServerCode, status_of};
pub use listen::{Listen, Server, termination_signal};
pub use service::{
    ApprovalSettings, Commit, DecisionHome, HookAnswerer, LanesFile, PolicyAdmin, PolicyFile,
    PolicySetView, Service, ServiceConfig, SessionDecisions, Webhook,
};
