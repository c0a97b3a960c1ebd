//! The MCP gateway's integration tests: the gateway in front of real MCP servers from the npm
//! registry (`tests/mcp`: `server-everything`, `server-filesystem`), driven by an `rmcp`
//! client in the test, with a project's real store and policies.

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
mod gateway;
mod sessions;
