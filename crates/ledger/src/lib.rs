//! The tamper-evident intent ledger: the `cairn.intent/v1` record, chain rules, RFC 6962
//! Merkle checkpoints signed as C2SP signed notes, verification and the `Store` trait.
//!
//! This crate is pure: it never touches disk, network, clock or randomness. Stores,
//! key files and clocks live in the outer crates and are passed in.

pub mod checkpoint;
pub mod keys;
pub mod merkle;
