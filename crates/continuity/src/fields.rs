//! The field walker both validators use: it reads one JSON object field by field, records a
//! [`Finding`] for every defect it meets and keeps going, so a document's whole list of
//! defects comes out of one pass.
//!
//! Each reader returns `Some(value)` when the field is well formed and `None` after recording
//! a finding; the caller builds its typed value only when every reader returned `Some`.
//!
//! The envelope and state formats read `null` as a value (a nullable field must be present);
//! the evaluation scenarios (`crate::eval`) read `null` as absent and stop at the first
//! finding. Both go through the same readers: the `*_at` readers check a value already taken
//! out of the object, by [`Fields::present`] or by [`Fields::optional`] / [`Fields::required`].

use std::collections::BTreeSet;

use cairn_core::{Digest, Timestamp};
use serde_json::{Map, Value};

use crate::finding::{Finding, FindingCode, index_path, member_path};

/// Longest identifier or reference accepted (bytes).
pub(crate) const MAX_REF_BYTES: usize = 256;

/// Longest free-text field (`objective`) accepted (bytes). E-8: no unbounded prompt text.
pub(crate) const MAX_TEXT_BYTES: usize = 4096;

/// A JSON type name for messages (`a string`, `an object`, …).
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads the fields of one object, recording findings.
pub(crate) struct Fields<'a> {
    object: &'a Map<String, Value>,
    base: String,
    known: BTreeSet<&'static str>,
    findings: &'a mut Vec<Finding>,
}

impl<'a> Fields<'a> {
    /// Starts reading `object`, found at the JSON path `base`.
    pub(crate) fn new(
        object: &'a Map<String, Value>,
        base: impl Into<String>,
        findings: &'a mut Vec<Finding>,
    ) -> Self {
        Self {
            object,
            base: base.into(),
            known: BTreeSet::new(),
            findings,
        }
    }

    /// Starts reading `value` at `base`, or records `wrong_type` when it is not an object.
    pub(crate) fn object(
        value: &'a Value,
        base: &str,
        findings: &'a mut Vec<Finding>,
    ) -> Option<Self> {
        if let Value::Object(object) = value {
            Some(Self::new(object, base, findings))
        } else {
            findings.push(Finding::new(
                FindingCode::WrongType,
                base,
                format!("`{base}` must be an object, found {}", type_name(value)),
            ));
            None
        }
    }

    /// The JSON path of member `key`.
    pub(crate) fn path(&self, key: &str) -> String {
        member_path(&self.base, key)
    }

    /// Records a finding.
    pub(crate) fn push(&mut self, code: FindingCode, path: String, message: String) {
        self.findings.push(Finding::new(code, path, message));
    }

    /// The raw value of a field that must be present (it may be `null`).
    pub(crate) fn present(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.insert(key);
        let value = self.object.get(key);
        if value.is_none() {
            let path = self.path(key);
            let message = format!("`{path}` is missing");
            self.push(FindingCode::MissingField, path, message);
        }
        value
    }

    /// The value of an optional field: `None` when it is absent or `null`.
    pub(crate) fn optional(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.insert(key);
        self.object.get(key).filter(|value| !value.is_null())
    }

    /// The value of a field that must be present and not `null`.
    pub(crate) fn required(&mut self, key: &'static str) -> Option<&'a Value> {
        let value = self.optional(key);
        if value.is_none() {
            let path = self.path(key);
            let message = format!("`{path}` is required");
            self.push(FindingCode::MissingField, path, message);
        }
        value
    }

    /// Takes the first finding recorded so far (readers that stop at the first defect).
    pub(crate) fn take_first(&mut self) -> Option<Finding> {
        self.findings.drain(..).next()
    }

    /// Records `wrong_type` for the value at `path`.
    pub(crate) fn wrong_type(&mut self, path: String, expected: &str, found: &Value) {
        let message = format!("`{path}` must be {expected}, found {}", type_name(found));
        self.push(FindingCode::WrongType, path, message);
    }

    /// Checks a string against the text rules: non-empty, at most `max` bytes, no control
    /// characters (except in free text, where tab and newline are allowed).
    fn check_text(&mut self, path: String, text: &str, max: usize, free: bool) -> Option<String> {
        let problem = if text.trim().is_empty() {
            Some((FindingCode::EmptyValue, String::from("must not be empty")))
        } else if text.len() > max {
            Some((
                FindingCode::ValueTooLong,
                format!("must be at most {max} bytes, found {}", text.len()),
            ))
        } else if text
            .chars()
            .any(|c| c.is_control() && !(free && (c == '\n' || c == '\t')))
        {
            Some((
                FindingCode::BadText,
                String::from("must not contain control characters"),
            ))
        } else {
            None
        };
        match problem {
            Some((code, what)) => {
                let message = format!("`{path}` {what}");
                self.push(code, path, message);
                None
            }
            None => Some(text.to_owned()),
        }
    }

    /// A required, non-null reference string (ids, versions, refs).
    pub(crate) fn text(&mut self, key: &'static str) -> Option<String> {
        self.text_limited(key, MAX_REF_BYTES, false)
    }

    /// A required, non-null string of at most `max` bytes.
    pub(crate) fn text_limited(
        &mut self,
        key: &'static str,
        max: usize,
        free: bool,
    ) -> Option<String> {
        let value = self.present(key)?;
        self.text_at(self.path(key), value, max, free)
    }

    /// `value`, found at `path`, as a string that passes the text rules.
    pub(crate) fn text_at(
        &mut self,
        path: String,
        value: &Value,
        max: usize,
        free: bool,
    ) -> Option<String> {
        match value {
            Value::String(text) => self.check_text(path, text, max, free),
            other => {
                self.wrong_type(path, "a string", other);
                None
            }
        }
    }

    /// A present, nullable reference string: `Some(None)` for `null`.
    pub(crate) fn nullable_text(&mut self, key: &'static str) -> Option<Option<String>> {
        let value = self.present(key)?;
        let path = self.path(key);
        match value {
            Value::Null => Some(None),
            Value::String(text) => self.check_text(path, text, MAX_REF_BYTES, false).map(Some),
            other => {
                self.wrong_type(path, "a string or null", other);
                None
            }
        }
    }

    /// A delegated field (`delegated_principal_id`, `delegated_scope`): a string, or unused —
    /// `null`, or `""` as the published reference writes an unused one. Whether an unused one
    /// is allowed (not under `user_delegated`) is for the caller to say.
    pub(crate) fn delegated_text(&mut self, key: &'static str) -> Option<Option<String>> {
        self.unused_or(key, Self::nullable_text)
    }

    /// `read(self, key)`, except that `""` means unused (`Some(None)`), as `null` does: the
    /// published reference writes unused fields as empty strings.
    pub(crate) fn unused_or<T>(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Self, &'static str) -> Option<Option<T>>,
    ) -> Option<Option<T>> {
        match self.object.get(key) {
            Some(Value::String(text)) if text.is_empty() => {
                self.known.insert(key);
                Some(None)
            }
            _ => read(self, key),
        }
    }

    /// A required array of reference strings (possibly empty).
    pub(crate) fn text_list(&mut self, key: &'static str) -> Option<Vec<String>> {
        let value = self.present(key)?;
        self.text_list_at(self.path(key), value, MAX_REF_BYTES, false)
    }

    /// `value`, found at `path`, as an array of strings that pass the text rules.
    pub(crate) fn text_list_at(
        &mut self,
        path: String,
        value: &Value,
        max: usize,
        free: bool,
    ) -> Option<Vec<String>> {
        let Value::Array(items) = value else {
            self.wrong_type(path, "an array of strings", value);
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (index, item) in items.iter().enumerate() {
            match self.text_at(index_path(&path, index), item, max, free) {
                Some(text) => out.push(text),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A required string parsed by `parse`; `code` and `expected` describe a bad value.
    pub(crate) fn parsed<T>(
        &mut self,
        key: &'static str,
        code: FindingCode,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let value = self.present(key)?;
        self.parsed_at(self.path(key), value, code, expected, parse)
    }

    /// A present, nullable string parsed by `parse`.
    pub(crate) fn nullable_parsed<T>(
        &mut self,
        key: &'static str,
        code: FindingCode,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<Option<T>> {
        let value = self.present(key)?;
        if value.is_null() {
            return Some(None);
        }
        self.parsed_at(self.path(key), value, code, expected, parse)
            .map(Some)
    }

    /// `value`, found at `path`, as a string parsed by `parse`.
    pub(crate) fn parsed_at<T>(
        &mut self,
        path: String,
        value: &Value,
        code: FindingCode,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let Value::String(text) = value else {
            self.wrong_type(path, "a string", value);
            return None;
        };
        let parsed = parse(text);
        if parsed.is_none() {
            let message = format!(
                "`{path}` must be {expected}, found `{}`",
                cairn_core::error::excerpt(text)
            );
            self.push(code, path, message);
        }
        parsed
    }

    /// A required digest `sha256:<64 lowercase hex>`.
    pub(crate) fn digest(&mut self, key: &'static str) -> Option<Digest> {
        self.parsed(key, FindingCode::BadDigest, DIGEST_TEXT, parse_digest)
    }

    /// A present, nullable digest.
    pub(crate) fn nullable_digest(&mut self, key: &'static str) -> Option<Option<Digest>> {
        self.nullable_parsed(key, FindingCode::BadDigest, DIGEST_TEXT, parse_digest)
    }

    /// A required RFC 3339 time with an offset.
    pub(crate) fn timestamp(&mut self, key: &'static str) -> Option<Timestamp> {
        self.parsed(key, FindingCode::BadTimestamp, TIME_TEXT, parse_timestamp)
    }

    /// A present, nullable RFC 3339 time with an offset.
    pub(crate) fn nullable_timestamp(&mut self, key: &'static str) -> Option<Option<Timestamp>> {
        self.nullable_parsed(key, FindingCode::BadTimestamp, TIME_TEXT, parse_timestamp)
    }

    /// A present, nullable non-negative integer.
    pub(crate) fn nullable_count(&mut self, key: &'static str) -> Option<Option<u64>> {
        let value = self.present(key)?;
        let path = self.path(key);
        match value {
            Value::Null => Some(None),
            Value::Number(number) => {
                let count = number.as_u64();
                if count.is_none() {
                    let message =
                        format!("`{path}` must be a non-negative integer, found `{number}`");
                    self.push(FindingCode::BadNumber, path, message);
                }
                count.map(Some)
            }
            other => {
                self.wrong_type(path, "a non-negative integer or null", other);
                None
            }
        }
    }

    /// Records `unknown_field` for every member not read, in sorted order.
    pub(crate) fn finish(mut self) {
        self.refuse_unknown();
    }

    /// Records `unknown_field` for every member not read so far, in sorted order.
    pub(crate) fn refuse_unknown(&mut self) {
        let mut unknown: Vec<&String> = self
            .object
            .keys()
            .filter(|key| !self.known.contains(key.as_str()))
            .collect();
        unknown.sort();
        for key in unknown {
            let path = member_path(&self.base, key);
            let message = format!("`{path}` is not a field of this format");
            self.findings
                .push(Finding::new(FindingCode::UnknownField, path, message));
        }
    }
}

const DIGEST_TEXT: &str = "`sha256:` followed by 64 lowercase hex digits";
/// What a time field must be, for messages.
pub(crate) const TIME_TEXT: &str = "an rfc 3339 time with an offset";

fn parse_digest(text: &str) -> Option<Digest> {
    text.parse().ok()
}

/// A time with an offset, or `None`.
pub(crate) fn parse_timestamp(text: &str) -> Option<Timestamp> {
    // Bound the text before handing it to the parser: a time is never this long.
    if text.len() > 64 {
        return None;
    }
    text.parse().ok()
}
