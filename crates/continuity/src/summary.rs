//! The summary digest that binds a derived summary to an envelope (E-1):
//! `summary_sha256 = "sha256:" + sha256(utf8(summary.strip()))`.
//!
//! The strip matches Python's `str.strip()` with no argument, which removes leading and
//! trailing characters for which `str.isspace()` is true: Unicode `White_Space` (what Rust's
//! `char::is_whitespace` tests: ASCII space, tab, line feed, vertical tab, form feed, carriage
//! return, U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000)
//! plus the four ASCII information separators U+001C–U+001F, which Python also counts as
//! space. Whitespace inside the summary is kept, so changing it changes the digest.

use cairn_core::Digest;

/// Whether Python's `str.isspace()` is true for `c`.
#[must_use]
pub fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `summary` with leading and trailing whitespace removed exactly as Python's `str.strip()`.
#[must_use]
pub fn strip_summary(summary: &str) -> &str {
    summary.trim_matches(is_python_space)
}

/// The digest a summary must have to match an envelope's `summary_sha256`.
#[must_use]
pub fn summary_sha256(summary: &str) -> Digest {
    Digest::of(strip_summary(summary).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        // sha256("abc")
        assert_eq!(
            summary_sha256("  abc\n").to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn outer_whitespace_is_ignored_and_inner_is_kept() {
        let base = summary_sha256("ticket write timed out");
        assert_eq!(summary_sha256("\n\t ticket write timed out \r\n"), base);
        assert_eq!(
            summary_sha256("\u{3000}ticket write timed out\u{a0}\u{2029}"),
            base
        );
        assert_eq!(
            summary_sha256("\u{1c}\u{1f}ticket write timed out\u{1d}"),
            base
        );
        assert_ne!(summary_sha256("ticket  write timed out"), base);
        assert_ne!(summary_sha256("ticket\nwrite timed out"), base);
    }

    #[test]
    fn zero_width_characters_are_not_space() {
        // Python: "\u200b".isspace() is False, "\ufeff".isspace() is False.
        assert_ne!(summary_sha256("\u{200b}x"), summary_sha256("x"));
        assert_ne!(summary_sha256("\u{feff}x"), summary_sha256("x"));
    }

    #[test]
    fn matches_python_isspace_over_every_code_point() {
        // The complete list of code points for which CPython's str.isspace() is true.
        let python: Vec<u32> = vec![
            0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000,
            0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028,
            0x2029, 0x202f, 0x205f, 0x3000,
        ];
        let ours: Vec<u32> = (0..=0x10_ffffu32)
            .filter_map(char::from_u32)
            .filter(|c| is_python_space(*c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, python);
    }
}
