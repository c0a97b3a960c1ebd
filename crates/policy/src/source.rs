//! A policy file's text, as the caller read it: what loading, and the limits checked
//! before it, take in.

/// One policy file's text, as the caller read it. Policies of a set may come from many files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySource {
    /// The file path, shown in error messages and in [`crate::PolicyInfo::at`].
    pub name: String,
    /// The Cedar policy text.
    pub text: String,
}

impl PolicySource {
    /// A source named `name` with `text`.
    #[must_use]
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
        }
    }
}
