//! Many writers, one run (issue 19, acceptance 2): N processes, each a `sync` recorder
//! resumed on the same run, append M records each at once. Every record lands exactly once,
//! the steps are 0..N·M−1 with no gap and no fork, and the chain verifies; a writer that
//! lost a race resumed from the run's new head (`Recorder::rebases`) and says how often.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cairn_core::{Digest, SystemClock};
use cairn_ledger::Store;
use cairn_ledger::keys::TrustedKeys;
use cairn_ledger::store::{OpenMode, RunMeta};
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use cairn_runtime::{Durability, Recorder, RecorderOptions};
use cairn_store_postgres::{Options, PostgresStore};
use cairn_test_support::postgres::Schemas;
use cairn_test_support::store_conformance::{at, ids};
use cairn_test_support::this_test_in_a_child;

const URL_ENV: &str = "CAIRN_MANY_WRITERS_URL";
const WRITER_ENV: &str = "CAIRN_MANY_WRITERS_WRITER";
const START_ENV: &str = "CAIRN_MANY_WRITERS_START_MS";
const WRITERS: usize = 4;
const APPENDS: usize = 50;

/// One writer: waits for the common start, appends `APPENDS` records, prints its rebases.
fn writer(url: &str, writer: usize, start_ms: u128) {
    let store =
        Arc::new(PostgresStore::open(url, OpenMode::MustExist, &Options::default()).unwrap());
    let (tenant, run, _) = ids();
    let options = RecorderOptions {
        durability: Durability::Sync,
        content_retention: None,
    };
    let mut recorder =
        Recorder::resume(store, Arc::new(SystemClock), &tenant, &run, options).unwrap();
    // Start together, so the writers really race.
    while SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        < start_ms
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    for append in 0..APPENDS {
        let args = format!("{{\"writer\":{writer},\"append\":{append}}}");
        crate::writing::allowed_step(&mut recorder, &format!("writer.{writer}"), &args);
    }
    println!("rebases {}", recorder.rebases());
}

#[test]
fn many_processes_append_to_one_run_without_a_gap_or_a_fork() {
    if let (Ok(url), Ok(index), Ok(start)) = (
        std::env::var(URL_ENV),
        std::env::var(WRITER_ENV),
        std::env::var(START_ENV),
    ) {
        writer(&url, index.parse().unwrap(), start.parse().unwrap());
        return;
    }
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let store = PostgresStore::open(&url, OpenMode::CreateIfMissing, &Options::default()).unwrap();
    let (tenant, run, task) = ids();
    store
        .open_run(&RunMeta {
            tenant_id: tenant.clone(),
            run_id: run.clone(),
            task_id: task,
            opened_at: at(0),
        })
        .unwrap();
    let start = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 1500;
    let children: Vec<_> = (0..WRITERS)
        .map(|index| {
            this_test_in_a_child(
                "many_writers::many_processes_append_to_one_run_without_a_gap_or_a_fork",
            )
            .env(URL_ENV, &url)
            .env(WRITER_ENV, index.to_string())
            .env(START_ENV, start.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut rebases = 0_u64;
    for mut child in children {
        let out = BufReader::new(child.stdout.take().unwrap());
        for line in out.lines().map_while(Result::ok) {
            if let Some(count) = line.strip_prefix("rebases ") {
                rebases += count.trim().parse::<u64>().unwrap();
            }
        }
        assert!(child.wait().unwrap().success(), "a writer failed");
    }
    let rows = store.rows(&tenant, &run).unwrap();
    let records: Vec<_> = rows.iter().map(|row| row.as_ref().unwrap()).collect();
    assert_eq!(records.len(), WRITERS * APPENDS);
    for (index, record) in records.iter().enumerate() {
        assert_eq!(record.step_index, index as u64, "no gap, no repeat");
    }
    let mut calls: Vec<(String, Digest)> = records
        .iter()
        .map(|r| {
            (
                r.tool.as_ref().unwrap().name.to_string(),
                r.args.as_ref().unwrap().digest,
            )
        })
        .collect();
    calls.sort();
    calls.dedup();
    assert_eq!(calls.len(), WRITERS * APPENDS, "every append landed once");
    let report = verify_run(
        &tenant,
        &run,
        &rows,
        None,
        &TrustedKeys::new(Vec::new()),
        CheckpointPolicy::WhenTerminated,
    );
    assert!(report.is_intact(), "{:#?}", report.findings);
    eprintln!(
        "many writers: N = {WRITERS} processes x M = {APPENDS} appends = {} records, steps 0..{}, chain intact, {rebases} conflict(s) retried from the new head",
        records.len(),
        records.len() - 1
    );
}
