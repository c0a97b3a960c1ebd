//! Issue 34, 9: `cairn serve` never loses an acknowledged step, and no client keeps it from
//! stopping.
//!
//! - SIGKILL under load, again and again (`CAIRN_KILLS`, 100 by default): agents admit steps
//!   on several runs at once over keep-alive connections, the service is killed at an
//!   arbitrary moment, and every step it answered "recorded" must be in the store with the
//!   digest it answered — in the default durability. (`CAIRN_TEST_DURABILITY=async` runs the
//!   same against the mode that answers before the commit, which loses steps.)
//! - A client holding a half-sent request does not keep SIGTERM's drain from ending, and the
//!   records waiting are committed at once on SIGTERM (in `async` durability too, where they
//!   would otherwise wait for the window), so a supervisor's SIGKILL right after loses none.
//! - Idle connections are closed and do not exhaust the service's descriptors: with 1,100 of
//!   them open, `/healthz` still answers.

use crate::common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_ledger::Store as _;
use cairn_ledger::store::OpenMode;
use serde_json::Value;

use common::command_in;

/// A keep-alive HTTP/1.1 connection to the service's Unix socket.
struct Connection {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Connection {
    fn open(socket: &Path) -> std::io::Result<Self> {
        let stream = UnixStream::connect(socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        Ok(Self {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// `POST path` with `body`: the status and the JSON answer, or an I/O error (the service
    /// is gone).
    fn post(&mut self, path: &str, token: &str, body: &str) -> std::io::Result<(u16, Value)> {
        write!(
            self.writer,
            "POST {path} HTTP/1.1\r\nHost: cairn\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut status_line = String::new();
        if self.reader.read_line(&mut status_line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or(std::io::ErrorKind::InvalidData)?;
        let mut length = 0;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }
}

/// A service folder with an agent token.
struct Folder {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    data: PathBuf,
    token: String,
    tenant: String,
}

impl Folder {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let data = common::service_folder(&path);
        let (token, _) = common::agent_token_for(&path, &data);
        let tenant = common::hooks_tenant(&data);
        Self {
            _dir: dir,
            dir: path,
            data,
            token,
            tenant,
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("cairn.sock")
    }

    /// `cairn serve` on the folder, on a Unix socket and a loopback port, with `durability`
    /// (the default when `None`); stderr dropped.
    fn serve(&self, durability: Option<&str>) -> (Child, String) {
        let ready = self.dir.join("serve.ready");
        let _ = std::fs::remove_file(&ready);
        let mut command = command_in(&self.dir);
        command
            .args(["serve", "--data"])
            .arg(&self.data)
            .arg("--listen")
            .arg(format!("unix:{}", self.socket().display()))
            .args(["--listen", "127.0.0.1:0", "--ready-file"])
            .arg(&ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(mode) = durability {
            command.args(["--durability", mode]);
        }
        let child = command.spawn().unwrap();
        let started = Instant::now();
        let tcp = loop {
            let text = std::fs::read_to_string(&ready).unwrap_or_default();
            if let Some(tcp) = text.lines().find_map(|l| l.strip_prefix("http://")) {
                break tcp.to_owned();
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "cairn serve did not start"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        (child, tcp)
    }

    /// Opens the run `name` for the agent; its id.
    fn open(&self, name: &str) -> String {
        let mut connection = Connection::open(&self.socket()).unwrap();
        let (status, answer) = connection
            .post("/v1/runs", &self.token, &format!(r#"{{"name": "{name}"}}"#))
            .unwrap();
        assert_eq!(status, 201, "{answer}");
        answer["run_id"].as_str().unwrap().to_owned()
    }

    /// The digest of every record of `run` the store holds, by step.
    fn stored(&self, run: &str) -> Vec<String> {
        let store =
            cairn_store_sqlite::SqliteStore::open(self.data.join("cairn.db"), OpenMode::MustExist)
                .unwrap();
        store
            .rows(&self.tenant.parse().unwrap(), &run.parse().unwrap())
            .unwrap()
            .into_iter()
            .map(|row| row.unwrap().digest.to_string())
            .collect()
    }
}

const STEP: &str = r#"{"tool": "Bash", "arguments": {"command": "ls"}}"#;

/// What one agent thread was told was recorded: (run, step, digest).
type Acknowledged = Arc<Mutex<Vec<(String, u64, String)>>>;

/// Admits steps on `run` until the service stops answering; notes each acknowledgement.
fn agent(socket: PathBuf, token: String, run: String, acknowledged: Acknowledged) {
    let Ok(mut connection) = Connection::open(&socket) else {
        return;
    };
    let path = format!("/v1/runs/{run}/steps");
    while let Ok((status, answer)) = connection.post(&path, &token, STEP) {
        if status != 200 {
            return;
        }
        let step = answer["step"].as_u64().unwrap();
        let digest = answer["digest"].as_str().unwrap().to_owned();
        acknowledged
            .lock()
            .unwrap()
            .push((run.clone(), step, digest));
    }
}

#[test]
fn issue_34_no_acknowledged_step_is_lost_to_sigkill_under_load() {
    let kills: u64 = std::env::var("CAIRN_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let durability = std::env::var("CAIRN_TEST_DURABILITY").ok();
    let folder = Folder::new();
    let acknowledged: Acknowledged = Arc::default();
    let mut runs = Vec::new();
    for round in 0..kills {
        let (mut child, _) = folder.serve(durability.as_deref());
        let names: Vec<String> = (0..4)
            .map(|i| folder.open(&format!("r{round}-{i}")))
            .collect();
        runs.extend(names.iter().cloned());
        let agents: Vec<_> = names
            .iter()
            .flat_map(|run| [run.clone(), run.clone()])
            .map(|run| {
                let (socket, token, noted) = (
                    folder.socket(),
                    folder.token.clone(),
                    Arc::clone(&acknowledged),
                );
                std::thread::spawn(move || agent(socket, token, run, noted))
            })
            .collect();
        // An arbitrary moment under load: 20 to 120 ms in.
        std::thread::sleep(Duration::from_millis(20 + (round * 37) % 100));
        child.kill().unwrap();
        child.wait().unwrap();
        for agent in agents {
            agent.join().unwrap();
        }
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() as u64 >= kills * 8,
        "too little load to mean anything: {} steps acknowledged",
        acknowledged.len()
    );
    let mut lost = Vec::new();
    let mut stored = std::collections::HashMap::new();
    for (run, step, digest) in &acknowledged {
        let records = stored
            .entry(run.clone())
            .or_insert_with(|| folder.stored(run));
        let index = usize::try_from(*step).unwrap();
        if records.get(index) != Some(digest) {
            lost.push(format!("{run} step {step}"));
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged steps lost over {kills} kills: {:?}",
        lost.len(),
        acknowledged.len(),
        lost.iter().take(10).collect::<Vec<_>>()
    );
    let _ = writeln!(
        std::io::stderr(),
        "sigkill under load: {kills} kills, {} acknowledged steps on {} runs, none lost",
        acknowledged.len(),
        runs.len()
    );
}

/// Sends SIGTERM to `child`.
fn terminate(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn issue_34_a_half_sent_request_does_not_hold_the_drain_and_waiting_records_are_committed_first() {
    for durability in ["group", "async"] {
        let folder = Folder::new();
        let (mut child, tcp) = folder.serve(Some(durability));
        let run = folder.open("drain");
        let mut connection = Connection::open(&folder.socket()).unwrap();
        let mut acknowledged = Vec::new();
        for _ in 0..20 {
            let (status, answer) = connection
                .post(&format!("/v1/runs/{run}/steps"), &folder.token, STEP)
                .unwrap();
            assert_eq!(status, 200, "{answer}");
            acknowledged.push(answer["digest"].as_str().unwrap().to_owned());
        }
        // A client that never finishes its request's head.
        let mut slow = std::net::TcpStream::connect(&tcp).unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: ")
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let stopping = Instant::now();
        terminate(&child);
        // A supervisor that does not wait long: everything acknowledged is committed by then.
        std::thread::sleep(Duration::from_millis(500));
        let stored = folder.stored(&run);
        assert_eq!(
            stored, acknowledged,
            "{durability}: the acknowledged steps are committed at once on SIGTERM"
        );
        // And the drain ends, bounded, whatever the slow client does.
        let deadline = Duration::from_secs(25);
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                stopping.elapsed() < deadline,
                "{durability}: SIGTERM's drain did not end within {deadline:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        drop(slow);
    }
}

#[test]
fn issue_34_idle_connections_neither_exhaust_the_service_nor_stay_forever() {
    let folder = Folder::new();
    let (mut child, tcp) = folder.serve(None);
    let idle: Vec<std::net::TcpStream> = (0..1_100)
        .map(|_| std::net::TcpStream::connect(&tcp).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let answer = cairn_server::client::send_blocking(
        &cairn_server::client::Endpoint::Tcp(tcp.clone()),
        "GET",
        "/healthz",
        None,
        None,
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(
        answer.status, 200,
        "/healthz with 1,100 idle connections open"
    );
    // An idle connection is closed by the service (after `listen::HEADER_TIMEOUT`).
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(
            cairn_server::listen::HEADER_TIMEOUT + Duration::from_secs(10),
        ))
        .unwrap();
    let mut byte = [0_u8; 1];
    assert_eq!(first.read(&mut byte).unwrap(), 0, "closed by the service");
    terminate(&child);
    child.wait().unwrap();
}
