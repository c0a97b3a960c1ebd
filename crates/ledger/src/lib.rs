//! The tamper-evident intent ledger: the `cairn.intent/v1` record, chain rules, RFC 6962
//! Merkle checkpoints signed as C2SP signed notes, verification, inclusion proofs, evidence
//! bundles and the `Store` trait.
//!
//! A run's checkpoint, signed and opened with the trusted keys:
//!
//! ```
//! use cairn_ledger::checkpoint::{self, Checkpoint};
//! use cairn_ledger::keys::{SigningKey, TrustedKeys};
//! use cairn_ledger::merkle;
//!
//! let key = SigningKey::generate(&mut rand_core::OsRng, "cairn.example")?;
//! let leaves = [merkle::leaf_hash(b"record 0"), merkle::leaf_hash(b"record 1")];
//! let run = Checkpoint {
//!     origin: Checkpoint::origin_for(&"acme".parse()?, &"run-1".parse()?),
//!     size: 2,
//!     root: merkle::root(&leaves),
//! };
//! let signed = checkpoint::sign(&run, &key)?;
//!
//! // Anyone holding the public key can check it offline; another key cannot vouch for it.
//! let verified = checkpoint::open(signed.note(), &TrustedKeys::new(vec![key.verifier_key()]))?;
//! assert_eq!(verified.checkpoint(), &run);
//! let other = SigningKey::generate(&mut rand_core::OsRng, "cairn.other")?;
//! assert!(checkpoint::open(signed.note(), &TrustedKeys::new(vec![other.verifier_key()])).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! This crate is pure: it never touches disk, network, clock or randomness. Stores,
//! key files and clocks live in the outer crates and are passed in.

pub mod bundle;
pub mod checkpoint;
pub mod copy;
pub mod keys;
pub mod location;
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
