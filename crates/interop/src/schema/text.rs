//! Quoting user text in messages: cut to a length, on one line. Both formats' messages quote
//! values from the documents they judge, which a hostile document can make huge or fill with
//! line breaks and terminal escapes.

use std::fmt;

/// A writer appending to a `String` at most `max_chars` characters, with control characters
/// written as escapes (`\n`, `\u{1b}`) so that a message stays on one line; once full it
/// refuses further text with [`fmt::Error`], so formatting a huge value costs no more than the
/// limit. [`BoundedText::finish`] appends `…` when anything was left out.
#[must_use = "call `finish` to mark the truncation"]
pub struct BoundedText<'a> {
    out: &'a mut String,
    left: usize,
    truncated: bool,
}

impl<'a> BoundedText<'a> {
    /// A writer appending at most `max_chars` characters to `out`.
    pub const fn new(out: &'a mut String, max_chars: usize) -> Self {
        Self {
            out,
            left: max_chars,
            truncated: false,
        }
    }

    /// Appends `…` when text was left out; returns whether it was.
    pub fn finish(self) -> bool {
        if self.truncated {
            self.out.push('…');
        }
        self.truncated
    }
}

impl fmt::Write for BoundedText<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Printable ASCII, the usual case, is one byte per character and needs no escape: the
        // run of it that fits goes in at once.
        let plain = s
            .bytes()
            .take(self.left)
            .take_while(|byte| (0x20..0x7f).contains(byte))
            .count();
        let (run, s) = s.split_at_checked(plain).unwrap_or(("", s));
        self.out.push_str(run);
        self.left -= run.len();
        for ch in s.chars() {
            if self.left == 0 {
                self.truncated = true;
                return Err(fmt::Error);
            }
            self.left -= 1;
            if ch.is_control() {
                self.out.extend(ch.escape_default());
            } else {
                self.out.push(ch);
            }
        }
        Ok(())
    }
}

/// Appends at most `max_chars` characters of `text` to `out` as [`BoundedText`] does, then `…` if
/// anything was cut.
pub fn push_bounded(out: &mut String, text: &str, max_chars: usize) {
    let mut cut = BoundedText::new(out, max_chars);
    // An error only means the text was cut, which `finish` marks.
    let _ = fmt::Write::write_str(&mut cut, text);
    cut.finish();
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    #[test]
    fn text_is_cut_by_characters_and_kept_on_one_line() {
        let mut out = String::from("> ");
        push_bounded(&mut out, "a\nb\u{1b}", 10);
        assert_eq!(out, "> a\\nb\\u{1b}");

        let mut out = String::new();
        push_bounded(&mut out, &"é".repeat(7), 5);
        assert_eq!(out, "ééééé…");

        let mut out = String::new();
        push_bounded(&mut out, "abc\ndef", 5);
        assert_eq!(out, "abc\\nd…", "an escape counts as one character");

        let mut out = String::new();
        push_bounded(&mut out, "ab\u{7f}é d", 5);
        assert_eq!(out, "ab\\u{7f}é …");

        let mut out = String::new();
        push_bounded(&mut out, "abcde", 5);
        assert_eq!(out, "abcde", "exactly the limit is not cut");
    }

    #[test]
    fn formatting_stops_at_the_limit() {
        let mut out = String::new();
        let mut cut = BoundedText::new(&mut out, 4);
        assert!(write!(cut, "{}", serde_json::json!([1, 2, 3])).is_err());
        assert!(cut.finish());
        assert_eq!(out, "[1,2…");
    }
}
