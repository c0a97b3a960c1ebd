//! The resident hook server: one long-lived process per project that answers hook calls
//! for the short-lived `cairn hook` processes the hosts start, so that the work a fresh
//! process would repeat on every tool call — Cedar parsing and validating the policy set,
//! SQLite opening the store and reading its schema — is done once.
//!
//! `cairn hooks serve` runs [`serve`]: it listens on `.cairn/hookd.sock` (mode 0600) and
//! answers each call on a thread of its own (at most [`MAX_IN_FLIGHT`] at once, so sessions
//! never queue behind each other; threads are kept for later calls, see `Workers`) through the very same [`crate::handle`], with an
//! environment that keeps the store open and the policy gate cached by the digest of the
//! policy files (which are still read on every call, so an edit takes effect on the next
//! one). A client must send its whole request within [`REQUEST_DEADLINE`] — a deadline on
//! the request, not on each read, so one byte every few seconds cannot hold a thread — or it
//! is answered fail-closed and dropped. The server exits after an idle period, or when its
//! socket disappears.
//!
//! `cairn hook HOST` first calls [`ask`]: when the call's project (see
//! [`crate::project::Binding::project_of`]) has a socket that accepts the connection, the call is sent
//! there and its answer printed, within the caller's deadline; otherwise (no server, a stale
//! socket, a refused connection) a worker process answers it.
//! Once the call has been sent, the client never falls back — the server may already have
//! recorded it — so a failure from then on is answered as any internal failure is: a
//! `PreToolUse` is denied with exit 2, every other event answers exit 0 with a note.
//!
//! The protocol: the client writes one JSON line `{"version": 1, "host": "claude-code"}`, then
//! the hook's stdin bytes, and shuts its side down; the server answers with the [`Answer`]
//! as one JSON object (`{"stdout", "stderr", "exit", "denies"}`) and closes.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
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
/// How long a server waits for a client's whole request (header and payload).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// How many calls a server answers at once; beyond that a call waits for one to finish
/// (its client denies it if its deadline passes first).
pub const MAX_IN_FLIGHT: usize = 32;
/// How long a server takes at most to write its answer.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// The protocol version.
const VERSION: u32 = 1;
/// The longest request header line.
const HEADER_MAX_BYTES: usize = 1024;
/// The longest answer a client reads.
const ANSWER_MAX_BYTES: usize = 4 << 20;

/// The first line of a request.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    version: u32,
    host: String,
}

/// The socket of `project`'s resident server.
#[must_use]
pub fn socket_path(project: &Project) -> PathBuf {
    project.state().join(SOCKET_FILE)
}

/// Sends the hook call `stdin` of `host` to the resident server of its `project` (see
/// [`crate::project::Binding::project_of`]) and returns the server's answer; `None` when no server takes the
/// call (the caller then answers it another way). The exchange ends by `deadline`; from the moment the server accepted the call, a
/// failure (a lost or late answer) is returned as an error — the server may already have
/// recorded the call, so the caller must not answer it a second time. Never panics.
///
/// # Errors
/// [`HookError::Resident`] for an exchange that failed after the server accepted the call.
pub fn ask(
    host: Host,
    stdin: &[u8],
    project: &Project,
    deadline: Instant,
) -> Option<Result<Answer, HookError>> {
    let socket = socket_path(project);
    let stream = UnixStream::connect(&socket).ok()?;
    // From here on the server may act on the call: no fallback.
    Some(
        exchange(stream, host, stdin, deadline).map_err(|failure| match failure {
            Failure::Late => HookError::ResidentLate { socket },
            Failure::Other(reason) => HookError::Resident { socket, reason },
        }),
    )
}

/// Why an exchange over the socket failed.
#[derive(Debug)]
enum Failure {
    /// The deadline passed first.
    Late,
    /// Anything else, said.
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Late => f.write_str("the deadline passed"),
            Self::Other(reason) => f.write_str(reason),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            Self::Late
        } else {
            Self::Other(e.to_string())
        }
    }
}

/// Whether a server answers at `project`'s socket.
#[must_use]
pub fn is_serving(project: &Project) -> bool {
    UnixStream::connect(socket_path(project)).is_ok()
}

fn exchange(
    mut stream: UnixStream,
    host: Host,
    stdin: &[u8],
    deadline: Instant,
) -> Result<Answer, Failure> {
    stream.set_write_timeout(Some(remaining(deadline)?))?;
    let header = Request {
        version: VERSION,
        host: host.as_str().to_owned(),
    };
    let mut request = serde_json::to_vec(&header).map_err(|e| Failure::Other(e.to_string()))?;
    request.push(b'\n');
    request.extend_from_slice(stdin);
    stream.write_all(&request)?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let reply = read_by(&mut stream, deadline, ANSWER_MAX_BYTES).map_err(|e| match e {
        Failure::Late => Failure::Late,
        Failure::Other(reason) => Failure::Other(format!("no answer: {reason}")),
    })?;
    serde_json::from_slice(&reply).map_err(|e| Failure::Other(format!("unreadable answer: {e}")))
}

/// The time left until `deadline`, or [`Failure::Late`] once it has passed.
fn remaining(deadline: Instant) -> Result<Duration, Failure> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|left| !left.is_zero())
        .ok_or(Failure::Late)
}

/// Reads `stream` to its end, at most `limit` bytes, by `deadline` — a deadline on the
/// whole read, however the peer spaces its bytes.
fn read_by(stream: &mut UnixStream, deadline: Instant, limit: usize) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let mut buffer = [0_u8; 16 << 10];
    loop {
        stream.set_read_timeout(Some(remaining(deadline)?))?;
        match stream.read(&mut buffer) {
            Ok(0) => return Ok(out),
            Ok(read) => {
                out.extend_from_slice(buffer.get(..read).unwrap_or_default());
                if out.len() > limit {
                    return Err(Failure::Other(format!("more than {limit} bytes")));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Why a resident server stopped serving (the binary then ends the process, and with it the
/// threads that wait for calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// No call came for the idle time.
    Idle,
    /// The socket is no longer the one this server made (removed, or another server's).
    SocketGone,
    /// The project's `policies` folder, there at the start, is gone.
    ProjectGone,
}

/// Serves `project`'s hook calls with `env` until no call has come for `idle`, the socket is
/// removed or the project is gone — each once no call is being answered — and says which.
/// The caller ends the process.
///
/// # Errors
/// [`HookError::Resident`] when another server already answers at the socket or the socket
/// cannot be created.
pub fn serve(project: &Project, env: Environment, idle: Duration) -> Result<Stopped, HookError> {
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
    project
        .prepare_state()
        .map_err(|e| failed(format!("cannot create the project's state folder: {e}")))?;
    let staging = project
        .state()
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
    let activity = Arc::new(Activity {
        last: Mutex::new(Instant::now()),
        in_flight: AtomicUsize::new(0),
    });
    let workers = Arc::new(Workers {
        listener,
        env,
        activity: Arc::clone(&activity),
        turn: Mutex::new(()),
        waiting: AtomicUsize::new(1),
        threads: AtomicUsize::new(1),
    });
    // The store and the policy gate are made ready beside the first calls (the first call
    // of a session comes within milliseconds of the server's start).
    let warming = Arc::clone(&workers);
    let warmed = project.clone();
    let _ = std::thread::Builder::new()
        .name("cairn-hook-warm".to_owned())
        .stack_size(cairn_runtime::limits::STACK_BYTES)
        .spawn(move || warming.env.warm(&warmed));
    // The first thread to answer calls (with the stack policy evaluation needs, as every
    // one); this one watches for the end.
    let first = Arc::clone(&workers);
    std::thread::Builder::new()
        .name("cairn-hook-call".to_owned())
        .stack_size(cairn_runtime::limits::STACK_BYTES)
        .spawn(move || first.answer_calls())
        .map_err(|e| failed(format!("cannot start a thread: {e}")))?;
    Ok(watch(&socket, ours, &project.policies(), &activity, idle))
}

/// The threads that answer calls, kept for the next call. One thread at a time waits in
/// `accept`, the others for their turn; the thread that takes a call answers it itself (no
/// hand-over to another thread on the way), and when none is left waiting a new one is
/// started — so there are never more threads than calls were ever answered at once, at most
/// [`MAX_IN_FLIGHT`]. Beyond that, a call waits in the socket's backlog for a thread, within
/// its client's deadline.
struct Workers {
    listener: UnixListener,
    env: Environment,
    activity: Arc<Activity>,
    /// Held by the thread waiting in `accept`.
    turn: Mutex<()>,
    /// Threads waiting for a call.
    waiting: AtomicUsize,
    /// Threads started.
    threads: AtomicUsize,
}

impl Workers {
    /// Takes calls and answers them, for as long as the process lives.
    fn answer_calls(self: &Arc<Self>) {
        loop {
            let stream = self.next_call();
            self.activity.touch();
            self.activity.in_flight.fetch_add(1, Ordering::SeqCst);
            if self.waiting.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.start();
            }
            // `handle` answers its own panics; one here (a reply) drops the stream, which
            // the client denies, and the thread goes on.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                answer_one(stream, &self.env);
            }));
            self.activity.done();
            self.waiting.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The next connection, once it is this thread's turn to wait for one.
    fn next_call(&self) -> UnixStream {
        let _turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => return stream,
                // Out of file descriptors, say: wait for some to be closed, do not spin.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// Starts one more thread, unless [`MAX_IN_FLIGHT`] are running or none can be started
    /// (the running ones go on).
    fn start(self: &Arc<Self>) {
        let counted = self
            .threads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_IN_FLIGHT).then_some(n + 1)
            })
            .is_ok();
        if !counted {
            return;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let workers = Arc::clone(self);
        let started = std::thread::Builder::new()
            .name("cairn-hook-call".to_owned())
            .stack_size(cairn_runtime::limits::STACK_BYTES)
            .spawn(move || workers.answer_calls());
        if started.is_err() {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            self.threads.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// When the server last took a call, and how many it is answering.
struct Activity {
    last: Mutex<Instant>,
    in_flight: AtomicUsize,
}

impl Activity {
    fn touch(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn done(&self) {
        self.touch();
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    fn idle_for(&self) -> Option<Duration> {
        (self.in_flight.load(Ordering::SeqCst) == 0).then(|| {
            self.last
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .elapsed()
        })
    }
}

fn reply(mut stream: UnixStream, answer: &Answer) {
    let _ = stream.set_write_timeout(Some(REPLY_TIMEOUT));
    if let Ok(bytes) = serde_json::to_vec(answer) {
        let _ = stream.write_all(&bytes);
    }
}

/// The file behind `path` (device and inode), to tell this server's socket from one a later
/// server put at the same path.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// Returns once no call has come for `idle` and none is being answered, once `socket` is no
/// longer the one this server made (removed, or replaced by another server's), or once the
/// project's `policies` folder, there at the start, is gone (the project was deleted — its
/// socket alone can outlive a folder removed while the server started) — each once no call is
/// being answered. Only its own socket is ever removed.
fn watch(
    socket: &Path,
    ours: (u64, u64),
    policies: &Path,
    activity: &Activity,
    idle: Duration,
) -> Stopped {
    let tick = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let had_policies = policies.is_dir();
    loop {
        std::thread::sleep(tick);
        let Some(quiet) = activity.idle_for() else {
            continue;
        };
        if identity(socket) != Some(ours) {
            return Stopped::SocketGone;
        }
        let gone = had_policies && !policies.is_dir();
        if quiet >= idle || gone {
            let _ = std::fs::remove_file(socket);
            return if gone {
                Stopped::ProjectGone
            } else {
                Stopped::Idle
            };
        }
    }
}

/// Reads one request within [`REQUEST_DEADLINE`], answers it with [`crate::handle`] and
/// writes the reply. A request that cannot be read in time is answered fail-closed; a reply
/// that cannot be written is the client's failure to report (it denies a `PreToolUse`).
fn answer_one(mut stream: UnixStream, env: &Environment) {
    let answer = match read_request(&mut stream) {
        Ok((host, stdin)) => crate::handle(host, &stdin, env),
        Err(reason) => Answer::fail_closed(format!(
            "Cairn denied this call: the resident hook server could not read it ({reason}). Nothing was run or recorded."
        )),
    };
    reply(stream, &answer);
}

fn read_request(stream: &mut UnixStream) -> Result<(Host, Vec<u8>), String> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let limit = HEADER_MAX_BYTES + crate::input::MAX_INPUT_BYTES;
    let bytes = read_by(stream, deadline, limit).map_err(|e| format!("the request: {e}"))?;
    let newline = bytes
        .iter()
        .take(HEADER_MAX_BYTES)
        .position(|b| *b == b'\n')
        .ok_or_else(|| "no request header".to_owned())?;
    let (header, rest) = bytes.split_at(newline);
    let request: Request =
        serde_json::from_slice(header).map_err(|e| format!("bad request header: {e}"))?;
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
    let stdin = rest.get(1..).unwrap_or_default().to_vec();
    if stdin.len() > crate::input::MAX_INPUT_BYTES {
        return Err(HookError::InputTooLarge {
            limit: crate::input::MAX_INPUT_BYTES,
        }
        .to_string());
    }
    Ok((host, stdin))
}
