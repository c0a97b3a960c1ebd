//! Helpers shared by Cairn's test suites, so that no suite copies another's set-up or reaches
//! into another crate's folder with `#[path]`. Not published; each module is behind the
//! feature of the crate it needs, so a suite pulls in only what it uses.
//!
//! - [`shared`]: the published interop data beside the repository (`../shared`).
//! - `continuity_cases` (feature `continuity`): the envelope case folders of
//!   `crates/continuity/tests/cases`, judged the same way by the library's and the CLI's
//!   suites.
//! - `decision_boundaries` (feature `decisions`): the D-5 boundary cases of
//!   `crates/decisions/tests/boundaries`, likewise.
//! - `gates` (feature `runtime`): a gate that admits every call under one named rule.
//! - `store_conformance` (feature `store`): what every ledger store must do, run against
//!   each store by its own suite.
//! - `postgres` (feature `postgres`): the PostgreSQL test server, a schema per store.
//! - [`workload`]: the tools and rules of a realistic agent run, for the benchmarks.
//! - [`browser`]: real headless Chromium driven by `tests/console/browse.mjs`.
//! - [`http`]: one raw HTTP/1.1 request, for the status, headers and cookies of an answer.
//! - [`architecture`]: the checks of the workspace's layout (no module cycles, one test
//!   binary per crate) that `tests/it/architecture.rs` runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a crate of test helpers only: a failed expectation is the test failing"
)]

pub mod architecture;
pub mod browser;
#[cfg(feature = "continuity")]
pub mod continuity_cases;
#[cfg(feature = "decisions")]
pub mod decision_boundaries;
#[cfg(feature = "runtime")]
pub mod gates;
pub mod http;
#[cfg(feature = "otlp")]
pub mod otlp;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod shared;
#[cfg(feature = "store")]
pub mod store_conformance;
pub mod workload;

use std::path::{Path, PathBuf};

/// The folders directly inside `dir`, sorted by name: the cases of a data-driven corpus,
/// where adding a case is adding a folder.
///
/// # Panics
/// When `dir` cannot be read: a corpus that is not there fails its suite.
#[must_use]
#[allow(
    clippy::panic,
    reason = "test support: a missing corpus fails the suite"
)]
pub fn subfolders(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read the folder `{}`: {e}", dir.display()));
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// A command that runs the integration test `test` (its full path in the test binary, such as
/// `crash::sigkill_mid_stream_loses_no_acknowledged_record`) of the running test binary alone,
/// in a child process: for tests that kill a process of their own and check what it left.
/// The test tells the two roles apart by an environment variable the caller sets on the
/// command. Its standard output starts with the harness's own lines; skip to the ones the
/// child prints.
///
/// # Panics
/// When the running binary's path is unknown.
#[must_use]
pub fn this_test_in_a_child(test: &str) -> std::process::Command {
    #[allow(
        clippy::expect_used,
        reason = "test support: a failed expectation fails the test"
    )]
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = std::process::Command::new(exe);
    // Terse: the harness prints no `test … ` prefix on the line the child writes first.
    command.args([
        test,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "--quiet",
    ]);
    command
}

/// Checks that `schemas/<file>` in the repository is exactly `schema`, pretty-printed with a
/// final newline: a checked-in JSON Schema generated from the types fails its suite when they
/// drift apart. With `CAIRN_UPDATE_SCHEMAS` set, the file is rewritten first; `package` names
/// the crate whose suite regenerates it, for the message.
///
/// # Panics
/// When the file differs from `schema` or cannot be read or written.
#[allow(clippy::panic, reason = "test support: a mismatch fails the test")]
pub fn assert_schema_checked_in(file: &str, schema: &serde_json::Value, package: &str) {
    let generated = serde_json::to_string_pretty(schema)
        .unwrap_or_else(|e| panic!("the schema does not serialise: {e}"))
        + "\n";
    assert_checked_in(
        &format!("schemas/{file}"),
        &generated,
        &format!("cargo test -p {package} --test it schema_checked_in"),
    );
}

/// Asserts that the file at `path` (relative to the repository) holds exactly `generated`;
/// with `CAIRN_UPDATE_SCHEMAS` set, writes it first. `regenerate` is the test command named
/// in the failure.
///
/// # Panics
/// When the file is stale or unreadable.
#[allow(clippy::panic, reason = "test support: a mismatch fails the test")]
pub fn assert_checked_in(path: &str, generated: &str, regenerate: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    if std::env::var_os("CAIRN_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, generated)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    let on_disk = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        on_disk == generated,
        "{} is stale: regenerate it with CAIRN_UPDATE_SCHEMAS=1 {regenerate}",
        path.display()
    );
}
