//! `cairn-hook HOST [--project DIR]`: the command `cairn hooks install` writes into the
//! hosts' settings, run by every host for every hook event — a thin client of the
//! project's resident server (`cairn hooks serve`).
//!
//! A host starts one process per hook event, two per tool call, so the start of that process
//! is paid on every call. This binary holds only what a call answered by the resident server
//! needs (reading stdin by the deadline, finding the project, the exchange on the socket),
//! and starts in about half the time of the `cairn` binary, which carries every command, the
//! policy engine and the store. Everything else it hands to `cairn hook` — the one authority
//! on a hook call — with the same arguments and input:
//!
//! - any other arguments than the host and `--project DIR` (`--deadline`, `--store`, `--help`,
//!   …), or an environment that changes how a call is answered (`CAIRN_STORE`, `CAIRN_KEYS`,
//!   `CAIRN_FAULT`, `CAIRN_HOOK_DEADLINE`, `CAIRN_HOOK_RESIDENT`, `CAIRN_LOG`, `CAIRN_SERVER`):
//!   `cairn hook`
//!   replaces this process (exec) before anything is read;
//! - a call whose project has no server answering (the first call of a session, a server
//!   turned off): `cairn hook` is started with the input already read, and its answer and
//!   exit code are passed on (it answers through a worker and starts the server).
//!
//! The answers are `cairn hook`'s: exit 0 or 2 only, and a `PreToolUse` that cannot be
//! decided — a failed exchange, a deadline passed, a panic, a `cairn` binary that cannot be
//! started — is denied with exit 2. `cairn` is looked for beside this binary, then on `PATH`.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use cairn_hooks::Host;
use cairn_hooks::answer::EXIT_BLOCK;
use cairn_hooks::client::{self, StdinFailure};

/// How much longer than its own deadline `cairn hook` is given before it is killed and the
/// call answered as late.
const GRACE: Duration = Duration::from_secs(5);

/// The environment variables that change how `cairn hook` answers a call.
const DEFERRED_ENV: &[&str] = &[
    "CAIRN_STORE",
    "CAIRN_KEYS",
    "CAIRN_FAULT",
    "CAIRN_HOOK_DEADLINE",
    "CAIRN_LOG",
    "CAIRN_SERVER",
];

fn main() -> ExitCode {
    // A panic is answered (deny, exit 2); the default hook would only print it.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty()
        && let Some(project) = std::env::var_os("COPILOT_CLI")
            .and_then(|_| std::env::var_os("COPILOT_PROJECT_DIR"))
            .filter(|dir| !dir.is_empty())
    {
        // Copilot CLI runs Claude Code's hooks of `.claude/settings.json` without their
        // `args`: the call is Copilot CLI's. Where Copilot CLI's own file holds Cairn's hooks
        // they answer it (the same event reaches both): this one answers nothing.
        if cairn_hooks::install::installed(Host::CopilotCli, std::path::Path::new(&project)) {
            return ExitCode::SUCCESS;
        }
        args = vec!["copilot-cli".into(), "--project".into(), project];
    }
    let code = std::panic::catch_unwind(|| run(&args, started)).unwrap_or_else(|_| {
        let _ = writeln!(
            std::io::stderr(),
            "Cairn denied this call: the hook failed internally (error[hook_internal_panic]). Nothing was run."
        );
        EXIT_BLOCK
    });
    ExitCode::from(code)
}

/// A call in the form `hooks install` writes: the host and the project it names, if any.
struct Plain {
    host: Host,
    project: Option<PathBuf>,
}

impl Plain {
    /// `args` as a plain call, or `None` when anything in them or in the environment is for
    /// `cairn hook` to judge.
    fn of(args: &[OsString]) -> Option<Self> {
        if DEFERRED_ENV
            .iter()
            .any(|name| std::env::var_os(name).is_some())
            || std::env::var_os("CAIRN_HOOK_RESIDENT").is_some_and(|v| v == "off")
        {
            return None;
        }
        let (host, rest) = args.split_first()?;
        let host = host.to_str()?.parse().ok()?;
        let project = match rest {
            [] => None,
            [flag, dir] if flag == "--project" => Some(PathBuf::from(dir)),
            [flag] => flag.to_str()?.strip_prefix("--project=").map(PathBuf::from),
            _ => return None,
        };
        Some(Self { host, project })
    }
}

fn run(args: &[OsString], started: Instant) -> u8 {
    let Some(plain) = Plain::of(args) else {
        return hand_over(args, started);
    };
    let host = plain.host;
    let limit = client::DEFAULT_DEADLINE;
    let deadline = started + limit;
    let stdin = match client::read_stdin_by(deadline) {
        Ok(bytes) => bytes,
        Err(StdinFailure::Late) => return client::emit(host, &client::late(true, limit)),
        Err(StdinFailure::Failed(error)) => return client::emit(host, &client::unreadable(&error)),
    };
    let blocks = cairn_hooks::input::blocks_on_failure(&stdin);
    let project = client::binding(plain.host, plain.project).project_of(plain.host, &stdin);
    // A tool call may be held for a person's approval: the deadline grows by the hold.
    let hold = project
        .as_ref()
        .map_or(Duration::ZERO, |p| client::hold_allowance(p, blocks));
    let (limit, deadline) = (limit + hold, deadline + hold);
    #[cfg(unix)]
    if let Some(project) = &project
        && let Some(result) = cairn_hooks::resident::ask(plain.host, &stdin, project, deadline)
    {
        return client::emit(host, &client::resident_answer(result, blocks, limit));
    }
    let _ = project;
    pass_on(host, args, &stdin, blocks, deadline + GRACE)
}

/// The `cairn` binary: beside this one, else on `PATH`.
fn cairn() -> PathBuf {
    std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(format!("cairn{}", std::env::consts::EXE_SUFFIX)))
        .filter(|sibling| sibling.is_file())
        .unwrap_or_else(|| PathBuf::from("cairn"))
}

fn cairn_hook(args: &[OsString]) -> Command {
    let mut command = Command::new(cairn());
    command.arg("hook").args(args);
    command
}

/// Becomes `cairn hook ARGS` before anything is read: it answers with the same input,
/// output and exit code. If it cannot be started, the input is read to tell whether the
/// call must be denied.
fn hand_over(args: &[OsString], started: Instant) -> u8 {
    #[cfg(unix)]
    let error = {
        use std::os::unix::process::CommandExt as _;
        cairn_hook(args).exec()
    };
    #[cfg(not(unix))]
    let error = match cairn_hook(args).status() {
        Ok(status) => return status.code().map_or(EXIT_BLOCK, |code| exit_of(code, true)),
        Err(error) => error,
    };
    let blocks = client::read_stdin_by(started + client::DEFAULT_DEADLINE)
        .map_or(true, |stdin| cairn_hooks::input::blocks_on_failure(&stdin));
    client::emit(host_named(args), &cannot_start(blocks, &error))
}

/// The host `args` name first (a host that reads stdout as JSON gets JSON either way: see
/// `Answer::for_host`), else Gemini CLI's form, which every host reads as "no decision".
fn host_named(args: &[OsString]) -> Host {
    args.first()
        .and_then(|host| host.to_str()?.parse().ok())
        .unwrap_or(Host::GeminiCli)
}

/// Runs `cairn hook ARGS` on the input already read, with this process's output, and
/// returns its exit code; kills it once `deadline` has passed.
fn pass_on(host: Host, args: &[OsString], stdin: &[u8], blocks: bool, deadline: Instant) -> u8 {
    let mut child = match cairn_hook(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return client::emit(host, &cannot_start(blocks, &error)),
    };
    // Written whole before waiting: the input is at most a few MiB and `cairn hook` reads
    // all of it first (a pipe it never reads fails the write, which it then answers).
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin);
    }
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return status
                    .code()
                    .map_or_else(|| failure(blocks), |code| exit_of(code, blocks));
            }
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(500));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return client::emit(host, &client::late(blocks, client::DEFAULT_DEADLINE));
            }
        }
    }
}

/// `cairn hook`'s exit code, which is 0 or 2; anything else is answered as its failure.
fn exit_of(code: i32, blocks: bool) -> u8 {
    match u8::try_from(code) {
        Ok(0) => 0,
        Ok(EXIT_BLOCK) => EXIT_BLOCK,
        _ => failure(blocks),
    }
}

/// The exit code of a call `cairn hook` failed to answer: denied when it `blocks`.
fn failure(blocks: bool) -> u8 {
    if blocks { EXIT_BLOCK } else { 0 }
}

fn cannot_start(blocks: bool, error: &std::io::Error) -> cairn_hooks::Answer {
    client::failed(
        blocks,
        &format!(
            "cannot start `{}`: {error} (install both `cairn` and `cairn-hook`)",
            cairn().display()
        ),
        "hook_cairn_missing",
    )
}
