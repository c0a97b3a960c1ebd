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
