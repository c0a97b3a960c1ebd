//! What the benchmarks of `cairn serve` share: the binary with a clean environment, numbers
//! from the environment, and a running service stopped (SIGTERM, drained) when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `name` from the environment as a number, else `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The built `cairn`, with none of the variables that would point it elsewhere.
pub fn cairn() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .env_remove("CAIRN_DATA")
        .env_remove("CAIRN_SERVER")
        .env_remove("CAIRN_LOG");
    command
}

/// A running `cairn serve`, stopped (SIGTERM, drained) when dropped.
pub struct Served {
    pub child: Child,
    /// The first address it listens on (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `command` — a `cairn serve … --listen 127.0.0.1:0` without `--ready-file` —
    /// and waits (at most a minute) until it listens.
    pub fn start(mut command: Command, ready: &Path) -> Self {
        let _ = std::fs::remove_file(ready);
        let child = command
            .arg("--ready-file")
            .arg(ready)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cairn serve starts");
        let started = Instant::now();
        while !ready.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "cairn serve never got ready"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let url = std::fs::read_to_string(ready)
            .expect("ready file")
            .lines()
            .next()
            .expect("an address")
            .to_owned();
        Self { child, url }
    }
}
