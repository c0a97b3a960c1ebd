//! The integration tests of `cairn-store-postgres`, one module per subject, linked into one
//! binary. They need a PostgreSQL server: `CAIRN_TEST_DATABASE_URL` names it (`.ci/run` sets
//! it when one answers on 127.0.0.1:5432); without it every test says it is skipped.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is the test failing"
)]

mod conformance;
mod copy;
mod crash;
mod faults;
mod many_writers;
mod schema;
mod writing;
