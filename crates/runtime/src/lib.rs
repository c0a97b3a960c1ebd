//! The runtime façade: opens runs, records steps, boundaries and terminal records, and closes
//! runs with signed checkpoints. Clock, keys and store are injected.

pub mod keyring;
