//! The error type of the decision files, each variant with a stable `code()`.

use std::io;
use std::path::PathBuf;

use cairn_core::{Code, ErrorCode, Timestamp};
use cairn_decisions::DecisionError;
use thiserror::Error;

/// Errors of the decision files. Messages name the file and never include a decision value
/// or key material.
#[derive(Debug, Error)]
pub enum DecisionFilesError {
    /// The project folder (`.cairn/`) does not exist.
    #[error("no Cairn project at `{}`: run `cairn init` first", .dir.display())]
    NoProject {
        /// The folder looked for.
        dir: PathBuf,
    },
    /// A file system operation failed.
    #[error("cannot {action} `{}`: {source}", .path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A decision file does not parse; it is left as it is.
    #[error(
        "`{}` is corrupt: {reason}; it is never replaced silently, repair it or move it away",
        .path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it (with the parser's code and field path when it has them).
        reason: String,
    },
    /// A decision file is larger than any valid one.
    #[error("`{}` is {size} bytes, the limit is {limit}", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: usize,
    },
    /// A snapshot name cannot be used as a file name.
    #[error("invalid snapshot `name` `{name}`: {reason}")]
    InvalidName {
        /// The offending name (truncated).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A boundary instant earlier than the snapshot it is recorded for.
    #[error("`boundary_at` `{boundary_at}` is earlier than the snapshot's `taken_at` `{taken_at}`")]
    BoundaryBeforeSnapshot {
        /// The boundary instant given.
        boundary_at: Timestamp,
        /// When the snapshot was taken.
        taken_at: Timestamp,
    },
    /// The HMAC key file can be accessed by group or others.
    #[error(
        "decision key file `{}` has mode {mode:04o}, which lets group or others access it; run `chmod 600` on it",
        .path.display()
    )]
    KeyFilePermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The HMAC key file does not hold a key.
    #[error("invalid decision key file `{}`: {reason}", .path.display())]
    InvalidKeyFile {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it (never its content).
        reason: &'static str,
    },
    /// A rule of the decision book refused the operation.
    #[error(transparent)]
    Decision(#[from] DecisionError),
}

cairn_core::error_codes! {
    DecisionFilesError {
        /// No `.cairn/` project at or above the folder.
        NO_PROJECT = Invalid("no_project");
        /// A decision file that cannot be read or written.
        IO = Internal("decision_files_io");
        /// A decision file that does not parse.
        CORRUPT = Invalid("corrupt_decision_file");
        /// A decision file over the size limit.
        TOO_LARGE = Invalid("decision_file_too_large");
        /// A snapshot name outside the allowed form.
        INVALID_SNAPSHOT_NAME = Invalid("invalid_snapshot_name");
        /// A boundary asked before any snapshot.
        BOUNDARY_BEFORE_SNAPSHOT = Invalid("boundary_before_snapshot");
    }
}

impl ErrorCode for DecisionFilesError {
    fn error_code(&self) -> Code {
        match self {
            Self::NoProject { .. } => Self::NO_PROJECT,
            Self::Io { .. } => Self::IO,
            Self::Corrupt { .. } => Self::CORRUPT,
            Self::TooLarge { .. } => Self::TOO_LARGE,
            Self::InvalidName { .. } => Self::INVALID_SNAPSHOT_NAME,
            Self::BoundaryBeforeSnapshot { .. } => Self::BOUNDARY_BEFORE_SNAPSHOT,
            Self::KeyFilePermissions { .. } => crate::keyring::KeyringError::KEY_FILE_PERMISSIONS,
            Self::InvalidKeyFile { .. } => crate::keyring::KeyringError::INVALID_KEY_FILE,
            Self::Decision(e) => e.error_code(),
        }
    }
}
