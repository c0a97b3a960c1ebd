//! The integration tests of `cairn-cli`, one module per subject, linked into one binary
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
mod bundle;
mod canary;
mod continuity;
mod cursor_payloads;
mod decisions;
mod demo;
mod deployment;
mod eval;
mod hook_client;
mod hook_faults;
mod hook_hostile_input;
mod hook_hostile_input_property;
mod hook_inconsistent_answers;
mod hook_resident;
mod hook_sessions;
mod hooks_install;
mod hooks_install_kinds;
mod inspect_continuity;
mod interop;
mod interop_mutations;
mod keys;
mod mcp_proxy;
mod policy;
mod post_tool_use_corpus;

mod postgres;
mod proof;
mod real_hosts;
mod reconcile;
mod service_client;
mod service_demo;
mod service_durability;
mod service_logs;
mod service_policies;
mod service_tenant_policies;
mod store;
mod tamper;
mod tokens;
mod ui;
