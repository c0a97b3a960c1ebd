//! The real Claude Code and Codex, from the npm registry, drive the built `cairn` binary
//! through the hooks `cairn hooks install` writes (issue 16).
//!
//! Each file of `tests/hosts/scenarios/` is one scenario, played in each host it names
//! (`"hosts"`; Claude Code and Codex by default, Gemini CLI when named) in a fresh project:
//!
//! - `"cairn"` — files put into `.cairn/` after `cairn hooks install` scaffolded it (a JSON
//!   value is written as JSON, a string as it is); `"project"` — files put into the project
//!   folder (`*.sh` executable);
//! - `"model"` — the fake model server's script (`tests/hosts/fake-model.mjs` says its form;
//!   `${PROJECT}` is replaced in it, and `${LONE_SURROGATE}` by the escape `\ud800`, which the
//!   model then sends as JavaScript reads it);
//! - `"host_settings"` — `{"gemini-cli": {…}}`: settings merged into that host's user
//!   settings for the play (Gemini CLI's shell inactivity timeout, say);
//! - `"steps"`, in order, each optionally `"only": "claude-code"|"codex"|"gemini-cli"` (or a
//!   list of them):
//!   - `{"host": {"prompt": "…", "resume": bool or [host, …], "kill": {"signal": "TERM", "when": "file"},
//!     "approve": {"count": N, "expires_in": "15m", "uses": 1, "by": "console"}}, "exit": N}`
//!     runs the host (resuming its session), optionally sending it a signal once `file` exists
//!     in the project, and optionally approving, as a person in another terminal would
//!     (`cairn approvals approve`, or with `"by": "console"` in the web console of `cairn ui`
//!     in real Chromium), the first `count` approval requests that wait while it runs; `exit`
//!     (optional) is the exit code expected;
//!   - `{"cli": ["decisions", "set", …], "exit": N}` is a person's `cairn` command in the
//!     project (`exit` 0 by default);
//!   - `{"write": {"path": "text"}}` writes project files (a person's or an attacker's hand);
//!     `{"replace": {"path": ["from", "to"]}}` edits one;
//!   - `{"sh": "command"}` runs a shell command in the project, as its developer would
//!     (`git` with a fixed identity; it must exit 0);
//!   - `{"check": {…}}` checks the state now (see [`check`]).
//! - `"check"` — the checks after the last step, and `"checks_by_host"` — more of them for
//!   one host (`{"codex": {…}}`); `cairn ledger verify --all` must also pass unless
//!   `"verify": false`.
//!
//! `${PROJECT}`, `${RUN}` (the session's first run), `${SESSION}`, `${MCP}` (the MCP servers of
//! `tests/mcp/node_modules`) and `${MCP_RUN}` (the MCP gateway's one run) are replaced in
//! steps, checks and project files. `CAIRN_SCENARIO=04` plays only the scenarios whose name contains `04`;
//! `CAIRN_KEEP_HOST_DIRS=1` keeps each play's folder. Scenario files name host tools as each host calls them (`Bash` on both).
//!
//! Without the hosts installed the test says it is skipped (run `npm ci --prefix tests/hosts`);
//! `.ci/run` installs them and sets `CAIRN_REQUIRE_HOSTS=1`, which turns a skip into a failure.

use crate::common;
mod harness;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{Output, command_in, matches, strings};
use harness::{Host, HostRun, Installed, ModelServer};

/// The MCP servers of `tests/mcp` (`${MCP}` in a scenario), for scenarios that put the MCP
/// gateway in front of them.
fn mcp_packages() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from("tests/mcp/node_modules"))
}

/// The `cairn` binary the hooks run.
pub fn cairn_binary() -> &'static str {
    env!("CARGO_BIN_EXE_cairn")
}

fn scenarios_dir() -> PathBuf {
    harness::harness_dir().join("scenarios")
}

/// The hosts, or `None` after saying why the test is skipped.
fn hosts_or_skip(test: &str) -> Option<Installed> {
    match harness::installed() {
        Ok(installed) => Some(installed),
        Err(why) => {
            assert!(
                std::env::var("CAIRN_REQUIRE_HOSTS").as_deref() != Ok("1"),
                "CAIRN_REQUIRE_HOSTS=1 but {why}"
            );
            // Written to the process's stderr, not through `eprintln!`, which the test
            // harness captures and hides for a passing test: a skip must be seen.
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
            None
        }
    }
}

/// One scenario played in one host.
struct Play<'a> {
    name: String,
    scenario: &'a Value,
    run: HostRun,
    server: ModelServer,
    /// How many requests the server had logged when the latest host step began.
    mark: usize,
    /// `cairn serve`, when the hooks go through it.
    service: Option<common::Serving>,
    _dir: Option<tempfile::TempDir>,
}

impl Play<'_> {
    fn context(&self) -> String {
        format!("{} in {}", self.name, self.run.host.name())
    }

    fn substitute(&self, text: &str) -> String {
        text.replace("${PROJECT}", self.run.project.to_str().unwrap())
            .replace("${RUN}", &self.run.run_id())
            .replace("${SESSION}", self.run.session.as_deref().unwrap_or(""))
            .replace("${SUMMARY_SHA256}", &self.summary_sha256())
            .replace("${MCP}", mcp_packages().to_str().unwrap())
            .replace("${MCP_RUN}", &self.gateway_run(text))
    }

    /// The MCP gateway's run (`${MCP_RUN}`): the one run whose id starts with `mcp-`.
    fn gateway_run(&self, text: &str) -> String {
        if !text.contains("${MCP_RUN}") {
            return String::new();
        }
        let runs = self.cairn(&["--json", "runs", "list"]).expect(0).json();
        let ids: Vec<&str> = runs
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|run| run["run_id"].as_str())
            .filter(|id| id.starts_with("mcp-"))
            .collect();
        assert_eq!(
            ids.len(),
            1,
            "{}: the gateway's runs {ids:?}",
            self.context()
        );
        ids[0].to_owned()
    }

    /// The digest Cairn binds for the script's summary (`summary_sha256`: stripped, SHA-256).
    fn summary_sha256(&self) -> String {
        self.scenario["model"]["summary"]
            .as_str()
            .map(|text| cairn_continuity::summary_sha256(text).to_string())
            .unwrap_or_default()
    }

    fn substituted(&self, value: &Value) -> Value {
        serde_json::from_str(&self.substitute(&value.to_string())).unwrap()
    }

    fn cairn(&self, args: &[&str]) -> Output {
        let mut command = command_in(&self.run.project);
        command.env("CAIRN_HOME", self.run.project.join("../cairn-home"));
        Output::of(command.args(args))
    }

    fn step(&mut self, index: usize, step: &Value) {
        // `"only"`: one host's name, or a list of them.
        let only = strings(step.get("only"));
        if !only.is_empty() && !only.iter().any(|h| h == self.run.host.name()) {
            return;
        }
        let step = self.substituted(step);
        let at = format!("{} step {index}", self.context());
        for key in step.as_object().unwrap().keys() {
            assert!(
                [
                    "only", "host", "exit", "cli", "write", "replace", "sh", "check"
                ]
                .contains(&key.as_str()),
                "{at}: unknown step key `{key}`"
            );
        }
        if let Some(host) = step.get("host") {
            self.mark = self.server.requests().len();
            let prompt = host["prompt"].as_str().unwrap();
            // `"resume"`: true, or the hosts that resume (a host whose compaction needs an
            // earlier turn in the session, Gemini CLI, plays a turn more).
            let resume = match host.get("resume") {
                Some(Value::Array(_)) => strings(host.get("resume"))
                    .iter()
                    .any(|h| h == self.run.host.name()),
                other => other.and_then(Value::as_bool).unwrap_or(false),
            };
            let child = self.run.spawn(prompt, resume);
            let approver = host.get("approve").map(|approve| self.approver(approve));
            if let Some(kill) = host.get("kill") {
                let when = self.run.project.join(kill["when"].as_str().unwrap());
                let started = Instant::now();
                while !when.exists() {
                    assert!(
                        started.elapsed() < Duration::from_secs(60),
                        "{at}: {} never appeared",
                        when.display()
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
                self.run.await_transcript();
                harness::signal(self.run.host, &child, kill["signal"].as_str().unwrap());
            }
            let out = self.run.finish(child);
            if let Some((done, thread)) = approver {
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                let approved = thread.join().unwrap();
                let wanted = host["approve"]["count"].as_u64().unwrap_or(1);
                assert_eq!(
                    approved, wanted,
                    "{at}: requests approved while the host ran"
                );
            }
            if let Some(exit) = step.get("exit") {
                assert_eq!(
                    out.code.map(i64::from),
                    exit.as_i64(),
                    "{at}: the host's exit code\n--- stdout\n{}\n--- stderr\n{}",
                    out.stdout,
                    out.stderr
                );
            }
        } else if let Some(args) = step.get("cli") {
            let args: Vec<&str> = args
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            let exit = step.get("exit").and_then(Value::as_i64).unwrap_or(0);
            self.cairn(&args).expect(i32::try_from(exit).unwrap());
        } else if let Some(script) = step.get("sh").and_then(Value::as_str) {
            let out = Output::of(
                std::process::Command::new("sh")
                    .args(["-c", script])
                    .current_dir(&self.run.project)
                    .env("GIT_AUTHOR_NAME", "Dev")
                    .env("GIT_AUTHOR_EMAIL", "dev@example.invalid")
                    .env("GIT_COMMITTER_NAME", "Dev")
                    .env("GIT_COMMITTER_EMAIL", "dev@example.invalid")
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("HOME", self.run.project.join("../home"))
                    .stdin(std::process::Stdio::null()),
            );
            assert_eq!(out.code, 0, "{at}: `{script}` failed: {out:?}");
        } else if let Some(files) = step.get("write").and_then(Value::as_object) {
            write_files(&self.run.project, files);
        } else if let Some(edits) = step.get("replace").and_then(Value::as_object) {
            for (path, change) in edits {
                let path = self.run.project.join(path);
                let text = std::fs::read_to_string(&path).unwrap();
                let (from, to) = (change[0].as_str().unwrap(), change[1].as_str().unwrap());
                assert!(
                    text.contains(from),
                    "{at}: {} lacks {from:?}",
                    path.display()
                );
                std::fs::write(&path, text.replace(from, to)).unwrap();
            }
        } else if let Some(expect) = step.get("check") {
            self.check(&at, expect);
        } else {
            panic!("{at}: unknown step {step}");
        }
    }

    /// A person approving, from another terminal, the first `approve.count` requests that
    /// wait while the host runs (polling `cairn approvals list` every 100 ms); stop it by
    /// setting the flag, and join it for how many it approved.
    fn approver(
        &self,
        approve: &Value,
    ) -> (
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<u64>,
    ) {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = std::sync::Arc::clone(&done);
        let project = self.run.project.clone();
        let count = approve["count"].as_u64().unwrap_or(1);
        let expires_in = approve["expires_in"].as_str().unwrap_or("15m").to_owned();
        let uses = approve["uses"].as_u64().unwrap_or(1).to_string();
        let by_console = approve["by"].as_str() == Some("console");
        let thread = std::thread::spawn(move || {
            let cairn = |args: &[&str]| {
                let mut command = command_in(&project);
                command.env("CAIRN_HOME", project.join("../cairn-home"));
                Output::of(command.args(args))
            };
            let mut approved = 0;
            while approved < count && !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let listed = cairn(&["--json", "approvals", "list"]);
                let pending = (listed.code == 0)
                    .then(|| {
                        listed.json()["approvals"][0]["request"]["id"]
                            .as_str()
                            .map(str::to_owned)
                    })
                    .flatten();
                if let Some(id) = pending {
                    if by_console {
                        approve_in_the_console(&project, &id);
                    } else {
                        cairn(&[
                            "approvals",
                            "approve",
                            &id,
                            "--expires-in",
                            &expires_in,
                            "--uses",
                            &uses,
                        ])
                        .expect(0);
                    }
                    approved += 1;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            approved
        });
        (done, thread)
    }

    /// Checks what `expect` says:
    /// - `"absent"` / `"present"`: project files; `"contains"`: `{"path": "text"}`;
    ///   `"equals"`: `{"path": "the whole text"}`;
    /// - `"runs"`: the runs (`cairn runs list --json`), each partially matched, in order;
    /// - `"records"`: the records of `${RUN}` (or of `"run"`) in a short form — `kind`,
    ///   `tool`, `decision`, `rules`, `event`, `trigger`, `reason`, `termination` — each
    ///   partially matched, all of them in order; `"records_include"`: a subsequence;
    ///   `"session_records_include"` and `"session_record_counts"` (`[[record, n], …]`): the
    ///   same over every run of the session (`${RUN}`, `${RUN}.2`, …); the short form also has
    ///   `summary`, the boundary's summary digest (`${SUMMARY_SHA256}` is the script's);
    /// - `"model_saw"`: texts some request since the step began carried;
    ///   `"model_never_saw"`: texts no request of the whole play carried;
    ///   `"last_request_once"`: texts the latest main request carries exactly once;
    /// - `"cli"`: `[args, exit, "text stdout contains"]` triples.
    fn check(&self, at: &str, expect: &Value) {
        const KNOWN: [&str; 13] = [
            "absent",
            "present",
            "contains",
            "equals",
            "runs",
            "run",
            "records",
            "records_include",
            "session_records_include",
            "session_record_counts",
            "model_saw",
            "model_never_saw",
            "last_request_once",
        ];
        for key in expect.as_object().unwrap().keys() {
            assert!(
                KNOWN.contains(&key.as_str()) || key == "cli",
                "{at}: unknown check `{key}`"
            );
        }
        for path in strings(expect.get("absent")) {
            assert!(
                !self.run.project.join(&path).exists(),
                "{at}: {path} exists (the call should not have run)"
            );
        }
        for path in strings(expect.get("present")) {
            assert!(
                self.run.project.join(&path).exists(),
                "{at}: {path} does not exist"
            );
        }
        if let Some(files) = expect.get("equals").and_then(Value::as_object) {
            for (path, text) in files {
                let actual =
                    std::fs::read_to_string(self.run.project.join(path)).unwrap_or_default();
                assert_eq!(actual, text.as_str().unwrap(), "{at}: {path}");
            }
        }
        if let Some(files) = expect.get("contains").and_then(Value::as_object) {
            for (path, text) in files {
                let actual =
                    std::fs::read_to_string(self.run.project.join(path)).unwrap_or_default();
                let text = text.as_str().unwrap();
                assert!(
                    actual.contains(text),
                    "{at}: {path} lacks {text:?}: {actual:?}"
                );
            }
        }
        if let Some(runs) = expect.get("runs") {
            let actual = self.cairn(&["--json", "runs", "list"]).expect(0).json();
            assert!(
                matches(runs, &actual),
                "{at}: the runs {actual:#} do not match {runs:#}"
            );
        }
        let run = expect
            .get("run")
            .and_then(Value::as_str)
            .map_or_else(|| self.run.run_id(), str::to_owned);
        if let Some(records) = expect.get("records") {
            let actual = self.records(&run);
            assert!(
                matches(records, &Value::Array(actual.clone())),
                "{at}: the records of {run}\n{}\ndo not match\n{records:#}",
                lines(&actual)
            );
        }
        if let Some(counts) = expect
            .get("session_record_counts")
            .and_then(Value::as_array)
        {
            let actual = self.session_records();
            for pair in counts {
                let count = actual.iter().filter(|r| matches(&pair[0], r)).count();
                assert_eq!(
                    i64::try_from(count).unwrap(),
                    pair[1].as_i64().unwrap(),
                    "{at}: records like {} across the session's runs\n{}",
                    pair[0],
                    lines(&actual)
                );
            }
        }
        if let Some(records) = expect.get("session_records_include") {
            let actual = self.session_records();
            assert!(
                includes(records.as_array().unwrap(), &actual),
                "{at}: the records of the session's runs\n{}\ndo not include, in order,\n{records:#}",
                lines(&actual)
            );
        }
        if let Some(records) = expect.get("records_include") {
            let actual = self.records(&run);
            assert!(
                includes(records.as_array().unwrap(), &actual),
                "{at}: the records of {run}\n{}\ndo not include, in order,\n{records:#}",
                lines(&actual)
            );
        }
        let requests = self.server.requests();
        let bodies: Vec<String> = requests.iter().map(|r| r["body"].to_string()).collect();
        for needle in strings(expect.get("model_saw")) {
            let needle = escaped(&needle);
            assert!(
                bodies.iter().skip(self.mark).any(|b| b.contains(&needle)),
                "{at}: no request since the latest host step began carried {needle:?}"
            );
        }
        for needle in strings(expect.get("model_never_saw")) {
            let needle = escaped(&needle);
            assert!(
                !bodies.iter().any(|b| b.contains(&needle)),
                "{at}: a request carried {needle:?}"
            );
        }
        if let Some(needles) = expect.get("last_request_once") {
            let last = requests
                .iter()
                .rev()
                .find(|r| r["kind"] == "main")
                .map(|r| r["body"].to_string())
                .unwrap_or_default();
            for needle in strings(Some(needles)) {
                let count = last.matches(&escaped(&needle)).count();
                assert_eq!(
                    count, 1,
                    "{at}: the latest request carried {needle:?} {count} times"
                );
            }
        }
        if let Some(commands) = expect.get("cli").and_then(Value::as_array) {
            for command in commands {
                let args: Vec<&str> = command[0]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap())
                    .collect();
                let out = self.cairn(&args);
                out.expect(i32::try_from(command[1].as_i64().unwrap()).unwrap());
                if let Some(text) = command.get(2).and_then(Value::as_str) {
                    assert!(
                        out.stdout.contains(text),
                        "{at}: `cairn {}` printed\n{}\nwithout {text:?}",
                        args.join(" "),
                        out.stdout
                    );
                }
            }
        }
    }

    /// The records of every run of the session (`${RUN}`, `${RUN}.2`, …), in run order.
    fn session_records(&self) -> Vec<Value> {
        let base = self.run.run_id();
        let runs = self.cairn(&["--json", "runs", "list"]).expect(0).json();
        let mut ids: Vec<String> = runs
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run_id"].as_str().unwrap().to_owned())
            .filter(|id| *id == base || id.starts_with(&format!("{base}.")))
            .collect();
        ids.sort_by_key(|id| {
            id.rsplit_once('.')
                .and_then(|(_, n)| n.parse::<u32>().ok())
                .unwrap_or(1)
        });
        ids.iter().flat_map(|id| self.records(id)).collect()
    }

    /// The records of `run`, short.
    fn records(&self, run: &str) -> Vec<Value> {
        let out = self.cairn(&["ledger", "export", "--run", run]);
        out.expect(0);
        out.stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|record| record.get("kind").is_some())
            .map(|r| short(&r))
            .collect()
    }
}

/// A record's short form for the checks.
/// A person approving the waiting request `id` in the web console, in real Chromium: `cairn
/// ui` on the project's store, its one-time link, the approvals queue, the request, Approve.
fn approve_in_the_console(project: &Path, id: &str) {
    use cairn_test_support::browser::{assert_clean_journey, browser, page_text, shots_dir};
    let browser = browser("approving in the console").expect(
        "the scenario approves in the console: install Chromium and `npm ci --prefix tests/console`",
    );
    let mut command = command_in(project);
    command.env("CAIRN_HOME", project.join("../cairn-home"));
    let (ui, link) = common::cairn_ui(command, &project.join("../ui.ready"));
    let base = link.split("/ui/").next().unwrap().to_owned();
    let shots = shots_dir(&project.join("../shots"));
    let seen = browser.run("approve-waiting", &[("link", &link)], &shots);
    drop(ui);
    assert_clean_journey(&seen, &base);
    assert!(page_text(&seen, "queue").contains(id), "{seen:#}");
    assert_eq!(seen["approveStatus"], 303, "{seen:#}");
    let approved = page_text(&seen, "approved");
    assert!(approved.contains("active"), "{approved}");
}

fn short(record: &Value) -> Value {
    let mut short = json!({"kind": record["kind"]});
    let fields = [
        ("tool", &record["tool"]["name"]),
        ("decision", &record["admission"]["decision"]),
        ("rules", &record["admission"]["rule_ids"]),
        ("event", &record["boundary"]["event"]),
        ("trigger", &record["boundary"]["trigger"]),
        ("reason", &record["boundary"]["reason"]),
        ("termination", &record["termination"]["reason"]),
        ("lane", &record["lane_id"]),
        ("summary", &record["boundary"]["summary_digest"]),
    ];
    for (name, value) in fields {
        if !value.is_null() {
            short[name] = value.clone();
        }
    }
    short
}

fn lines(records: &[Value]) -> String {
    records
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A text as it appears inside a JSON string.
fn escaped(text: &str) -> String {
    let quoted = Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// Whether `expected` matches a subsequence of `actual`, in order.
fn includes(expected: &[Value], actual: &[Value]) -> bool {
    let mut rest = actual.iter();
    expected
        .iter()
        .all(|e| rest.by_ref().any(|a| matches(e, a)))
}

fn write_files(root: &Path, files: &serde_json::Map<String, Value>) {
    for (path, content) in files {
        let target = root.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let text = match content {
            Value::String(text) => text.clone(),
            other => serde_json::to_string_pretty(other).unwrap(),
        };
        std::fs::write(&target, text).unwrap();
        if path.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

/// Plays the scenario `file` in `host`.
/// Starts `cairn serve` over `project`'s `.cairn/` (its policies, lanes, key and store) on a
/// socket in `root`, with an agent token of the tenant the project's `hooks.json` names.
fn serve(play: &Play<'_>, root: &Path) -> (common::Serving, (String, String, String)) {
    let project = &play.run.project;
    let data = project.join(".cairn");
    let (token, prefix) = common::agent_token_for(project, &data);
    let socket = root.join("cairn.sock");
    let mut command = command_in(project);
    command
        .args(["serve", "--init", "--data"])
        .arg(&data)
        .arg("--agents-root")
        .arg(project)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .stderr(std::process::Stdio::null());
    let served = common::Serving::start(command, &root.join("serve.ready"));
    (
        served,
        (format!("unix:{}", socket.display()), token, prefix),
    )
}

fn play(installed: &Installed, file: &Path, scenario: &Value, host: Host) {
    play_in(installed, file, &for_host(scenario, host), host, false);
}

/// Whether `scenario` plays in `host`: the hosts it names, else Claude Code and Codex (a
/// scenario is written for Gemini CLI or Copilot CLI when it names it).
fn plays_in(scenario: &Value, host: Host) -> bool {
    let hosts = strings(scenario.get("hosts"));
    if hosts.is_empty() {
        matches!(host, Host::ClaudeCode | Host::Codex)
    } else {
        hosts.iter().any(|h| h == host.name())
    }
}

/// Claude Code's tool names, as Gemini CLI names the same tools (their arguments have the
/// same names: `command`, `file_path`, `content`, `old_string`, `new_string`).
const GEMINI_TOOLS: [(&str, &str); 4] = [
    ("Bash", "run_shell_command"),
    ("Write", "write_file"),
    ("Edit", "replace"),
    ("Read", "read_file"),
];

/// Claude Code's tool names, as OpenCode names the same tools (`bash` takes `command`; its file
/// tools take `filePath`, so a scenario gives OpenCode calls of its own).
const OPENCODE_TOOLS: [(&str, &str); 4] = [
    ("Bash", "bash"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("Read", "read"),
];

/// `scenario` with the tools named as `host` names them: a scenario is written with Claude
/// Code's names (in the model's calls, the checks and the policies alike).
fn for_host(scenario: &Value, host: Host) -> Value {
    let names: &[(&str, &str)] = match host {
        Host::GeminiCli => &GEMINI_TOOLS,
        Host::OpenCode => &OPENCODE_TOOLS,
        _ => return scenario.clone(),
    };
    let mut text = scenario.to_string();
    for &(claude, gemini) in names {
        text = text
            .replace(&format!("\"{claude}\""), &format!("\"{gemini}\""))
            .replace(&format!("\\\"{claude}\\\""), &format!("\\\"{gemini}\\\""));
    }
    serde_json::from_str(&text).unwrap()
}

fn play_in(
    installed: &Installed,
    file: &Path,
    scenario: &Value,
    host: Host,
    through_service: bool,
) {
    let name = file.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = tempfile::Builder::new()
        .prefix(&format!("cairn-host-{name}-"))
        .tempdir()
        .unwrap();
    // `CAIRN_KEEP_HOST_DIRS=1` keeps each play's folder (project, homes, the model's request
    // log) for a look afterwards.
    let (dir, root) = if std::env::var("CAIRN_KEEP_HOST_DIRS").as_deref() == Ok("1") {
        let kept = dir.keep();
        eprintln!("{name} in {}: kept {}", host.name(), kept.display());
        (None, kept.canonicalize().unwrap())
    } else {
        let root = dir.path().canonicalize().unwrap();
        (Some(dir), root)
    };
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let script = scenario["model"]
        .to_string()
        .replace("${PROJECT}", project.to_str().unwrap())
        .replace("${LONE_SURROGATE}", "\\ud800");
    let server = ModelServer::start_text(installed, &script, &root);
    let run = HostRun::new(host, installed, &root, &project, server.port);
    if let Some(settings) = scenario["host_settings"].get(host.name()) {
        run.merge_user_settings(settings);
    }
    let mut play = Play {
        name,
        scenario,
        run,
        server,
        mark: 0,
        service: None,
        _dir: dir,
    };
    // As the quickstart goes: `hooks install` scaffolds `.cairn/` in a fresh project.
    let flag = format!("--{}", host.name());
    play.cairn(&[
        "hooks",
        "install",
        &flag,
        "--dir",
        project.to_str().unwrap(),
    ])
    .expect(0);
    if let Some(files) = scenario.get("cairn").and_then(Value::as_object) {
        let files = play.substituted(&Value::Object(files.clone()));
        write_files(&project.join(".cairn"), files.as_object().unwrap());
    }
    if let Some(files) = scenario.get("project").and_then(Value::as_object) {
        let files = play.substituted(&Value::Object(files.clone()));
        write_files(&project, files.as_object().unwrap());
    }
    if through_service {
        let (served, service) = serve(&play, &root);
        play.service = Some(served);
        play.run.service = Some(service);
    }
    for (i, step) in scenario["steps"].as_array().unwrap().iter().enumerate() {
        play.step(i + 1, step);
    }
    let at = format!("{} at the end", play.context());
    if let Some(expect) = play.scenario.get("check") {
        let expect = play.substituted(expect);
        play.check(&at, &expect);
    }
    if let Some(expect) = play.scenario["checks_by_host"].get(host.name()) {
        let expect = play.substituted(expect);
        play.check(&at, &expect);
    }
    if play.scenario.get("verify") != Some(&Value::Bool(false)) {
        play.cairn(&["ledger", "verify", "--all"]).expect(0);
    }
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn play_all(host: Host) {
    let Some(installed) = hosts_or_skip(&format!("real_hosts in {}", host.name())) else {
        return;
    };
    let only = std::env::var("CAIRN_SCENARIO").ok();
    let mut played = 0;
    for file in scenario_files() {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        if only.as_deref().is_some_and(|only| !name.contains(only)) {
            continue;
        }
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for key in scenario.as_object().unwrap().keys() {
            let known = [
                "about",
                "hosts",
                "host_settings",
                "cairn",
                "project",
                "model",
                "steps",
                "check",
                "checks_by_host",
                "verify",
            ];
            assert!(known.contains(&key.as_str()), "{name}: unknown key `{key}`");
        }
        if !plays_in(&scenario, host) {
            continue;
        }
        let started = Instant::now();
        play(&installed, &file, &scenario, host);
        eprintln!("{name} in {}: ok ({:.1?})", host.name(), started.elapsed());
        played += 1;
    }
    assert!(only.is_some() || played >= 3, "only {played} scenarios ran");
}

#[test]
fn scenarios_in_claude_code() {
    play_all(Host::ClaudeCode);
}

#[test]
fn scenarios_in_codex() {
    play_all(Host::Codex);
}

#[test]
fn scenarios_in_gemini_cli() {
    play_all(Host::GeminiCli);
}

#[test]
fn scenarios_in_copilot_cli() {
    play_all(Host::CopilotCli);
}

#[test]
fn scenarios_in_opencode() {
    play_all(Host::OpenCode);
}

#[test]
fn partial_matching_and_subsequences_follow_their_rules() {
    let actual = json!({"a": {"b": "hello world", "c": 1}, "d": [1, 2]});
    assert!(matches(&json!({"a": {"b": "~world"}}), &actual));
    assert!(!matches(&json!({"a": {"b": "world"}}), &actual));
    assert!(!matches(&json!({"d": [1]}), &actual));
    let records = [json!({"k": 1}), json!({"k": 2}), json!({"k": 3})];
    assert!(includes(&[json!({"k": 1}), json!({"k": 3})], &records));
    assert!(!includes(&[json!({"k": 3}), json!({"k": 1})], &records));
}

/// The scenarios a service answers as the local hooks do: the same hosts' sessions with
/// `CAIRN_SERVER` and an agent token, the same checks (issue 20, acceptance 6).
const THROUGH_THE_SERVICE: [&str; 4] = ["01-", "02-", "04-", "05-"];

#[test]
fn scenarios_in_claude_code_through_the_service() {
    let Some(installed) = hosts_or_skip("real_hosts through cairn serve") else {
        return;
    };
    let mut played = 0;
    for file in scenario_files() {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        if !THROUGH_THE_SERVICE
            .iter()
            .any(|prefix| name.starts_with(prefix))
        {
            continue;
        }
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let hosts = strings(scenario.get("hosts"));
        if !hosts.is_empty() && !hosts.iter().any(|h| h == Host::ClaudeCode.name()) {
            continue;
        }
        let started = Instant::now();
        play_in(&installed, &file, &scenario, Host::ClaudeCode, true);
        eprintln!(
            "{name} in claude-code through cairn serve: ok ({:.1?})",
            started.elapsed()
        );
        played += 1;
    }
    assert_eq!(played, THROUGH_THE_SERVICE.len(), "scenarios played");
}

/// What an agent on the Claude Agent SDK, with the example's bridge, does in a project with a
/// rule: one run, the allowed command run and recorded, the forbidden one refused (and the
/// model told the rule), the chain intact. Without `cairn-hook` on its `PATH`
/// (`hook_on_path: false`), every call is refused and nothing runs.
fn agent_sdk_session(installed: &Installed, language: &str, program: &[&str], hook_on_path: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let script = json!({"steps": [
        {"calls": [{"shell": "echo one > one.txt"}]},
        {"calls": [{"shell": "echo no > forbidden.txt"}]},
        {"text": "Done."}
    ]});
    let server = ModelServer::start(installed, &script, &root);
    let cairn = |args: &[&str]| {
        let mut command = command_in(&project);
        command.env("CAIRN_HOME", root.join("cairn-home"));
        Output::of(command.args(args))
    };
    // `cairn init`, not `hooks install`: the SDK loads the project's Claude Code settings, whose
    // hooks would run Cairn a second time for every event.
    cairn(&["init"]).expect(0);
    std::fs::write(
        project.join(".cairn/policies/no-forbidden.cedar"),
        "@id(\"team.no-forbidden\")\nforbid(principal, action == Action::\"Bash\", resource)\n  when { context.args has command && context.args.command like \"*forbidden*\" };\n",
    )
    .unwrap();
    let bin = Path::new(cairn_binary()).parent().unwrap();
    let elsewhere = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|dir| !dir.join("cairn-hook").exists())
        .collect::<Vec<_>>();
    let path = std::env::join_paths(
        hook_on_path
            .then(|| bin.to_path_buf())
            .into_iter()
            .chain(elsewhere),
    )
    .unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/agent-sdk");
    let mut command = std::process::Command::new(program[0]);
    command
        .args(&program[1..])
        .arg(&project)
        .arg("Make one.txt, then forbidden.txt.")
        .current_dir(examples.join(language))
        .env_clear()
        .env("PATH", path)
        .env("HOME", root.join("home"))
        .env("CAIRN_HOME", root.join("cairn-home"))
        .env("LANG", "C.UTF-8")
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", server.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-tests")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_EXECUTABLE", installed.claude_code());
    std::fs::create_dir_all(root.join("home")).unwrap();
    let out = Output::of(&mut command);
    assert_eq!(out.code, 0, "{language}: {out:?}");
    if !hook_on_path {
        assert!(
            !project.join("one.txt").exists() && !project.join("forbidden.txt").exists(),
            "{language}: a call ran with no hook to decide it: {:?} {out:?}",
            std::fs::read_dir(&project)
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        );
        let told = server
            .requests()
            .iter()
            .any(|r| r.to_string().contains("Cairn could not decide this call"));
        assert!(told, "{language}: the model was not told why");
        return;
    }
    assert!(
        project.join("one.txt").exists(),
        "{language}: the allowed command did not run"
    );
    assert!(
        !project.join("forbidden.txt").exists(),
        "{language}: the forbidden command ran"
    );
    let runs = cairn(&["--json", "runs", "list"]).expect(0).json();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{language}: {runs:?}");
    let run = runs[0]["run_id"].as_str().unwrap();
    assert!(run.starts_with("cc-"), "{language}: {run}");
    let export = cairn(&["ledger", "export", "--run", run]);
    export.expect(0);
    let steps: Vec<(String, String)> = export
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r["kind"] == "step")
        .map(|r| {
            (
                r["tool"]["name"].as_str().unwrap().to_owned(),
                r["admission"]["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("Bash".to_owned(), "allow".to_owned()),
            ("Bash".to_owned(), "deny".to_owned())
        ],
        "{language}"
    );
    let told = server
        .requests()
        .iter()
        .any(|r| r.to_string().contains("team.no-forbidden"));
    assert!(told, "{language}: the model was not told the rule");
    cairn(&["ledger", "verify", "--all"]).expect(0);
}

#[test]
fn the_agent_sdk_examples_put_cairn_on_every_tool_call() {
    let Some(installed) = hosts_or_skip("the Claude Agent SDK examples") else {
        return;
    };
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/agent-sdk");
    let python_sdk = || {
        std::process::Command::new("python3")
            .args(["-c", "import claude_agent_sdk"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let languages: [(&str, [&str; 2], bool, &str); 2] = [
        (
            "typescript",
            ["node", "agent.mjs"],
            examples
                .join("typescript/node_modules/@anthropic-ai/claude-agent-sdk")
                .is_dir(),
            "npm ci --prefix examples/agent-sdk/typescript",
        ),
        (
            "python",
            ["python3", "agent.py"],
            python_sdk(),
            "pip install -r examples/agent-sdk/python/requirements.txt",
        ),
    ];
    for (language, program, installed_sdk, install) in languages {
        if installed_sdk {
            agent_sdk_session(&installed, language, &program, true);
            agent_sdk_session(&installed, language, &program, false);
            continue;
        }
        assert!(
            std::env::var("CAIRN_REQUIRE_HOSTS").as_deref() != Ok("1"),
            "CAIRN_REQUIRE_HOSTS=1 but the {language} Agent SDK is not installed"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the {language} Agent SDK example: run `{install}`"
        );
    }
}
