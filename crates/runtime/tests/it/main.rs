//! The integration tests of `cairn-runtime`, one module per subject, linked into one binary
//! (linking is most of the suite's build time).

// Helpers run only inside tests, where a failed expectation is the test failing; clippy's
// `allow-*-in-tests` settings do not reach helpers outside `#[test]` functions.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is the test failing"
)]

mod common;

mod approvals;
mod boundary;
mod crash;
mod effects;
mod executor;
mod gate_hostile_calls;
mod lanes;
mod lifecycle;
mod record_before_execute;
mod recorder;
mod tamper_property;
