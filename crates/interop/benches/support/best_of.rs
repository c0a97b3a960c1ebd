//! The best-of-batches figure the VCE 0.1 and RLC 0.1 benches print after criterion's (the
//! RLC bench includes this file by path). On a shared machine a busy or migrated core only
//! ever adds time, so the fastest of many short batches is the steadiest estimate of what one
//! core does when it is ours; two routines timed in interleaved batches share the conditions.

use std::hint::black_box;
use std::time::Instant;

/// Calls per batch.
pub const BATCH: u32 = 2_000;

/// The fastest per-call time, in seconds, of `a` and of `b` over 50 interleaved batches of
/// [`BATCH`] calls each.
pub fn best_of_batches<A, B>(mut a: impl FnMut() -> A, mut b: impl FnMut() -> B) -> (f64, f64) {
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..50 {
        let start = Instant::now();
        for _ in 0..BATCH {
            black_box(a());
        }
        best.0 = best.0.min(start.elapsed().as_secs_f64() / f64::from(BATCH));
        let start = Instant::now();
        for _ in 0..BATCH {
            black_box(b());
        }
        best.1 = best.1.min(start.elapsed().as_secs_f64() / f64::from(BATCH));
    }
    best
}

/// Prints the figure: `what`'s decisions per second and its ratio to the hash of `baseline`.
pub fn report(what: &str, baseline: &str, (decide, hash): (f64, f64)) {
    println!(
        "{what}: best of 50 batches of {BATCH}: decide {:.2} us ({:.0}/s); one SHA-256 of {baseline}: {:.2} us; ratio {:.2}",
        decide * 1e6,
        1.0 / decide,
        hash * 1e6,
        decide / hash
    );
}
