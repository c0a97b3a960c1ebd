//! Python's JSON: the one reader of the documents Cairn judges — VCE 0.1 and RLC 0.1 (the
//! published formats) and Cairn's own continuity envelope and state. It accepts every text
//! Python's `json.loads` accepts — the published references' reader — so that Cairn reaches
//! the references' decision on such a text instead of refusing to read it.
//!
//! Python reads a few things a `serde_json::Value` cannot hold. Each is read as a stand-in and
//! reported with its JSON path ([`StandIn`]), so a validator can decide as the reference does
//! where the stand-in would not:
//!
//! - a number JSON cannot carry: `NaN`, `Infinity`, `-Infinity`, or a number beyond the range
//!   of a double (`1e400`, `-1e400`). Python reads a float no JSON writer can write back (the
//!   references raise when they digest it); the stand-in is the largest double of that sign
//!   (`NaN` counts as positive). One rule for all of them: the document is read, and its
//!   format decides what such a number means (VCE and RLC: BLOCKED at the digest stage;
//!   continuity: a `bad_number` finding) — never "not JSON" for one spelling and a decision
//!   for another;
//! - a lone surrogate escape (`"\ud800"`, in a string or a key): Python keeps it in the string,
//!   where UTF-8 cannot encode it; the stand-in is U+FFFD.
//!
//! Objects and arrays may nest [`MAX_DEPTH`] levels deep — the one nesting limit of every
//! judged document — more than Python's own reader allows under its default recursion limit
//! (about 990 levels); deeper documents are refused (`json_too_deep`). Of a key given twice,
//! the last value counts, as in Python.
//!
//! A leading byte order mark is refused (Python refuses it too). Everything else is RFC 8259:
//! no comments, no trailing commas, no single quotes, no raw control characters in strings.

use std::fmt;

use serde_json::{Map, Number, Value};
use thiserror::Error;

use crate::strict_json::StrictJsonError;
use crate::strict_json::{Segment, path_text, push_key};
use crate::{Code, ErrorCode};

/// How deep objects and arrays may nest (the document itself is level 1): at least what
/// Python's `json.loads` reads under its default recursion limit of 1,000 frames.
pub const MAX_DEPTH: usize = 1000;

/// A value read as a stand-in, because a `serde_json::Value` cannot hold what Python read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandIn {
    /// The JSON path of the value (`$.a[0]`), or of the object for a key.
    pub path: String,
    /// What Python read there.
    pub kind: StandInKind,
}

/// What Python read where a [`StandIn`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandInKind {
    /// A number Python reads as `inf`, `-inf` or `nan`: `Infinity`, `-Infinity`, `NaN`, or a
    /// number beyond the range of a double (`1e400`).
    NonFiniteNumber,
    /// A string or key with a lone surrogate, which no UTF-8 text can hold.
    LoneSurrogate,
}

impl fmt::Display for StandIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            StandInKind::NonFiniteNumber => {
                write!(
                    f,
                    "`{}` is not a finite number (`NaN`, `Infinity` or beyond a double)",
                    self.path
                )
            }
            StandInKind::LoneSurrogate => {
                write!(f, "`{}` holds a lone surrogate escape", self.path)
            }
        }
    }
}

/// A document as Python reads it: the value, and where it holds stand-ins.
#[derive(Debug, Clone, PartialEq)]
pub struct PyJson {
    /// The value, with stand-ins where Python read something a `Value` cannot hold.
    pub value: Value,
    /// Every stand-in, in document order.
    pub stand_ins: Vec<StandIn>,
}

impl PyJson {
    /// Takes member `name` out of an object document, as a document of its own: its
    /// stand-ins move with it, their paths rooted at the member (`$.envelope.a` → `$.a`).
    /// `None` when the document is not an object or has no such member.
    pub fn take_member(&mut self, name: &str) -> Option<Self> {
        let value = self.value.as_object_mut()?.remove(name)?;
        let mut prefix = String::from("$");
        push_key(&mut prefix, name);
        let (mine, rest): (Vec<StandIn>, Vec<StandIn>) = std::mem::take(&mut self.stand_ins)
            .into_iter()
            .partition(|s| {
                s.path.strip_prefix(&prefix).is_some_and(|tail| {
                    tail.is_empty() || tail.starts_with('.') || tail.starts_with('[')
                })
            });
        self.stand_ins = rest;
        let stand_ins = mine
            .into_iter()
            .map(|s| StandIn {
                path: format!("${}", s.path.get(prefix.len()..).unwrap_or_default()),
                kind: s.kind,
            })
            .collect();
        Some(Self { value, stand_ins })
    }
}

/// What is wrong with a text Python's reader would not read either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyJsonIssue {
    /// Not JSON.
    Syntax,
    /// Objects and arrays nest deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Why a text was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message} at line {line} column {column}")]
pub struct PyJsonError {
    /// What kind of problem it is.
    pub issue: PyJsonIssue,
    /// What is wrong, for people.
    pub message: String,
    /// The line (from 1) where the text stopped being readable.
    pub line: usize,
    /// The column (from 1, in characters) on that line.
    pub column: usize,
}

impl ErrorCode for PyJsonError {
    fn error_code(&self) -> Code {
        match self.issue {
            PyJsonIssue::Syntax => StrictJsonError::JSON_INVALID,
            PyJsonIssue::TooDeep => StrictJsonError::JSON_TOO_DEEP,
        }
    }
}

/// Reads `text` as Python's `json.loads` does (see the module documentation).
///
/// # Errors
/// [`PyJsonError`] where the text stops being JSON, or nests deeper than [`MAX_DEPTH`].
pub fn parse(text: &str) -> Result<PyJson, PyJsonError> {
    let mut reader = Reader {
        text: text.as_bytes(),
        source: text,
        at: 0,
        path: Vec::new(),
        stand_ins: Vec::new(),
    };
    reader.skip_space();
    let value = reader.value(0)?;
    reader.skip_space();
    if reader.at < reader.text.len() {
        return Err(reader.fail("extra data after the document"));
    }
    Ok(PyJson {
        value,
        stand_ins: reader.stand_ins,
    })
}

/// One step of the path being read.
enum Step {
    Index(usize),
    /// A member whose name's opening quote is at this offset of the text.
    KeyAt(usize),
}

struct Reader<'t> {
    text: &'t [u8],
    /// The same text, to take runs of it without checking their UTF-8 again.
    source: &'t str,
    at: usize,
    /// Where the value being read is: array indices, and the offsets of member names in the
    /// text (read again only to name a stand-in's path, which is rare).
    path: Vec<Step>,
    stand_ins: Vec<StandIn>,
}

impl Reader<'_> {
    fn fail(&self, message: &str) -> PyJsonError {
        self.fail_as(PyJsonIssue::Syntax, message)
    }

    fn fail_as(&self, issue: PyJsonIssue, message: &str) -> PyJsonError {
        let before = self.text.get(..self.at).unwrap_or(self.text);
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(before.get(line_start..).unwrap_or_default())
            .chars()
            .count()
            + 1;
        PyJsonError {
            issue,
            message: message.to_owned(),
            line,
            column,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn stand_in(&mut self, kind: StandInKind) {
        let segments: Vec<Segment> = self
            .path
            .iter()
            .map(|step| match *step {
                Step::Index(index) => Segment::Index(index),
                Step::KeyAt(at) => {
                    let mut again = Reader {
                        text: self.text,
                        source: self.source,
                        at,
                        path: Vec::new(),
                        stand_ins: Vec::new(),
                    };
                    Segment::Key(again.string().map(|(key, _)| key).unwrap_or_default())
                }
            })
            .collect();
        let path = path_text(&segments);
        self.stand_ins.push(StandIn { path, kind });
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Result<Value, PyJsonError> {
        if self.text.get(self.at..self.at + word.len()) == Some(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.fail("expecting a value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, PyJsonError> {
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => {
                let (text, lone) = self.string()?;
                if lone {
                    self.stand_in(StandInKind::LoneSurrogate);
                }
                Ok(Value::String(text))
            }
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'N') => self.non_finite(b"NaN", f64::MAX),
            Some(b'I') => self.non_finite(b"Infinity", f64::MAX),
            _ => Err(self.fail("expecting a value")),
        }
    }

    /// `NaN`, `Infinity` or (after its `-`) `-Infinity`: read as Python reads them, into a
    /// float no JSON writer can carry, held as the `extreme` double.
    fn non_finite(&mut self, word: &[u8], extreme: f64) -> Result<Value, PyJsonError> {
        let value = self.literal(
            word,
            Number::from_f64(extreme).map_or(Value::Null, Value::Number),
        )?;
        self.stand_in(StandInKind::NonFiniteNumber);
        Ok(value)
    }

    fn nested(&self, depth: usize) -> Result<(), PyJsonError> {
        if depth > MAX_DEPTH {
            return Err(self.fail_as(
                PyJsonIssue::TooDeep,
                &format!("objects and arrays nest more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<Value, PyJsonError> {
        self.nested(depth)?;
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_space();
            self.path.push(Step::Index(items.len()));
            let item = self.value(depth)?;
            self.path.pop();
            items.push(item);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.fail("expecting `,` or `]`")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, PyJsonError> {
        self.nested(depth)?;
        self.at += 1;
        let mut map = Map::new();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return Err(self.fail("expecting a property name in double quotes"));
            }
            let key_at = self.at;
            let (key, lone) = self.string()?;
            if lone {
                self.stand_in(StandInKind::LoneSurrogate);
            }
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(self.fail("expecting `:`"));
            }
            self.at += 1;
            self.skip_space();
            self.path.push(Step::KeyAt(key_at));
            let value = self.value(depth)?;
            self.path.pop();
            // The last value of a repeated key counts, as in a Python dict.
            map.insert(key, value);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.fail("expecting `,` or `}`")),
            }
        }
    }

    /// Four hex digits at `at`, as a code unit.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    }

    /// A string at the opening quote; whether it held a lone surrogate (read as U+FFFD).
    fn string(&mut self) -> Result<(String, bool), PyJsonError> {
        self.at += 1;
        let mut out: Option<String> = None;
        let mut lone = false;
        loop {
            let start = self.at;
            let run = self
                .text
                .get(start..)
                .unwrap_or_default()
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(self.text.len() - start);
            self.at += run;
            // The run stops at an ASCII byte, so it ends on a character boundary.
            let text = self.source.get(start..self.at).unwrap_or_default();
            if out.is_none() && self.peek() == Some(b'"') {
                // No escape at all (nearly every string): one allocation of the right size.
                self.at += 1;
                return Ok((text.to_owned(), false));
            }
            let out = out.get_or_insert_with(|| String::with_capacity(run + 8));
            out.push_str(text);
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok((std::mem::take(out), lone));
                }
                Some(b'\\') => {
                    let Some(escape) = self.text.get(self.at + 1).copied() else {
                        return Err(self.fail("unterminated string"));
                    };
                    self.at += 2;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let Some(unit) = self.hex4(self.at) else {
                                return Err(self.fail("invalid \\uXXXX escape"));
                            };
                            self.at += 4;
                            let mut code = Some(unit);
                            if (0xD800..0xDC00).contains(&unit) {
                                // A high surrogate pairs with an escaped low one right after.
                                let low = (self.text.get(self.at..self.at + 2) == Some(b"\\u"))
                                    .then(|| self.hex4(self.at + 2))
                                    .flatten()
                                    .filter(|low| (0xDC00..0xE000).contains(low));
                                code = low.map(|low| {
                                    self.at += 6;
                                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                });
                            }
                            match code.and_then(char::from_u32) {
                                Some(c) => out.push(c),
                                None => {
                                    lone = true;
                                    out.push('\u{FFFD}');
                                }
                            }
                        }
                        _ => return Err(self.fail("invalid escape")),
                    }
                }
                Some(_) => return Err(self.fail("invalid control character in a string")),
                None => return Err(self.fail("unterminated string")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, PyJsonError> {
        let start = self.at;
        let digits = |r: &mut Self| {
            let from = r.at;
            while matches!(r.peek(), Some(b'0'..=b'9')) {
                r.at += 1;
            }
            r.at - from
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
            if matches!(self.peek(), Some(b'I')) {
                return self.non_finite(b"Infinity", f64::MIN);
            }
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.fail("expecting a value")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') && matches!(self.text.get(self.at + 1), Some(b'0'..=b'9')) {
            self.at += 1;
            digits(self);
            integer = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let mark = self.at;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                // Python reads the number before the `e` and then fails on what follows.
                self.at = mark;
            } else {
                integer = false;
            }
        }
        let text = std::str::from_utf8(self.text.get(start..self.at).unwrap_or_default())
            .unwrap_or_default();
        if integer {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Value::Number(n.into()));
            }
            if let Ok(n) = text.parse::<u64>() {
                return Ok(Value::Number(n.into()));
            }
        }
        let float: f64 = text.parse().unwrap_or(f64::NAN);
        if let Some(n) = Number::from_f64(float) {
            return Ok(Value::Number(n));
        }
        self.stand_in(StandInKind::NonFiniteNumber);
        let extreme = if text.starts_with('-') {
            f64::MIN
        } else {
            f64::MAX
        };
        Ok(Number::from_f64(extreme).map_or(Value::Null, Value::Number))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use serde_json::json;

    use super::*;

    fn read(text: &str) -> PyJson {
        parse(text).unwrap()
    }

    #[test]
    fn plain_documents_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a": [1, -2, 2.5, 0.0, -0.0, 1e3, 1E-3, true, false, null], "b": {"c": "d"}}"#,
            "[]",
            " {} ",
            "\"text\"",
            "123456789012345678901234567890",
            "18446744073709551615",
            "-9223372036854775808",
            r#"{"emoji": "\ud83d\ude00", "esc": "\"\\\/\b\f\n\r\t\u00e9"}"#,
            "1e-400",
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            let got = read(text);
            assert_eq!(got.value, expected, "{text}");
            assert!(got.stand_ins.is_empty(), "{text}");
        }
    }

    #[test]
    fn what_python_reads_beyond_a_value_is_read_as_a_stand_in_with_its_path() {
        let got =
            read(r#"{"n": [1e400, -1e400], "s": "a\ud800b", "\udc00": 1, "p": "\ud800\u0041"}"#);
        assert_eq!(got.value["n"], json!([f64::MAX, f64::MIN]));
        assert_eq!(got.value["s"], json!("a\u{FFFD}b"));
        assert_eq!(got.value["p"], json!("\u{FFFD}A"));
        let spots: Vec<String> = got.stand_ins.iter().map(ToString::to_string).collect();
        assert_eq!(
            spots,
            [
                "`$.n[0]` is not a finite number (`NaN`, `Infinity` or beyond a double)",
                "`$.n[1]` is not a finite number (`NaN`, `Infinity` or beyond a double)",
                "`$.s` holds a lone surrogate escape",
                "`$` holds a lone surrogate escape",
                "`$.p` holds a lone surrogate escape",
            ]
        );
    }

    #[test]
    fn every_number_json_cannot_carry_is_read_by_one_rule() {
        let spelled = read(r#"{"a": [NaN, Infinity, -Infinity], "b": [1e400, -1e400]}"#);
        assert_eq!(spelled.value["a"], json!([f64::MAX, f64::MAX, f64::MIN]));
        assert_eq!(spelled.value["b"], json!([f64::MAX, f64::MIN]));
        let paths: Vec<&str> = spelled.stand_ins.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["$.a[0]", "$.a[1]", "$.a[2]", "$.b[0]", "$.b[1]"]);
        assert!(
            spelled
                .stand_ins
                .iter()
                .all(|s| s.kind == StandInKind::NonFiniteNumber)
        );
        for text in ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"] {
            assert_eq!(read(text).stand_ins.len(), 1, "{text}");
        }
        // Only the exact words Python reads.
        for text in [
            "nan",
            "Inf",
            "-NaN",
            "NaNa",
            "Infinit",
            "+Infinity",
            "-infinity",
        ] {
            assert_eq!(parse(text).unwrap_err().code(), "json_invalid", "{text}");
        }
    }

    #[test]
    fn nesting_reaches_past_pythons_limit_and_stops_at_the_documented_one() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(&deep(MAX_DEPTH)).is_ok());
        let err = parse(&deep(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(err.code(), "json_too_deep");
        let objects = format!("{}1{}", "{\"a\":".repeat(128), "}".repeat(128));
        assert!(parse(&objects).is_ok());
    }

    #[test]
    fn minus_zero_without_a_fraction_is_the_integer_zero_as_in_python() {
        assert_eq!(read("-0").value, json!(0));
        assert!(read("-0").value.is_i64());
    }

    #[test]
    fn a_member_taken_out_keeps_its_stand_ins_rooted_at_itself() {
        let mut line =
            read(r#"{"envelope": {"a": "\ud800"}, "envelopes": 1e400, "restore": null}"#);
        let envelope = line.take_member("envelope").unwrap();
        assert_eq!(envelope.value, json!({"a": "\u{FFFD}"}));
        assert_eq!(envelope.stand_ins[0].path, "$.a");
        assert_eq!(line.stand_ins.len(), 1);
        assert_eq!(line.stand_ins[0].path, "$.envelopes");
        assert!(line.take_member("missing").is_none());
    }

    #[test]
    fn the_last_of_a_repeated_key_counts_as_in_python() {
        assert_eq!(read(r#"{"a": 1, "a": 2}"#).value, json!({"a": 2}));
    }

    #[test]
    fn what_json_does_not_define_is_refused_with_a_position() {
        for (text, code) in [
            ("\u{feff}{}", "json_invalid"),
            ("{'a': 1}", "json_invalid"),
            ("[1,]", "json_invalid"),
            ("01", "json_invalid"),
            ("1.", "json_invalid"),
            ("1e", "json_invalid"),
            ("\"a\u{1}\"", "json_invalid"),
            ("\"\\x41\"", "json_invalid"),
            ("\"\\u12G4\"", "json_invalid"),
            ("\"open", "json_invalid"),
            ("{} {}", "json_invalid"),
            ("", "json_invalid"),
            ("tru", "json_invalid"),
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.code(), code, "{text:?}");
        }
        let err = parse("{\n  \"a\": [1,\n  ]\n}").unwrap_err();
        assert_eq!((err.line, err.column), (3, 3));
    }
}
