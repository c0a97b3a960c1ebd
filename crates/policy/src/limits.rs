//! Limits on the shape of policy text, checked before Cedar parses it.
//!
//! Cedar's parser, validator and evaluator recurse over a policy's expression, so a policy
//! nested deep enough — 600 parentheses, or 12,800 terms joined by `&&` — overflows the
//! thread's stack and aborts the process (SIGABRT, exit 134), which the hook hosts treat as
//! "let the call through". Policy files are attacker input (the agent can write files), so
//! every policy is measured here first, with a scan that is linear and keeps no stack of its
//! own:
//!
//! - brackets (`(`, `[`, `{`) nest at most [`MAX_NESTING`] deep;
//! - one policy holds at most [`MAX_OPERATORS`] operators (`&&`, `||`, `!`, comparisons,
//!   arithmetic, `.` member access and calls, `in`, `has`, `like`, `is`, `if`/`then`/
//!   `else`): each can add a level to the expression tree, so this bounds its depth too.
//!
//! A policy over a limit is refused with `policy_invalid` and the location of the token that
//! crossed it; no text over the limits ever reaches Cedar. The limits are far above what a
//! readable policy needs, and low enough that Cedar handles the deepest policy they allow on
//! [`STACK_BYTES`] of stack in a debug build (a test holds it to that).
//!
//! [`crate::PolicyGate::load`] grows its own stack to [`STACK_BYTES`] when its thread has
//! less left than half of it. Deciding does not (it runs on every call): Cedar's evaluator
//! checks its remaining stack itself and reports a policy it cannot finish as an evaluation
//! error, which denies (a failed forbid) or does not allow (a failed permit). The `cairn`
//! binary runs on threads of [`STACK_BYTES`], where the deepest policy decides in full.

use crate::error::{Location, PolicyLoadError};
use crate::source::PolicySource;

/// How deep brackets may nest in one policy.
pub const MAX_NESTING: usize = 32;
/// How many operators one policy may hold.
pub const MAX_OPERATORS: usize = 1_000;
/// The stack a thread that loads or evaluates policies needs for the deepest policy the
/// limits allow (with room to spare in a debug build; a release build needs a fraction).
pub const STACK_BYTES: usize = 64 << 20;

/// Checks every policy statement of `source` against the limits.
///
/// # Errors
/// [`PolicyLoadError::OverLimit`] at the first token that crosses a limit.
pub(crate) fn check(source: &PolicySource) -> Result<(), PolicyLoadError> {
    let text = source.text.as_bytes();
    let over = |offset: usize, message: String| PolicyLoadError::OverLimit {
        at: Location::at_offset(&source.name, &source.text, offset),
        message,
    };
    let mut depth = 0_usize;
    let mut operators = 0_usize;
    let mut i = 0;
    while let Some(&byte) = text.get(i) {
        let next = text.get(i + 1).copied();
        let start = i;
        i += 1;
        let operator = match byte {
            b'"' => {
                i = string_end(text, i);
                false
            }
            b'/' if next == Some(b'/') => {
                while text.get(i).is_some_and(|b| *b != b'\n') {
                    i += 1;
                }
                false
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(over(
                        start,
                        format!(
                            "brackets nest more than {MAX_NESTING} deep; Cairn refuses such a policy before Cedar parses it, so that no policy text can overflow the stack"
                        ),
                    ));
                }
                false
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                false
            }
            b';' if depth == 0 => {
                operators = 0;
                false
            }
            b'&' | b'|' | b'=' if next == Some(byte) => {
                i += 1;
                true
            }
            b'!' | b'<' | b'>' => {
                if next == Some(b'=') {
                    i += 1;
                }
                true
            }
            b'+' | b'-' | b'*' | b'.' => true,
            b if b.is_ascii_alphabetic() || b == b'_' => {
                while text
                    .get(i)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    i += 1;
                }
                matches!(
                    text.get(start..i),
                    Some(b"in" | b"has" | b"like" | b"is" | b"if" | b"then" | b"else")
                )
            }
            _ => false,
        };
        if operator {
            operators += 1;
            if operators > MAX_OPERATORS {
                return Err(over(
                    start,
                    format!(
                        "the policy holds more than {MAX_OPERATORS} operators; Cairn refuses such a policy before Cedar parses it, so that no policy text can overflow the stack (split it into several policies)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The index just past the string literal whose opening quote is before `i`.
fn string_end(text: &[u8], mut i: usize) -> usize {
    while let Some(&byte) = text.get(i) {
        i += 1;
        match byte {
            b'\\' => i += 1,
            b'"' => return i,
            _ => {}
        }
    }
    i
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

    use super::*;

    fn checked(text: &str) -> Result<(), (usize, usize)> {
        check(&PolicySource::new("p.cedar", text)).map_err(|err| match err {
            PolicyLoadError::OverLimit { at, .. } => (at.line, at.column),
            other => panic!("{other:?}"),
        })
    }

    fn nested(levels: usize) -> String {
        format!(
            "@id(\"p\") permit(principal, action, resource) when {{ {}true{} }};",
            "(".repeat(levels),
            ")".repeat(levels)
        )
    }

    fn chain(terms: usize) -> String {
        format!(
            "@id(\"p\") permit(principal, action, resource) when {{ {} }};",
            vec!["true"; terms].join(" && ")
        )
    }

    #[test]
    fn nesting_is_counted_outside_strings_and_comments() {
        // `when { … }` is one level, so this reaches the limit exactly.
        assert!(checked(&nested(MAX_NESTING - 1)).is_ok());
        let err = checked(&nested(MAX_NESTING)).unwrap_err();
        assert_eq!(err.0, 1);
        let quoted = format!(
            "// {}\n@id(\"{}\") permit(principal, action, resource) when {{ context.tenant == \"\\\"{}\" }};",
            "(".repeat(100),
            "[".repeat(100),
            "{".repeat(100)
        );
        assert!(checked(&quoted).is_ok());
    }

    #[test]
    fn operators_are_counted_per_policy() {
        assert!(checked(&chain(MAX_OPERATORS + 1)).is_ok());
        assert!(checked(&chain(MAX_OPERATORS + 2)).is_err());
        // Many policies of a file each get the full allowance.
        let many = vec![chain(MAX_OPERATORS); 5].join("\n");
        assert!(checked(&many).is_ok());
        let unary = format!(
            "@id(\"p\") permit(principal, action, resource) when {{ {}true }};",
            "!".repeat(MAX_OPERATORS + 1)
        );
        assert!(checked(&unary).is_err());
    }
}
