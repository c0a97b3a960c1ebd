//! The tamper-evident intent ledger: the `cairn.intent/v1` record, chain rules, RFC 6962
//! Merkle checkpoints signed as C2SP signed notes, verification, inclusion proofs, evidence
//! bundles and the `Store` trait.
//!
//! This crate is pure: it never touches disk, network, clock or randomness. Stores,
//! key files and clocks live in the outer crates and are passed in.

pub mod bundle;
pub mod checkpoint;
pub mod keys;
pub mod merkle;
pub mod proof;
pub mod record;
pub mod store;
pub mod verify;

pub use record::{
    Admission, AllowDeny, ArgsRef, BoundaryEvent, DraftEvent, IntentRecord, Label, RecordDraft,
    RecordKind, Termination, TerminationReason, ToolRef,
};
pub use store::{Store, StoreError};
pub use verify::{CheckpointPolicy, RunReport, TamperKind, VerifiedChain, verify_run};
