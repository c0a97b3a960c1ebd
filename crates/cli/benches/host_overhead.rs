//! What Cairn adds to a tool call inside the real Claude Code (issue 16), Gemini CLI or Copilot
//! CLI (issue 39; `CAIRN_BENCH_HOST=gemini-cli|copilot-cli`): sessions of one `claude -p`
//! (`gemini -p`, `copilot -p`) each, driven
//! by the scripted model server (`tests/hosts/fake-model.mjs`), whose model makes `CALLS`
//! quick shell calls and then answers. Each configuration is timed as a
//! whole session, interleaved round by round so that all see the same machine noise:
//!
//! - no hooks at all (the baseline);
//! - a no-op hook command (`true`) on the events Cairn installs — the host's own cost of
//!   running a hook command, the floor any hook pays (the target's baseline, as the issue
//!   defines it: a command line the host runs with its shell);
//! - the same no-op in the exec form Cairn installs (`/bin/true` started by the host itself,
//!   no shell): the floor of a hook that starts no shell; in Gemini CLI and Copilot CLI, which
//!   run every hook with a shell, `exec /bin/true` — the floor of a hook that runs a program
//!   (the shell's `true` is a builtin, which starts none);
//! - Cairn as `cairn hooks install --claude-code` writes it (the resident server starts by
//!   itself at the session's first call);
//! - Cairn with a resident server already running (`cairn hooks serve`);
//! - Cairn with the server turned off (`"resident_server": false`: every event is answered by
//!   a supervisor and a worker process);
//! - Cairn through `cairn serve` (issue 20): the hooks forward every event to the service on a
//!   Unix socket with an agent token, nothing decided on the agent's side.
//!
//! The figure per configuration is the time added per tool call (which fires `PreToolUse` and
//! `PostToolUse`): each session's wall time minus the baseline session's of the same round,
//! divided by `CALLS`, median over the rounds (paired by round, so that a slow minute of a
//! shared machine weighs on both sides). Each round starts at another configuration, and each
//! session on a settled disk (`sync` after the set-up, before the clock starts). Target:
//! Cairn's default install adds at most 1.5× what the no-op hook adds. Sessions are noisy (the
//! host's own time per call varies by several milliseconds between minutes); more calls and
//! rounds steady the figure.
//!
//! Run: `cargo bench -p cairn-cli --bench host_overhead` (needs `npm ci --prefix tests/hosts`;
//! `CAIRN_BENCH_HOST` the host, `claude-code`, `gemini-cli`, `copilot-cli` or `opencode` (whose
//! no-op is a plugin starting `true` for each event);
//! `CAIRN_BENCH_ROUNDS` sets the rounds, 5 by default; `CAIRN_BENCH_HOST_CALLS` the calls per
//! session, 20 by default; `CAIRN_BENCH_CONFIGS`, a comma list of `noop-exec`, `serving`,
//! `no-server` and `service`, the configurations measured beside the baseline, the no-op hook
//! and the default install — all by default).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs,
    reason = "benchmark code"
)]

#[path = "../tests/it/real_hosts/harness.rs"]
mod harness;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{Host, HostRun, ModelServer};
use serde_json::json;

/// The `cairn` binary the hooks run.
pub fn cairn_binary() -> &'static str {
    env!("CARGO_BIN_EXE_cairn")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    NoHooks,
    NoOp,
    CairnDefault,
    NoOpExec,
    CairnServing,
    CairnNoServer,
    CairnService,
}

impl Config {
    const ALL: [Self; 7] = [
        Self::NoHooks,
        Self::NoOp,
        Self::CairnDefault,
        Self::NoOpExec,
        Self::CairnServing,
        Self::CairnNoServer,
        Self::CairnService,
    ];

    /// Its key in `CAIRN_BENCH_CONFIGS`.
    const fn key(self) -> &'static str {
        match self {
            Self::NoHooks => "none",
            Self::NoOp => "noop",
            Self::CairnDefault => "default",
            Self::NoOpExec => "noop-exec",
            Self::CairnServing => "serving",
            Self::CairnNoServer => "no-server",
            Self::CairnService => "service",
        }
    }

    /// Whether this run measures it in `host`: the baseline, the no-op hook and the default
    /// install always (the target is theirs); the others unless `CAIRN_BENCH_CONFIGS` leaves
    /// them out.
    fn wanted(self, _host: Host) -> bool {
        matches!(self, Self::NoHooks | Self::NoOp | Self::CairnDefault)
            || std::env::var("CAIRN_BENCH_CONFIGS").map_or(true, |list| {
                list.split(',').any(|key| key.trim() == self.key())
            })
    }

    const fn name(self) -> &'static str {
        match self {
            Self::NoHooks => "no hooks (baseline)",
            Self::NoOp => "no-op hook command (`true`) on the same events",
            Self::CairnDefault => {
                "Cairn as `cairn hooks install` writes it (server starts by itself)"
            }
            Self::NoOpExec => "no-op hook in exec form (`/bin/true`, no shell)",
            Self::CairnServing => "Cairn with its resident server already running",
            Self::CairnNoServer => "Cairn with the server off (`resident_server: false`)",
            Self::CairnService => {
                "Cairn through `cairn serve` (CAIRN_SERVER on a Unix socket, an agent token)"
            }
        }
    }
}

fn cairn(project: &Path, args: &[&str]) {
    let out = Command::new(cairn_binary())
        .args(args)
        .current_dir(project)
        .env("CAIRN_HOME", project.join("../cairn-home"))
        .env_remove("CAIRN_HOOK_RESIDENT")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The hooks library's name of the harness's host.
fn library_host(host: Host) -> cairn_hooks::Host {
    match host {
        Host::ClaudeCode => cairn_hooks::Host::ClaudeCode,
        Host::Codex => cairn_hooks::Host::Codex,
        Host::GeminiCli => cairn_hooks::Host::GeminiCli,
        Host::CopilotCli => cairn_hooks::Host::CopilotCli,
        Host::OpenCode => cairn_hooks::Host::OpenCode,
    }
}

/// One session of `host` in `config`; returns its wall time.
fn session(installed: &harness::Installed, host: Host, config: Config, calls: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut steps: Vec<serde_json::Value> = (0..calls)
        .map(|i| json!({"calls": [{"shell": format!("echo {i}")}]}))
        .collect();
    steps.push(json!({"text": "Done."}));
    let server = ModelServer::start(installed, &json!({ "steps": steps }), &root);
    let mut serving = None;
    match config {
        Config::NoHooks => {}
        Config::NoOp | Config::NoOpExec if host == Host::OpenCode => {
            // OpenCode has no command hooks: the no-op is a plugin on the same hooks as Cairn's
            // that starts `true` for each event (as Cairn's starts `cairn-hook`) and waits for it.
            let plugin = project.join(".opencode/plugins/noop.js");
            std::fs::create_dir_all(plugin.parent().unwrap()).unwrap();
            std::fs::write(plugin, NOOP_OPENCODE_PLUGIN).unwrap();
        }
        Config::NoOp | Config::NoOpExec => {
            // Gemini CLI's timeouts are in milliseconds.
            let timeout = if host == Host::GeminiCli { 60_000 } else { 60 };
            let handler = match (config, host) {
                (Config::NoOp, _) => {
                    json!({"type": "command", "command": "true", "timeout": timeout})
                }
                // A host whose hooks always go through a shell: the shell becomes the program.
                (_, Host::GeminiCli | Host::CopilotCli) => {
                    json!({"type": "command", "command": "exec /bin/true", "timeout": timeout})
                }
                _ => {
                    json!({"type": "command", "command": "/bin/true", "args": [], "timeout": timeout})
                }
            };
            // The events `cairn hooks install` installs for the host.
            let events = cairn_hooks::install::events(library_host(host));
            let hooks: serde_json::Map<String, serde_json::Value> = events
                .iter()
                .map(|e| ((*e).to_owned(), json!([{"hooks": [handler.clone()]}])))
                .collect();
            let settings = cairn_hooks::install::settings_path(library_host(host), &project);
            std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
            std::fs::write(settings, json!({ "hooks": hooks }).to_string()).unwrap();
        }
        Config::CairnDefault
        | Config::CairnServing
        | Config::CairnNoServer
        | Config::CairnService => {
            cairn(
                &project,
                &["hooks", "install", &format!("--{}", host.name())],
            );
            if config == Config::CairnNoServer {
                std::fs::write(
                    project.join(".cairn/hooks.json"),
                    r#"{"schema_version": "cairn.hooks/v1", "resident_server": false}"#,
                )
                .unwrap();
            }
            if config == Config::CairnServing {
                let child = Command::new(cairn_binary())
                    .args(["hooks", "serve", "--idle", "2m", "--dir"])
                    .arg(&project)
                    .env("CAIRN_HOME", root.join("cairn-home"))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let socket =
                    cairn_runtime::layout::state_dir_in(&root.join("cairn-home"), &project)
                        .join("hookd.sock");
                let started = Instant::now();
                while !socket.exists() {
                    assert!(started.elapsed() < Duration::from_secs(10), "no socket");
                    std::thread::sleep(Duration::from_millis(10));
                }
                serving = Some(child);
            }
        }
    }
    let mut run = HostRun::new(host, installed, &root, &project, server.port);
    if config == Config::CairnService {
        let data = project.join(".cairn");
        let made = Command::new(cairn_binary())
            .args([
                "--json", "tokens", "create", "--tenant", "local", "--role", "agent", "--data",
            ])
            .arg(&data)
            .output()
            .unwrap();
        let made: serde_json::Value = serde_json::from_slice(&made.stdout).unwrap();
        let socket = root.join("cairn.sock");
        let ready = root.join("serve.ready");
        let child = Command::new(cairn_binary())
            // `--init`: the service's own key and store in its folder (a project keeps its own
            // outside the working tree).
            .args(["serve", "--init", "--data"])
            .arg(&data)
            .arg("--agents-root")
            .arg(&project)
            .arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .arg("--ready-file")
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !ready.exists() {
            assert!(started.elapsed() < Duration::from_secs(10), "no service");
            std::thread::sleep(Duration::from_millis(10));
        }
        serving = Some(child);
        run.service = Some((
            format!("unix:{}", socket.display()),
            made["token"].as_str().unwrap().to_owned(),
            made["entry"]["id"].as_str().unwrap().to_owned(),
        ));
    }
    // What setting up wrote (the install's keys and store, the settings file) goes to disk
    // now, not while the session is timed: every configuration starts on a settled disk.
    let _ = Command::new("sync").status();
    let started = Instant::now();
    let child = run.spawn("Run the commands.", false);
    let out = run.finish(child);
    let took = started.elapsed();
    assert_eq!(
        out.code,
        Some(0),
        "{config:?}: {}\n{}",
        out.stdout,
        out.stderr
    );
    if let Some(mut child) = serving {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
    // An auto-started server sees its socket go with the folder and exits.
    let _ = std::fs::remove_file(
        cairn_runtime::layout::state_dir_in(&project.join("../cairn-home"), &project)
            .join("hookd.sock"),
    );
    took
}

/// OpenCode's no-op hook: a plugin starting `true` for each event Cairn's plugin hands on.
const NOOP_OPENCODE_PLUGIN: &str = r"import { spawnSync } from 'node:child_process';
const run = () => { spawnSync('true'); };
export const Noop = async () => ({
  'tool.execute.before': async () => run(),
  'tool.execute.after': async () => run(),
  'chat.message': async () => run(),
  'experimental.session.compacting': async () => run(),
  event: async ({ event }) => {
    if (['session.created', 'session.compacted', 'session.idle', 'session.deleted'].includes(event.type)) run();
  },
});
";

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let installed = match harness::installed() {
        Ok(installed) => installed,
        Err(why) => {
            eprintln!("SKIPPED host_overhead: {why}");
            return;
        }
    };
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let rounds = env("CAIRN_BENCH_ROUNDS", 5);
    let calls = env("CAIRN_BENCH_HOST_CALLS", 20);
    let host = match std::env::var("CAIRN_BENCH_HOST").as_deref() {
        Ok("gemini-cli") => Host::GeminiCli,
        Ok("copilot-cli") => Host::CopilotCli,
        Ok("opencode") => Host::OpenCode,
        Ok("claude-code") | Err(_) => Host::ClaudeCode,
        Ok(other) => {
            panic!(
                "CAIRN_BENCH_HOST: `{other}` is not claude-code, gemini-cli, copilot-cli or opencode"
            )
        }
    };
    let configs: Vec<Config> = Config::ALL.into_iter().filter(|c| c.wanted(host)).collect();
    // One untimed session per configuration first (page cache, the binaries).
    for config in &configs {
        session(&installed, host, *config, 2);
    }
    let mut times = vec![Vec::new(); configs.len()];
    // Each round starts one configuration further on, so that none always runs right after
    // the same other one (a server still exiting, the page cache a session leaves).
    for round in 0..rounds {
        for offset in 0..configs.len() {
            let k = (round + offset) % configs.len();
            times[k].push(session(&installed, host, configs[k], calls));
        }
    }
    // What a configuration adds is taken round by round against the baseline session of the
    // same round (paired, so a slow minute of the machine weighs on both), then the median.
    let added_ms: Vec<f64> = (0..configs.len())
        .map(|k| {
            let mut deltas: Vec<f64> = times[k]
                .iter()
                .zip(&times[0])
                .map(|(t, base)| (t.as_secs_f64() - base.as_secs_f64()) / calls as f64 * 1e3)
                .collect();
            deltas.sort_by(f64::total_cmp);
            deltas[deltas.len() / 2]
        })
        .collect();
    let added = |k: usize| added_ms[k];
    let medians: Vec<Duration> = times.iter_mut().map(|v| median(v)).collect();
    println!(
        "{} sessions of {calls} shell calls each, {rounds} rounds interleaved; median session, and the median over rounds of each session's time over its round's baseline",
        host.name()
    );
    println!(
        "| configuration | median session | added per tool call | ratio to the no-op hook's |"
    );
    println!("|---|---|---|---|");
    for (k, config) in configs.iter().enumerate() {
        println!(
            "| {} | {:.0} ms | {} | {} |",
            config.name(),
            medians[k].as_secs_f64() * 1e3,
            if k == 0 {
                "—".to_owned()
            } else {
                format!("{:.1} ms", added(k))
            },
            if k < 2 {
                "—".to_owned()
            } else {
                format!("{:.2}x", added(k) / added(1))
            }
        );
    }
    if let Some(k) = configs.iter().position(|c| *c == Config::NoOpExec) {
        println!(
            "against the no-op program (exec form, or `exec /bin/true`): the default install adds {:.2}x what it adds",
            added(2) / added(k)
        );
    }
    if let Some(k) = configs.iter().position(|c| *c == Config::CairnService) {
        println!(
            "through the service: {:.1} ms per tool call over the baseline, {:.2}x the local default install's",
            added(k),
            added(k) / added(2)
        );
    }
    let ratio = added(2) / added(1);
    println!(
        "target: the default install adds at most 1.5x what the no-op hook adds: {} ({ratio:.2}x)",
        if ratio <= 1.5 { "reached" } else { "missed" }
    );
}
