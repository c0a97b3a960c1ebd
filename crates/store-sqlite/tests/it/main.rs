//! The integration tests of `cairn-store-sqlite`, one module per subject, linked into one binary
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

mod conformance;
mod store;
