//! The load-time error type of the policy gate, with its stable codes, and the source
//! location (`file:line:column`) every policy error points at.
//!
//! Loading never degrades: a policy set that fails to parse, lacks an id or fails schema
//! validation is an error, never a gate that silently allows or silently ignores a policy.

use std::fmt;

use cairn_core::{Code, ErrorCode};
use serde::Serialize;
use thiserror::Error;

/// A position in a policy file: the file name as the caller gave it, a 1-based line and a
/// 1-based column counted in characters (Unicode scalar values), which is what editors jump to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Location {
    /// The file the policy came from ([`crate::PolicySource::name`]).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` in `text`, which came from `file`.
    ///
    /// An offset past the end or inside a multi-byte character is clamped back to the nearest
    /// character boundary, so a stray offset from a diagnostic never panics.
    #[must_use]
    pub fn at_offset(file: &str, text: &str, offset: usize) -> Self {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = text.get(..end).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        let line = before.bytes().filter(|byte| *byte == b'\n').count() + 1;
        let column = before.get(line_start..).unwrap_or_default().chars().count() + 1;
        Self {
            file: file.to_owned(),
            line,
            column,
        }
    }
}

/// Locates offsets of one text that mostly come in increasing order (the policies of a file,
/// in file order): each location continues counting from the previous one, so locating every
/// policy of a file is linear in its size, not quadratic as [`Location::at_offset`] from the
/// start each time would be. An offset before the previous one counts from the start again.
pub(crate) struct Locator<'a> {
    file: &'a str,
    text: &'a str,
    /// The last located offset (a character boundary), its line and column.
    offset: usize,
    line: usize,
    column: usize,
}

impl<'a> Locator<'a> {
    pub(crate) const fn new(file: &'a str, text: &'a str) -> Self {
        Self {
            file,
            text,
            offset: 0,
            line: 1,
            column: 1,
        }
    }

    /// The location of byte `offset`, clamped as [`Location::at_offset`] clamps it.
    pub(crate) fn at(&mut self, offset: usize) -> Location {
        let mut end = offset.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        if end < self.offset {
            *self = Self::new(self.file, self.text);
        }
        for ch in self.text.get(self.offset..end).unwrap_or_default().chars() {
            if ch == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.offset = end;
        Location {
            file: self.file.to_owned(),
            line: self.line,
            column: self.column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Why a policy set or a tool catalog could not be loaded. Each variant has a stable
/// [`ErrorCode::code`]; its message starts with the location so a user can jump to it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyLoadError {
    /// Cedar could not parse the text (`policy_parse`).
    #[error("{at}: malformed policy: {message}")]
    Parse {
        /// Where the parser stopped.
        at: Location,
        /// Cedar's message, with its hint when it gives one.
        message: String,
    },
    /// A policy has no `@id("…")` annotation (`policy_missing_id`).
    #[error("{at}: policy has no `@id(\"…\")` annotation; every policy needs a stable id")]
    MissingId {
        /// Where the policy starts.
        at: Location,
    },
    /// A policy's `@id` is empty, too long or has control characters (`policy_invalid_id`).
    #[error("{at}: policy id `{id}` {reason}")]
    InvalidId {
        /// Where the policy starts.
        at: Location,
        /// The offending id (shortened).
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A policy's `@approval` is on a `forbid`, too long or has control characters
    /// (`policy_invalid_approval`).
    #[error("{at}: policy `{policy_id}`: `@approval` {reason}")]
    InvalidApproval {
        /// Where the policy starts.
        at: Location,
        /// The policy's `@id`.
        policy_id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two policies carry the same `@id` (`policy_duplicate_id`).
    #[error("{at}: duplicate policy id `{id}`, first used at {first}")]
    DuplicateId {
        /// The id used twice.
        id: String,
        /// The first policy with that id.
        first: Location,
        /// The second policy with that id.
        at: Location,
    },
    /// A policy fails validation against the schema generated from the tool catalog
    /// (`policy_invalid`).
    #[error("{at}: policy `{policy_id}` is invalid: {message}")]
    Invalid {
        /// Where the offending expression is (the policy start when Cedar gives no span).
        at: Location,
        /// The policy's `@id`.
        policy_id: String,
        /// Cedar's message, with its hint when it gives one.
        message: String,
    },
    /// A policy is nested deeper or holds more operators than Cairn lets reach Cedar
    /// (`policy_invalid`; see the crate's limits: `MAX_NESTING`, `MAX_OPERATORS`).
    #[error("{at}: policy is invalid: {message}")]
    OverLimit {
        /// The token that crossed the limit.
        at: Location,
        /// Which limit, and why it exists.
        message: String,
    },
    /// A policy template (with `?principal` or `?resource` slots) was found
    /// (`policy_template`). Cairn admits calls with static policies only.
    #[error(
        "{at}: policy templates (`?principal`, `?resource`) are not supported; write a static policy"
    )]
    Template {
        /// Where the template starts.
        at: Location,
    },
    /// The tool catalog is malformed (`tool_catalog`).
    #[error("{file}: {}{reason}", path_prefix(path))]
    ToolCatalog {
        /// The catalog's file name.
        file: String,
        /// The JSON path of the offending value (`tools."payments.refund".args.amount`),
        /// empty for the document as a whole.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Cedar refused something this crate built itself (`policy_internal`); a bug, reported
    /// instead of loading a gate that might not enforce what was written.
    #[error("internal policy error: {message}")]
    Internal {
        /// What failed.
        message: String,
    },
}

fn path_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

impl PolicyLoadError {
    /// The source location the error points at, if it has one.
    #[must_use]
    pub fn location(&self) -> Option<&Location> {
        match self {
            Self::Parse { at, .. }
            | Self::MissingId { at }
            | Self::InvalidId { at, .. }
            | Self::InvalidApproval { at, .. }
            | Self::DuplicateId { at, .. }
            | Self::Invalid { at, .. }
            | Self::OverLimit { at, .. }
            | Self::Template { at } => Some(at),
            Self::ToolCatalog { .. } | Self::Internal { .. } => None,
        }
    }
}

cairn_core::error_codes! {
    PolicyLoadError {
        /// Cedar text that does not parse.
        PARSE = Invalid("policy_parse");
        /// A policy without an `@id`.
        MISSING_ID = Invalid("policy_missing_id");
        /// An `@id` outside the allowed form.
        INVALID_ID = Invalid("policy_invalid_id");
        /// An `@approval` on a `forbid`, or one that cannot be shown.
        INVALID_APPROVAL = Invalid("policy_invalid_approval");
        /// Two policies with one `@id`.
        DUPLICATE_ID = Invalid("policy_duplicate_id");
        /// A policy set that fails validation or a limit.
        INVALID = Invalid("policy_invalid");
        /// A template, which Cairn does not load.
        TEMPLATE = Invalid("policy_template");
        /// A tool catalogue that does not read.
        TOOL_CATALOG = Invalid("tool_catalog");
        /// Cedar failed on a set it had accepted.
        POLICY_INTERNAL = Internal("policy_internal");
    }
}

impl ErrorCode for PolicyLoadError {
    fn error_code(&self) -> Code {
        match self {
            Self::Parse { .. } => Self::PARSE,
            Self::MissingId { .. } => Self::MISSING_ID,
            Self::InvalidId { .. } => Self::INVALID_ID,
            Self::InvalidApproval { .. } => Self::INVALID_APPROVAL,
            Self::DuplicateId { .. } => Self::DUPLICATE_ID,
            Self::Invalid { .. } | Self::OverLimit { .. } => Self::INVALID,
            Self::Template { .. } => Self::TEMPLATE,
            Self::ToolCatalog { .. } => Self::TOOL_CATALOG,
            Self::Internal { .. } => Self::POLICY_INTERNAL,
        }
    }
}

pub(crate) use cairn_core::error::excerpt;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_one_based_lines_and_character_columns() {
        let text = "ab\nçd\n\nxyz";
        let at = |offset| {
            let l = Location::at_offset("f", text, offset);
            (l.line, l.column)
        };
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(2), (1, 3));
        assert_eq!(at(3), (2, 1));
        // `ç` is two bytes: the `d` after it is the second character of line 2.
        assert_eq!(at(5), (2, 2));
        // An offset inside `ç` is clamped back to its start.
        assert_eq!(at(4), (2, 1));
        assert_eq!(at(7), (3, 1));
        assert_eq!(at(8), (4, 1));
        assert_eq!(at(10), (4, 3));
        assert_eq!(at(1_000), (4, 4));
    }

    #[test]
    fn the_locator_agrees_with_at_offset_in_any_order() {
        let text = "ab\nçd\n\nxyz";
        let mut locator = Locator::new("f", text);
        for offset in [0, 2, 3, 4, 5, 10, 1_000, 3, 8, 7, 0] {
            assert_eq!(
                locator.at(offset),
                Location::at_offset("f", text, offset),
                "{offset}"
            );
        }
    }

    #[test]
    fn messages_start_with_the_location() {
        let err = PolicyLoadError::MissingId {
            at: Location {
                file: "policies/support.cedar".into(),
                line: 12,
                column: 5,
            },
        };
        assert!(err.to_string().starts_with("policies/support.cedar:12:5: "));
        assert_eq!(err.code(), "policy_missing_id");
        let err = PolicyLoadError::ToolCatalog {
            file: "tools.json".into(),
            path: "tools.\"a\".args.x".into(),
            reason: "unknown type `Int`".into(),
        };
        assert_eq!(
            err.to_string(),
            "tools.json: tools.\"a\".args.x: unknown type `Int`"
        );
    }
}
