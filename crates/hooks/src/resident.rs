//! The resident hook server: one long-lived process per project that answers hook calls
//! for the short-lived `cairn hook` processes the hosts start, so that the work a fresh
//! process would repeat on every tool call — Cedar parsing and validating the policy set,
//! SQLite opening the store and reading its schema — is done once.
//!
//! `cairn hooks serve` runs [`serve`]: it listens on `.cairn/hookd.sock` (mode 0600) and
//! answers one call at a time through the very same [`crate::handle`], with an environment
//! that keeps the store open and the policy gate cached by the digest of the policy files
//! (which are still read on every call, so an edit takes effect on the next one). It exits
//! after an idle period, or when its socket disappears.
//!
//! `cairn hook HOST` first calls [`ask`]: when the payload's project has a socket that
//! accepts the connection, the call is sent there and its answer printed; otherwise (no
//! server, a stale socket, a refused connection) the process answers by itself as before.
//! Once the call has been sent, the client never falls back — the server may already have
//! recorded it — so a failure from then on is answered as any internal failure is: a
//! `PreToolUse` is denied with exit 2, every other event answers exit 0 with a note.
//!
//! The protocol: the client writes one JSON line `{"version": 1, "host": "claude-code"}`, then
//! the hook's stdin bytes, and shuts its side down; the server answers with the [`Answer`]
//! as one JSON object (`{"stdout", "stderr", "exit", "denies"}`) and closes.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::answer::Answer;
use crate::engine::Environment;
use crate::error::HookError;
use crate::host::Host;
use crate::project::Project;

/// The server's socket inside `.cairn/`.
pub const SOCKET_FILE: &str = "hookd.sock";
/// How long a client waits for its answer, and a server for a client's request.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);
/// The protocol version.
const VERSION: u32 = 1;
/// The longest request header line.
const HEADER_MAX_BYTES: u64 = 1024;
/// The longest answer a client reads.
const ANSWER_MAX_BYTES: u64 = 4 << 20;

/// The first line of a request.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    version: u32,
    host: String,
}

/// What the client needs of the payload to find the server and to answer a failure.
#[derive(Deserialize)]
struct Peek {
    cwd: Option<String>,
    hook_event_name: Option<String>,
    tool_name: Option<serde::de::IgnoredAny>,
    tool_input: Option<serde::de::IgnoredAny>,
    tool_response: Option<serde::de::IgnoredAny>,
}

impl Peek {
    fn read(stdin: &[u8]) -> Option<(Self, Project)> {
        let peek: Self = serde_json::from_slice(stdin).ok()?;
        let project = Project::find(Path::new(peek.cwd.as_deref()?))?;
        Some((peek, project))
    }

    /// Whether a failure must block the call, as the engine decides: a `PreToolUse`, an
    /// event it does not know that carries a tool call about to run, or no event name.
    fn blocks_on_failure(&self) -> bool {
        match self.hook_event_name.as_deref() {
            Some("PreToolUse") | None => true,
            Some(name) if crate::input::is_known_event(name) => false,
            Some(_) => {
                self.tool_name.is_some()
                    && self.tool_input.is_some()
                    && self.tool_response.is_none()
            }
        }
    }
}

/// The socket of `project`'s resident server.
#[must_use]
pub fn socket_path(project: &Project) -> PathBuf {
    project.dir().join(SOCKET_FILE)
}

/// Sends the hook call `stdin` of `host` to the resident server of its project and returns
/// the server's answer; `None` when no server takes the call (the caller then answers it by
/// itself). Never panics.
#[must_use]
pub fn ask(host: Host, stdin: &[u8]) -> Option<Answer> {
    let (peek, project) = Peek::read(stdin)?;
    let socket = socket_path(&project);
    let stream = UnixStream::connect(&socket).ok()?;
    // From here on the server may act on the call: no fallback.
    Some(exchange(stream, host, stdin).unwrap_or_else(|reason| {
        let error = HookError::Resident { socket, reason };
        let line = format!("{error} (error[{}])", cairn_core::ErrorCode::code(&error));
        if peek.blocks_on_failure() {
            Answer::fail_closed(format!(
                "Cairn denied this call because it could not decide it safely ({line}). It may have been recorded; nothing was run."
            ))
        } else {
            Answer::note(format!("cairn: {line}"))
        }
    }))
}

/// The project of the hook call `stdin` (the nearest `.cairn/` at or above its `cwd`), if
/// the call can be read that far.
#[must_use]
pub fn project_of(stdin: &[u8]) -> Option<Project> {
    Peek::read(stdin).map(|(_, project)| project)
}

/// Whether a server answers at `project`'s socket.
#[must_use]
pub fn is_serving(project: &Project) -> bool {
    UnixStream::connect(socket_path(project)).is_ok()
}

fn exchange(mut stream: UnixStream, host: Host, stdin: &[u8]) -> Result<Answer, String> {
    let io = |e: std::io::Error| e.to_string();
    stream
        .set_read_timeout(Some(EXCHANGE_TIMEOUT))
        .map_err(io)?;
    stream
        .set_write_timeout(Some(EXCHANGE_TIMEOUT))
        .map_err(io)?;
    let header = Request {
        version: VERSION,
        host: host.as_str().to_owned(),
    };
    let mut request = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
    request.push(b'\n');
    request.extend_from_slice(stdin);
    stream.write_all(&request).map_err(io)?;
    stream.shutdown(std::net::Shutdown::Write).map_err(io)?;
    let mut reply = Vec::new();
    stream
        .take(ANSWER_MAX_BYTES)
        .read_to_end(&mut reply)
        .map_err(|e| format!("no answer: {e}"))?;
    serde_json::from_slice(&reply).map_err(|e| format!("unreadable answer: {e}"))
}

/// Serves `project`'s hook calls with `env` until no call has come for `idle`, or the
/// socket is removed. Returns only on failure to start.
///
/// # Errors
/// [`HookError::Resident`] when another server already answers at the socket or the socket
/// cannot be created.
pub fn serve(project: &Project, env: Environment, idle: Duration) -> Result<(), HookError> {
    let socket = socket_path(project);
    let failed = |reason: String| HookError::Resident {
        socket: socket.clone(),
        reason,
    };
    if UnixStream::connect(&socket).is_ok() {
        return Err(failed("another server already answers there".to_owned()));
    }
    // A socket no server answers at is left over from one that was killed.
    if socket.exists() {
        std::fs::remove_file(&socket).map_err(|e| failed(e.to_string()))?;
    }
    // Bound under a private name, made owner-only, then linked into place — a link, unlike a
    // rename, never replaces the socket of a server that started at the same moment: no
    // client ever reaches a socket others could use, and only one server wins.
    let staging = project
        .dir()
        .join(format!("{SOCKET_FILE}.{}", std::process::id()));
    let _ = std::fs::remove_file(&staging);
    let listener = UnixListener::bind(&staging).map_err(|e| failed(e.to_string()))?;
    let placed = std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::hard_link(&staging, &socket));
    let _ = std::fs::remove_file(&staging);
    match placed {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(failed("another server already answers there".to_owned()));
        }
        Err(e) => return Err(failed(e.to_string())),
    }
    let ours = identity(&socket).ok_or_else(|| failed("the socket vanished".to_owned()))?;
    let activity = Arc::new(Mutex::new(Instant::now()));
    watch(socket.clone(), ours, Arc::clone(&activity), idle);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let mut last = activity.lock().unwrap_or_else(PoisonError::into_inner);
        answer_one(stream, &env);
        *last = Instant::now();
    }
    Ok(())
}

/// The file behind `path` (device and inode), to tell this server's socket from one a later
/// server put at the same path.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// Ends the process when no call has come for `idle`, or when `socket` is no longer the one
/// this server made (removed, or replaced by another server's); waits for the call being
/// answered, if any (it holds `activity`). Only its own socket is ever removed.
fn watch(socket: PathBuf, ours: (u64, u64), activity: Arc<Mutex<Instant>>, idle: Duration) {
    let tick = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(tick);
            let last = activity.lock().unwrap_or_else(PoisonError::into_inner);
            if identity(&socket) != Some(ours) {
                std::process::exit(0);
            }
            if last.elapsed() >= idle {
                let _ = std::fs::remove_file(&socket);
                std::process::exit(0);
            }
        }
    });
}

/// Reads one request, answers it with [`crate::handle`] and writes the reply. A request that
/// cannot be read is answered fail-closed; a reply that cannot be written is the client's
/// failure to report (it denies a `PreToolUse`).
fn answer_one(stream: UnixStream, env: &Environment) {
    let _ = stream.set_read_timeout(Some(EXCHANGE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(EXCHANGE_TIMEOUT));
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    let answer = match read_request(stream) {
        Ok((host, stdin)) => crate::handle(host, &stdin, env),
        Err(reason) => Answer::fail_closed(format!(
            "Cairn denied this call: the resident hook server could not read it ({reason}). Nothing was run or recorded."
        )),
    };
    let mut writer = writer;
    if let Ok(reply) = serde_json::to_vec(&answer) {
        let _ = writer.write_all(&reply);
    }
}

fn read_request(stream: UnixStream) -> Result<(Host, Vec<u8>), String> {
    let mut reader = BufReader::new(stream);
    let mut header = Vec::new();
    (&mut reader)
        .take(HEADER_MAX_BYTES)
        .read_until(b'\n', &mut header)
        .map_err(|e| e.to_string())?;
    let request: Request =
        serde_json::from_slice(&header).map_err(|e| format!("bad request header: {e}"))?;
    if request.version != VERSION {
        return Err(format!(
            "protocol version {} is not {VERSION}",
            request.version
        ));
    }
    let host: Host = request
        .host
        .parse()
        .map_err(|_| format!("unknown host `{}`", request.host))?;
    let stdin = crate::input::read_limited(reader).map_err(|e| e.to_string())?;
    Ok((host, stdin))
}
