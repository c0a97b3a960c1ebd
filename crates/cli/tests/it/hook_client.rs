//! `cairn-hook`, the command `cairn hooks install` writes: through the resident server it
//! answers as `cairn hook` does; without one, or with any argument or environment it leaves to
//! `cairn hook`, it hands the call over and passes the answer on; and it fails closed when
//! the exchange breaks or `cairn` cannot be started.

use crate::common;

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;

use common::{Output, command_in, socket, wait_for_socket, with_stdin as run};
use serde_json::json;

/// A project that forbids `Bash` and permits everything else.
fn project(resident_server: bool) -> tempfile::TempDir {
    let dir = common::init_project();
    std::fs::write(
        dir.path().join(".cairn/policies/zz-no-bash.cedar"),
        "@id(\"test.no-bash\")\nforbid(principal, action == Action::\"Bash\", resource);\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".cairn/hooks.json"),
        json!({"schema_version": "cairn.hooks/v1", "resident_server": resident_server}).to_string(),
    )
    .unwrap();
    dir
}

/// `cairn-hook` with the same clean environment as [`command_in`].
fn thin_in(dir: &Path) -> Command {
    common::program_in(env!("CARGO_BIN_EXE_cairn-hook"), dir)
}

/// `cairn-hook claude-code`, as Claude Code runs it.
fn thin(dir: &Path) -> Command {
    let mut command = thin_in(dir);
    command.arg("claude-code");
    command
}

fn pre_tool_use(dir: &Path, session: &str, tool: &str, i: usize) -> String {
    json!({
        "session_id": session, "cwd": dir, "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": tool,
        "tool_input": {"command": format!("echo {i}"), "file_path": "README.md"},
        "tool_use_id": format!("toolu_{i}"), "transcript_path": "/tmp/t.jsonl",
    })
    .to_string()
}

fn stop(dir: &Path, session: &str) -> String {
    json!({"session_id": session, "cwd": dir, "hook_event_name": "Stop", "stop_hook_active": false})
        .to_string()
}

/// The project's runs (`cairn runs list --json`).
fn runs(dir: &Path) -> Vec<serde_json::Value> {
    let out = Output::of(command_in(dir).args(["--json", "runs", "list"]));
    out.expect(0);
    out.json().as_array().unwrap().clone()
}

/// The records of the session's run.
fn records(dir: &Path, session: &str) -> u64 {
    runs(dir)
        .iter()
        .find(|r| r["run_id"] == format!("cc-{session}"))
        .map_or(0, |r| r["records"].as_u64().unwrap())
}

fn denied_by(out: &Output, rule: &str) -> bool {
    out.code == 2
        && out.stdout.contains("\"permissionDecision\":\"deny\"")
        && out.stdout.contains(rule)
}

/// A copy of `cairn-hook` with no `cairn` beside it or on its `PATH`.
struct Alone {
    dir: tempfile::TempDir,
}

impl Alone {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            env!("CARGO_BIN_EXE_cairn-hook"),
            dir.path().join("cairn-hook"),
        )
        .unwrap();
        Self { dir }
    }

    /// `cairn-hook claude-code` in the project at `project`.
    fn command(&self, project: &Path) -> Command {
        let mut command = common::program_in(self.dir.path().join("cairn-hook"), project);
        command.arg("claude-code").env("PATH", self.dir.path());
        command
    }
}

#[test]
fn through_the_server_it_answers_as_cairn_hook_does() {
    let dir = project(true);
    let d = dir.path();
    let mut server = common::serve(d, "10m");
    for (i, (tool, allowed)) in [("Read", true), ("Bash", false)].into_iter().enumerate() {
        let thin = run(&mut thin(d), &pre_tool_use(d, "thin", tool, i));
        let full = run(
            command_in(d).args(["hook", "claude-code"]),
            &pre_tool_use(d, "full", tool, i),
        );
        if allowed {
            assert_eq!((thin.code, thin.stdout.as_str()), (0, ""), "{thin:?}");
        } else {
            assert!(denied_by(&thin, "test.no-bash"), "{thin:?}");
        }
        // The same answer but for the session's name in it.
        assert_eq!(thin.code, full.code);
        assert_eq!(thin.stdout.replace("cc-thin", "cc-full"), full.stdout);
    }
    assert_eq!(records(d, "thin"), 2, "one record per call");
    // The server answers: the thin client needs no `cairn` for it.
    let alone = Alone::new();
    let out = run(&mut alone.command(d), &pre_tool_use(d, "thin", "Bash", 2));
    assert!(denied_by(&out, "test.no-bash"), "{out:?}");
    assert_eq!(records(d, "thin"), 3);
    let answered = run(&mut thin(d), &stop(d, "thin"));
    assert_eq!(answered.code, 0, "{answered:?}");
    server.kill().unwrap();
    let _ = server.wait();
    Output::of(command_in(d).args(["ledger", "verify", "--all"])).expect(0);
}

#[test]
fn without_a_server_it_hands_the_call_to_cairn_hook_which_starts_one() {
    // The server turned off: every call goes through `cairn hook` and its worker.
    let dir = project(false);
    let d = dir.path();
    let allowed = run(&mut thin(d), &pre_tool_use(d, "off", "Read", 1));
    assert_eq!(
        (allowed.code, allowed.stdout.as_str()),
        (0, ""),
        "{allowed:?}"
    );
    let refused = run(&mut thin(d), &pre_tool_use(d, "off", "Bash", 2));
    assert!(denied_by(&refused, "test.no-bash"), "{refused:?}");
    assert_eq!(records(d, "off"), 2);
    assert!(!socket(d).exists(), "no server when it is turned off");

    // The default: the first call is answered by `cairn hook`, which starts the server.
    let dir = project(true);
    let d = dir.path();
    let first = run(&mut thin(d), &pre_tool_use(d, "on", "Bash", 1));
    assert!(denied_by(&first, "test.no-bash"), "{first:?}");
    wait_for_socket(d);
    let second = run(&mut thin(d), &pre_tool_use(d, "on", "Read", 2));
    assert_eq!((second.code, second.stdout.as_str()), (0, ""), "{second:?}");
    assert_eq!(records(d, "on"), 2);
    // The server exits once its socket is gone.
    std::fs::remove_file(socket(d)).unwrap();
}

#[test]
fn other_arguments_and_environment_are_left_to_cairn_hook() {
    let dir = project(false);
    let d = dir.path();
    // An option the thin client does not read.
    let out = run(
        thin_in(d).args(["claude-code", "--deadline", "5s"]),
        &pre_tool_use(d, "args", "Bash", 1),
    );
    assert!(denied_by(&out, "test.no-bash"), "{out:?}");
    // The fault switch only `cairn hook` knows: its gate panics, the call is denied.
    let out = run(
        thin_in(d)
            .arg("claude-code")
            .env("CAIRN_FAULT", "gate-panic"),
        &pre_tool_use(d, "fault", "Read", 2),
    );
    assert_eq!(out.code, 2, "{out:?}");
    // Help and usage errors are `cairn hook`'s.
    let help = Output::of(thin_in(d).arg("--help"));
    help.expect(0);
    assert!(help.stdout.contains("Usage: cairn hook"), "{help:?}");
    let bogus = run(thin_in(d).arg("bogus"), "{}");
    assert_eq!(bogus.code, 2, "{bogus:?}");
    assert!(bogus.stderr.contains("bogus"), "{bogus:?}");
}

#[test]
fn a_broken_exchange_or_a_missing_cairn_denies_a_tool_call_only() {
    let dir = project(false);
    let d = dir.path();
    // A "server" that takes the call and hangs up without an answer.
    let listener = UnixListener::bind(socket(d)).unwrap();
    let hang_up = std::thread::spawn(move || {
        for _ in 0..2 {
            let (stream, _) = listener.accept().unwrap();
            drop(stream);
        }
    });
    let out = run(&mut thin(d), &pre_tool_use(d, "broken", "Read", 1));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("Cairn denied this call"), "{out:?}");
    let out = run(&mut thin(d), &stop(d, "broken"));
    assert_eq!(out.code, 0, "a Stop is never blocked: {out:?}");
    hang_up.join().unwrap();
    std::fs::remove_file(socket(d)).unwrap();

    // `cairn-hook` alone, with no `cairn` beside it or on PATH.
    let alone = Alone::new();
    let lonely = |stdin: &str| run(&mut alone.command(d), stdin);
    let out = lonely(&pre_tool_use(d, "alone", "Read", 1));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("hook_cairn_missing"), "{out:?}");
    let out = lonely(&stop(d, "alone"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("hook_cairn_missing"), "{out:?}");
}

/// On Linux with glibc the hook binaries carry their unwinder (`crates/cli/build.rs`): loading
/// `libgcc_s.so.1` cost 0.12–0.14 ms at every hook process's start. A panic still unwinds to
/// the deny (`hook_faults::a_panic_inside_the_gate_denies_and_records_nothing` runs on it).
#[test]
fn the_hook_binaries_do_not_load_the_shared_unwinder() {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        eprintln!("skipped: the unwinder is linked statically on Linux with glibc only");
        return;
    }
    // The build script says what it decided on every Linux-with-glibc build.
    let Some(decided) = option_env!("CAIRN_UNWINDER") else {
        panic!("crates/cli/build.rs said nothing of the unwinder (CAIRN_UNWINDER)");
    };
    if decided != "static" {
        eprintln!("skipped: the build fell back to the shared unwinder ({decided})");
        return;
    }
    for binary in [
        env!("CARGO_BIN_EXE_cairn-hook"),
        env!("CARGO_BIN_EXE_cairn"),
    ] {
        let bytes = std::fs::read(binary).unwrap();
        // A needed library is named, NUL-terminated, in the dynamic string table.
        assert!(
            !bytes.windows(14).any(|w| w == b"libgcc_s.so.1\0"),
            "{binary} needs libgcc_s.so.1"
        );
    }
}

/// The ids of the project's runs.
fn run_ids(dir: &Path) -> Vec<String> {
    runs(dir)
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn copilot_cli_running_claude_codes_hooks_without_their_arguments_is_gated_once() {
    // Copilot CLI runs the Claude Code hooks of `.claude/settings.json` but drops their
    // `args`: `cairn-hook` alone, with Copilot CLI's environment.
    let dir = project(false);
    let d = dir.path();
    let bare = || {
        let mut command = thin_in(d);
        command
            .env("COPILOT_CLI", "1")
            .env("COPILOT_PROJECT_DIR", d);
        command
    };
    let out = run(&mut bare(), &pre_tool_use(d, "cp1", "Bash", 1));
    assert!(
        out.code == 0
            && out.stdout.contains("\"permissionDecision\":\"deny\"")
            && out.stdout.contains("test.no-bash"),
        "{out:?}"
    );
    assert_eq!(
        run_ids(d),
        ["copilot-cp1"],
        "recorded as Copilot CLI's session"
    );
    // Once Copilot CLI's own file holds Cairn's hooks, those answer: this one adds nothing.
    command_in(d)
        .args(["hooks", "install", "--copilot-cli"])
        .status()
        .unwrap();
    let out = run(&mut bare(), &pre_tool_use(d, "cp2", "Bash", 2));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out:?}");
    assert_eq!(run_ids(d), ["copilot-cp1"], "nothing recorded twice");
    // Without Copilot CLI's environment, no arguments is still a usage error that refuses.
    let out = run(&mut thin_in(d), &pre_tool_use(d, "cp3", "Bash", 3));
    assert_eq!(out.code, 2, "{out:?}");
}
