//! The workspace's layout, checked (see `cairn_test_support::architecture`).

// Helpers run only inside tests, where a failed expectation is the test failing; clippy's
// `allow-*-in-tests` settings do not reach helpers outside `#[test]` functions.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is the test failing"
)]

mod architecture;
