//! Strict JSON: the one reader for JSON that decides something — a tool call's arguments
//! before the gate judges them, a hook host's settings before Cairn edits them.
//!
//! Plain `serde_json` is lenient where a decision must not be: of duplicate keys it keeps
//! the last (so `{"amount": 25000, "amount": 5}` is digested whole and judged as `5`), and a
//! caller that drops what it cannot parse ends up judging no arguments at all. This reader
//! either returns the document exactly as written or says what is wrong and where:
//!
//! - the bytes are UTF-8 and every escape is valid (a lone surrogate such as `"\udead"`,
//!   which JavaScript's `JSON.stringify` emits, is refused);
//! - no object has a key twice;
//! - objects and arrays nest at most [`MAX_DEPTH`] deep (the document itself is level 1);
//! - every number fits an IEEE double (`1e400` is refused rather than silently changed).
//!
//! Every error names the JSON path of the offending value (`$.memo`, `$.items[3]`).

use std::cell::RefCell;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use thiserror::Error;

use crate::error::{Code, ErrorCode};

/// How deep objects and arrays may nest: a document `[[1]]` has depth 2. Tool arguments and
/// settings files need a handful of levels; `serde_json` itself stops at 128.
pub const MAX_DEPTH: usize = 64;

/// What is wrong with a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictJsonIssue {
    /// Not JSON at all, invalid UTF-8, a bad escape, or a number no double can hold.
    Syntax,
    /// An object has the same key twice.
    DuplicateKey,
    /// Objects and arrays nest deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Why a document was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {message}", if path.is_empty() { "$" } else { path })]
pub struct StrictJsonError {
    /// What kind of problem it is.
    pub issue: StrictJsonIssue,
    /// The JSON path of the offending value (`$.a[0]`), or of the value being read when the
    /// text stopped being JSON.
    pub path: String,
    /// What is wrong, for people (with the line and column for syntax errors).
    pub message: String,
}

crate::error_codes! {
    StrictJsonError {
        /// Text that is not JSON.
        JSON_INVALID = Invalid("json_invalid");
        /// An object that names a member twice.
        JSON_DUPLICATE_KEY = Invalid("json_duplicate_key");
        /// Nesting deeper than the reader allows.
        JSON_TOO_DEEP = Invalid("json_too_deep");
    }
}

impl ErrorCode for StrictJsonError {
    fn error_code(&self) -> Code {
        match self.issue {
            StrictJsonIssue::Syntax => Self::JSON_INVALID,
            StrictJsonIssue::DuplicateKey => Self::JSON_DUPLICATE_KEY,
            StrictJsonIssue::TooDeep => Self::JSON_TOO_DEEP,
        }
    }
}

/// Reads `bytes` as one strict JSON document (surrounding whitespace allowed).
///
/// # Errors
/// [`StrictJsonError`] naming the first problem met and its path.
pub fn parse(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    let reader = Reader::default();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = (&mut deserializer)
        .deserialize_any(ValueVisitor {
            reader: &reader,
            depth: 0,
        })
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|err| reader.error(&err))
}

/// [`parse`] for text.
///
/// # Errors
/// As [`parse`].
pub fn parse_str(text: &str) -> Result<Value, StrictJsonError> {
    parse(text.as_bytes())
}

/// The path being read, and the first structural problem found (the serde error that
/// carries it up is only a marker).
#[derive(Default)]
struct Reader {
    path: RefCell<Vec<Segment>>,
    found: RefCell<Option<(StrictJsonIssue, String, String)>>,
}

/// One step of a JSON path: a member name or an array index (the path an error names; the
/// interop reader writes its paths the same way).
pub enum Segment {
    /// A member name.
    Key(String),
    /// An array index.
    Index(usize),
}

/// The JSON path text of `segments`: `$`, `$.a[0]`, `$["b c"]`.
pub fn path_text(segments: &[Segment]) -> String {
    let mut out = String::from("$");
    for segment in segments {
        match segment {
            Segment::Key(key) => push_key(&mut out, key),
            Segment::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

impl Reader {
    fn path_text(&self) -> String {
        path_text(&self.path.borrow())
    }

    fn refuse<E: de::Error>(&self, issue: StrictJsonIssue, message: String) -> E {
        let path = self.path_text();
        let text = message.clone();
        *self.found.borrow_mut() = Some((issue, path, message));
        E::custom(text)
    }

    fn error(&self, err: &serde_json::Error) -> StrictJsonError {
        match self.found.borrow_mut().take() {
            Some((issue, path, message)) => StrictJsonError {
                issue,
                path,
                message,
            },
            None => StrictJsonError {
                issue: StrictJsonIssue::Syntax,
                path: self.path_text(),
                message: format!("not strict JSON: {err}"),
            },
        }
    }
}

/// A member name in a path: `.name` when it is a plain identifier, else `["…"]`.
pub fn push_key(out: &mut String, key: &str) {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        out.push('.');
        out.push_str(key);
    } else {
        out.push('[');
        out.push_str(&Value::String(key.to_owned()).to_string());
        out.push(']');
    }
}

#[derive(Clone, Copy)]
struct ValueVisitor<'r> {
    reader: &'r Reader,
    /// How many objects and arrays enclose the value being read.
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'r> ValueVisitor<'r> {
    fn nested<E: de::Error>(self) -> Result<Self, E> {
        let depth = self.depth + 1;
        if depth > MAX_DEPTH {
            return Err(self.reader.refuse(
                StrictJsonIssue::TooDeep,
                format!("objects and arrays nest more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(ValueVisitor {
            reader: self.reader,
            depth,
        })
    }
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        // `serde_json` refuses overflowing literals itself; this is the belt to its braces.
        Number::from_f64(value).map(Value::Number).ok_or_else(|| {
            self.reader.refuse(
                StrictJsonIssue::Syntax,
                "a number outside the range of a double".to_owned(),
            )
        })
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut items = Vec::new();
        loop {
            self.reader
                .path
                .borrow_mut()
                .push(Segment::Index(items.len()));
            let Some(item) = seq.next_element_seed(inner)? else {
                self.reader.path.borrow_mut().pop();
                break;
            };
            self.reader.path.borrow_mut().pop();
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            self.reader
                .path
                .borrow_mut()
                .push(Segment::Key(key.clone()));
            if map.contains_key(&key) {
                return Err(self.reader.refuse(
                    StrictJsonIssue::DuplicateKey,
                    "the key appears twice in its object".to_owned(),
                ));
            }
            let value = access.next_value_seed(inner)?;
            self.reader.path.borrow_mut().pop();
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn refused(text: &str) -> StrictJsonError {
        parse_str(text).unwrap_err()
    }

    #[test]
    fn plain_documents_read_as_serde_json_reads_them() {
        for text in [
            r#"{"amount": 25000, "memo": "x", "nested": {"a": [1, 2.5, -0, true, null]}}"#,
            "[]",
            "  \"text\"  ",
            "123456789012345678901234567890",
            r#"{"emoji": "\ud83d\ude00"}"#,
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_str(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn a_lone_surrogate_is_refused_with_its_path() {
        let err = refused(r#"{"amount": 25000, "memo": "\udead"}"#);
        assert_eq!(err.issue, StrictJsonIssue::Syntax);
        assert_eq!(err.path, "$.memo");
        assert_eq!(err.code(), "json_invalid");
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        let err = refused(r#"{"amount": 25000, "amount": 5}"#);
        assert_eq!(
            (err.issue, err.path.as_str()),
            (StrictJsonIssue::DuplicateKey, "$.amount")
        );
        let err = refused(r#"{"a": [{"x": 1}, {"y": 1, "y": 2}]}"#);
        assert_eq!(err.path, "$.a[1].y");
        assert_eq!(err.code(), "json_duplicate_key");
    }

    #[test]
    fn nesting_beyond_the_limit_is_refused() {
        let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        assert!(parse_str(&deep(MAX_DEPTH)).is_ok());
        let err = refused(&deep(MAX_DEPTH + 1));
        assert_eq!(err.issue, StrictJsonIssue::TooDeep);
        // Far past serde_json's own limit: still an error, never a stack overflow.
        let err = refused(&format!(r#"{{"x": {}}}"#, deep(100_000)));
        assert_eq!(err.issue, StrictJsonIssue::TooDeep);
        assert!(err.path.starts_with("$.x[0][0]"), "{}", err.path);
    }

    #[test]
    fn numbers_no_double_holds_are_refused() {
        let err = refused(r#"{"amount": 1e400}"#);
        assert_eq!(err.issue, StrictJsonIssue::Syntax);
        assert_eq!(err.path, "$.amount");
        assert!(refused("-1e400").message.contains("out of range"));
    }

    #[test]
    fn invalid_utf8_and_trailing_text_are_refused() {
        assert_eq!(
            parse(b"{\"a\": \"\xff\"}").unwrap_err().issue,
            StrictJsonIssue::Syntax
        );
        assert_eq!(refused("{} {}").issue, StrictJsonIssue::Syntax);
        assert_eq!(refused("").issue, StrictJsonIssue::Syntax);
    }

    #[test]
    fn odd_keys_are_quoted_in_paths() {
        let err = refused(r#"{"a b": {"": 1, "": 2}}"#);
        assert_eq!(err.path, r#"$["a b"][""]"#);
    }
}
