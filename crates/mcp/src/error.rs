//! The gateway's error type. Every error has a stable code; a `tools/call` that meets one is
//! refused (fail closed) and never forwarded.

use std::path::PathBuf;

use cairn_core::{Code, ErrorCode};
use cairn_runtime::RuntimeError;
use cairn_runtime::ledger::StoreError;
use thiserror::Error;

/// Errors of the gateway: its configuration, its upstreams, and recording.
#[derive(Debug, Error)]
pub enum GatewayError {
    /// The gateway's configuration (`.cairn/mcp.json`, or the flags) is invalid.
    #[error("invalid MCP gateway configuration `{}`: {reason}", path.display())]
    Config {
        /// The file (or `--server` for a flag).
        path: PathBuf,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// An upstream server could not be started or connected to, or broke off.
    #[error("the MCP server `{server}`: {reason}")]
    Upstream {
        /// The upstream's name.
        server: String,
        /// What went wrong.
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
    /// Deciding or recording panicked; the panic was caught and the call refused.
    #[error("internal failure (panic): {0}")]
    Panic(String),
}

cairn_core::error_codes! {
    GatewayError {
        /// A gateway configuration that does not read.
        CONFIG_INVALID = Invalid("mcp_config_invalid");
        /// An upstream server that cannot be reached or broke off.
        UPSTREAM_UNAVAILABLE = Unavailable("mcp_upstream_unavailable");
        /// Deciding or recording panicked.
        PANIC = Internal("mcp_internal_panic");
    }
}

impl ErrorCode for GatewayError {
    fn error_code(&self) -> Code {
        match self {
            Self::Config { .. } => Self::CONFIG_INVALID,
            Self::Upstream { .. } => Self::UPSTREAM_UNAVAILABLE,
            Self::Runtime(e) => e.error_code(),
            Self::Store(e) => e.error_code(),
            Self::Core(e) => e.error_code(),
            Self::Panic(_) => Self::PANIC,
        }
    }
}
