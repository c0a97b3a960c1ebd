//! The hooks crate's error type. Every error has a stable code; the hook command maps it once
//! to an answer: a deny with exit 2 for `PreToolUse` (fail closed), a note on stderr with
//! exit 0 for every event that must never be blocked.

use std::path::PathBuf;

use cairn_core::{Code, ErrorCode};
use cairn_runtime::RuntimeError;
use cairn_runtime::ledger::StoreError;
use thiserror::Error;

/// Errors of a hook invocation or of installing the hooks.
#[derive(Debug, Error)]
pub enum HookError {
    /// Standard input could not be read.
    #[error("cannot read the hook input from stdin: {0}")]
    InputUnreadable(String),
    /// Standard input is larger than the limit.
    #[error("the hook input is larger than the {limit}-byte limit")]
    InputTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Standard input is not the host's hook JSON.
    #[error("malformed hook input: {reason}")]
    InputMalformed {
        /// What is wrong, naming the field.
        reason: String,
        /// The event the input names, when it could still be read.
        event: Option<String>,
    },
    /// A project file of the hooks (`.cairn/hooks.json`) is unreadable or invalid.
    #[error("invalid hook configuration `{}`: {reason}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The session's state file is unreadable or invalid.
    #[error(
        "the hook session state `{}` is invalid: {reason} (the ledger is unaffected; delete the file to start the session's bookkeeping afresh)",
        path.display()
    )]
    State {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The resident hook server took the call and did not answer by the hook's deadline.
    #[error("the resident hook server at `{}` did not answer by the deadline", socket.display())]
    ResidentLate {
        /// Its socket.
        socket: PathBuf,
    },
    /// The resident hook server cannot serve, or a client cannot get its answer.
    #[error("the resident hook server at `{}`: {reason}", socket.display())]
    Resident {
        /// Its socket.
        socket: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The hook names its project (`--project`, `CLAUDE_PROJECT_DIR`) or the session is
    /// bound to one, and that project has no `.cairn/` (it was moved, or `.cairn/` removed).
    #[error(
        "the project `{}` this session is bound to has no .cairn/ folder ({how}); re-run `cairn hooks install` there",
        dir.display()
    )]
    ProjectMissing {
        /// The project's folder.
        dir: PathBuf,
        /// How the binding was made.
        how: &'static str,
    },
    /// The session is bound to a project (the session index), and the call says it runs
    /// outside it, where no project is: it is not recorded in a project it does not run in.
    #[error(
        "the session `{session}` is bound to the project `{}`, but this call runs in `{}`, outside it, where there is no .cairn/ project; name the project in the hook command (`cairn hooks install` does: `--project`)",
        bound.display(),
        cwd.display()
    )]
    SessionElsewhere {
        /// The session.
        session: String,
        /// The project it is bound to.
        bound: PathBuf,
        /// Where the call says it runs.
        cwd: PathBuf,
    },
    /// Another hook process of the same session held its lock for too long.
    #[error("the session `{session}` is locked by another hook process (waited {waited_ms} ms)")]
    Locked {
        /// The session.
        session: String,
        /// How long this process waited.
        waited_ms: u64,
    },
    /// A file could not be read or written.
    #[error("cannot access `{}`: {reason}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A host settings file is not valid JSON of the expected shape; it is left untouched.
    #[error("`{}` is not a valid settings file: {reason} (left untouched)", path.display())]
    Settings {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The runtime failed (store, policy, keys, continuity).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An identifier or canonical form failed.
    #[error(transparent)]
    Core(#[from] cairn_core::CoreError),
    /// The hook panicked; the panic was caught.
    #[error("internal failure (panic): {0}")]
    Panic(String),
}

impl HookError {
    pub(crate) fn io(path: impl Into<PathBuf>, error: &std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            reason: error.to_string(),
        }
    }
}

cairn_core::error_codes! {
    HookError {
        /// Standard input that cannot be read.
        INPUT_UNREADABLE = Internal("hook_input_unreadable");
        /// An event over the size limit.
        INPUT_TOO_LARGE = Invalid("hook_input_too_large");
        /// An event that is not the host's payload.
        INPUT_MALFORMED = Invalid("hook_input_malformed");
        /// A `.cairn/` configuration that does not read.
        CONFIG_INVALID = Invalid("hook_config_invalid");
        /// A session state file that does not read.
        STATE_INVALID = Internal("hook_state_invalid");
        /// The session lock was not taken in time.
        SESSION_LOCKED = Internal("hook_session_locked");
        /// No `.cairn/` project for the event.
        PROJECT_MISSING = Invalid("hook_project_missing");
        /// The session is bound to a project the call does not run in.
        SESSION_ELSEWHERE = Invalid("hook_session_elsewhere");
        /// The resident worker failed.
        RESIDENT_FAILED = Internal("hook_resident_failed");
        /// No answer within the hook deadline.
        DEADLINE = Internal("hook_deadline");
        /// A file of the hook that cannot be read or written.
        IO = Internal("hook_io");
        /// A host settings file of the wrong shape.
        SETTINGS_MALFORMED = Invalid("settings_malformed");
        /// The hook panicked.
        PANIC = Internal("hook_internal_panic");
    }
}

impl ErrorCode for HookError {
    fn error_code(&self) -> Code {
        match self {
            Self::InputUnreadable(_) => Self::INPUT_UNREADABLE,
            Self::InputTooLarge { .. } => Self::INPUT_TOO_LARGE,
            Self::InputMalformed { .. } => Self::INPUT_MALFORMED,
            Self::Config { .. } => Self::CONFIG_INVALID,
            Self::State { .. } => Self::STATE_INVALID,
            Self::Locked { .. } => Self::SESSION_LOCKED,
            Self::ProjectMissing { .. } => Self::PROJECT_MISSING,
            Self::SessionElsewhere { .. } => Self::SESSION_ELSEWHERE,
            Self::Resident { .. } => Self::RESIDENT_FAILED,
            Self::ResidentLate { .. } => Self::DEADLINE,
            Self::Io { .. } => Self::IO,
            Self::Settings { .. } => Self::SETTINGS_MALFORMED,
            Self::Runtime(e) => e.error_code(),
            Self::Store(e) => e.error_code(),
            Self::Core(e) => e.error_code(),
            Self::Panic(_) => Self::PANIC,
        }
    }
}
