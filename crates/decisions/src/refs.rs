//! Checks on the free-text references a decision document may carry (`approval_ref`,
//! `source`) and on value digests.
//!
//! The ledger must never hold secrets, prompts, transcript paths or private absolute paths
//! (seed 004, D-1). A reference is an opaque pointer such as `review:PR-42#approve` or
//! `hook:claude-code/SessionStart`; these checks refuse the shapes that are clearly not that.
//! They cannot prove a reference is harmless — the caller chooses what it writes.

use cairn_core::KeyedDigest;
use cairn_core::error::excerpt;
use cairn_core::normalize::NormalizedDigest;

use crate::error::DecisionError;

/// The longest reference accepted, in bytes.
pub const MAX_REF_LEN: usize = 256;

/// Validates an approval or provenance reference.
pub(crate) fn check_ref(field: &'static str, text: &str) -> Result<(), DecisionError> {
    let invalid = |reason| DecisionError::InvalidRef {
        field,
        value: excerpt(text),
        reason,
    };
    if text.trim().is_empty() {
        return Err(invalid("expected a non-empty reference"));
    }
    if text.len() > MAX_REF_LEN {
        return Err(invalid("expected at most 256 bytes"));
    }
    if text.chars().any(char::is_control) {
        return Err(invalid("control characters are not allowed"));
    }
    if looks_like_private_path(text) {
        return Err(invalid(
            "looks like an absolute path; record an opaque reference, never a private path",
        ));
    }
    Ok(())
}

/// Absolute POSIX, home-relative, UNC, Windows drive and absolute `file:` paths.
fn looks_like_private_path(text: &str) -> bool {
    let bytes = text.as_bytes();
    let drive = matches!(bytes, [letter, b':', b'\\' | b'/', ..] if letter.is_ascii_alphabetic());
    text.starts_with('/')
        || text.starts_with('~')
        || text.starts_with('\\')
        || drive
        || text.to_ascii_lowercase().starts_with("file:/")
}

/// Checks that a value digest is keyed; returns its key id. (The normaliser needs no check:
/// `NormalizedDigest` only exists for known normalisers.)
pub(crate) fn check_keyed<'a>(
    digest: &'a NormalizedDigest,
    path: &str,
) -> Result<&'a str, DecisionError> {
    key_id(digest).ok_or_else(|| DecisionError::UnkeyedDigest {
        path: path.to_owned(),
    })
}

/// The key id of a keyed value digest, `None` for a plain one.
pub(crate) fn key_id(digest: &NormalizedDigest) -> Option<&str> {
    let rest = digest.digest().strip_prefix("hmac-sha256:")?;
    // NormalizedDigest already validated the text form; re-parse to be sure of the id.
    digest.digest().parse::<KeyedDigest>().ok()?;
    rest.split_once(':').map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn opaque_references_pass_and_paths_do_not() {
        for good in [
            "review:PR-42#approve",
            "hook:claude-code/SessionStart",
            "ticket OPS-7 approved by alice",
            "docs/decisions.md#scope",
        ] {
            assert!(check_ref("source", good).is_ok(), "{good}");
        }
        let long = "x".repeat(257);
        for bad in [
            "",
            "   ",
            "/home/alice/.claude/projects/x/transcript.jsonl",
            "~/notes",
            "C:\\Users\\alice",
            "c:/Users/alice",
            "\\\\server\\share",
            "file:///etc/passwd",
            "line\nbreak",
            long.as_str(),
        ] {
            assert!(check_ref("source", bad).is_err(), "{bad:?}");
        }
    }
}
