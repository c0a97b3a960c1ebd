//! The real hosts, a scripted model server, and one project per scenario and host.
//!
//! The hosts come from the npm registry (`tests/hosts/package.json`, installed by
//! `npm ci --prefix tests/hosts`; `CAIRN_HOSTS_DIR` names another folder holding that
//! `node_modules`). Each runs with a home of its own, its model pointed at
//! `tests/hosts/fake-model.mjs` on a free loopback port, its telemetry, update checks and
//! plugin sync off, and the `cairn` binary Cargo built first on its `PATH`, so that the hooks
//! `cairn hooks install` writes run that binary.

#![allow(dead_code, reason = "test code")]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest a host invocation may take before the test kills it.
const HOST_TIMEOUT: Duration = Duration::from_secs(90);
/// The longest the model server may take to say its port.
const SERVER_START: Duration = Duration::from_secs(15);

/// A host under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// `@anthropic-ai/claude-code`.
    ClaudeCode,
    /// `@openai/codex`.
    Codex,
    /// `@google/gemini-cli`.
    GeminiCli,
    /// `@github/copilot`.
    CopilotCli,
    /// `opencode-linux-x64` (OpenCode's binary), with Cairn's plugin.
    OpenCode,
}

impl Host {
    /// The name scenarios and `cairn hook` use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
            Self::CopilotCli => "copilot-cli",
            Self::OpenCode => "opencode",
        }
    }
}

/// Where the installed hosts and Node are.
#[derive(Debug, Clone)]
pub struct Installed {
    claude: PathBuf,
    codex: PathBuf,
    gemini: PathBuf,
    copilot: PathBuf,
    opencode: PathBuf,
    node: PathBuf,
    harness: PathBuf,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The folder of the harness (`tests/hosts`).
pub fn harness_dir() -> PathBuf {
    workspace().join("tests/hosts")
}

/// The installed hosts, or why they are not there. With `CAIRN_REQUIRE_HOSTS=1` (as
/// `.ci/run` sets) a missing host fails the test instead of skipping it.
pub fn installed() -> Result<Installed, String> {
    let modules = std::env::var_os("CAIRN_HOSTS_DIR")
        .map_or_else(harness_dir, PathBuf::from)
        .join("node_modules");
    let node = which("node").ok_or("no `node` on PATH")?;
    let claude = modules.join("@anthropic-ai/claude-code-linux-x64/claude");
    let codex = modules.join("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
    let gemini = modules.join("@google/gemini-cli/bundle/gemini.js");
    let copilot = modules.join("@github/copilot-linux-x64/copilot");
    let opencode = modules.join("opencode-linux-x64/bin/opencode");
    // Name every missing host: the skip line of a Codex test must not speak of Claude Code only.
    let missing: Vec<String> = [
        ("Claude Code", &claude),
        ("Codex", &codex),
        ("Gemini CLI", &gemini),
        ("Copilot CLI", &copilot),
        ("OpenCode", &opencode),
    ]
    .into_iter()
    .filter(|(_, path)| !path.is_file())
    .map(|(what, path)| format!("{what} is not installed at {}", path.display()))
    .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} (run `npm ci --prefix tests/hosts`)",
            missing.join("; ")
        ));
    }
    Ok(Installed {
        claude,
        codex,
        gemini,
        copilot,
        opencode,
        node,
        harness: harness_dir(),
    })
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

impl Installed {
    /// The Claude Code binary.
    pub fn claude_code(&self) -> &Path {
        &self.claude
    }
}

/// The fake model server of one scenario run; killed on drop.
pub struct ModelServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Where it logs every request, one JSON line each.
    pub log: PathBuf,
}

impl ModelServer {
    /// Starts the server with `script`, in `dir`.
    pub fn start(installed: &Installed, script: &Value, dir: &Path) -> Self {
        Self::start_text(installed, &script.to_string(), dir)
    }

    /// [`ModelServer::start`] with the script as JSON text, which may hold what a `Value`
    /// cannot (a lone surrogate escape, read by the server as JavaScript reads it).
    pub fn start_text(installed: &Installed, script: &str, dir: &Path) -> Self {
        let script_path = dir.join("model-script.json");
        std::fs::write(&script_path, script).unwrap();
        let log = dir.join("requests.jsonl");
        let port_file = dir.join("model-port");
        let child = Command::new(&installed.node)
            .arg(installed.harness.join("fake-model.mjs"))
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .args(["--lifetime", "900"])
            .stdin(Stdio::piped()) // closed when the test drops it: the server exits
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break port;
            }
            assert!(
                started.elapsed() < SERVER_START,
                "the fake model server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, port, log }
    }

    /// Every request logged so far.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One host's home, configuration and invocations in one scenario run.
pub struct HostRun {
    /// The host.
    pub host: Host,
    installed: Installed,
    /// The project folder.
    pub project: PathBuf,
    home: PathBuf,
    cairn_home: PathBuf,
    port: u16,
    /// The host's session id once known.
    pub session: Option<String>,
    /// When the hooks go through `cairn serve`: its address (`CAIRN_SERVER`), the agent
    /// token (`CAIRN_TOKEN`) and the token's id, which prefixes the runs.
    pub service: Option<(String, String, String)>,
}

/// What one host invocation did.
#[derive(Debug)]
pub struct Invocation {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl HostRun {
    /// Prepares `host`'s home in `dir` for `project`, its model at `port`.
    pub fn new(host: Host, installed: &Installed, dir: &Path, project: &Path, port: u16) -> Self {
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let run = Self {
            host,
            installed: installed.clone(),
            project: project.to_path_buf(),
            home,
            cairn_home: dir.join("cairn-home"),
            port,
            session: None,
            service: None,
        };
        if host == Host::Codex {
            let codex_home = run.home.join(".codex");
            std::fs::create_dir_all(&codex_home).unwrap();
            // The project is trusted (else Codex ignores its hooks: B7); the model provider
            // is the fake server; nothing is sent anywhere else.
            let config = format!(
                r#"model = "gpt-5"
model_provider = "fake"
check_for_update_on_startup = false
# The fake model reports a nearly full context on a step marked "context": "full".
model_auto_compact_token_limit = 200000

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"

[projects."{project}"]
trust_level = "trusted"
"#,
                project = project.display()
            );
            std::fs::write(codex_home.join("config.toml"), config).unwrap();
        }
        if host == Host::OpenCode {
            // The model: an OpenAI-compatible provider at the fake server, as the project's
            // configuration names it.
            let config = serde_json::json!({
                "provider": {"fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "fake-key-for-tests"},
                    "models": {"fake-model": {"name": "Fake", "tool_call": true, "limit": {"context": 200_000, "output": 8_000}}},
                }},
                "model": "fake/fake-model",
                "autoupdate": false,
                "share": "disabled",
            });
            std::fs::write(project.join("opencode.json"), config.to_string()).unwrap();
        }
        if host == Host::GeminiCli {
            // The API-key login (the key and the base URL come with each invocation); no
            // telemetry, update check or usage statistics.
            let gemini_home = run.home.join(".gemini");
            std::fs::create_dir_all(&gemini_home).unwrap();
            let settings = serde_json::json!({
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
            });
            std::fs::write(gemini_home.join("settings.json"), settings.to_string()).unwrap();
        }
        run
    }

    /// Merges `settings` into the host's user settings (Gemini CLI's `settings.json`).
    pub fn merge_user_settings(&self, settings: &Value) {
        assert_eq!(
            self.host,
            Host::GeminiCli,
            "user settings are Gemini CLI's only"
        );
        let path = self.home.join(".gemini/settings.json");
        let mut user: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (key, value) in settings.as_object().unwrap() {
            user[key] = value.clone();
        }
        std::fs::write(&path, user.to_string()).unwrap();
    }

    /// The environment every invocation of the host gets.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        let bin = Path::new(super::cairn_binary()).parent().unwrap();
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        command
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("CAIRN_HOME", &self.cairn_home)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some((server, token, _)) = &self.service {
            command
                .env("CAIRN_SERVER", server)
                .env("CAIRN_TOKEN", token);
        }
        match self.host {
            Host::ClaudeCode => {
                command
                    .env(
                        "ANTHROPIC_BASE_URL",
                        format!("http://127.0.0.1:{}", self.port),
                    )
                    .env("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-tests")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_ERROR_REPORTING", "1")
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1");
            }
            Host::Codex => {
                command
                    .env("CODEX_HOME", self.home.join(".codex"))
                    .env("OPENAI_API_KEY", "sk-fake-key-for-tests");
            }
            Host::GeminiCli => {
                // The project's settings (and so its hooks) are read only in a trusted folder;
                // `--skip-trust` would run the session without them.
                command
                    .env("GEMINI_API_KEY", "fake-key-for-tests")
                    .env(
                        "GOOGLE_GEMINI_BASE_URL",
                        format!("http://127.0.0.1:{}", self.port),
                    )
                    .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
            }
            Host::OpenCode => {
                command
                    .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                    .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                    .env(
                        "XDG_CACHE_HOME",
                        std::env::temp_dir().join("cairn-opencode-cache"),
                    );
            }
            Host::CopilotCli => {
                // The model a local provider (no GitHub sign-in, nothing else on the network),
                // the folder trusted and every tool allowed (`COPILOT_ALLOW_ALL=true`), the
                // package Copilot CLI unpacks on first start kept in one cache for every play.
                command
                    .env(
                        "COPILOT_PROVIDER_BASE_URL",
                        format!("http://127.0.0.1:{}/v1", self.port),
                    )
                    .env("COPILOT_PROVIDER_WIRE_API", "responses")
                    .env("COPILOT_MODEL", "gpt-5")
                    .env("COPILOT_OFFLINE", "true")
                    .env("COPILOT_AUTO_UPDATE", "false")
                    .env("COPILOT_ALLOW_ALL", "true")
                    .env(
                        "XDG_CACHE_HOME",
                        std::env::temp_dir().join("cairn-copilot-cache"),
                    );
            }
        }
        command
    }

    /// Waits (at most 10 s) until the host has saved the session's transcript, so that a
    /// host killed now can be resumed: Claude Code (and Copilot CLI) writes it a moment after a
    /// tool call starts, and one killed before that answers the resume with "No conversation
    /// found". Codex and Gemini CLI, which save their session as it starts, need no wait.
    pub fn await_transcript(&self) {
        if !matches!(self.host, Host::ClaudeCode | Host::CopilotCli) {
            return;
        }
        let Some(session) = &self.session else {
            return;
        };
        let name = format!("{session}.jsonl");
        let projects = self.home.join(".claude/projects");
        let copilot = self
            .home
            .join(".copilot/session-state")
            .join(session)
            .join("events.jsonl");
        let saved = || {
            if self.host == Host::CopilotCli {
                return std::fs::metadata(&copilot).is_ok_and(|m| m.len() > 0);
            }
            std::fs::read_dir(&projects)
                .into_iter()
                .flatten()
                .flatten()
                .any(|dir| std::fs::metadata(dir.path().join(&name)).is_ok_and(|m| m.len() > 0))
        };
        let started = std::time::Instant::now();
        while !saved() && started.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Starts the host on `prompt`, resuming the session when `resume`.
    pub fn spawn(&mut self, prompt: &str, resume: bool) -> Child {
        let mut command = match self.host {
            Host::ClaudeCode => {
                let mut command = self.command(&self.installed.claude);
                command.args(["-p", prompt, "--output-format", "json"]);
                command.args([
                    "--allowedTools",
                    // `mcp__gateway`: every tool of the scenarios' MCP gateway (`.mcp.json`).
                    "Bash,Write,Edit,Read,Glob,Grep,Task,WebFetch,TodoWrite,mcp__gateway",
                ]);
                let session = self
                    .session
                    .get_or_insert_with(|| uuid_like(&self.project))
                    .clone();
                if resume {
                    command.args(["--resume", &session]);
                } else {
                    command.args(["--session-id", &session]);
                }
                command
            }
            Host::Codex => {
                let mut command = self.command(&self.installed.codex);
                command.arg("exec");
                if resume {
                    let session = self.session.clone().expect("a Codex session to resume");
                    command.args(["resume", &session]);
                }
                command.args([
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--dangerously-bypass-hook-trust",
                    prompt,
                ]);
                command
            }
            Host::GeminiCli => {
                let mut command = self.command(&self.installed.node);
                command.arg(&self.installed.gemini);
                command.args(["-p", prompt, "--yolo", "-m", "gemini-2.5-flash"]);
                command.args(["--output-format", "json"]);
                let session = self
                    .session
                    .get_or_insert_with(|| uuid_like(&self.project))
                    .clone();
                if resume {
                    command.args(["--resume", "latest"]);
                } else {
                    command.args(["--session-id", &session]);
                }
                // Gemini CLI runs again as a child of its first process, which does not pass a
                // signal on: its own process group is signalled, as a terminal does.
                std::os::unix::process::CommandExt::process_group(&mut command, 0);
                command
            }
            Host::OpenCode => {
                let mut command = self.command(&self.installed.opencode);
                command.args(["run", "--format", "json"]);
                if resume {
                    let session = self.session.clone().expect("an OpenCode session to resume");
                    command.args(["--session", &session]);
                }
                command.arg(prompt);
                command
            }
            Host::CopilotCli => {
                let mut command = self.command(&self.installed.copilot);
                command.args(["-p", prompt, "--disable-client-telemetry"]);
                let session = self
                    .session
                    .get_or_insert_with(|| uuid_like(&self.project))
                    .clone();
                // `--session-id` of a session that exists resumes it too, but then the host
                // says its start is `new`; `--resume` says `resume`.
                if resume {
                    command.arg(format!("--resume={session}"));
                } else {
                    command.args(["--session-id", &session]);
                }
                command
            }
        };
        command.spawn().unwrap()
    }

    /// Waits for `child` (killing it past the timeout) and learns the session id.
    pub fn finish(&mut self, mut child: Child) -> Invocation {
        let started = Instant::now();
        let status: ExitStatus = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > HOST_TIMEOUT {
                let _ = child.kill();
                break child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        if self.host == Host::OpenCode && self.session.is_none() {
            // Its JSON events name the session.
            self.session = stdout
                .split("\"sessionID\":\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next().map(str::to_owned));
        }
        if self.host == Host::Codex && self.session.is_none() {
            self.session = stderr
                .lines()
                .chain(stdout.lines())
                .find_map(|line| line.strip_prefix("session id: "))
                .map(|id| id.trim().to_owned());
        }
        Invocation {
            code: status.code(),
            stdout,
            stderr,
        }
    }

    /// The Cairn run the session writes first.
    pub fn run_id(&self) -> String {
        let session = self.session.clone().unwrap_or_default();
        let base = match self.host {
            Host::ClaudeCode => format!("cc-{session}"),
            Host::Codex => format!("codex-{session}"),
            Host::GeminiCli => format!("gemini-{session}"),
            Host::CopilotCli => format!("copilot-{session}"),
            Host::OpenCode => format!("opencode-{session}"),
        };
        match &self.service {
            Some((_, _, prefix)) => format!("{prefix}.{base}"),
            None => base,
        }
    }
}

/// A fixed UUID-shaped session id derived from the project path (unique per test folder).
fn uuid_like(project: &Path) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    project.hash(&mut hasher);
    let a = hasher.finish();
    std::process::id().hash(&mut hasher);
    let b = hasher.finish();
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// Sends `signal` (`TERM`, `KILL`, `INT`) to `child` of `host` (to its process group, for a
/// host started in one of its own).
pub fn signal(host: Host, child: &Child, signal: &str) {
    let target = if host == Host::GeminiCli {
        format!("-{}", child.id())
    } else {
        child.id().to_string()
    };
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(target)
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} failed");
}
