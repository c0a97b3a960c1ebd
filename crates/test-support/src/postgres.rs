//! The PostgreSQL test server (`CAIRN_TEST_DATABASE_URL`): each test gets schemas of its own,
//! dropped when it ends, so tests run in parallel on one database without seeing each
//! other's stores; without the variable a test says it is skipped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed expectation is the test failing"
)]

use std::sync::atomic::{AtomicUsize, Ordering};

/// The variable that names the test server.
pub const URL_VARIABLE: &str = "CAIRN_TEST_DATABASE_URL";

/// The test server's URL, or `None` after saying the test is skipped.
#[must_use]
pub fn server() -> Option<String> {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "SKIPPED: no PostgreSQL server for this test; set {URL_VARIABLE} \
                 (e.g. postgres://postgres@127.0.0.1:5432/test)"
            );
            None
        }
    }
}

/// Schemas made for one test, dropped with it.
pub struct Schemas {
    server: String,
    admin: std::sync::Mutex<postgres::Client>,
    made: std::sync::Mutex<Vec<String>>,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl Schemas {
    /// On the test server, or `None` (skipped).
    ///
    /// # Panics
    /// When the variable names a server that does not answer: a CI without its database
    /// fails rather than skips.
    #[must_use]
    pub fn new() -> Option<Self> {
        let server = server()?;
        let admin = postgres::Client::connect(&server, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{URL_VARIABLE} names a server that does not answer: {e}"));
        Some(Self {
            server,
            admin: std::sync::Mutex::new(admin),
            made: std::sync::Mutex::default(),
        })
    }

    /// The server's URL.
    #[must_use]
    pub fn server(&self) -> &str {
        &self.server
    }

    /// A new, empty schema; returns the URL whose connections use it.
    #[must_use]
    pub fn url(&self) -> String {
        let name = format!(
            "cairn_test_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        self.admin
            .lock()
            .unwrap()
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .unwrap();
        self.made.lock().unwrap().push(name.clone());
        in_schema(&self.server, &name)
    }
}

impl Drop for Schemas {
    fn drop(&mut self) {
        let made = std::mem::take(&mut *self.made.lock().unwrap());
        if let Ok(mut admin) = self.admin.lock() {
            for name in made {
                let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"));
            }
        }
    }
}

/// `server` with its connections' `search_path` set to `schema`.
#[must_use]
pub fn in_schema(server: &str, schema: &str) -> String {
    let separator = if server.contains('?') { '&' } else { '?' };
    format!("{server}{separator}options=-csearch_path%3D{schema}")
}

/// A PostgreSQL server of the test's own, in a temporary folder on a free loopback port, that
/// the test may crash and restart without disturbing the shared server; stopped when dropped.
/// Made with the machine's `initdb` and `pg_ctl` (as the `postgres` user when the test runs as
/// root, which `initdb` refuses).
pub struct PrivateServer {
    dir: std::path::PathBuf,
    port: u16,
    as_postgres: bool,
}

impl PrivateServer {
    /// Starts one, or `None` after saying why the test is skipped (no test server configured,
    /// or no `initdb`/`pg_ctl` on this machine).
    ///
    /// # Panics
    /// When the tools exist but the server does not start.
    #[must_use]
    pub fn start() -> Option<Self> {
        server()?;
        let Some(bin) = tools_dir() else {
            eprintln!(
                "SKIPPED: no `initdb`/`pg_ctl` on this machine for a private PostgreSQL server"
            );
            return None;
        };
        let as_postgres = is_root();
        let dir = std::env::temp_dir().join(format!(
            "cairn-pg-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Self {
            dir,
            port,
            as_postgres,
        };
        if as_postgres {
            let status = std::process::Command::new("chown")
                .args(["postgres"])
                .arg(&server.dir)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "cannot hand the server's folder to postgres"
            );
        }
        let data = server.dir.join("data");
        server.run(
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        server.pg_ctl(&[
            "start",
            "-w",
            "-l",
            server.dir.join("log").to_str().unwrap(),
        ]);
        Some(server)
    }

    /// The URL of its `postgres` database.
    #[must_use]
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Crashes the server (`pg_ctl restart -m immediate`: no shutdown checkpoint, recovery
    /// from the write-ahead log on start) and waits until it answers again.
    pub fn crash_and_restart(&self) {
        self.pg_ctl(&["restart", "-m", "immediate", "-w"]);
    }

    fn pg_ctl(&self, args: &[&str]) {
        let bin = tools_dir().unwrap();
        let data = self.dir.join("data");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on",
            self.port,
            self.dir.display()
        );
        let mut all = vec!["-D", data.to_str().unwrap(), "-o", &options];
        all.extend_from_slice(args);
        self.run(&bin.join("pg_ctl"), &all);
    }

    fn run(&self, program: &std::path::Path, args: &[&str]) {
        let mut command = if self.as_postgres {
            let mut command = std::process::Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            std::process::Command::new(program)
        };
        // Into a file, not a pipe: the server `pg_ctl start` leaves running would hold a pipe
        // open, and reading it to its end would wait for the server to stop.
        let out_path = self.dir.join("tool.out");
        let out = std::fs::File::create(&out_path).unwrap();
        let status = command
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "{} {args:?} failed: {}",
            program.display(),
            std::fs::read_to_string(&out_path).unwrap_or_default()
        );
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        if let Some(bin) = tools_dir() {
            let data = self.dir.join("data");
            let mut command = if self.as_postgres {
                let mut command = std::process::Command::new("runuser");
                command
                    .args(["-u", "postgres", "--"])
                    .arg(bin.join("pg_ctl"));
                command
            } else {
                std::process::Command::new(bin.join("pg_ctl"))
            };
            let _ = command
                .args([
                    "-D",
                    data.to_str().unwrap_or_default(),
                    "stop",
                    "-m",
                    "immediate",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The folder of `initdb` and `pg_ctl`: on the `PATH`, else Debian's
/// `/usr/lib/postgresql/<version>/bin`.
fn tools_dir() -> Option<std::path::PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut versions: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("bin"))
            .filter(|bin| bin.join("initdb").is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}
