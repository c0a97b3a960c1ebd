//! VCE 0.1 decisions per second for the published example with its restore results: from
//! already parsed values (schemas compiled once), and from text (parse both documents, then
//! decide), beside one SHA-256 over the example's bytes measured in the same run.
//!
//! After criterion's figures it prints the best of 50 timed batches of decisions and of
//! hashes, interleaved: on a shared machine a busy or migrated core only ever adds time, so the
//! fastest batch is the steadiest estimate of what one core does when it is ours.
//!
//! Run: `cargo bench -p cairn-continuity --bench vce -- --noplot`

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    missing_docs,
    reason = "bench code"
)]

use std::hint::black_box;

use cairn_interop::vce::{VceDecision, VceValidator};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

#[path = "support/best_of.rs"]
mod best_of;

const CASE: &str = "ref-task-verification-remains-pending-after-restore";
const ENVELOPE: &str = include_str!(
    "../tests/vce_cases/ref-task-verification-remains-pending-after-restore/envelope.json"
);
const RESTORE: &str = include_str!(
    "../tests/vce_cases/ref-task-verification-remains-pending-after-restore/restore.json"
);

fn vce(c: &mut Criterion) {
    let validator = VceValidator::new().unwrap();
    let envelope: Value = serde_json::from_str(ENVELOPE).unwrap();
    let restore: Value = serde_json::from_str(RESTORE).unwrap();
    let report = validator.check(&envelope, Some(&restore));
    assert_eq!(report.decision, VceDecision::ReviewRequired, "{CASE}");

    let mut group = c.benchmark_group("vce");
    group.throughput(Throughput::Elements(1));
    group.bench_function("sha256_of_example_bytes", |b| {
        b.iter(|| Sha256::digest(black_box(ENVELOPE.as_bytes())));
    });
    let map = envelope.as_object().unwrap();
    group.bench_function("canonical_form_of_example", |b| {
        b.iter(|| {
            cairn_interop::sort_keys::sort_keys_utf8_v1_without(black_box(map), "envelope_digest")
                .unwrap()
        });
    });
    group.bench_function("decide_parsed_example_with_restore", |b| {
        b.iter(|| {
            validator
                .check(black_box(&envelope), Some(black_box(&restore)))
                .decision
        });
    });
    group.bench_function("parse_and_decide_example_text", |b| {
        b.iter(|| {
            let envelope: Value = serde_json::from_str(black_box(ENVELOPE)).unwrap();
            let restore: Value = serde_json::from_str(black_box(RESTORE)).unwrap();
            validator.check(&envelope, Some(&restore)).decision
        });
    });
    group.finish();

    best_of::report(
        "vce example + restore",
        "the example",
        best_of::best_of_batches(
            || validator.check(black_box(&envelope), Some(black_box(&restore))),
            || Sha256::digest(black_box(ENVELOPE.as_bytes())),
        ),
    );
}

criterion_group!(benches, vce);
criterion_main!(benches);
