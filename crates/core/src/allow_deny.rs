//! The gate's two answers to a tool call, as the policy gate gives them and as the intent
//! record keeps them.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Allow or deny: whether a call may run. A denied call is still recorded; it never runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
// The record schema has always called it `Decision`; the published schema keeps the name.
#[schemars(rename = "Decision")]
pub enum AllowDeny {
    /// The call was admitted and may execute.
    Allow,
    /// The call was refused; it is recorded and never executed.
    Deny,
}

impl AllowDeny {
    /// `allow` or `deny`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for AllowDeny {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
