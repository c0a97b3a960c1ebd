//! Acceptance (crash safety, I-6 and SPEC §10): a writer in `sync` mode is killed with
//! SIGKILL while it streams records; every record it acknowledged is in the store, the chain
//! verifies up to the last one, and the run shows as unterminated.
//!
//! The test runs itself again in a child process as the writer it kills.

use crate::common;
use cairn_test_support::this_test_in_a_child;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use cairn_core::{Clock, Digest, SystemClock};
use cairn_ledger::Store;
use cairn_ledger::record::AllowDeny;
use cairn_ledger::store::RunFilter;
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use cairn_store_sqlite::{OpenMode, SqliteStore};

const CHILD_ENV: &str = "CAIRN_CRASH_WRITER";
const ACKS_BEFORE_KILL: usize = 60;

/// Writes records forever, printing `ack <step> <digest>` after each one is durable.
fn child_writer(path: &Path) {
    let store = Arc::new(SqliteStore::open(path, OpenMode::CreateIfMissing).expect("store"));
    let mut recorder = common::sync_recorder(store, "task-crash", "run-crash");
    let stdout = std::io::stdout();
    for i in 0u64.. {
        let args = format!("{{\"i\":{i}}}");
        let receipt = recorder
            .record_step(
                &common::call("files.write", "1", args.as_bytes()),
                common::admission(AllowDeny::Allow, &["allow.all"]),
            )
            .expect("record");
        let mut out = stdout.lock();
        writeln!(out, "ack {} {}", receipt.step_index, receipt.digest).expect("stdout");
        out.flush().expect("flush");
    }
}

/// The same test is the parent (the test) and, when `CAIRN_CRASH_WRITER` names a store, the
/// child writer it kills.
#[test]
fn sigkill_mid_stream_loses_no_acknowledged_record() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        child_writer(Path::new(&path));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut child = this_test_in_a_child("crash::sigkill_mid_stream_loses_no_acknowledged_record")
        .env(CHILD_ENV, &db)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn writer");
    let mut acked: Vec<(u64, Digest)> = Vec::new();
    // The harness's own lines come first.
    let mut lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .skip_while(|line| line.as_ref().is_ok_and(|l| !l.starts_with("ack ")));
    while acked.len() < ACKS_BEFORE_KILL {
        let line = lines.next().expect("writer ended early").unwrap();
        let mut parts = line.split(' ');
        assert_eq!(parts.next(), Some("ack"));
        let step: u64 = parts.next().unwrap().parse().unwrap();
        let digest: Digest = parts.next().unwrap().parse().unwrap();
        acked.push((step, digest));
    }
    // The writer is mid-stream: it keeps appending while we kill it.
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    // Acknowledgements printed after our last read are durable too; count them.
    for line in lines.map_while(Result::ok) {
        let mut parts = line.split(' ');
        if let (Some("ack"), Some(step), Some(digest)) = (parts.next(), parts.next(), parts.next())
            && let (Ok(step), Ok(digest)) = (step.parse(), digest.parse())
        {
            acked.push((step, digest));
        }
    }

    let store = SqliteStore::open(&db, OpenMode::MustExist).expect("reopen after kill");
    let (tenant, run) = ("acme".parse().unwrap(), "run-crash".parse().unwrap());
    let rows = store.rows(&tenant, &run).unwrap();
    assert!(
        rows.len() >= acked.len(),
        "{} rows but {} acknowledged",
        rows.len(),
        acked.len()
    );
    for (step, digest) in &acked {
        let record = rows[*step as usize].as_ref().expect("readable row");
        assert_eq!(
            record.digest, *digest,
            "acknowledged step {step} differs after the crash"
        );
    }
    let trusted = cairn_ledger::keys::TrustedKeys::new(Vec::new());
    let report = verify_run(
        &tenant,
        &run,
        &rows,
        None,
        &trusted,
        CheckpointPolicy::WhenTerminated,
    );
    assert!(
        report.is_intact(),
        "chain broken after SIGKILL: {:#?}",
        report.findings
    );
    assert!(!report.terminated);
    let unterminated = store
        .list_runs(&RunFilter {
            unterminated_only: true,
            idle_before: Some(SystemClock.now()),
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(
        unterminated.len(),
        1,
        "the killed run must be listed as unterminated"
    );
    assert_eq!(unterminated[0].records, rows.len() as u64);
}
