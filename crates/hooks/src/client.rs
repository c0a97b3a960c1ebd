//! The client side of a hook call, shared by the two commands a host can run for it: `cairn
//! hook HOST` (the supervisor, which can also answer through a worker process) and
//! `cairn-hook HOST` (the thin client `hooks install` writes, which only asks the resident
//! server and hands everything else to `cairn hook`).
//!
//! Both read the host's input by their deadline ([`read_stdin_by`]), find the call's project
//! ([`binding`]), and write their answer in the host's format with exit 0 or 2 only ([`emit`]).
//! Every failure here is answered as a failure of the event ([`late`], [`failed`]): a
//! `PreToolUse` (or an input whose event cannot be told) is denied with exit 2, every other
//! event answers exit 0 with a note.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cairn_core::ErrorCode as _;

use crate::answer::{Answer, EXIT_BLOCK};
use crate::error::HookError;
use crate::host::Host;
use crate::project::Binding;

/// The deadline of a call when neither `--deadline` nor `CAIRN_HOOK_DEADLINE` sets one.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// How much longer than its deadline a tool call (`blocks`) of `project` may take: the hold
/// its hook configuration sets for calls waiting for a person's approval
/// (`approvals.while_waiting: "hold"`), zero otherwise — and zero when the configuration
/// does not read (the call then fails on it, within the plain deadline).
#[must_use]
pub fn hold_allowance(project: &crate::project::Project, blocks: bool) -> Duration {
    if !blocks {
        return Duration::ZERO;
    }
    crate::config::HookConfig::load(project).map_or(Duration::ZERO, |c| c.approvals.hold())
}

/// Why stdin could not be read.
#[derive(Debug)]
pub enum StdinFailure {
    /// The deadline passed first.
    Late,
    /// Anything else, said.
    Failed(HookError),
}

/// Reads stdin (at most [`crate::input::MAX_INPUT_BYTES`]) by `deadline`: each read first
/// waits (poll(2)) only for the time left, so that a host that never closes stdin cannot
/// hold the answer past the deadline.
///
/// # Errors
/// [`StdinFailure::Late`] once the deadline passed; [`StdinFailure::Failed`] for an input
/// that cannot be read or is too large.
#[cfg(unix)]
pub fn read_stdin_by(deadline: Instant) -> Result<Vec<u8>, StdinFailure> {
    let mut late = false;
    let read = crate::input::read_limited(StdinBy {
        deadline,
        late: &mut late,
    });
    match read {
        Ok(bytes) => Ok(bytes),
        Err(_) if late => Err(StdinFailure::Late),
        Err(error) => Err(StdinFailure::Failed(error)),
    }
}

/// Stdin, unbuffered, read by a deadline (noting in `late` that it passed).
#[cfg(unix)]
struct StdinBy<'a> {
    deadline: Instant,
    late: &'a mut bool,
}

#[cfg(unix)]
impl std::io::Read for StdinBy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdin = std::io::stdin();
        loop {
            let left = left(self.deadline);
            if left.is_zero() {
                *self.late = true;
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            let timeout = Timespec::try_from(left).map_err(std::io::Error::other)?;
            let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => {}
                // Readable, at its end, or broken: the read says which.
                Ok(_) => break,
                Err(error) => return Err(error.into()),
            }
        }
        Ok(rustix::io::read(&stdin, buf)?)
    }
}

/// Reads stdin on a thread of its own, so that a host that never closes it cannot hold the
/// answer past the deadline.
///
/// # Errors
/// As the Unix version.
#[cfg(not(unix))]
pub fn read_stdin_by(deadline: Instant) -> Result<Vec<u8>, StdinFailure> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("cairn-hook-stdin".to_owned())
        .spawn(move || {
            let _ = send.send(crate::input::read_limited(std::io::stdin().lock()));
        })
        .map_err(|e| StdinFailure::Failed(HookError::InputUnreadable(e.to_string())))?;
    match receive.recv_timeout(left(deadline)) {
        Ok(read) => read.map_err(StdinFailure::Failed),
        Err(_) => Err(StdinFailure::Late),
    }
}

/// The time left until `deadline` (zero once it has passed).
#[must_use]
pub fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// The answer to an input that could not be read (`error`).
#[must_use]
pub fn unreadable(error: &HookError) -> Answer {
    Answer::fail_closed(format!(
        "Cairn denied this call: its hook input could not be read (error[{}]: {error}). Nothing was run or recorded.",
        error.code()
    ))
}

/// The answer when the deadline (`limit` long) passed before a decision.
#[must_use]
pub fn late(blocks: bool, limit: Duration) -> Answer {
    let line = format!(
        "error[hook_deadline]: no decision within the {:.1} s deadline (`--deadline`, `CAIRN_HOOK_DEADLINE`)",
        limit.as_secs_f64()
    );
    if blocks {
        Answer::fail_closed(format!(
            "Cairn denied this call: it could not be decided in time ({line}). Nothing was run. A store locked by another process, a very large policy set or a stuck resident server can cause this; `cairn ledger verify --all` and `cairn policy check` help find which."
        ))
    } else {
        Answer::note(format!("cairn: {line}"))
    }
}

/// The answer when the call could not be decided for `reason` (`code`).
#[must_use]
pub fn failed(blocks: bool, reason: &str, code: &str) -> Answer {
    let line = format!("error[{code}]: {reason}");
    if blocks {
        Answer::fail_closed(format!(
            "Cairn denied this call because it could not decide it safely ({line}). It may have been recorded; nothing was run."
        ))
    } else {
        Answer::note(format!("cairn: {line}"))
    }
}

/// The answer to a call the resident server was asked: its own (vetted, see [`vet`]), or the
/// failure of the exchange (`blocks`: whether the call must be denied when it cannot be
/// decided; `limit`: the deadline's length).
#[must_use]
pub fn resident_answer(result: Result<Answer, HookError>, blocks: bool, limit: Duration) -> Answer {
    match result {
        Ok(answer) => vet(answer, blocks, "the resident hook server"),
        Err(HookError::ResidentLate { .. }) => late(blocks, limit),
        Err(error) => failed(blocks, &error.to_string(), error.code()),
    }
}

/// The stable code of an answer from another process that is not one Cairn gives.
pub const ANSWER_INVALID: &str = "hook_answer_invalid";

/// `answer`, received `from` another process (the resident server, a hook worker, the
/// service), if it is one Cairn could have given for the event; else the event's failure
/// answer (issue 34, 10). Exit 0 passes only a well-formed allow: for an event that `blocks`
/// (a `PreToolUse`), nothing on stdout or Cairn's explicit allow, and never an answer that
/// says it denies; for every other event, nothing or a JSON object on stdout, and never exit
/// 2 (which would keep a `Stop` from stopping). Anything else is denied when it `blocks`,
/// and answered exit 0 with a note otherwise.
#[must_use]
pub fn vet(answer: Answer, blocks: bool, from: &str) -> Answer {
    match inconsistency(&answer, blocks) {
        None => answer,
        Some(reason) => failed(
            blocks,
            &format!("{from} gave an answer Cairn never gives: {reason}"),
            ANSWER_INVALID,
        ),
    }
}

/// What is wrong with `answer` for an event that `blocks` (or not), if anything.
fn inconsistency(answer: &Answer, blocks: bool) -> Option<String> {
    match (answer.exit, blocks) {
        (EXIT_BLOCK, true) => return None,
        (EXIT_BLOCK, false) => return Some("exit 2 for an event that is never blocked".into()),
        (0, _) if answer.denies => return Some("it denies the call with exit 0".into()),
        (0, _) => {}
        (other, _) => return Some(format!("exit {other}")),
    }
    let stdout = answer.stdout.as_deref()?;
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(stdout) else {
        return Some("its stdout is not a JSON object".into());
    };
    // `{}` is "no decision" to every host.
    if !blocks || object.is_empty() {
        return None;
    }
    let explicit_allow = object.len() == 1
        && object
            .get("hookSpecificOutput")
            .and_then(serde_json::Value::as_object)
            .is_some_and(|output| {
                output
                    .get("permissionDecision")
                    .and_then(serde_json::Value::as_str)
                    == Some("allow")
                    && output.keys().all(|key| {
                        [
                            "hookEventName",
                            "permissionDecision",
                            "permissionDecisionReason",
                        ]
                        .contains(&key.as_str())
                    })
            });
    (!explicit_allow).then(|| "its stdout is not an allow".into())
}

/// How a call's project is found: `project` (the hook command's `--project`), else (Claude
/// Code) `CLAUDE_PROJECT_DIR` or (Copilot CLI) `COPILOT_PROJECT_DIR`, else the session index,
/// else the payload's `cwd`.
#[must_use]
pub fn binding(host: Host, project: Option<PathBuf>) -> Binding {
    let explicit = project.or_else(|| match host {
        Host::ClaudeCode => std::env::var_os("CLAUDE_PROJECT_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from),
        Host::CopilotCli => std::env::var_os("COPILOT_PROJECT_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from),
        Host::Codex | Host::GeminiCli | Host::Cursor | Host::OpenCode => None,
    });
    Binding {
        fixed: None,
        explicit,
        index: session_index(),
        home: None,
    }
}

/// The session index folder: `sessions/` in the Cairn home
/// (`cairn_runtime::layout::cairn_home`).
#[must_use]
pub fn session_index() -> Option<PathBuf> {
    Some(cairn_runtime::layout::cairn_home()?.join("sessions"))
}

/// Writes `answer` for the host and returns the exit code: 0 or 2 only. A refusal whose
/// JSON cannot be written exits 2 instead, so that it still blocks.
#[must_use]
pub fn emit(host: Host, answer: &Answer) -> u8 {
    let answer = &answer.for_host(host);
    let mut exit = answer.exit;
    if let Some(text) = &answer.stdout {
        let mut out = std::io::stdout().lock();
        let written = writeln!(out, "{text}").and_then(|()| out.flush());
        if written.is_err() && answer.denies {
            exit = EXIT_BLOCK;
        }
    } else if answer.denies {
        // A refusal with nothing on stdout blocks only by its exit code.
        exit = EXIT_BLOCK;
    }
    if let Some(text) = &answer.stderr {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
    // INVARIANT: the host sees exit 0 or 2 only.
    if exit == 0 || exit == EXIT_BLOCK {
        exit
    } else {
        EXIT_BLOCK
    }
}
