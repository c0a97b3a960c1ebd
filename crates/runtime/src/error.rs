//! The runtime's error type, wrapping the lower crates' errors with their stable codes.

use cairn_core::{Code, CoreError, ErrorCode};
use cairn_ledger::StoreError;
use cairn_ledger::checkpoint::CheckpointError;
use thiserror::Error;

use crate::keyring::KeyringError;

/// Errors of the runtime façade.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// A store failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A canonicalisation or identifier failure.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// Signing the checkpoint failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// Loading keys failed.
    #[error(transparent)]
    Keyring(#[from] KeyringError),
    /// The policy set or tool catalog did not load.
    #[error(transparent)]
    Policy(#[from] cairn_policy::PolicyLoadError),
    /// A project file could not be read.
    #[error("cannot read `{}`: {reason}", path.display())]
    Io {
        /// The file or folder.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// An approval could not be found or decided.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// A value given to the runtime is not acceptable.
    #[error("invalid `{field}`: {reason}")]
    InvalidInput {
        /// The offending field.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

cairn_core::error_codes! {
    RuntimeError {
        /// An input file that cannot be read.
        UNREADABLE_INPUT = Invalid("unreadable_input");
        /// Input of the wrong shape.
        INVALID_INPUT = Invalid("invalid_input");
    }
}

impl ErrorCode for RuntimeError {
    fn error_code(&self) -> Code {
        match self {
            Self::Store(e) => e.error_code(),
            Self::Core(e) => e.error_code(),
            Self::Checkpoint(e) => e.error_code(),
            Self::Keyring(e) => e.error_code(),
            Self::Policy(e) => e.error_code(),
            Self::Approval(e) => e.error_code(),
            Self::Io { .. } => Self::UNREADABLE_INPUT,
            Self::InvalidInput { .. } => Self::INVALID_INPUT,
        }
    }
}

/// Why approvals refused something a person asked (stable codes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    /// Not an approval id: `apr-` and 24 lowercase hex digits.
    #[error(
        "`{id}` is not an approval id (`apr-` and 24 lowercase hex digits, as `cairn approvals list` shows them)"
    )]
    InvalidId {
        /// The text given (shortened).
        id: String,
    },
    /// No run of the store (of the tenant) holds this request.
    #[error("no approval request `{id}` in this store{}", tenant.as_ref().map(|t| format!(" for tenant `{t}`")).unwrap_or_default())]
    NotFound {
        /// The id.
        id: String,
        /// The tenant searched, when the search was bound to one.
        tenant: Option<String>,
    },
    /// The request's run is closed: nothing waits for a decision any more.
    #[error("approval `{id}` belongs to run `{run}`, which is closed; nothing waits for it")]
    RunClosed {
        /// The id.
        id: String,
        /// Its run.
        run: String,
    },
    /// The request was decided already (or its approval is not in the state the action needs).
    #[error("approval `{id}` is {state}{}; {action}", by.as_ref().map(|b| format!(" (by {b})")).unwrap_or_default())]
    Decided {
        /// The id.
        id: String,
        /// Its state now.
        state: &'static str,
        /// Who decided.
        by: Option<String>,
        /// What the person can do instead.
        action: &'static str,
    },
}

cairn_core::error_codes! {
    ApprovalError {
        /// Not an approval id.
        INVALID_ID = Invalid("approval_id_invalid");
        /// No such request.
        NOT_FOUND = NotFound("approval_not_found");
        /// Its run is closed.
        RUN_CLOSED = Conflict("approval_run_closed");
        /// Decided already, or not in a state the action applies to.
        DECIDED = Conflict("approval_state_conflict");
    }
}

impl cairn_core::ErrorCode for ApprovalError {
    fn error_code(&self) -> cairn_core::Code {
        match self {
            Self::InvalidId { .. } => Self::INVALID_ID,
            Self::NotFound { .. } => Self::NOT_FOUND,
            Self::RunClosed { .. } => Self::RUN_CLOSED,
            Self::Decided { .. } => Self::DECIDED,
        }
    }
}

/// `text` as a record label, failing as a [`RuntimeError`].
pub(crate) fn label(text: &str) -> Result<cairn_ledger::record::Label, RuntimeError> {
    Ok(cairn_ledger::record::Label::new(text)?)
}
