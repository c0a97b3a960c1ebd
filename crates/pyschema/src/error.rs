//! The crate's one error type: a schema that cannot be compiled with the reference's meaning.

use cairn_core::{Code, ErrorCode};
use thiserror::Error;

/// Errors of [`crate::compile`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PySchemaError {
    /// The schema is not JSON, not a valid draft 2020-12 schema, or uses a keyword value whose
    /// Python meaning this crate cannot reproduce exactly.
    #[error("cannot compile the `{schema}` schema: {reason}")]
    Compile {
        /// The name given to [`crate::compile`].
        schema: &'static str,
        /// Why it failed.
        reason: String,
    },
}

cairn_core::error_codes! {
    PySchemaError {
        /// A schema that does not compile.
        COMPILE = Internal("pyschema_compile_failed");
    }
}

impl ErrorCode for PySchemaError {
    fn error_code(&self) -> Code {
        match self {
            Self::Compile { .. } => Self::COMPILE,
        }
    }
}
