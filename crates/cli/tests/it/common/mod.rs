//! Shared helpers of the `cairn` binary's integration tests: running the binary in a
//! temporary project with a clean environment, reading its JSON output, and reaching under
//! the CLI into the SQLite store to tamper with it.
//!
//! Every test gets its own temporary directory and passes `--store` (or runs with its
//! current directory inside the temporary directory), so no test touches the real working
//! directory or another test's store.

#![allow(dead_code, reason = "test code")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

/// The exit codes of SPEC §9.1 the tests rely on.
pub const OK: i32 = 0;
/// Invalid input or usage.
pub const INVALID: i32 = 2;
/// Tamper detected.
pub const TAMPER: i32 = 5;
/// Cairn could not do its job (an internal error, a store that does not answer).
pub const INTERNAL: i32 = 1;

/// The path of the `cairn` binary Cargo built for these tests.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_cairn")
}

/// A `cairn` command with a clean environment, running in `dir`: no `CAIRN_*` variable of
/// the developer's shell leaks in, the hooks' session index lives in `dir/.cairn-home`
/// (so that no test binds a session of another test's project), and stdin is empty.
pub fn command_in(dir: &Path) -> Command {
    program_in(binary(), dir)
}

/// `program` (the `cairn` binary or another of its package's) with the environment of
/// [`command_in`], running in `dir`.
pub fn program_in(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .env_remove("CAIRN_LOG")
        .env_remove("CAIRN_FAULT")
        .env_remove("CAIRN_HOOK_RESIDENT")
        .env_remove("CAIRN_HOOK_DEADLINE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CAIRN_SERVER")
        .env_remove("CAIRN_TOKEN")
        .env_remove("CAIRN_DATA")
        .env("CAIRN_HOME", dir.join(".cairn-home"))
        .stdin(Stdio::null());
    command
}

/// A project made by `cairn init` in a new temporary folder.
pub fn init_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    Output::of(command_in(dir.path()).args(["init", "--dir", dir.path().to_str().unwrap()]))
        .expect(0);
    dir
}

/// Runs `command` as `cairn hook HOST` with `stdin` as the host's hook JSON.
pub fn hook(command: &mut Command, host: &str, stdin: &str) -> Output {
    let mut out = with_stdin(command.args(["hook", host]), stdin);
    out.args = format!("cairn hook {host} < {stdin}");
    out
}

/// Starts `command` with its standard input, output and error piped to the test. A program
/// the test has just written (a copy of `cairn-hook`) may be "busy" for a moment: a process
/// another test thread forked meanwhile holds the copy's write descriptor until it execs, so
/// the start is tried again, for at most a second.
pub fn spawn_piped(command: &mut Command) -> std::process::Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for _ in 0..50 {
        match command.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            started => return started.unwrap(),
        }
    }
    command.spawn().unwrap()
}

/// Runs `command` to completion with `stdin` as its input (a host's hook JSON).
pub fn with_stdin(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write as _;
    let args = format!("{command:?} < {stdin}");
    let mut child = spawn_piped(command);
    // A process may answer and exit before it reads everything (a hook that cannot start
    // denies at once): its closed pipe is its answer, not the test's failure.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{args}: {e}");
    }
    Output::finished(&child.wait_with_output().unwrap(), args)
}

/// The state folder (store, keys, sessions, socket) of the project at `dir`, in the Cairn
/// home [`command_in`] gives every command (`dir/.cairn-home`).
pub fn state(dir: &Path) -> PathBuf {
    cairn_runtime::layout::state_dir_in(&dir.join(".cairn-home"), dir)
}

/// The socket of the resident server of the project at `dir`.
pub fn socket(dir: &Path) -> PathBuf {
    state(dir).join("hookd.sock")
}

/// Starts `cairn hooks serve` for the project at `dir` (exiting after `idle` without a
/// call) and waits for its socket.
pub fn serve(dir: &Path, idle: &str) -> std::process::Child {
    let child = command_in(dir)
        .args(["hooks", "serve", "--idle", idle, "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_socket(dir);
    child
}

/// Waits (at most 20 s) until the project at `dir` has a server's socket.
pub fn wait_for_socket(dir: &Path) {
    let started = std::time::Instant::now();
    while !socket(dir).exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "no server made a socket"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Output {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The command line, for failure messages.
    pub args: String,
}

impl Output {
    /// Runs `command` to completion.
    pub fn of(command: &mut Command) -> Self {
        let args = format!("{command:?}");
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("cannot run {args}: {e}"));
        Self::finished(&out, args)
    }

    /// What a finished process `out`, run as `args`, left.
    pub fn finished(out: &std::process::Output, args: String) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            args,
        }
    }

    /// Asserts the exit code, showing everything the command printed when it differs.
    #[track_caller]
    pub fn expect(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "{}\nexited {} (expected {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.args, self.code, self.stdout, self.stderr
        );
        self
    }

    /// Standard output parsed as one JSON document.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "{}\nstdout is not JSON ({e}):\n{}\n--- stderr\n{}",
                self.args, self.stdout, self.stderr
            )
        })
    }

    /// The stable code of a `--json` error body `{"error": {"code", "message"}}`.
    #[track_caller]
    pub fn error_code(&self) -> String {
        let json = self.json();
        json["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("{}\nno error code in {json}", self.args))
            .to_owned()
    }

    /// The message of a `--json` error body.
    #[track_caller]
    pub fn error_message(&self) -> String {
        self.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// The findings of one run of a `ledger verify --json` report, as `(kind, step)`.
#[track_caller]
pub fn findings_of(report: &Value) -> Vec<(String, Option<u64>)> {
    report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings array in {report}"))
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or_default().to_owned(),
                f["step"].as_u64(),
            )
        })
        .collect()
}

/// The report of run `run_id` in a `ledger verify --json` output.
#[track_caller]
pub fn report_for<'a>(verify: &'a Value, run_id: &str) -> &'a Value {
    verify["runs"]
        .as_array()
        .and_then(|runs| runs.iter().find(|r| r["run_id"] == run_id))
        .unwrap_or_else(|| panic!("no report for run `{run_id}` in {verify}"))
}

/// A path as a command-line argument (temporary paths are always UTF-8 here).
#[track_caller]
pub fn arg(path: &Path) -> &str {
    path.to_str()
        .unwrap_or_else(|| panic!("non-UTF-8 path {}", path.display()))
}

/// A temporary project directory with a store at `.cairn/cairn.db` (created by the first
/// demo run) and keys at `.cairn/keys/`.
pub struct Project {
    dir: TempDir,
}

impl Project {
    /// A fresh, empty project directory.
    pub fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("cairn-cli-test-")
                .tempdir()
                .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}")),
        }
    }

    /// The project directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the project directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// The store file.
    pub fn store(&self) -> PathBuf {
        self.path(".cairn/cairn.db")
    }

    /// The default key directory (beside the store).
    pub fn keys_dir(&self) -> PathBuf {
        self.path(".cairn/keys")
    }

    /// The `*.pub` files of the default key directory, sorted.
    pub fn pub_files(&self) -> Vec<PathBuf> {
        files_with_extension(&self.keys_dir(), "pub")
    }

    /// Runs `cairn --store <store> ARGS…` in the project directory.
    pub fn cairn(&self, args: &[&str]) -> Output {
        let store = self.store();
        Output::of(
            command_in(self.root())
                .arg("--store")
                .arg(&store)
                .args(args),
        )
    }

    /// Runs `cairn --json --store <store> ARGS…` in the project directory.
    pub fn cairn_json(&self, args: &[&str]) -> Output {
        let store = self.store();
        Output::of(
            command_in(self.root())
                .arg("--json")
                .arg("--store")
                .arg(&store)
                .args(args),
        )
    }

    /// Runs the demo into this project's store and returns its `--json` output.
    #[track_caller]
    pub fn demo(&self) -> Value {
        self.cairn_json(&["demo"]).expect(OK).json()
    }

    /// Runs the demo and returns the new run's id.
    #[track_caller]
    pub fn demo_run(&self) -> String {
        let demo = self.demo();
        demo["run_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no run_id in the demo output {demo}"))
            .to_owned()
    }

    /// Exports `run` to `<project>/<file>` and returns the file's lines.
    #[track_caller]
    pub fn export(&self, run: &str, file: &str) -> Vec<String> {
        let out = self.path(file);
        self.cairn(&export_args(run, arg(&out))).expect(OK);
        read_lines(&out)
    }

    /// Verifies the bundle made of `lines` (written to `<project>/<file>`) with `--json` and
    /// the project's keys; returns the output (the exit code is the caller's to check).
    pub fn verify_bundle_lines(&self, lines: &[String], file: &str) -> Output {
        let path = self.path(file);
        write_lines(&path, lines);
        self.cairn_json(&["ledger", "verify", "--bundle", arg(&path)])
    }

    /// A connection to the store file, for tampering underneath the CLI.
    #[track_caller]
    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.store())
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", self.store().display()))
    }

    /// Runs one statement on the store and returns the number of rows it changed.
    #[track_caller]
    pub fn sql(&self, sql: &str, params: &[&dyn rusqlite::ToSql]) -> usize {
        self.db()
            .execute(sql, params)
            .unwrap_or_else(|e| panic!("`{sql}` failed: {e}"))
    }
}

/// The files of `dir` whose names end in `.ext`, sorted.
#[track_caller]
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// The lines of a text file.
#[track_caller]
pub fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes lines, each ending in a newline.
#[track_caller]
pub fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Parses one line of JSON.
#[track_caller]
pub fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// Whether `actual` matches the partial expectation `expected`: objects by the keys expected,
/// arrays element by element and of the same length, equal scalars — except strings starting
/// with `~`, which must be contained in the actual string.
pub fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|actual| matches(v, actual))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| matches(e, a))
        }
        (Value::String(e), Value::String(a)) => e
            .strip_prefix('~')
            .map_or(e == a, |needle| a.contains(needle)),
        _ => expected == actual,
    }
}

/// A string or an array of strings, as a list.
pub fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        None => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().unwrap().to_owned())
            .collect(),
        Some(other) => panic!("expected a string or an array of strings, got {other}"),
    }
}

/// A running `cairn serve`, stopped with SIGTERM (it drains) and waited for when dropped.
/// A service folder made by `cairn serve --init-only` at `DIR/service`.
pub fn service_folder(dir: &Path) -> PathBuf {
    let data = dir.join("service");
    Output::of(
        command_in(dir)
            .args(["serve", "--init-only", "--data"])
            .arg(&data),
    )
    .expect(OK);
    data
}

pub struct Serving {
    child: std::process::Child,
    /// The addresses its ready file names (`unix:…`, `http://…`).
    pub addresses: Vec<String>,
}

impl Serving {
    /// Starts `command` — a `cairn serve …` without `--ready-file` — and waits until it
    /// listens; its stdout is dropped and its stderr goes where `command` says (default:
    /// nowhere).
    pub fn start(mut command: Command, ready: &Path) -> Self {
        let _ = std::fs::remove_file(ready);
        let child = command
            .arg("--ready-file")
            .arg(ready)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while !ready.exists() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "cairn serve did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let addresses = std::fs::read_to_string(ready)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        Self { child, addresses }
    }

    /// Its process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it now (SIGTERM: it drains) and waits for it.
    pub fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The tenant the `hooks.json` in `data` names, else `local` (the hooks' default).
pub fn hooks_tenant(data: &Path) -> String {
    std::fs::read_to_string(data.join("hooks.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|config| config["tenant"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "local".to_owned())
}

/// An agent token for the service folder `data` (run in `dir`), of the tenant its
/// `hooks.json` names (else `local`, the hooks' default): the token and its id.
pub fn agent_token_for(dir: &Path, data: &Path) -> (String, String) {
    token_for(dir, data, "agent")
}

/// A token of `role` for the tenant of the hooks of the service folder `data`: the token and
/// its id.
pub fn token_for(dir: &Path, data: &Path, role: &str) -> (String, String) {
    let tenant = hooks_tenant(data);
    let made = Output::of(
        command_in(dir)
            .args([
                "--json", "tokens", "create", "--role", role, "--tenant", &tenant, "--data",
            ])
            .arg(data),
    );
    let made = made.expect(0).json();
    (
        made["token"].as_str().unwrap().to_owned(),
        made["entry"]["id"].as_str().unwrap().to_owned(),
    )
}

/// The policy `id` forbidding every Bash command `like` the Cedar pattern `pattern`.
pub fn forbid_bash(id: &str, pattern: &str) -> String {
    format!(
        "@id(\"{id}\")\nforbid(principal, action == Action::\"Bash\", resource)\nwhen {{ context.args has command && context.args.command like \"{pattern}\" }};\n"
    )
}

/// The arguments of `cairn ledger export` of `run` as JSON lines into the file `out`.
pub fn export_args<'a>(run: &'a str, out: &'a str) -> [&'a str; 8] {
    [
        "ledger", "export", "--run", run, "--format", "jsonl", "--out", out,
    ]
}

/// Runs `command` (a `cairn` command with its global options set) as `cairn ui` on a free
/// loopback port; the console (stopped when dropped) and the one-time link it printed.
#[track_caller]
pub fn cairn_ui(mut command: Command, ready: &Path) -> (Serving, String) {
    command
        .args(["ui", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::null());
    let console = Serving::start(command, ready);
    let link = console
        .addresses
        .iter()
        .find(|line| line.contains("/ui/login?code="))
        .expect("the one-time link")
        .clone();
    (console, link)
}
