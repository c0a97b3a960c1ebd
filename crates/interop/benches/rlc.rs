//! RLC 0.1 decision throughput on the published accepted fixture with its restore results:
//! decisions from an already-parsed value (schemas compiled once), with and without the VCE
//! cross-checks, parse + decide from text, and a same-run baseline of one SHA-256 over the
//! fixture's bytes so figures from different machines can be compared.
//!
//! After criterion's figures it prints the best of 50 timed batches of decisions and of
//! hashes, interleaved: on a shared machine a busy or migrated core only ever adds time, so the
//! fastest batch is the steadiest estimate of what one core does when it is ours.
//!
//! `cargo bench -p cairn-lanes --bench rlc -- --noplot`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs,
    reason = "benchmark code"
)]

use std::hint::black_box;
use std::path::PathBuf;

use cairn_interop::rlc::{RlcDecision, RlcValidator, split_document};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

#[path = "support/best_of.rs"]
mod best_of;

/// The accepted fixture, taken from the conformance case that holds it verbatim.
fn fixture_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rlc_cases/suite-03-accepted-fixture-passes-lane-restore/fixture.json");
    std::fs::read_to_string(path).expect("fixture")
}

fn vce_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rlc_cases/suite-03-accepted-fixture-passes-lane-restore/vce.json");
    std::fs::read_to_string(path).expect("vce")
}

fn bench(c: &mut Criterion) {
    let validator = RlcValidator::new().expect("schemas compile");
    let text = fixture_text();
    let fixture: Value = serde_json::from_str(&text).expect("json");
    let vce: Value = serde_json::from_str(&vce_text()).expect("json");
    let (extension, restore) = split_document(&fixture);
    assert_eq!(
        validator.check(extension, restore, None).decision,
        RlcDecision::Passed
    );
    assert_eq!(
        validator.check(extension, restore, Some(&vce)).decision,
        RlcDecision::Passed
    );

    let mut group = c.benchmark_group("rlc");
    group.throughput(Throughput::Elements(1));
    group.bench_function("decide_parsed", |b| {
        b.iter(|| validator.check(black_box(extension), black_box(restore), None));
    });
    group.bench_function("decide_parsed_with_vce", |b| {
        b.iter(|| {
            validator.check(
                black_box(extension),
                black_box(restore),
                Some(black_box(&vce)),
            )
        });
    });
    group.bench_function("parse_and_decide", |b| {
        b.iter(|| {
            let doc: Value = serde_json::from_str(black_box(&text)).expect("json");
            let (extension, restore) = split_document(&doc);
            validator.check(extension, restore, None).decision
        });
    });
    group.bench_function("baseline_sha256_of_fixture_bytes", |b| {
        b.iter(|| Sha256::digest(black_box(text.as_bytes())));
    });
    group.finish();

    best_of::report(
        "rlc-accepted.json",
        "the fixture",
        best_of::best_of_batches(
            || validator.check(black_box(extension), black_box(restore), None),
            || Sha256::digest(black_box(text.as_bytes())),
        ),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
