//! Issue 4, point 5: the rehydration decision's latency for an already parsed envelope and
//! the throughput of parsing and validating envelopes, beside one SHA-256 of the summary
//! measured in the same run.
//!
//! Run: `cargo bench -p cairn-continuity --bench rehydrate -- --noplot`

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    missing_docs,
    reason = "bench code"
)]

use std::hint::black_box;

use cairn_continuity::{
    ContinuityState, decide_validated, parse_envelope, summary_sha256, validate_envelope,
};
use cairn_core::Timestamp;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const ENVELOPE: &str = include_str!("../tests/cases/ok-wrapped/envelope.json");
const STATE: &str = include_str!("../tests/cases/ok-wrapped/state.json");
const SUMMARY: &str = include_str!("../tests/cases/ok-wrapped/summary.txt");

fn rehydrate(c: &mut Criterion) {
    let now: Timestamp = "2026-07-21T12:00:00Z".parse().unwrap();
    let state = ContinuityState::from_json(STATE).unwrap();
    let envelope = parse_envelope(ENVELOPE).unwrap();
    let value: serde_json::Value = serde_json::from_str(ENVELOPE).unwrap();
    let digest = summary_sha256(SUMMARY);
    let decision = decide_validated(&envelope, &state, &digest, now);
    assert_eq!(decision.reason().as_str(), "continuity_validated");

    let mut group = c.benchmark_group("rehydrate");
    group.throughput(Throughput::Elements(1));
    group.bench_function("sha256_of_summary", |b| {
        b.iter(|| summary_sha256(black_box(SUMMARY)));
    });
    group.bench_function("decide_parsed_envelope", |b| {
        b.iter(|| {
            decide_validated(
                black_box(&envelope),
                black_box(&state),
                black_box(&digest),
                now,
            )
        });
    });
    group.bench_function("validate_envelope_value", |b| {
        b.iter(|| validate_envelope(black_box(&value)).is_ok());
    });
    group.bench_function("parse_and_validate_envelope_text", |b| {
        b.iter(|| parse_envelope(black_box(ENVELOPE)).is_ok());
    });
    group.finish();
}

criterion_group!(benches, rehydrate);
criterion_main!(benches);
