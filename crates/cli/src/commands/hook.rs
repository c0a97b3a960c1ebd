//! `cairn hook claude-code|codex`: answers one hook call of the host. The host runs it for
//! every event it is installed for (`cairn hooks install`), with the event's JSON on stdin.
//!
//! The answer has the host's own contract, not the CLI's (SPEC §9.2): exit 0 with a JSON
//! object or nothing on stdout; exit 2 with the reason on stderr to block a `PreToolUse` that
//! could not be decided. No other exit code is used: the hosts let a call through on any
//! other, and on their own timeout. So `main` hands this command its stdin and lets it write
//! its own output, bypassing the CLI's output and exit-code mapping.
//!
//! # A supervisor and a worker
//!
//! The process the host starts only *supervises*: it reads stdin, and either hands the call
//! to the project's resident server (`cairn hooks serve`, see `cairn_hooks::resident`) or
//! starts `cairn hook HOST --worker`, a second process of the same binary that decides the
//! call and prints its answer as JSON. The supervisor does nothing that can be slow or
//! crash, so:
//!
//! - **the deadline** (`--deadline`, `CAIRN_HOOK_DEADLINE`, 10 s by default) holds whatever
//!   happens inside — a slow policy load, a store locked by another process, a stuck socket,
//!   a hook input the host never finishes sending: when it passes, the worker is killed and
//!   the call is denied (exit 2);
//! - **no exit status but 0 and 2** is ever seen by the host: a worker that panics, aborts,
//!   overflows its stack, is killed or exits with any other status is answered as a
//!   failure — a `PreToolUse` (or an event that cannot be told) is denied with exit 2, every
//!   other event answers exit 0 with a note.
//!
//! The worker answers as before: a process with `--store`, `--keys`, `CAIRN_FAULT` or
//! `CAIRN_HOOK_RESIDENT=off` never uses a resident server. `CAIRN_FAULT` (`gate-panic`,
//! `gate-abort`, `gate-overflow`, `gate-exit`, `gate-hang`; see `cairn_hooks::gate`) makes the
//! worker's gate fail: it can only turn a decision into a deny.
//!
//! # The project
//!
//! `--project DIR` (which `cairn hooks install` writes) names the project; without it Claude
//! Code's `CLAUDE_PROJECT_DIR`, then the project the session is bound to (the session index
//! under `CAIRN_HOME`, by default `~/.local/state/cairn`), then the payload's `cwd` find it
//! (see `cairn_hooks::project::Binding`).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cairn_core::SystemClock;
use cairn_hooks::client::{self, StdinFailure, emit, failed, late, left, read_stdin_by};
use cairn_hooks::project::Binding;
use cairn_hooks::{Answer, Environment, Fault, Host};

use crate::args::{HookArgs, HookHost};
use crate::context::{Context, StoreLocation};
use crate::output::Outcome;

/// The longest deadline accepted: well under the 60 s hook timeout `hooks install` writes.
const MAX_DEADLINE: Duration = Duration::from_secs(50);
/// The shortest deadline accepted.
const MIN_DEADLINE: Duration = Duration::from_millis(100);
/// The longest answer read from a worker.
const WORKER_ANSWER_MAX_BYTES: u64 = 8 << 20;

/// Runs `cairn hook HOST` and returns its exit code.
pub fn run(ctx: &Context, args: &HookArgs) -> ExitCode {
    ExitCode::from(answer_fail_closed(ctx, args))
}

/// The same, for the generic dispatcher (`main` calls [`run`] before it gets there).
pub fn run_as_outcome(ctx: &Context, args: &HookArgs) -> Outcome {
    Outcome {
        json: serde_json::Value::Null,
        human: String::new(),
        exit: answer_fail_closed(ctx, args),
        silent: true,
    }
}

/// The supervisor or the worker, with a last line of defence: a panic anywhere here (which
/// would exit 101 and let the call through) exits 2.
fn answer_fail_closed(ctx: &Context, args: &HookArgs) -> u8 {
    // A panic is caught and answered (deny, exit 2); the default panic hook would only print
    // it a second time.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if args.worker {
            work(ctx, args)
        } else {
            supervise(ctx, args, started)
        }
    }))
    .unwrap_or_else(|_| {
        let _ = writeln!(
            std::io::stderr(),
            "Cairn denied this call: the hook failed internally (error[hook_internal_panic]). Nothing was run."
        );
        cairn_hooks::answer::EXIT_BLOCK
    })
}

fn host_of(args: &HookArgs) -> Host {
    match args.host {
        HookHost::ClaudeCode => Host::ClaudeCode,
        HookHost::Codex => Host::Codex,
        HookHost::GeminiCli => Host::GeminiCli,
        HookHost::CopilotCli => Host::CopilotCli,
        HookHost::Cursor => Host::Cursor,
        HookHost::Opencode => Host::OpenCode,
    }
}

/// The deadline `--deadline` sets, clamped to what the installed hook timeout leaves.
fn deadline_of(args: &HookArgs) -> Result<Duration, String> {
    let duration = crate::input::parse_duration("--deadline", &args.deadline)
        .map_err(|failure| failure.message)?;
    let duration = Duration::try_from(duration).map_err(|e| format!("`--deadline`: {e}"))?;
    Ok(duration.clamp(MIN_DEADLINE, MAX_DEADLINE))
}

/// How this call's project is found (see [`cairn_hooks::client::binding`]).
fn binding(args: &HookArgs) -> Binding {
    cairn_hooks::client::binding(host_of(args), args.project.clone())
}

/// The test-only fault `CAIRN_FAULT` names: the library's, or one that ends the process,
/// which only a binary may do.
fn fault() -> Option<Fault> {
    match std::env::var("CAIRN_FAULT").ok()?.as_str() {
        "gate-abort" => Some(Fault::GateEndsProcess(|| std::process::abort())),
        "gate-exit" => Some(Fault::GateEndsProcess(|| std::process::exit(1))),
        other => Fault::parse(other),
    }
}

/// The supervising process: stdin, then the resident server or a worker, all by the
/// deadline; every failure is answered as a failure of the event (see the module docs).
fn supervise(ctx: &Context, args: &HookArgs, started: Instant) -> u8 {
    let host = host_of(args);
    let emit = |answer: &Answer| emit(host, answer);
    let limit = match deadline_of(args) {
        Ok(limit) => limit,
        Err(message) => {
            return emit(&Answer::fail_closed(format!(
                "Cairn denied this call: its hook command is invalid (error[invalid_input]: {message}). Nothing was run."
            )));
        }
    };
    let deadline = started + limit;
    let stdin = match read_stdin_by(deadline) {
        Ok(bytes) => bytes,
        Err(StdinFailure::Late) => return emit(&late(true, limit)),
        Err(StdinFailure::Failed(error)) => return emit(&client::unreadable(&error)),
    };
    let blocks = cairn_hooks::input::blocks_on_failure(&stdin);
    // With a service named, the call is the service's to answer: nothing is decided here.
    if let Some(server) = std::env::var_os("CAIRN_SERVER") {
        return emit(&through_service(
            host, &stdin, &server, deadline, blocks, limit,
        ));
    }
    // The project is found once, here: the resident server is asked for it and the worker is
    // told it, so that both answer for the same project.
    let project = binding(args).project_of(host, &stdin);
    // A tool call may be held for a person's approval: the deadline grows by the hold.
    let hold = project
        .as_ref()
        .map_or(Duration::ZERO, |p| client::hold_allowance(p, blocks));
    let (limit, deadline) = (limit + hold, deadline + hold);
    #[cfg(unix)]
    let resident = ctx.explicit_store.is_none()
        && ctx.explicit_keys.is_none()
        && fault().is_none()
        && std::env::var("CAIRN_HOOK_RESIDENT").map_or(true, |v| v != "off");
    #[cfg(unix)]
    if resident
        && let Some(project) = &project
        && let Some(result) = cairn_hooks::resident::ask(host, &stdin, project, deadline)
    {
        return emit(&client::resident_answer(result, blocks, limit));
    }
    let named = project
        .as_ref()
        .map(cairn_hooks::project::Project::root)
        .or(args.project.as_deref());
    let answer = match worker(ctx, args, named, &stdin, deadline) {
        Ok(answer) => client::vet(answer, blocks, "the hook worker"),
        Err(WorkerFailure::Late) => late(blocks, limit),
        Err(WorkerFailure::Failed(reason)) => failed(blocks, &reason, "hook_worker_failed"),
    };
    #[cfg(unix)]
    if resident && let Some(project) = &project {
        start_server_if_configured(project);
    }
    emit(&answer)
}

/// The service's answer to the call (`CAIRN_SERVER`, `CAIRN_TOKEN`), or the failure of the
/// exchange answered as the event's failure: a `PreToolUse` the service does not answer in
/// time, or at all, is denied.
fn through_service(
    host: Host,
    stdin: &[u8],
    server: &std::ffi::OsStr,
    deadline: Instant,
    blocks: bool,
    limit: Duration,
) -> Answer {
    use cairn_server::client::{ClientError, Endpoint, send_blocking};
    let Some(endpoint) = server.to_str().and_then(|s| s.parse::<Endpoint>().ok()) else {
        return failed(
            blocks,
            &format!(
                "CAIRN_SERVER `{}` is not `unix:/path/to/cairn.sock` or `http://host:port`",
                server.to_string_lossy()
            ),
            "service_endpoint_invalid",
        );
    };
    let Some(token) = std::env::var("CAIRN_TOKEN").ok().filter(|t| !t.is_empty()) else {
        return failed(
            blocks,
            "CAIRN_SERVER is set but CAIRN_TOKEN is not: the service answers agents with a token only",
            "service_token_missing",
        );
    };
    let path = format!("/v1/hooks/{}", host.as_str());
    let sent = send_blocking(
        &endpoint,
        "POST",
        &path,
        Some(&token),
        Some(stdin.to_vec()),
        left(deadline),
    );
    let answer = match sent {
        Ok(answer) => answer,
        Err(ClientError::Timeout(_)) => return late(blocks, limit),
        Err(error) => {
            return failed(
                blocks,
                &error.to_string(),
                cairn_core::ErrorCode::code(&error),
            );
        }
    };
    if answer.status != 200 {
        let code = answer
            .error("code")
            .unwrap_or_else(|| "service_error".to_owned());
        let message = answer
            .error("message")
            .unwrap_or_else(|| "no message".to_owned());
        return failed(
            blocks,
            &format!(
                "the service at {endpoint} answered {}: {message}",
                answer.status
            ),
            &code,
        );
    }
    match serde_json::from_slice::<Answer>(&answer.body) {
        // INVARIANT: the host sees exit 0 only for an allow of a call, 2 for a denial.
        Ok(answer) => client::vet(answer, blocks, &format!("the service at {endpoint}")),
        Err(e) => failed(
            blocks,
            &format!("the service's answer is unreadable: {e}"),
            client::ANSWER_INVALID,
        ),
    }
}

/// Why the worker gave no answer.
enum WorkerFailure {
    Late,
    Failed(String),
}

/// Runs `cairn hook HOST --worker` on `stdin` and reads its answer by `deadline`; kills it
/// when the deadline passes.
fn worker(
    ctx: &Context,
    args: &HookArgs,
    project: Option<&Path>,
    stdin: &[u8],
    deadline: Instant,
) -> Result<Answer, WorkerFailure> {
    let program = std::env::current_exe()
        .map_err(|e| WorkerFailure::Failed(format!("cannot find the cairn binary: {e}")))?;
    let mut command = std::process::Command::new(program);
    command.arg("hook").arg(args.host.as_str()).arg("--worker");
    if let Some(project) = project {
        command.arg("--project").arg(project);
    }
    // Through the environment, not the command line: a database URL may hold a password,
    // and another user can read a process's arguments.
    command.env_remove("CAIRN_STORE");
    if let Some(store) = &ctx.explicit_store {
        command.env("CAIRN_STORE", store);
    }
    if let Some(keys) = &ctx.explicit_keys {
        command.arg("--keys").arg(keys);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| WorkerFailure::Failed(format!("cannot start the hook worker: {e}")))?;
    let (input, output) = (child.stdin.take(), child.stdout.take());
    let payload = stdin.to_vec();
    let _ = std::thread::Builder::new()
        .name("cairn-hook-feed".to_owned())
        .spawn(move || {
            if let Some(mut input) = input {
                let _ = input.write_all(&payload);
            }
        });
    let (send, receive) = mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("cairn-hook-answer".to_owned())
        .spawn(move || {
            let mut answer = Vec::new();
            if let Some(output) = output {
                let _ = output
                    .take(WORKER_ANSWER_MAX_BYTES)
                    .read_to_end(&mut answer);
            }
            let _ = send.send(answer);
        });
    let outcome = receive
        .recv_timeout(left(deadline))
        .map_err(|_| WorkerFailure::Late)
        .and_then(|answer| wait_by(&mut child, deadline).map(|status| (answer, status)));
    let (answer, status) = match outcome {
        Ok(done) => done,
        Err(failure) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failure);
        }
    };
    if !status.success() {
        return Err(WorkerFailure::Failed(format!(
            "the hook worker ended with {status}"
        )));
    }
    let answer: Answer = serde_json::from_slice(&answer).map_err(|e| {
        WorkerFailure::Failed(format!("the hook worker's answer is unreadable: {e}"))
    })?;
    Ok(answer)
}

/// The worker's exit status, once it has closed its stdout; `Late` if it outlives the
/// deadline.
fn wait_by(
    child: &mut std::process::Child,
    deadline: Instant,
) -> Result<std::process::ExitStatus, WorkerFailure> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_micros(200)),
            Ok(None) => return Err(WorkerFailure::Late),
            Err(e) => {
                return Err(WorkerFailure::Failed(format!(
                    "waiting for the hook worker: {e}"
                )));
            }
        }
    }
}

/// The worker process: decides the call on a thread with the stack the policy limits are
/// sized for, and prints the answer as JSON (exit 0). It is never the process the host
/// reads: its supervisor turns anything else it does into the event's failure answer.
fn work(ctx: &Context, args: &HookArgs) -> u8 {
    let host = host_of(args);
    let environment = Environment {
        clock: Arc::new(SystemClock),
        stores: Arc::new(crate::store::HookStores::ShortLived),
        // An empty `--store` names no store: opening it fails, and the call is denied for it.
        store: ctx.explicit_store.as_deref().map(|text| {
            StoreLocation::parse(text).unwrap_or_else(|| StoreLocation::File(PathBuf::new()))
        }),
        keys_dir: ctx.explicit_keys.clone(),
        fault: fault(),
        gates: Arc::default(),
        binding: binding(args),
        namespace: None,
        gate: None,
    };
    let decided = std::thread::Builder::new()
        .name("cairn-hook".to_owned())
        .stack_size(cairn_policy::limits::STACK_BYTES)
        .spawn(
            move || match cairn_hooks::input::read_limited(std::io::stdin().lock()) {
                Ok(bytes) => cairn_hooks::handle(host, &bytes, &environment),
                Err(error) => client::unreadable(&error),
            },
        )
        .ok()
        .and_then(|thread| thread.join().ok());
    let Some(answer) = decided else {
        return 1;
    };
    let Ok(json) = serde_json::to_vec(&answer) else {
        return 1;
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(&json).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Starts `cairn hooks serve` for the call's project, in the background and detached from
/// this process (its own process group, no inherited stdio, so the host waits for nothing),
/// when the project's `.cairn/hooks.json` asks for it and no server answers. The server keeps
/// no descriptor this process inherited from the host (a lock file, a pipe): every one from 3
/// up is marked close-on-exec first, or a build lock the host holds would stay held for the
/// server's idle life (issue 34, 4); it runs from `/`. Best effort: the call has been
/// answered already, and a server that cannot start only means the next call is answered by
/// its own process too.
#[cfg(unix)]
fn start_server_if_configured(project: &cairn_hooks::project::Project) {
    use std::os::unix::process::CommandExt as _;
    let wanted = cairn_hooks::config::HookConfig::load(project).is_ok_and(|c| c.resident_server);
    if !wanted || cairn_hooks::resident::is_serving(project) {
        return;
    }
    let (Ok(program), Ok(root)) = (std::env::current_exe(), std::path::absolute(project.root()))
    else {
        return;
    };
    close_fds::CloseFdsBuilder::new().cloexecfrom(3);
    let _ = std::process::Command::new(program)
        .args(["hooks", "serve", "--dir"])
        .arg(root)
        // Nor the host's working directory: a daemon holds no folder it does not need.
        .current_dir("/")
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
}
