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
            Self::Io { .. } => Self::UNREADABLE_INPUT,
            Self::InvalidInput { .. } => Self::INVALID_INPUT,
        }
    }
}

/// `text` as a record label, failing as a [`RuntimeError`].
pub(crate) fn label(text: &str) -> Result<cairn_ledger::record::Label, RuntimeError> {
    Ok(cairn_ledger::record::Label::new(text)?)
}
