//! Canonical JSON forms (C-2, C-3): RFC 8785 (JCS) for Cairn's own documents and
//! `json-sort-keys-utf8-v1` for VCE 0.1 / RLC 0.1 interop.
//!
//! JCS comes from a maintained crate. `json-sort-keys-utf8-v1` is defined by what Python's
//! `json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))` writes, so its
//! writer is hand-written here to reproduce Python byte for byte, in particular Python's
//! `repr(float)` number format, which no JSON serialiser in Rust follows.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::digest::Digest;
use crate::error::CoreError;

/// The canonicalisation a digest was computed over; named in every document that carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Canonicalization {
    /// RFC 8785 JSON Canonicalization Scheme.
    #[serde(rename = "jcs")]
    Jcs,
    /// Sorted keys, `,`/`:` separators, no ASCII escaping, UTF-8 (VCE 0.1, RLC 0.1).
    #[serde(rename = "json-sort-keys-utf8-v1")]
    JsonSortKeysUtf8V1,
}

impl Canonicalization {
    /// The name written into documents.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Jcs => "jcs",
            Self::JsonSortKeysUtf8V1 => "json-sort-keys-utf8-v1",
        }
    }
}

impl fmt::Display for Canonicalization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Canonicalization {
    type Err = CoreError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "jcs" => Ok(Self::Jcs),
            "json-sort-keys-utf8-v1" => Ok(Self::JsonSortKeysUtf8V1),
            other => Err(CoreError::Canonicalization {
                reason: format!("unknown canonicalization `{other}`"),
            }),
        }
    }
}

/// Serialises `value` in RFC 8785 canonical form.
///
/// # Errors
/// [`CoreError::Canonicalization`] when the value cannot be represented (a non-finite number,
/// a map with non-string keys).
pub fn jcs<T: Serialize>(value: &T) -> Result<Vec<u8>, CoreError> {
    serde_json_canonicalizer::to_vec(value).map_err(|e| CoreError::Canonicalization {
        reason: e.to_string(),
    })
}

/// Serialises a JSON value in RFC 8785 canonical form, taking the fast path of
/// [`crate::fast_jcs`] when the value allows it and the reference canonicaliser otherwise.
///
/// # Errors
/// As [`jcs`].
pub fn jcs_value(value: &Value) -> Result<Vec<u8>, CoreError> {
    let mut out = Vec::with_capacity(256);
    if crate::fast_jcs::write_value(value, &mut out) {
        Ok(out)
    } else {
        jcs(value)
    }
}

/// The digest of the RFC 8785 canonical form of `value`: `H(canonical_json(value))`.
///
/// # Errors
/// As [`jcs`].
pub fn jcs_digest<T: Serialize>(value: &T) -> Result<Digest, CoreError> {
    jcs(value).map(|bytes| Digest::of(&bytes))
}

/// The deepest nesting of arrays and objects [`sort_keys_utf8_v1`] accepts.
///
/// Python's encoder stops at its recursion limit (about 1000 frames) and `serde_json` refuses
/// to parse more than 128 levels; the cap keeps a hand-built value from exhausting the stack.
pub const SORT_KEYS_UTF8_V1_MAX_DEPTH: usize = 512;

/// Serialises `value` in the interop form `json-sort-keys-utf8-v1` (C-3, VCE 0.1, RLC 0.1).
///
/// The bytes equal Python's
/// `json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")`
/// for the object `json.loads` builds from the same JSON text:
///
/// - object keys sorted by code point (the same as UTF-8 byte order), no whitespace;
/// - strings escape only `"`, `\` and U+0000–U+001F: `\n` `\r` `\t` `\b` `\f` in short form,
///   the other control characters as `\u00xx` in lowercase hex; everything else, including
///   U+007F, U+2028 and characters outside the BMP, is written as raw UTF-8;
/// - integers as integers; other numbers as Python's `repr(float)`: the shortest digits that
///   round-trip, in scientific form (`1e-05`, `1e+16`, `1.5e+300`) when the decimal exponent
///   is below −4 or at least 16, otherwise positional with at least one fractional digit
///   (`100.0`, `0.0001`, `-0.0`).
///
/// # Limitations
/// The result can only be as faithful as the [`Value`] it is given, and `serde_json` (built
/// without `arbitrary_precision`) loses two distinctions Python keeps when parsing text:
///
/// - an integer outside the `i64`/`u64` range (such as `18446744073709551616`) becomes an
///   `f64`, so it is written as a float (`1.8446744073709552e+19`) where Python keeps the
///   integer digits;
/// - the literal `-0` becomes the float `-0.0`, written `-0.0`, where Python reads the
///   integer `0` and writes `0`.
///
/// Documents that carry such numbers cannot be reproduced from a `serde_json::Value`. Numbers
/// that overflow `f64` (`1e400`) are rejected by `serde_json` while Python writes `Infinity`.
/// Parsing decimal text to the nearest `f64`, as Python does, needs `serde_json`'s
/// `float_roundtrip` feature; today it is switched on through `serde_json_canonicalizer`, and
/// the Python float fixtures in `tests/data` fail if that ever changes.
///
/// # Errors
/// [`CoreError::Canonicalization`] for a non-finite number (Python would write `NaN` or
/// `Infinity`, which is not JSON) or nesting deeper than [`SORT_KEYS_UTF8_V1_MAX_DEPTH`].
pub fn sort_keys_utf8_v1(value: &Value) -> Result<Vec<u8>, CoreError> {
    let mut out = Vec::new();
    crate::sort_keys::write_value(&mut out, value, 0)?;
    Ok(out)
}

/// The `json-sort-keys-utf8-v1` form of the object `map` without its top-level entry `skip`:
/// what VCE 0.1 and RLC 0.1 digest (an envelope without `envelope_digest`, an extension
/// without `extension_digest`, a lane without `lane_digest`), written without copying the
/// object.
///
/// # Errors
/// As [`sort_keys_utf8_v1`].
pub fn sort_keys_utf8_v1_without(
    map: &serde_json::Map<String, Value>,
    skip: &str,
) -> Result<Vec<u8>, CoreError> {
    // Enough for typical envelopes and extensions (a few KiB) to be written without growing.
    let mut out = Vec::with_capacity(8 * 1024);
    crate::sort_keys::write_object(&mut out, map, Some(skip), None, 0)?;
    Ok(out)
}

/// The digest of the `json-sort-keys-utf8-v1` form of `value`: SHA-256 over
/// [`sort_keys_utf8_v1`]. VCE 0.1 writes it as bare hex ([`Digest::hex`]), RLC 0.1 lane digests
/// in the `sha256:` text form.
///
/// # Errors
/// As [`sort_keys_utf8_v1`].
pub fn sort_keys_utf8_v1_digest(value: &Value) -> Result<Digest, CoreError> {
    sort_keys_utf8_v1(value).map(|bytes| Digest::of(&bytes))
}

pub(crate) fn write_number(out: &mut Vec<u8>, number: &Number) -> Result<(), CoreError> {
    let text = if let Some(unsigned) = number.as_u64() {
        unsigned.to_string()
    } else if let Some(signed) = number.as_i64() {
        signed.to_string()
    } else {
        number
            .as_f64()
            .and_then(python_float_repr)
            .ok_or_else(|| CoreError::Canonicalization {
                reason: format!("number `{number}` is not a finite float"),
            })?
    };
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// Formats `x` as Python's `repr(float)` does; `None` for NaN and the infinities.
///
/// Python's `repr` uses the shortest digits that round-trip and, when two such digit strings
/// are equally close to the exact value, the even one. `ryu` makes the same choice (Rust's own
/// `{:e}` rounds such ties up: 568240000723932.25 prints as …932.3, Python says …932.2), so
/// the digits come from `ryu` and only the layout is Python's.
fn python_float_repr(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(x);
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((mantissa, exp)) => (mantissa, exp.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // Normalise to digits d1d2d3… with the decimal exponent of d1.
    let mut digits: String = integer.chars().chain(fraction.chars()).collect();
    let mut exponent = exp + i32::try_from(integer.len()).ok()? - 1;
    while digits.len() > 1 && digits.starts_with('0') {
        digits.remove(0);
        exponent -= 1;
    }
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if digits == "0" {
        exponent = 0;
    }
    let mut out = String::from(sign);
    if !(-4..16).contains(&exponent) {
        let (first, rest) = digits.split_at_checked(1)?;
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        write!(out, "e{exponent_sign}{:02}", exponent.unsigned_abs()).ok()?;
    } else if exponent >= 0 {
        let integer_len = usize::try_from(exponent).ok()? + 1;
        if digits.len() <= integer_len {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', integer_len - digits.len()));
            out.push_str(".0");
        } else {
            let (integer, fraction) = digits.split_at_checked(integer_len)?;
            out.push_str(integer);
            out.push('.');
            out.push_str(fraction);
        }
    } else {
        let leading_zeros = usize::try_from(exponent.unsigned_abs()).ok()? - 1;
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', leading_zeros));
        out.push_str(&digits);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &Value) -> String {
        String::from_utf8(sort_keys_utf8_v1(value).expect("canonicalisable")).expect("utf-8")
    }

    #[test]
    fn floats_follow_python_repr_layout() {
        for (x, expected) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (123_456_789.123, "123456789.123"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
        ] {
            assert_eq!(python_float_repr(x).as_deref(), Some(expected), "{x:e}");
        }
    }

    #[test]
    fn non_finite_floats_are_refused() {
        assert_eq!(python_float_repr(f64::NAN), None);
        assert_eq!(python_float_repr(f64::INFINITY), None);
        assert_eq!(python_float_repr(f64::NEG_INFINITY), None);
    }

    #[test]
    fn strings_escape_only_what_python_escapes() {
        let value = json!("\"\\/\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}\u{2028}é😀");
        assert_eq!(
            text(&value),
            "\"\\\"\\\\/\\n\\r\\t\\b\\f\\u0000\\u001f\u{7f}\u{2028}é😀\""
        );
    }

    #[test]
    fn keys_sort_by_code_point_and_integers_stay_integers() {
        let value = json!({"b": [1, -1, u64::MAX, i64::MIN], "a": {"\u{FB33}": 1, "\u{1F600}": 2, "Z": null}});
        assert_eq!(
            text(&value),
            "{\"a\":{\"Z\":null,\"\u{FB33}\":1,\"\u{1F600}\":2},\"b\":[1,-1,18446744073709551615,-9223372036854775808]}"
        );
    }

    #[test]
    fn nesting_beyond_the_cap_is_refused() {
        let mut value = json!(null);
        for _ in 0..SORT_KEYS_UTF8_V1_MAX_DEPTH {
            value = Value::Array(vec![value]);
        }
        assert!(sort_keys_utf8_v1(&value).is_ok());
        let value = Value::Array(vec![value]);
        let err = sort_keys_utf8_v1(&value).expect_err("too deep");
        assert_eq!(crate::ErrorCode::code(&err), "canonicalization_failed");
    }
}
