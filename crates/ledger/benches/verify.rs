//! Verification throughput (acceptance point 6): `verify_run` over a sealed, checkpointed run
//! of 10,000 records held in memory, the same through the JSONL evidence-bundle path, and the
//! baseline every figure is divided by — one raw SHA-256 per record preimage, measured in the
//! same run because the benchmark machines are shared and noisy.
//!
//! The `verify_breakdown` group times the parts of verification separately (RFC 8785
//! canonicalisation of the preimages, the Merkle root, bundle parsing) so that a missed target
//! can be attributed without a profiler.
//!
//! Run with `cargo bench -p cairn-ledger --bench verify`.

#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "benchmark set-up: a failure is a broken benchmark, reported by the panic"
)]
#![allow(
    missing_docs,
    reason = "`criterion_group!` generates an undocumented public function"
)]

use std::hint::black_box;
use std::time::Duration;

use cairn_core::{Digest, LaneId, RunId, TaskId, TenantId, Timestamp};
use cairn_ledger::bundle::{CheckpointLine, parse_bundle};
use cairn_ledger::checkpoint::{Checkpoint, sign};
use cairn_ledger::keys::{SigningKey, TrustedKeys};
use cairn_ledger::merkle::{RootBuilder, leaf_hash};
use cairn_ledger::record::{
    Admission, AllowDeny, ArgsRef, DraftEvent, IntentRecord, Label, RecordDraft, Termination,
    TerminationReason, ToolRef,
};
use cairn_ledger::store::StoredRow;
use cairn_ledger::{CheckpointPolicy, verify_run};
use cairn_test_support::workload::{RULES, TOOLS};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand_core::{CryptoRng, RngCore};
use sha2::{Digest as _, Sha256};

/// Records in the benchmarked run: 9,999 steps and the terminal record.
const RECORDS: usize = 10_000;

/// A deterministic stand-in for a random generator, so the checkpoint key (and with it the
/// note's bytes) is the same in every run. Never use this outside a benchmark.
struct FixedSeed([u8; 32]);

impl RngCore for FixedSeed {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }

    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for (byte, seed) in dest.iter_mut().zip(self.0.iter().cycle()) {
            *byte = *seed;
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for FixedSeed {}

/// The run under test: its identity, rows, the exported bundle and the trusted key.
struct Fixture {
    tenant: TenantId,
    run: RunId,
    rows: Vec<StoredRow>,
    note: String,
    bundle: String,
    trusted: TrustedKeys,
    preimages: Vec<Vec<u8>>,
}

/// The kind-specific content of step `i`: a tool call with its admission.
fn step_event(i: usize) -> DraftEvent {
    let (name, version) = TOOLS[i % TOOLS.len()];
    let rule_count = 1 + i % 3;
    let rule_ids = (0..rule_count)
        .map(|r| Label::new(RULES[(i + r * 3) % RULES.len()]).expect("rule id"))
        .collect();
    // Arguments as an executor would submit them; only their digest and size are recorded.
    let args = format!(
        r#"{{"path":"src/module_{i}.rs","query":"step {i}","limit":{}}}"#,
        i % 100
    );
    DraftEvent::Step {
        tool: ToolRef {
            name: Label::new(name).expect("tool name"),
            version: Label::new(version).expect("tool version"),
        },
        args: ArgsRef {
            digest: Digest::of(args.as_bytes()),
            size: args.len() as u64,
        },
        admission: Admission {
            decision: if i.is_multiple_of(17) {
                AllowDeny::Deny
            } else {
                AllowDeny::Allow
            },
            policy_set_version: Digest::of(b"policy-set v12"),
            rule_ids,
        },
        agent: None,
    }
}

/// Seals a run of [`RECORDS`] records the way the runtime's recorder does, signs its
/// checkpoint and exports it as a bundle.
fn fixture() -> Fixture {
    let tenant: TenantId = "acme".parse().expect("tenant");
    let run: RunId = "run-2026-11-30-bench".parse().expect("run");
    let task: TaskId = "task-triage-backlog".parse().expect("task");
    let lane: LaneId = "lane-backend".parse().expect("lane");
    let start = Timestamp::from_unix_micros(1_795_932_000_000_000).expect("timestamp");
    let mut records: Vec<IntentRecord> = Vec::with_capacity(RECORDS);
    let mut prev = None;
    for i in 0..RECORDS {
        let event = if i + 1 == RECORDS {
            DraftEvent::Terminal(Termination {
                reason: TerminationReason::Completed,
                detail: None,
            })
        } else {
            step_event(i)
        };
        let observation = format!(r#"{{"tool_result":{i},"status":"ok"}}"#);
        let draft = RecordDraft {
            tenant_id: tenant.clone(),
            run_id: run.clone(),
            task_id: task.clone(),
            event,
            lane_id: (!i.is_multiple_of(4)).then(|| lane.clone()),
            observation_digest: Some(Digest::of(observation.as_bytes())),
            recorded_at: Timestamp::from_unix_micros(start.unix_micros() + 1_337 * i as i64)
                .expect("timestamp"),
        };
        let record = IntentRecord::seal(draft, i as u64, prev).expect("seal");
        prev = Some(record.digest);
        records.push(record);
    }

    let mut tree = RootBuilder::new();
    for record in &records {
        tree.push(leaf_hash(record.digest.as_bytes()));
    }
    let checkpoint = Checkpoint {
        origin: Checkpoint::origin_for(&tenant, &run),
        size: tree.len(),
        root: tree.root(),
    };
    let key = SigningKey::generate(&mut FixedSeed([7; 32]), "cairn-bench").expect("key");
    let note = sign(&checkpoint, &key).expect("sign").into_note();
    let trusted = TrustedKeys::new(vec![key.verifier_key()]);

    let mut bundle = String::new();
    for record in &records {
        bundle.push_str(&record.to_json_line().expect("json line"));
        bundle.push('\n');
    }
    bundle.push_str(&CheckpointLine::new(tenant.clone(), run.clone(), note.clone()).to_json_line());
    bundle.push('\n');

    let preimages = records
        .iter()
        .map(|r| r.preimage_bytes().expect("preimage"))
        .collect();
    Fixture {
        tenant,
        run,
        rows: records.into_iter().map(Ok).collect(),
        note,
        bundle,
        trusted,
        preimages,
    }
}

/// Asserts that the fixture verifies before anything is timed: a benchmark of a failing
/// verification would measure the diagnostic pass instead.
fn check(fixture: &Fixture) {
    let report = verify_run(
        &fixture.tenant,
        &fixture.run,
        &fixture.rows,
        Some(&fixture.note),
        &fixture.trusted,
        CheckpointPolicy::Required,
    );
    assert!(
        report.is_intact(),
        "fixture does not verify: {:?}",
        report.findings
    );
    let parsed = parse_bundle(&fixture.bundle).expect("bundle");
    assert_eq!(parsed.rows.len(), RECORDS);
    let bytes: usize = fixture.preimages.iter().map(Vec::len).sum();
    eprintln!(
        "verify fixture: {RECORDS} records, mean preimage {} bytes, bundle {} bytes",
        bytes / RECORDS,
        fixture.bundle.len()
    );
}

fn verification(c: &mut Criterion) {
    let fixture = fixture();
    check(&fixture);
    let mut group = c.benchmark_group("verify");
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(8));

    group.bench_function("sha256_same_bytes", |b| {
        b.iter(|| {
            for preimage in &fixture.preimages {
                black_box(Sha256::digest(black_box(preimage.as_slice())));
            }
        });
    });
    group.bench_function("verify_run", |b| {
        b.iter(|| {
            verify_run(
                &fixture.tenant,
                &fixture.run,
                black_box(&fixture.rows),
                Some(&fixture.note),
                &fixture.trusted,
                CheckpointPolicy::Required,
            )
        });
    });
    group.bench_function("bundle_parse_and_verify", |b| {
        b.iter(|| {
            let parsed = parse_bundle(black_box(&fixture.bundle)).expect("bundle");
            verify_run(
                &parsed.tenant_id,
                &parsed.run_id,
                &parsed.rows,
                parsed.checkpoint_note.as_deref(),
                &fixture.trusted,
                CheckpointPolicy::Required,
            )
        });
    });
    group.finish();

    let mut parts = c.benchmark_group("verify_breakdown");
    parts.throughput(Throughput::Elements(RECORDS as u64));
    parts.sample_size(20);
    parts.warm_up_time(Duration::from_secs(1));
    parts.measurement_time(Duration::from_secs(8));
    parts.bench_function("jcs_preimage", |b| {
        b.iter(|| {
            for row in &fixture.rows {
                let record = row.as_ref().expect("record");
                black_box(record.preimage_bytes().expect("preimage"));
            }
        });
    });
    // Not part of verification: one plain `serde_json` pass over the same records, the cost
    // a single-pass canonical writer for the fixed preimage schema could approach.
    parts.bench_function("serde_json_plain_serialize", |b| {
        b.iter(|| {
            for row in &fixture.rows {
                let record = row.as_ref().expect("record");
                black_box(serde_json::to_vec(record).expect("json"));
            }
        });
    });
    parts.bench_function("merkle_root", |b| {
        b.iter(|| {
            let mut tree = RootBuilder::new();
            for row in &fixture.rows {
                let record = row.as_ref().expect("record");
                tree.push(leaf_hash(record.digest.as_bytes()));
            }
            tree.root()
        });
    });
    parts.bench_function("bundle_parse", |b| {
        b.iter(|| parse_bundle(black_box(&fixture.bundle)).expect("bundle"));
    });
    parts.finish();
}

criterion_group!(benches, verification);
criterion_main!(benches);
