//! Responsibility lanes (SPEC §7): restoring authority without silently changing its topology.
//!
//! A verification lane admits its test command and refuses edits under `src/`:
//!
//! ```
//! use cairn_lanes::{LaneBook, LaneCall, LaneConfig, LaneVerdict};
//! use serde_json::json;
//!
//! let config = json!({
//!     "schema_version": "cairn.lanes/v1",
//!     "active_lane_id": "verification",
//!     "lanes": [{
//!         "lane_id": "verification", "owner_ref": "agent:verifier", "objective": "verify",
//!         "mutation_scope": {"allowed_refs": ["capability:verify"], "denied_refs": ["file:src/*"]}
//!     }],
//!     "tool_bindings": {
//!         "fs.edit": {"effect_refs": ["file:{path}"]},
//!         "tests.run": {"effect_refs": ["capability:verify"]}
//!     }
//! });
//! let book = LaneBook::new(LaneConfig::from_json(&config.to_string())?);
//! let call = |tool, args| LaneCall {
//!     principal: "agent:verifier", lane: None, tool, args, current: None, resolve: None,
//! };
//! // The verifier lane runs the tests but cannot edit the code it verifies.
//! let tests = book.check(&call("tests.run", None));
//! assert!(matches!(tests, LaneVerdict::Inside { .. }));
//! let edit = json!({"path": "src/lib.rs"});
//! assert!(matches!(book.check(&call("fs.edit", Some(&edit))), LaneVerdict::Denied { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`config`] reads a project's lane declarations (`cairn.lanes/v1`): lanes in RLC 0.1
//!   field names, nesting, what each was validated against, and the tool capability
//!   [`binding`] that maps a call to its effect refs ([`refs`]).
//! - [`book`] is the lanes' run-time state, rebuilt from durable lane events, and the check
//!   every tool call passes: scope, ownership, done condition, latest ruling, revalidation.
//!
//! The crate is pure: no I/O and no clock; callers pass documents and times in. The published
//! RLC 0.1 format itself (validation as its reference decides, lane digests) is in
//! `cairn-interop`; lanes here are digested the same way.

pub mod binding;
pub mod book;
pub mod config;
pub mod refs;

pub use book::{
    HANDOFF_SCHEMA_VERSION, Handoff, LaneBook, LaneCall, LaneEvent, LaneEventError, LaneVerdict,
    UNBOUND_TOOL_RULE,
};
pub use config::{
    LANES_SCHEMA_VERSION, Lane, LaneConfig, LaneConfigError, LaneSpec, LaneStatus, ScopeSpec,
    Validity,
};
