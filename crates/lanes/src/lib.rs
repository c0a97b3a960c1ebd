//! Responsibility lanes (SPEC §7): restoring authority without silently changing its topology.
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
};
pub use config::{
    LANES_SCHEMA_VERSION, Lane, LaneConfig, LaneConfigError, LaneSpec, LaneStatus, ScopeSpec,
    Validity,
};
