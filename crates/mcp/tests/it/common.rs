//! A project with a store, keys and policies; the real MCP servers from `tests/mcp`; and a
//! client session through the gateway (over an in-memory byte stream) or straight to a server.
#![expect(
    deprecated,
    reason = "server-everything still uses sampling and roots (SEP-2577), which the test client answers"
)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_core::{RunId, SystemClock, TenantId};
use cairn_mcp::config::{GatewayConfig, Transport, Upstream};
use cairn_mcp::{Admission, Ended, LocalSessions, LocalSettings};
use cairn_runtime::Durability;
use cairn_runtime::keyring::Keyring;
use cairn_runtime::layout::Project;
use cairn_runtime::ledger::Store;
use cairn_store_sqlite::{OpenMode, SqliteStore};
use rmcp::model::{
    ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ListRootsResult,
    ProgressNotificationParam, Root, SamplingMessage,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::Value;

/// The folder of the npm packages the tests run (`tests/mcp`).
pub fn packages() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/node_modules")
}

/// The real MCP servers, or `None` (with the reason printed) when Node or the packages are
/// missing — unless `CAIRN_REQUIRE_MCP_PEERS` is set (`.ci/run`), when that fails the test.
pub fn peers(test: &str) -> Option<Peers> {
    let everything = packages().join("@modelcontextprotocol/server-everything/dist/index.js");
    let filesystem = packages().join("@modelcontextprotocol/server-filesystem/dist/index.js");
    let node = std::process::Command::new("node").arg("--version").output();
    let missing = if node.is_err() {
        Some("no `node` on PATH".to_owned())
    } else if !everything.is_file() || !filesystem.is_file() {
        Some(format!(
            "the MCP servers are not installed (`npm ci --prefix tests/mcp`): {} missing",
            everything.display()
        ))
    } else {
        None
    };
    match missing {
        None => Some(Peers {
            everything,
            filesystem,
        }),
        Some(reason) if std::env::var_os("CAIRN_REQUIRE_MCP_PEERS").is_some() => {
            panic!("{test}: {reason}, and CAIRN_REQUIRE_MCP_PEERS is set")
        }
        Some(reason) => {
            eprintln!("skipped {test}: {reason}");
            None
        }
    }
}

/// Where the real MCP servers are.
pub struct Peers {
    everything: PathBuf,
    filesystem: PathBuf,
}

impl Peers {
    /// `server-everything` over stdio, named `name`.
    pub fn everything(&self, name: &str) -> Upstream {
        stdio(
            name,
            "node",
            &[self.everything.to_string_lossy().as_ref(), "stdio"],
        )
    }

    /// The hostile test server (`tests/mcp/hostile-server.mjs`: it crashes, hangs or floods
    /// on request) over stdio, named `name`.
    pub fn hostile(&self, name: &str) -> Upstream {
        let script = packages().join("../hostile-server.mjs");
        stdio(name, "node", &[script.to_string_lossy().as_ref()])
    }

    /// `server-filesystem` over stdio, allowed `dir`, named `name`.
    pub fn filesystem(&self, name: &str, dir: &Path) -> Upstream {
        stdio(
            name,
            "node",
            &[
                self.filesystem.to_string_lossy().as_ref(),
                dir.to_string_lossy().as_ref(),
            ],
        )
    }

    /// `server-everything` over Streamable HTTP on `port`: the child and its URL.
    pub fn everything_http(&self, port: u16) -> (tokio::process::Child, String) {
        let child = tokio::process::Command::new("node")
            .arg(&self.everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        (child, format!("http://127.0.0.1:{port}/mcp"))
    }
}

/// An upstream started as `command args`.
pub fn stdio(name: &str, command: &str, args: &[&str]) -> Upstream {
    Upstream {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: std::collections::BTreeMap::new(),
            cwd: None,
        },
    }
}

/// A project in a temporary folder: its policies, a signing key, and its store.
pub struct TestProject {
    /// Keeps the folder.
    pub dir: tempfile::TempDir,
    /// The project.
    pub project: Project,
    /// Its store.
    pub store: Arc<SqliteStore>,
}

impl TestProject {
    /// A project whose only policy file holds `policies`.
    pub fn new(policies: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let home = dir.path().join("home");
        std::fs::create_dir_all(root.join(".cairn/policies")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join(".cairn/policies/test.cedar"), policies).unwrap();
        let project = Project::at_in(&root, Some(&home));
        project.prepare_state().unwrap();
        Keyring::open(project.keys_dir())
            .generate(&mut rand_core::OsRng, "test.cairn")
            .unwrap();
        let store =
            Arc::new(SqliteStore::open(project.store_path(), OpenMode::CreateIfMissing).unwrap());
        Self {
            dir,
            project,
            store,
        }
    }

    /// The project's root folder.
    pub fn root(&self) -> &Path {
        self.project.root()
    }

    /// The project's sessions, recorded durably before each call is forwarded.
    pub fn sessions(&self, hold: Duration) -> LocalSessions {
        self.sessions_with(hold, Durability::Sync, Vec::new())
    }

    /// The project's sessions, with `durability`, tools matching `read_only` only reading.
    pub fn sessions_with(
        &self,
        hold: Duration,
        durability: Durability,
        read_only: Vec<String>,
    ) -> LocalSessions {
        LocalSessions::new(
            self.project.clone(),
            Arc::clone(&self.store) as Arc<dyn Store>,
            Arc::new(SystemClock),
            LocalSettings {
                tenant: TenantId::new("local").unwrap(),
                principal: "mcp-agent".to_owned(),
                durability,
                hold,
                keys_dir: None,
                extra_protected: Vec::new(),
                read_only_tools: read_only,
            },
        )
    }

    /// The records of `run`, as JSON, in step order.
    pub fn records(&self, run: &str) -> Vec<Value> {
        self.store
            .rows(&TenantId::new("local").unwrap(), &RunId::new(run).unwrap())
            .unwrap()
            .into_iter()
            .map(|row| serde_json::to_value(row.unwrap()).unwrap())
            .collect()
    }

    /// Whether `run` is closed.
    pub fn closed(&self, run: &str) -> bool {
        self.store
            .run(&TenantId::new("local").unwrap(), &RunId::new(run).unwrap())
            .unwrap()
            .is_some_and(|info| info.terminated())
    }
}

/// What the test client saw of the server's own messages.
#[derive(Default)]
pub struct Seen {
    /// Progress notifications, in order.
    pub progress: Mutex<Vec<ProgressNotificationParam>>,
    /// Elicitation requests answered.
    pub elicitations: Mutex<u32>,
}

/// The test's MCP client: it answers elicitation, sampling and roots as a user would.
#[derive(Clone, Default)]
pub struct TestClient {
    /// What it saw.
    pub seen: Arc<Seen>,
}

impl ClientHandler for TestClient {
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        *self.seen.elicitations.lock().unwrap() += 1;
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(
            serde_json::json!({"name": "Ada", "email": "ada@example.com", "age": 36, "color": "blue"}),
        );
        Ok(result)
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("a sampled answer"),
            "test-model".to_owned(),
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new("file:///tmp/root")]))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.seen.progress.lock().unwrap().push(params);
    }

    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            ClientCapabilities::builder()
                .enable_roots()
                .enable_sampling()
                .enable_elicitation()
                .build(),
            Implementation::new("cairn-test-client", "1"),
        )
    }
}

/// A client session through the gateway, with the gateway's session and how it ended.
pub struct Session {
    /// The client.
    pub client: RunningService<RoleClient, TestClient>,
    /// What the client saw.
    pub seen: Arc<Seen>,
    /// The session's run.
    pub run: String,
    admission: Arc<dyn Admission>,
    served: tokio::task::JoinHandle<Result<Ended, cairn_mcp::GatewayError>>,
}

impl Session {
    /// Starts the gateway over `upstreams` for `project` and connects a client to it.
    pub async fn start(project: &TestProject, config: GatewayConfig) -> Self {
        Self::start_with(project, config, Duration::ZERO, "s1").await
    }

    /// [`Session::start`] with an approval hold and a session id.
    pub async fn start_with(
        project: &TestProject,
        config: GatewayConfig,
        hold: Duration,
        session: &str,
    ) -> Self {
        Self::start_durable(project, config, hold, Durability::Sync, session).await
    }

    /// [`Session::start_with`] with the records' `durability`.
    pub async fn start_durable(
        project: &TestProject,
        config: GatewayConfig,
        hold: Duration,
        durability: Durability,
        session: &str,
    ) -> Self {
        let admission: Arc<dyn Admission> = Arc::new(
            project
                .sessions_with(hold, durability, config.read_only_tools.clone())
                .open(session)
                .unwrap(),
        );
        let gateway = cairn_mcp::start(config, project.root(), Arc::clone(&admission))
            .await
            .unwrap();
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server_io);
        let served = tokio::spawn(cairn_mcp::serve(
            gateway,
            (read, write),
            std::future::pending(),
        ));
        let handler = TestClient::default();
        let seen = Arc::clone(&handler.seen);
        let client = handler.serve(client_io).await.unwrap();
        Self {
            client,
            seen,
            run: admission.run(),
            admission,
            served,
        }
    }

    /// Calls the tool `name` (as the gateway names it) with `arguments` (an object).
    pub async fn call(&self, name: &str, arguments: Value) -> rmcp::model::CallToolResult {
        let params = rmcp::model::CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap_or_default());
        self.client.call_tool(params).await.unwrap()
    }

    /// Ends the session as a client does, and closes its run.
    pub async fn end(self) -> Ended {
        self.client.cancel().await.unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(10), self.served)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let admission = Arc::clone(&self.admission);
        tokio::task::spawn_blocking(move || admission.close(ended))
            .await
            .unwrap()
            .unwrap();
        ended
    }
}

/// A client straight to `upstream` (for side-by-side comparisons).
pub async fn direct(upstream: &Upstream) -> RunningService<RoleClient, TestClient> {
    let Transport::Stdio { command, args, .. } = &upstream.transport else {
        panic!("a stdio upstream")
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    TestClient::default().serve(transport).await.unwrap()
}

/// A gateway configuration over `upstreams`.
pub fn config(upstreams: Vec<Upstream>) -> GatewayConfig {
    GatewayConfig {
        upstreams,
        ..GatewayConfig::default()
    }
}
