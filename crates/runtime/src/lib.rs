//! The runtime façade: opens runs, records steps, boundaries and terminal records, and closes
//! runs with signed checkpoints. Clock, keys and store are injected; this crate may touch the
//! file system (key files) but holds no protocol knowledge.
//!
//! A call is admitted (decided and recorded), then executed with the permit admission gave,
//! what the model is shown next is observed, and the run is closed with a signed checkpoint:
//!
//! ```
//! use std::sync::Arc;
//!
//! use cairn_core::SystemClock;
//! use cairn_ledger::keys::SigningKey;
//! use cairn_ledger::record::{Label, TerminationReason, ToolRef};
//! use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
//! use cairn_runtime::{Admitted, Durability, Executor, Recorder, RecorderOptions, ToolCall};
//! use cairn_store_sqlite::{OpenMode, SqliteStore};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("cairn.db"), OpenMode::CreateIfMissing)?;
//! let options = RecorderOptions { durability: Durability::Sync, content_retention: None };
//! let ids = ("acme".parse()?, "task-1".parse()?, "run-1".parse()?);
//! let recorder = Recorder::open(Arc::new(store), Arc::new(SystemClock), ids, options)?;
//!
//! // One policy: reading files is allowed; everything else is denied by default.
//! let tools = r#"{"tools": {"files.read": {"args": {"path": "String"}}}}"#;
//! let catalog = ToolCatalog::from_json("tools.json", tools)?;
//! let policy = r#"@id("read-ok") permit(principal, action == Action::"files.read", resource);"#;
//! let gate = PolicyGate::load(&[PolicySource::new("policy.cedar", policy)], &catalog)?;
//! let mut executor = Executor::new(recorder, Arc::new(gate), "agent");
//!
//! let call = ToolCall {
//!     tool: ToolRef { name: Label::new("files.read")?, version: Label::new("1")? },
//!     args: br#"{"path": "README.md"}"#,
//!     lane: None,
//! };
//! // The intent record is committed before `admit` returns.
//! let Admitted::Permitted(permit) = executor.admit(&call)? else {
//!     return Err("the policy allows reading".into());
//! };
//! let result = executor.execute(permit, || Ok::<_, String>(json!({"bytes": 42})))?;
//! assert_eq!(result, Ok(json!({"bytes": 42})));
//! executor.observe(&json!({"user": "thanks"}))?;
//!
//! let key = SigningKey::generate(&mut rand_core::OsRng, "cairn.example")?;
//! let closed = executor.terminate(TerminationReason::Completed, None, &key)?;
//! assert_eq!(closed.terminal.step_index, 1); // step 0 the call, step 1 the terminal record
//! # Ok(())
//! # }
//! ```

pub mod approvals;
pub mod boundary;
pub mod config;
pub mod content;
pub mod crossing;
pub mod decision_files;
pub mod duration;
pub mod effects;
pub mod envelopes;
pub mod error;
pub mod executor;
pub mod files;
pub mod keyring;
pub mod lanes;
pub mod layout;
pub mod lifecycle;
pub mod protect;
pub mod reconcile;
pub mod recorder;
pub mod restrictions;
pub mod stores;
pub mod verdict;

/// The ledger's vocabulary as the edges use it — records, run listings and costs, evidence
/// (bundles, proofs, verification), keys — so that the hooks, the service and the gateway
/// reach the ledger only through the runtime. How runs are opened, resumed and replayed is
/// the runtime's own ([`Runs`]); how a store is opened is the binaries' ([`StoreOpener`]).
pub mod ledger {
    pub use cairn_ledger::{Store, StoreError, bundle, keys, proof, verify};

    /// What a record says.
    pub mod record {
        pub use cairn_ledger::record::{
            AllowDeny, BoundaryEvent, IntentRecord, Label, RecordKind, TerminationReason, ToolRef,
        };
    }

    /// What a store lists.
    pub mod store {
        pub use cairn_ledger::store::{
            CostDimension, CostRow, RowFault, RunFilter, RunInfo, StoredRow,
        };
    }
}

/// Continuity envelopes and the rehydration decision, as the edges use them.
pub use cairn_continuity as continuity;
/// Task decisions across a boundary, as the edges use them.
pub use cairn_decisions as decisions;

/// The limits every process that decides calls runs within (its decision thread's stack).
pub use cairn_policy::limits;

pub use error::RuntimeError;
pub use executor::{
    Arguments, CallContext, CallError, EffectOutcome, Executor, GateRequest, UnreadableArguments,
    UpstreamTool,
};
pub use lifecycle::{Attention, IfMissing, Opened, Replay, RunName, Runs};
pub use recorder::{
    ClosedRun, Durability, Receipt, Recorder, RecorderOptions, ToolCall, WaitingCopy,
};
pub use stores::{KeptStores, StoreLocation, StoreOpener};
pub use verdict::{
    Admitted, ApprovalDenial, Denial, DenyCause, Gate, GateVerdict, Permit, WaitingRequest,
};
