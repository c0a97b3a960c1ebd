//! One schema check of the published VCE 0.1 example envelope: through [`Schema::is_valid`]
//! (the quick path), beside the stock `jsonschema` crate validator of the same schema and one
//! SHA-256 over the example's bytes, all measured in the same run.
//!
//! Run: `cargo bench -p cairn-pyschema --bench schema -- --noplot`

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    missing_docs,
    reason = "bench code"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

const SCHEMA: &str =
    include_str!("../../continuity/schemas/vce-0.1/continuation-envelope.schema.json");
const EXAMPLE: &str = include_str!(
    "../../continuity/tests/vce_cases/ref-task-verification-remains-pending-after-restore/envelope.json"
);

fn schema(c: &mut Criterion) {
    let ours = cairn_pyschema::compile("continuation-envelope", SCHEMA).unwrap();
    let stock =
        jsonschema::draft202012::new(&serde_json::from_str::<Value>(SCHEMA).unwrap()).unwrap();
    let example: Value = serde_json::from_str(EXAMPLE).unwrap();
    assert!(ours.is_valid(&example) && stock.is_valid(&example));

    let mut group = c.benchmark_group("schema");
    group.throughput(Throughput::Elements(1));
    group.bench_function("sha256_of_example_bytes", |b| {
        b.iter(|| Sha256::digest(black_box(EXAMPLE.as_bytes())));
    });
    group.bench_function("stock_jsonschema_is_valid", |b| {
        b.iter(|| stock.is_valid(black_box(&example)));
    });
    group.bench_function("pyschema_is_valid", |b| {
        b.iter(|| ours.is_valid(black_box(&example)));
    });
    group.finish();
}

criterion_group!(benches, schema);
criterion_main!(benches);
