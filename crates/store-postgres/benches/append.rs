//! PostgreSQL append cost (issue 19, acceptance 4), each beside a baseline measured in the
//! same run on the same server, because the benchmark machines are shared and noisy:
//!
//! - `pg_append_sync`: one record per commit — `Store::append` of one sealed record against
//!   one bare `INSERT` of the same row into a plain table with the same key, committed
//!   (autocommit: one round trip, one WAL flush). Target: ≤ 2× the bare commit.
//! - `pg_append_batch`: 512 records per commit — `Store::append` against one bare multi-row
//!   `INSERT … SELECT FROM unnest(…)` of the same rows, committed. Targets: ≥ 0.5× the bare
//!   insert's throughput and ≥ 50,000 records/s.
//!
//! Needs a server: `CAIRN_TEST_DATABASE_URL` (the bench makes and drops a schema of its own).
//! Run with `cargo bench -p cairn-store-postgres --bench append`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "benchmark set-up: a failure is a broken benchmark, reported by the panic"
)]
#![allow(
    missing_docs,
    reason = "`criterion_group!` generates an undocumented public function"
)]

use std::time::{Duration, Instant};

use cairn_core::{Digest, RunId, TaskId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::record::{
    Admission, AllowDeny, ArgsRef, DraftEvent, Label, RecordDraft, SealedRecord, ToolRef,
};
use cairn_ledger::store::{Commit, IndexColumns, OpenMode, RunMeta};
use cairn_store_postgres::{Options, PostgresStore};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use postgres::{Client, NoTls};

const BATCH: usize = 512;

/// The bench's own schema on the test server, dropped at the end.
struct Server {
    url: String,
    admin: Client,
    schema: String,
}

impl Server {
    fn connect() -> Option<Self> {
        let Ok(server) = std::env::var("CAIRN_TEST_DATABASE_URL") else {
            eprintln!(
                "SKIPPED: set CAIRN_TEST_DATABASE_URL to a PostgreSQL server to run this bench"
            );
            return None;
        };
        let mut admin = Client::connect(&server, NoTls).expect("the server answers");
        let schema = format!("cairn_bench_{}", std::process::id());
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        let separator = if server.contains('?') { '&' } else { '?' };
        let url = format!("{server}{separator}options=-csearch_path%3D{schema}");
        Some(Self { url, admin, schema })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self
            .admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
    }
}

/// A run's records, sealed before anything is timed.
fn records(tenant: &TenantId, run: &RunId, count: usize) -> Vec<SealedRecord> {
    let mut prev = None;
    (0..count)
        .map(|i| {
            let args = format!("{{\"path\":\"src/module_{i}.rs\",\"line\":{i}}}");
            let draft = RecordDraft {
                tenant_id: tenant.clone(),
                run_id: run.clone(),
                task_id: "task-bench".parse::<TaskId>().unwrap(),
                event: DraftEvent::Step {
                    tool: ToolRef {
                        name: Label::new("fs.read_file").unwrap(),
                        version: Label::new("1.2.0").unwrap(),
                    },
                    args: ArgsRef {
                        digest: Digest::of(args.as_bytes()),
                        size: args.len() as u64,
                    },
                    admission: Admission {
                        decision: AllowDeny::Allow,
                        policy_set_version: Digest::of(b"policy"),
                        rule_ids: vec![Label::new("fs.workspace.read").unwrap()],
                    },
                    agent: None,
                },
                lane_id: None,
                observation_digest: Some(Digest::of(format!("obs {i}").as_bytes())),
                recorded_at: "2026-12-03T12:00:00Z".parse().unwrap(),
            };
            let sealed = SealedRecord::seal(draft, i as u64, prev).unwrap();
            prev = Some(sealed.record().digest);
            sealed
        })
        .collect()
}

/// A fresh run in the store, with its records.
fn fresh_run(store: &PostgresStore, count: usize, n: &mut u64) -> Vec<SealedRecord> {
    *n += 1;
    let tenant: TenantId = "bench".parse().unwrap();
    let run: RunId = format!("run-{n}").parse().unwrap();
    store
        .open_run(&RunMeta {
            tenant_id: tenant.clone(),
            run_id: run.clone(),
            task_id: "task-bench".parse().unwrap(),
            opened_at: "2026-12-03T12:00:00Z".parse().unwrap(),
        })
        .unwrap();
    records(&tenant, &run, count)
}

const BARE_TABLE: &str = "CREATE TABLE bare (
    tenant_id text NOT NULL, run_id text NOT NULL, step_index bigint NOT NULL,
    kind text NOT NULL, task_id text NOT NULL, tool_name text, args_size bigint,
    decision text, termination_reason text, recorded_at_us bigint NOT NULL,
    digest text NOT NULL, body text NOT NULL,
    PRIMARY KEY (tenant_id, run_id, step_index))";

const BARE_INSERT: &str =
    "INSERT INTO bare VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

const BARE_UNNEST: &str = "INSERT INTO bare SELECT $1, $2, * FROM unnest($3::bigint[],
    $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::bigint[],
    $11::text[], $12::text[])";

fn bare_row(client: &mut Client, insert: &postgres::Statement, sealed: &SealedRecord) {
    let record = sealed.record();
    let c = IndexColumns::of(record);
    client
        .execute(
            insert,
            &[
                &record.tenant_id.as_str(),
                &record.run_id.as_str(),
                &(record.step_index as i64),
                &c.kind,
                &c.task_id,
                &c.tool_name,
                &c.args_size,
                &c.decision,
                &c.termination_reason,
                &c.recorded_at_us,
                &c.digest.as_ref(),
                &sealed.json(),
            ],
        )
        .unwrap();
}

fn bare_rows(client: &mut Client, insert: &postgres::Statement, batch: &[SealedRecord]) {
    let first = batch.first().unwrap().record();
    let cols: Vec<IndexColumns<'_>> = batch.iter().map(|s| IndexColumns::of(s.record())).collect();
    let steps: Vec<i64> = batch.iter().map(|s| s.record().step_index as i64).collect();
    let kinds: Vec<&str> = cols.iter().map(|c| c.kind).collect();
    let tasks: Vec<&str> = cols.iter().map(|c| c.task_id).collect();
    let tools: Vec<Option<&str>> = cols.iter().map(|c| c.tool_name).collect();
    let sizes: Vec<Option<i64>> = cols.iter().map(|c| c.args_size).collect();
    let decisions: Vec<Option<&str>> = cols.iter().map(|c| c.decision).collect();
    let reasons: Vec<Option<&str>> = cols.iter().map(|c| c.termination_reason).collect();
    let times: Vec<i64> = cols.iter().map(|c| c.recorded_at_us).collect();
    let digests: Vec<&str> = cols.iter().map(|c| c.digest.as_ref()).collect();
    let bodies: Vec<&str> = batch.iter().map(SealedRecord::json).collect();
    client
        .execute(
            insert,
            &[
                &first.tenant_id.as_str(),
                &first.run_id.as_str(),
                &steps,
                &kinds,
                &tasks,
                &tools,
                &sizes,
                &decisions,
                &reasons,
                &times,
                &digests,
                &bodies,
            ],
        )
        .unwrap();
}

/// The bench's schema, the store in it, and a plain connection with the bare table and its
/// insert (`sql`) prepared.
fn setup(sql: &str) -> Option<(Server, PostgresStore, Client, postgres::Statement)> {
    let server = Server::connect()?;
    let store =
        PostgresStore::open(&server.url, OpenMode::CreateIfMissing, &Options::default()).unwrap();
    let mut bare = Client::connect(&server.url, NoTls).unwrap();
    bare.batch_execute(BARE_TABLE).unwrap();
    let insert = bare.prepare(sql).unwrap();
    Some((server, store, bare, insert))
}

fn sync(c: &mut Criterion) {
    let Some((_server, store, mut bare, insert)) = setup(BARE_INSERT) else {
        return;
    };
    let mut runs = 0_u64;
    let mut group = c.benchmark_group("pg_append_sync");
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(6));
    group.bench_function("bare_insert_commit", |b| {
        b.iter_custom(|iters| {
            let batch = fresh_run(&store, usize::try_from(iters).unwrap(), &mut runs);
            let started = Instant::now();
            for sealed in &batch {
                bare_row(&mut bare, &insert, sealed);
            }
            started.elapsed()
        });
    });
    group.bench_function("store_append", |b| {
        b.iter_custom(|iters| {
            let batch = fresh_run(&store, usize::try_from(iters).unwrap(), &mut runs);
            let started = Instant::now();
            for sealed in &batch {
                store
                    .append(&Commit {
                        records: std::slice::from_ref(sealed),
                        ..Commit::default()
                    })
                    .unwrap();
            }
            started.elapsed()
        });
    });
    group.finish();
}

fn batch(c: &mut Criterion) {
    let Some((_server, store, mut bare, insert)) = setup(BARE_UNNEST) else {
        return;
    };
    let mut runs = 0_u64;
    let mut group = c.benchmark_group("pg_append_batch");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("bare_multirow_insert", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let batch = fresh_run(&store, BATCH, &mut runs);
                let started = Instant::now();
                bare_rows(&mut bare, &insert, &batch);
                spent += started.elapsed();
            }
            spent
        });
    });
    group.bench_function("store_append", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let batch = fresh_run(&store, BATCH, &mut runs);
                let started = Instant::now();
                store
                    .append(&Commit {
                        records: &batch,
                        ..Commit::default()
                    })
                    .unwrap();
                spent += started.elapsed();
            }
            spent
        });
    });
    group.finish();
}

criterion_group!(benches, sync, batch);
criterion_main!(benches);
