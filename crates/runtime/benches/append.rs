//! Append throughput (acceptance point 6): the runtime's `Recorder` writing whole runs into a
//! real SQLite store on disk, in `batch` (group commit) and `sync` (one fsync per record)
//! durability, with content retention off and on.
//!
//! Each figure has a baseline measured in the same run, because the benchmark machines are
//! shared and noisy: `batch` is compared with one raw SHA-256 per record preimage of the same
//! records, `sync` with one `write` + `fdatasync` of a record-sized buffer per commit.
//!
//! The bench lives in the runtime crate (not `store-sqlite`) because it drives the recorder,
//! and `store-sqlite` depending on the runtime would close a dependency cycle.
//!
//! Run with `cargo bench -p cairn-runtime --bench append`.

#![allow(
    clippy::expect_used,
    reason = "benchmark set-up: a failure is a broken benchmark, reported by the panic"
)]
#![allow(
    missing_docs,
    reason = "`criterion_group!` generates an undocumented public function"
)]

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::{Digest, LaneId, RunId, SystemClock, TaskId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::keys::SigningKey;
use cairn_ledger::record::{Admission, AllowDeny, Label, TerminationReason, ToolRef};
use cairn_runtime::{Durability, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};
use cairn_test_support::workload::{RULES, TOOLS};
use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use sha2::{Digest as _, Sha256};

/// Steps per `batch` run; with the terminal record a run has 5,000 records.
const BATCH_STEPS: usize = 4_999;

/// Steps per `sync` run; with the terminal record a run has 50 records, so 50 commits.
const SYNC_STEPS: usize = 49;

/// What the executor hands the recorder for one step, built before anything is timed.
struct StepInput {
    observation: serde_json::Value,
    tool: ToolRef,
    args: Vec<u8>,
    admission: Admission,
    lane: Option<LaneId>,
}

fn pick<T: Copy>(items: &[T], i: usize) -> T {
    *items.get(i % items.len()).expect("non-empty table")
}

/// `count` realistic steps: a tool result observed, then a call with its admission.
fn inputs(count: usize) -> Vec<StepInput> {
    let lane: LaneId = "lane-backend".parse().expect("lane");
    (0..count)
        .map(|i| {
            let (name, version) = pick(&TOOLS, i);
            let observation = serde_json::json!({
                "status": "ok",
                "tool_result": {
                    "path": format!("src/module_{i}.rs"),
                    "lines": 40 + i % 300,
                    "summary": "read 2 functions, 1 test; no errors",
                },
            });
            let args = format!(
                r#"{{"path":"src/module_{i}.rs","query":"where is step {i} handled","limit":{},"include_tests":true}}"#,
                i % 100
            );
            StepInput {
                observation,
                tool: ToolRef {
                    name: Label::new(name).expect("tool name"),
                    version: Label::new(version).expect("tool version"),
                },
                args: args.into_bytes(),
                admission: Admission {
                    decision: if i.is_multiple_of(17) { AllowDeny::Deny } else { AllowDeny::Allow },
                    policy_set_version: Digest::of(b"policy-set v12"),
                    rule_ids: (0..1 + i % 3)
                        .map(|r| Label::new(pick(&RULES, i + r * 3)).expect("rule id"))
                        .collect(),
                },
                lane: (!i.is_multiple_of(4)).then(|| lane.clone()),
            }
        })
        .collect()
}

/// A store on disk, the writer's options and a counter for fresh run ids.
struct Bench {
    store: Arc<dyn Store>,
    options: RecorderOptions,
    key: SigningKey,
    runs: u64,
}

impl Bench {
    fn new(dir: &Path, name: &str, durability: Durability, retain: bool) -> Self {
        let store = SqliteStore::open(dir.join(format!("{name}.db")), OpenMode::CreateIfMissing)
            .expect("store");
        Self {
            store: Arc::new(store),
            options: RecorderOptions {
                durability,
                content_retention: retain.then(|| jiff::SignedDuration::from_hours(24 * 7)),
            },
            key: SigningKey::generate(&mut rand_core::OsRng, "cairn-bench").expect("key"),
            runs: 0,
        }
    }

    /// Opens a fresh run (untimed: it is one commit of its own), then times writing every
    /// step and closing the run with its terminal record and signed checkpoint.
    fn timed_run(&mut self, steps: &[StepInput]) -> (Duration, RunId) {
        self.runs += 1;
        let tenant: TenantId = "acme".parse().expect("tenant");
        let task: TaskId = "task-triage-backlog".parse().expect("task");
        let run: RunId = format!("run-bench-{:06}", self.runs).parse().expect("run");
        let mut recorder = Recorder::open(
            Arc::clone(&self.store),
            Arc::new(SystemClock),
            (tenant, task, run.clone()),
            self.options,
        )
        .expect("open run");
        let start = Instant::now();
        for step in steps {
            recorder.observe(&step.observation).expect("observe");
            let call = ToolCall {
                tool: step.tool.clone(),
                args: &step.args,
                lane: step.lane.clone(),
            };
            recorder
                .record_step(&call, step.admission.clone())
                .expect("record step");
        }
        recorder
            .terminate(TerminationReason::Completed, None, &self.key)
            .expect("terminate");
        (start.elapsed(), run)
    }
}

/// [`bench_recorder`] with content retention off, then on.
fn bench_recorders(
    group: &mut BenchmarkGroup<'_, WallTime>,
    dir: &Path,
    durability: Durability,
    steps: &[StepInput],
) {
    for (id, retain) in [
        ("recorder/retention_off", false),
        ("recorder/retention_on", true),
    ] {
        let bench = Bench::new(dir, id.replace('/', "-").as_str(), durability, retain);
        bench_recorder(group, id, bench, steps);
    }
}

/// Writes the whole recorder path for `steps` as one benchmark.
fn bench_recorder(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut bench: Bench,
    steps: &[StepInput],
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| (0..iters).map(|_| bench.timed_run(steps).0).sum());
    });
}

/// The canonical preimages of the records one `batch` run writes, read back from a store.
fn preimages_of_one_run(dir: &Path, steps: &[StepInput]) -> Vec<Vec<u8>> {
    let mut bench = Bench::new(dir, "preimages", Durability::DEFAULT_BATCH, false);
    let (_, run) = bench.timed_run(steps);
    let tenant: TenantId = "acme".parse().expect("tenant");
    let rows = bench.store.rows(&tenant, &run).expect("rows");
    let preimages: Vec<Vec<u8>> = rows
        .into_iter()
        .map(|row| row.expect("record").preimage_bytes().expect("preimage"))
        .collect();
    let bytes: usize = preimages.iter().map(Vec::len).sum();
    eprintln!(
        "append fixture: {} records per run, mean preimage {} bytes",
        preimages.len(),
        bytes / preimages.len().max(1)
    );
    preimages
}

fn batch(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let steps = inputs(BATCH_STEPS);
    let preimages = preimages_of_one_run(dir.path(), &steps);
    let mut group = c.benchmark_group("append_batch");
    group.throughput(Throughput::Elements(preimages.len() as u64));
    // Flat sampling: a run takes a few hundred milliseconds, too long for criterion's default
    // linear sampling to fit in a reasonable measurement time.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("sha256_same_bytes", |b| {
        b.iter(|| {
            for preimage in &preimages {
                black_box(Sha256::digest(black_box(preimage.as_slice())));
            }
        });
    });
    bench_recorders(&mut group, dir.path(), Durability::DEFAULT_BATCH, &steps);
    group.finish();
}

/// A file that receives one record-sized write and one `fdatasync` per commit.
fn fsync_per_commit(
    group: &mut BenchmarkGroup<'_, WallTime>,
    dir: &Path,
    overwrite: bool,
    commits: usize,
    bytes: usize,
) {
    let id = if overwrite {
        "fsync_per_commit/overwrite"
    } else {
        "fsync_per_commit/append"
    };
    let mut file: File = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(dir.join(id.replace('/', "-")))
        .expect("baseline file");
    let buffer = vec![b'x'; bytes];
    group.bench_function(id, |b| {
        b.iter(|| {
            for _ in 0..commits {
                if overwrite {
                    file.seek(SeekFrom::Start(0)).expect("seek");
                }
                file.write_all(&buffer).expect("write");
                file.sync_data().expect("fdatasync");
            }
        });
    });
}

fn sync(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let steps = inputs(SYNC_STEPS);
    let commits = SYNC_STEPS + 1;
    // The baseline writes one record's canonical bytes per commit. SQLite itself writes whole
    // pages to its WAL (several per commit), which is part of what the ratio measures.
    let record_bytes = preimages_of_one_run(dir.path(), &steps)
        .first()
        .map_or(700, Vec::len);
    let mut group = c.benchmark_group("append_sync");
    group.throughput(Throughput::Elements(commits as u64));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    fsync_per_commit(&mut group, dir.path(), false, commits, record_bytes);
    fsync_per_commit(&mut group, dir.path(), true, commits, record_bytes);
    bench_recorders(&mut group, dir.path(), Durability::Sync, &steps);
    group.finish();
}

criterion_group!(benches, batch, sync);
criterion_main!(benches);
