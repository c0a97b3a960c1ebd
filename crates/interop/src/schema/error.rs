//! The schema module's one error: a schema that cannot be compiled with the reference's
//! meaning. It never reaches a user as such: the validators turn it into their own error
//! (`vce_schema_compile_failed`, `rlc_schema_unusable`).

use thiserror::Error;

/// Errors of [`crate::schema::compile`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PySchemaError {
    /// The schema is not JSON, not a valid draft 2020-12 schema, or uses a keyword value whose
    /// Python meaning this crate cannot reproduce exactly.
    #[error("cannot compile the `{schema}` schema: {reason}")]
    Compile {
        /// The name given to [`crate::schema::compile`].
        schema: &'static str,
        /// Why it failed.
        reason: String,
    },
}
