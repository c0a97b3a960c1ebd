//! The report shape shared by Cairn's interop validators (VCE 0.1, RLC 0.1): every finding a
//! validator saw, each with a stable code and a message, so that a person repairing a
//! document sees the whole list at once and a program can match on the code.

use serde::Serialize;

/// One defect found in a document, with its stable code (`snake_case`, never changed once
/// published) and a human message naming the offending field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodedFinding {
    /// The stable code.
    pub code: &'static str,
    /// What is wrong, naming the field.
    pub message: String,
}

impl CodedFinding {
    /// A finding with `code` and `message`.
    #[must_use]
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}
