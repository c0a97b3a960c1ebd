//! The names the gateway exposes: an upstream's tool `t` of server `s` is `s__t`, stable
//! across sessions and free of collisions between servers, and the policies still see the
//! server and the tool apart (`context.mcp`).
//!
//! ```
//! use cairn_mcp::names::{exposed, split};
//!
//! assert_eq!(exposed("fs", "write_file"), "fs__write_file");
//! assert_eq!(split("fs__write_file"), Some(("fs", "write_file")));
//! // A tool whose own name holds `__` keeps it: the server's name never does.
//! assert_eq!(split("fs__a__b"), Some(("fs", "a__b")));
//! assert_eq!(split("write_file"), None);
//! ```

/// What separates the server from the tool in an exposed name.
pub const SEPARATOR: &str = "__";

/// The longest server name.
const MAX_SERVER_NAME: usize = 64;

/// Checks a server's name: 1–64 ASCII letters, digits, `-` and `_`, starting with a letter
/// or digit, without `__` and not ending in `_` (so that the first `__` of an exposed name
/// always ends the server's name).
///
/// # Errors
/// What is wrong with it.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && !name.contains(SEPARATOR)
        && !name.ends_with('_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "the server name `{}` must be 1-{MAX_SERVER_NAME} ASCII letters, digits, `-` and `_`, start with a letter or digit, hold no `__` and not end in `_`",
            name.escape_debug()
        ))
    }
}

/// The name the gateway exposes for `server`'s tool `tool`.
#[must_use]
pub fn exposed(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}

/// The server and the tool an exposed name stands for.
#[must_use]
pub fn split(name: &str) -> Option<(&str, &str)> {
    let (server, tool) = name.split_once(SEPARATOR)?;
    (check_server_name(server).is_ok() && !tool.is_empty()).then_some((server, tool))
}

#[cfg(test)]
mod tests {
    //! Server names that would make an exposed name ambiguous are refused.
    use super::*;

    #[test]
    fn ambiguous_server_names_are_refused() {
        for bad in ["", "a__b", "a_", "_a", "a b", "a/b", "é", &"x".repeat(65)] {
            assert!(check_server_name(bad).is_err(), "{bad}");
        }
        for good in ["fs", "a_b", "a-b", "GitHub2", "1x"] {
            assert!(check_server_name(good).is_ok(), "{good}");
            assert_eq!(split(&exposed(good, "t__u")), Some((good, "t__u")));
        }
    }
}
