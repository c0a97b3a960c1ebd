//! The runtime façade: opens runs, records steps, boundaries and terminal records, and closes
//! runs with signed checkpoints. Clock, keys and store are injected; this crate may touch the
//! file system (key files) but holds no protocol knowledge.

pub mod boundary;
pub mod decision_files;
pub mod effects;
pub mod envelopes;
pub mod error;
pub mod executor;
pub mod files;
pub mod keyring;
pub mod lanes;
pub mod layout;
pub mod project;
pub mod protect;
pub mod reconcile;
pub mod recorder;

pub use error::RuntimeError;
pub use executor::{
    Admitted, Arguments, CallError, Denial, EffectOutcome, Executor, Gate, GateRequest,
    GateVerdict, Permit, UnreadableArguments,
};
pub use recorder::{ClosedRun, Durability, Receipt, Recorder, RecorderOptions, ToolCall};
