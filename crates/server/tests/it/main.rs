//! The service, tried from outside: a real listener on loopback and a Unix socket, a real
//! SQLite store, real tokens, and HTTP requests through the crate's own client.

#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is the test failing"
)]

mod api;
mod approvals;
mod checks;
mod console;
mod console_browser;
mod decisions;
mod durability;
mod lanes;
mod openapi;
mod schemathesis;
mod tenants;
mod tls;
mod traces;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::SystemClock;
use cairn_ledger::Store;
use cairn_ledger::keys::{SigningKey, TrustedKeys};
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_server::Commit;
use cairn_server::client::{Answer, Endpoint, send_blocking};
use cairn_server::tokens::{Role, TokenBook, TokenFileEditor};
use cairn_server::{Listen, Server, Service, ServiceConfig};
use cairn_store_sqlite::{OpenMode, SqliteStore};

/// Reading files is allowed; writing tickets too, except with `priority` `p0`; the rest is
/// denied by default.
pub const POLICY: &str = r#"
@id("read-ok") permit(principal, action == Action::"files.read", resource);
@id("tickets-ok") permit(principal, action == Action::"tickets.create", resource);
@id("no-p0") forbid(principal, action == Action::"tickets.create", resource) when { context.args has priority && context.args.priority == "p0" };
@id("refunds-ask") @approval("refunds are approved by a person") permit(principal, action == Action::"payments.refund", resource);
"#;

/// The tools the policy speaks of.
pub const TOOLS: &str = r#"{"tools": {
  "files.read": {"args": {"path": "String"}},
  "tickets.create": {"args": {"title": "String", "priority": "String"}},
  "payments.refund": {"args": {"amount": "Long"}}
}}"#;

/// A step reading `a`: allowed.
pub const READ_A: &str = r#"{"tool": "files.read", "arguments": {"path": "a"}}"#;

/// A step deleting `a`: denied by default.
pub const DELETE_A: &str = r#"{"tool": "files.delete", "arguments": {"path": "a"}}"#;

/// A step writing a `p2` ticket: allowed.
pub const TICKET_P2: &str =
    r#"{"tool": "tickets.create", "arguments": {"title": "t", "priority": "p2"}}"#;

/// One running service and its tokens.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<dyn Store>,
    pub tcp: Endpoint,
    pub unix: Endpoint,
    /// The metrics listener (`--metrics-listen`), apart from the API's.
    pub metrics: Endpoint,
    pub key: SigningKey,
    pub service: Arc<Service>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a test service is started with, beyond the defaults (`group` durability, no traces,
/// no TLS, no lanes, approvals held for 30 s, no content kept, the default console).
#[derive(Default)]
struct Setup<'a> {
    durability: Option<Commit>,
    traces: Option<cairn_server::traces::Traces>,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    lanes: Option<&'a str>,
    approvals: Option<cairn_server::ApprovalSettings>,
    retention: Option<jiff::SignedDuration>,
    console: Option<cairn_server::console::ConsoleOptions>,
}

impl Harness {
    pub fn start() -> Self {
        Self::start_full(Setup::default())
    }

    pub fn start_with(durability: Commit) -> Self {
        Self::start_full(Setup {
            durability: Some(durability),
            ..Setup::default()
        })
    }

    pub fn start_traced(durability: Commit, traces: cairn_server::traces::Traces) -> Self {
        Self::start_full(Setup {
            durability: Some(durability),
            traces: Some(traces),
            ..Setup::default()
        })
    }

    /// A service that keeps each call's arguments and observation for a day.
    pub fn start_retaining() -> Self {
        Self::start_full(Setup {
            retention: Some(jiff::SignedDuration::from_hours(24)),
            ..Setup::default()
        })
    }

    /// A service whose console is served with `options` (a short idle time, a one-time link).
    pub fn start_with_console(options: cairn_server::console::ConsoleOptions) -> Self {
        Self::start_full(Setup {
            console: Some(options),
            ..Setup::default()
        })
    }

    /// A service that holds calls and pushes new approval requests as `approvals` says.
    pub fn start_with_approvals(approvals: cairn_server::ApprovalSettings) -> Self {
        Self::start_full(Setup {
            approvals: Some(approvals),
            ..Setup::default()
        })
    }

    /// A service that puts every run in the lanes `lanes_json` declares (`cairn.lanes/v1`).
    pub fn start_with_lanes(lanes_json: &str) -> Self {
        Self::start_full(Setup {
            lanes: Some(lanes_json),
            ..Setup::default()
        })
    }

    /// A service whose TCP listener serves TLS with `cert` and `key` (PEM); the harness's
    /// calls go over `https://localhost`, trusting `cert`.
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Self {
        let config = cairn_server::tls::server_config(cert, key).expect("TLS config");
        let mut harness = Self::start_full(Setup {
            tls: Some(config),
            ..Setup::default()
        });
        let Endpoint::Tcp(addr) = &harness.tcp else {
            panic!("a TCP endpoint")
        };
        let port = addr.rsplit(':').next().expect("a port").to_owned();
        harness.tcp = Endpoint::Https {
            host: format!("localhost:{port}"),
            ca: Some(cert.to_path_buf()),
        };
        harness
    }

    fn start_full(setup: Setup<'_>) -> Self {
        let Setup {
            durability,
            traces,
            tls,
            lanes,
            approvals,
            retention,
            console,
        } = setup;
        let durability = durability.unwrap_or(Commit::Group);
        let traces = traces.unwrap_or_else(cairn_server::traces::Traces::none);
        let dir = tempfile::tempdir().expect("temp dir");
        let lanes_file = dir.path().join("lanes.json");
        if let Some(json) = lanes {
            std::fs::write(&lanes_file, json).expect("lanes.json");
        }
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(dir.path().join("cairn.db"), OpenMode::CreateIfMissing)
                .expect("store"),
        );
        let catalog = ToolCatalog::from_json("tools.json", TOOLS).expect("catalog");
        let gate =
            PolicyGate::load(&[PolicySource::new("policy.cedar", POLICY)], &catalog).expect("gate");
        let key = SigningKey::generate(&mut rand_core::OsRng, "cairn.test").expect("key");
        let trusted = TrustedKeys::new(vec![key.verifier_key()]);
        let tokens = dir.path().join("tokens.json");
        let config = ServiceConfig {
            store: Arc::clone(&store),
            gate: Arc::new(gate),
            signing_key: key.clone(),
            trusted,
            tokens: TokenBook::load(&tokens).expect("tokens"),
            durability,
            content_retention: retention,
            clock: Arc::new(SystemClock),
            max_body_bytes: 64 << 10,
            hooks: None,
            traces,
            decisions: Some(cairn_server::DecisionHome {
                dir: dir.path().to_path_buf(),
                single_project: false,
                keys: dir.path().join("keys"),
                window: jiff::SignedDuration::from_mins(10),
            }),
            lanes: Some(cairn_server::LanesFile {
                path: lanes_file,
                root: dir.path().to_path_buf(),
            }),
            policies: None,
            approvals: approvals.unwrap_or_else(|| cairn_server::ApprovalSettings {
                max_hold: std::time::Duration::from_secs(30),
                ..cairn_server::ApprovalSettings::default()
            }),
        };
        let socket = dir.path().join("cairn.sock");
        let listens = [
            Listen::Tcp("127.0.0.1:0".parse().expect("addr")),
            Listen::Unix(socket.clone()),
        ];
        let service = Arc::new(Service::new(config));
        let served = Arc::clone(&service);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .stack_size(cairn_policy::limits::STACK_BYTES)
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_stack_size(cairn_policy::limits::STACK_BYTES)
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async move {
                    let server = Server::bind(&listens, 0o660).await.expect("bind");
                    let server = match tls {
                        Some(config) => server.with_tls(config),
                        None => server,
                    };
                    let server = match console {
                        Some(options) => server.with_console(options),
                        None => server,
                    };
                    let server = server
                        .with_metrics(&Listen::Tcp("127.0.0.1:0".parse().expect("addr")), 0o600)
                        .await
                        .expect("bind metrics");
                    let metrics = server.metrics_address().expect("metrics address");
                    ready_tx.send((server.addresses(), metrics)).expect("ready");
                    server
                        .run(served, async {
                            let _ = stop_rx.await;
                        })
                        .await
                        .expect("served");
                });
            })
            .expect("thread");
        let (addresses, metrics) = ready_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the service came up");
        let metrics = match metrics {
            Listen::Tcp(addr) => Endpoint::Tcp(addr.to_string()),
            Listen::Unix(path) => Endpoint::Unix(path),
        };
        let tcp = match &addresses[0] {
            Listen::Tcp(addr) => Endpoint::Tcp(addr.to_string()),
            Listen::Unix(_) => panic!("the TCP listener comes first"),
        };
        Self {
            dir,
            store,
            tcp,
            unix: Endpoint::Unix(socket),
            metrics,
            key,
            service,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Stops the service and waits until it has drained.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the service thread ended cleanly");
        }
        // As `cairn serve` does at its exit: every span still waiting is exported.
        self.service.finish();
    }

    pub fn tokens_path(&self) -> PathBuf {
        self.dir.path().join("tokens.json")
    }

    /// A new token of `tenant` with `role`.
    pub fn token(&self, tenant: &str, role: Role) -> String {
        TokenFileEditor::new(self.tokens_path())
            .create(
                tenant.parse().expect("tenant"),
                role,
                None,
                jiff::Timestamp::now(),
            )
            .expect("token")
            .token
    }

    /// Waits until a running service has re-read the token file.
    pub fn tokens_reloaded(&self) {
        std::thread::sleep(cairn_server::tokens::RELOAD_EVERY + Duration::from_millis(100));
    }

    pub fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
    ) -> Answer {
        send_blocking(
            &self.tcp,
            method,
            path,
            token,
            body.map(|b| b.as_bytes().to_vec()),
            Duration::from_secs(20),
        )
        .expect("the service answered")
    }

    /// `method` on `/v1/runs/{run}/{rest}` with `token` and `body`.
    pub fn on_run(
        &self,
        method: &str,
        token: &str,
        run: &str,
        rest: &str,
        body: Option<&str>,
    ) -> Answer {
        self.call(method, &format!("/v1/runs/{run}/{rest}"), Some(token), body)
    }

    /// Admits a [`TICKET_P2`] write in `run` and reports its outcome unknown (`error`); the
    /// write's answer and the idempotency key the unknown effect is reconciled by.
    pub fn write_timing_out(
        &self,
        agent: &str,
        run: &str,
        error: &str,
    ) -> (serde_json::Value, String) {
        let write = self.step(agent, run, TICKET_P2).json();
        let step = write["step"].as_u64().expect("step");
        let unknown = self.on_run(
            "POST",
            agent,
            run,
            &format!("steps/{step}/outcome"),
            Some(&format!(r#"{{"status": "unknown", "error": "{error}"}}"#)),
        );
        let key = unknown.json()["idempotency_key"]
            .as_str()
            .expect("an idempotency key")
            .to_owned();
        (write, key)
    }

    /// Loses a ticket write in `run` ([`Harness::write_timing_out`]) and compacts the run with
    /// `body` (`POST /v1/runs/{run}/compact`): the unknown write's key and the compaction's
    /// answer.
    pub fn compact_after_a_lost_write(
        &self,
        agent: &str,
        run: &str,
        body: &str,
    ) -> (String, Answer) {
        let (_, key) = self.write_timing_out(agent, run, "timed out");
        (key, self.on_run("POST", agent, run, "compact", Some(body)))
    }

    /// Reconciles the effect of idempotency key `key` of `run` as applied, with `evidence`.
    pub fn reconcile(&self, token: &str, run: &str, key: &str, evidence: &str) -> Answer {
        let body = format!(r#"{{"key": "{key}", "outcome": "applied", "evidence": "{evidence}"}}"#);
        self.on_run("POST", token, run, "reconcile", Some(&body))
    }

    /// Closes `run` with its agent `token` (`completed`).
    pub fn terminate(&self, token: &str, run: &str) -> Answer {
        self.on_run(
            "POST",
            token,
            run,
            "terminate",
            Some(r#"{"reason": "completed"}"#),
        )
    }

    /// Opens a run named `name` with an agent `token`; its stored id.
    pub fn open(&self, token: &str, name: &str) -> String {
        let answer = self.call(
            "POST",
            "/v1/runs",
            Some(token),
            Some(&format!(r#"{{"name": "{name}"}}"#)),
        );
        assert_eq!(
            answer.status,
            201,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        answer.json()["run_id"].as_str().expect("run id").to_owned()
    }

    /// Admits one step; the answer's JSON.
    pub fn step(&self, token: &str, run: &str, body: &str) -> Answer {
        self.call(
            "POST",
            &format!("/v1/runs/{run}/steps"),
            Some(token),
            Some(body),
        )
    }

    /// The records the store holds for `run` of `tenant`.
    pub fn records(&self, tenant: &str, run: &str) -> usize {
        self.store
            .rows(&tenant.parse().expect("tenant"), &run.parse().expect("run"))
            .expect("rows")
            .len()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `answer`'s JSON body, once its status is `status` (else the test fails, showing the body).
pub fn json_of(answer: &Answer, status: u16) -> serde_json::Value {
    assert_eq!(
        answer.status,
        status,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

/// `answer`'s error code.
pub fn code(answer: &Answer) -> String {
    answer.json()["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
