//! The `pattern` keyword as the references run it: Python's `re.search(pattern, value)`, whose
//! `$` also matches just before one final line feed, so `"<40 hex digits>\n"` satisfies
//! `^[0-9a-fA-F]{40}$` there but not under the ECMA-262 semantics of the `jsonschema` crate.
//!
//! Only patterns of a fixed form are supported ([`FixedPattern`]): `^…$` made of literals and
//! character classes, each optionally repeated `{n}` times. Every pattern of the published
//! VCE 0.1 and RLC 0.1 schemas is of that form (`^[0-9a-fA-F]{40}$`, `^[0-9a-f]{64}$`,
//! `^sha256:[0-9a-f]{64}$`). For such a pattern Python's and ECMA's regular expressions agree
//! except on that final line feed, and a direct matcher is exact and cheap. Any other pattern
//! makes compilation fail, so a schema update cannot silently change the semantics.

use serde_json::Value;

use crate::schema::keywords::PyKeyword;

/// The `pattern` keyword, registered by [`crate::schema::compile`] in place of the crate's own.
pub(crate) struct PythonPattern {
    fixed: FixedPattern,
    pattern: String,
}

impl PyKeyword for PythonPattern {
    fn parse(value: &Value) -> Result<Self, String> {
        let supported = value.as_str().and_then(|pattern| {
            FixedPattern::parse(pattern).map(|fixed| Self {
                fixed,
                pattern: pattern.to_owned(),
            })
        });
        supported.ok_or_else(|| {
            format!(
                "pattern {value} is not supported; only `^…$` of literals and character \
                 classes, each optionally repeated `{{n}}` times, have the same meaning here \
                 as in Python's `re`"
            )
        })
    }

    fn is_valid(&self, instance: &Value) -> bool {
        instance
            .as_str()
            .is_none_or(|text| self.fixed.matches(text))
    }

    /// The `jsonschema` crate's own wording for a pattern error.
    fn message(&self, instance: &Value) -> String {
        format!("{instance} does not match \"{}\"", self.pattern)
    }
}

/// A pattern `^…$` made of literals (ASCII letters, digits, `:` and `_`) and character classes
/// `[…]` of such characters and ranges between them, each optionally repeated `{n}` times
/// (`n` of one to four digits): it matches exactly the strings of one fixed length whose every
/// character is in its place's set, and, as Python's `$` does, those strings followed by one
/// line feed.
struct FixedPattern {
    /// The pattern's places in order, consecutive literals joined.
    runs: Vec<Run>,
    /// The length of every string matching without a final line feed, in bytes (every place
    /// admits ASCII only, so also in characters).
    len: usize,
}

enum Run {
    /// These bytes, exactly.
    Literal(Vec<u8>),
    /// `count` bytes, each in the set.
    Class(ByteSet, usize),
}

impl Run {
    fn len(&self) -> usize {
        match self {
            Self::Literal(bytes) => bytes.len(),
            Self::Class(_, count) => *count,
        }
    }

    fn admits(&self, bytes: &[u8]) -> bool {
        match self {
            Self::Literal(literal) => bytes == literal.as_slice(),
            // `fold`, not `all`: no early exit, so the loop can be unrolled and vectorised.
            Self::Class(set, _) => bytes.iter().fold(true, |ok, &b| ok & set.admits(b)),
        }
    }
}

/// A set of bytes, as a table (one load per byte tested); only ASCII ones are ever added.
struct ByteSet(Box<[bool; 256]>);

impl ByteSet {
    fn admits(&self, byte: u8) -> bool {
        self.0.get(usize::from(byte)).copied().unwrap_or(false)
    }
}

/// One atom of a pattern being parsed: a literal byte or a class.
enum Atom {
    Literal(u8),
    Class(ByteSet),
}

impl FixedPattern {
    /// Parses `pattern`, or `None` when it is not of the fixed form.
    fn parse(pattern: &str) -> Option<Self> {
        let mut rest = pattern.strip_prefix('^')?.strip_suffix('$')?.as_bytes();
        let mut runs: Vec<Run> = Vec::new();
        while let Some((&first, tail)) = rest.split_first() {
            let (atom, tail) = if first == b'[' {
                let end = tail.iter().position(|&b| b == b']')?;
                let (class, tail) = tail.split_at_checked(end)?;
                (Atom::Class(class_set(class)?), tail.get(1..)?)
            } else {
                (Atom::Literal(plain(first).then_some(first)?), tail)
            };
            let (count, tail) = repeat(tail)?;
            match (atom, runs.last_mut()) {
                (Atom::Literal(byte), Some(Run::Literal(bytes))) => {
                    bytes.extend(std::iter::repeat_n(byte, count));
                }
                (Atom::Literal(byte), _) => runs.push(Run::Literal(vec![byte; count])),
                (Atom::Class(set), Some(Run::Class(last, run))) if last.0 == set.0 => {
                    *run += count;
                }
                (Atom::Class(set), _) => runs.push(Run::Class(set, count)),
            }
            rest = tail;
        }
        let len = runs.iter().map(Run::len).sum();
        Some(Self { runs, len })
    }

    /// Whether `text` matches, as Python's `re.search` decides.
    fn matches(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        self.matches_exactly(bytes)
            || bytes
                .strip_suffix(b"\n")
                .is_some_and(|head| self.matches_exactly(head))
    }

    fn matches_exactly(&self, mut bytes: &[u8]) -> bool {
        if bytes.len() != self.len {
            return false;
        }
        self.runs.iter().all(|run| {
            let Some((head, tail)) = bytes.split_at_checked(run.len()) else {
                return false;
            };
            bytes = tail;
            run.admits(head)
        })
    }
}

/// Characters that mean themselves in a pattern, in and out of a class, in Python and ECMA.
fn plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b':' || byte == b'_'
}

/// An optional `{n}` after an atom: the count and what follows.
fn repeat(tail: &[u8]) -> Option<(usize, &[u8])> {
    let Some(inner) = tail.strip_prefix(b"{") else {
        return Some((1, tail));
    };
    let end = inner.iter().position(|&b| b == b'}')?;
    let (digits, after) = inner.split_at_checked(end)?;
    if digits.is_empty() || digits.len() > 4 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let count = digits
        .iter()
        .fold(0, |acc, d| acc * 10 + usize::from(d - b'0'));
    Some((count, after.get(1..)?))
}

/// The body of `[…]`: plain characters and ranges `a-z` of them; `None` for anything else
/// (negation, escapes, a `-` at either end, an empty class).
fn class_set(mut body: &[u8]) -> Option<ByteSet> {
    let mut set = [false; 256];
    let mut any = false;
    while let Some((&low, tail)) = body.split_first() {
        if !plain(low) {
            return None;
        }
        let (high, tail) = match tail {
            [b'-', high, tail @ ..] if plain(*high) && *high >= low => (*high, tail),
            [b'-', ..] => return None,
            _ => (low, tail),
        };
        for byte in low..=high {
            if let Some(slot) = set.get_mut(usize::from(byte)) {
                *slot = true;
            }
        }
        any = true;
        body = tail;
    }
    any.then(|| ByteSet(Box::new(set)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Every pattern of the published VCE 0.1 and RLC 0.1 schemas.
    const PUBLISHED: [&str; 3] = [
        "^[0-9a-fA-F]{40}$",
        "^sha256:[0-9a-f]{64}$",
        "^[0-9a-f]{64}$",
    ];

    #[test]
    fn the_published_patterns_are_supported_and_others_are_not() {
        for pattern in PUBLISHED {
            assert!(FixedPattern::parse(pattern).is_some(), "{pattern}");
        }
        for other in [
            "^a+$",
            "a{3}",
            "^a{3}",
            "a{3}$",
            "^[^a]$",
            "^(ab)$",
            "^a.$",
            "^[a-]$",
            "^[-a]$",
            "^[a-b-c]$",
            "^[z-a]$",
            "^a{}$",
            "^a{x}$",
            "^a{1,2}$",
            "^a{12345}$",
            "^[]$",
            "^\\d$",
            "^a|b$",
            "^é$",
            "^a b$",
            "^a-b$",
            "^sha256:[0-9a-f]{64}$$",
        ] {
            assert!(FixedPattern::parse(other).is_none(), "{other}");
        }
        assert!(FixedPattern::parse("^$").is_some_and(|p| p.matches("") && p.matches("\n")));
    }

    #[test]
    fn a_final_line_feed_is_accepted_once() {
        let hex = "0123456789abcdef0123456789ABCDEF01234567";
        let pattern = FixedPattern::parse("^[0-9a-fA-F]{40}$").unwrap();
        assert!(pattern.matches(hex));
        assert!(pattern.matches(&format!("{hex}\n")));
        for bad in [
            format!("{hex}\n\n"),
            format!("{hex}\r"),
            format!("{hex} "),
            format!("\n{hex}"),
            hex[1..].to_owned(),
            format!("{hex}0"),
        ] {
            assert!(!pattern.matches(&bad), "{bad:?}");
        }
    }

    #[test]
    fn literals_and_repeats_are_joined_into_runs() {
        let pattern = FixedPattern::parse("^sha256:[0-9a-f]{64}$").unwrap();
        assert_eq!(pattern.runs.len(), 2);
        assert_eq!(pattern.len, 71);
        let pattern = FixedPattern::parse("^a{3}[0-1]{2}[01]b_$").unwrap();
        assert_eq!(pattern.runs.len(), 3);
        assert!(pattern.matches("aaa010b_") && !pattern.matches("aa0101b_"));
    }

    #[test]
    fn only_strings_are_judged() {
        let keyword = PythonPattern::parse(&json!("^[0-9a-f]{64}$")).unwrap();
        assert!(keyword.is_valid(&json!(12)) && keyword.is_valid(&json!(null)));
        assert!(!keyword.is_valid(&json!("12")));
    }

    fn regex(pattern: &str) -> jsonschema::Validator {
        jsonschema::validator_for(&json!({ "pattern": pattern })).unwrap()
    }

    proptest! {
        /// The fixed matcher agrees with the regex engine, and the line feed rule with
        /// Python's `$`, on strings close to and far from matching.
        #[test]
        fn fixed_patterns_agree_with_the_regex_engine(
            which in 0..3_usize,
            text in "[0-9a-gA-G:s\\n\u{e9}]{0,3}(sha256:)?[0-9a-fA-F]{0,66}\\n{0,2}",
        ) {
            let pattern = PUBLISHED[which];
            let fixed = FixedPattern::parse(pattern).unwrap();
            let inner = regex(pattern);
            let value = |t: &str| Value::String(t.to_owned());
            let python = inner.is_valid(&value(&text))
                || text.strip_suffix('\n').is_some_and(|head| inner.is_valid(&value(head)));
            prop_assert_eq!(fixed.matches(&text), python);
        }
    }
}
