//! The interop form `json-sort-keys-utf8-v1` (C-3), what VCE 0.1 and RLC 0.1 digest: the
//! bytes Python's `json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`
//! writes, reproduced byte for byte, including Python's `repr(float)` number layout, which no
//! JSON serialiser in Rust follows. The writer itself is in `writer`; Cairn's own documents use
//! RFC 8785 (`cairn_core::canonical`).

mod number;
mod writer;

use cairn_core::{CoreError, Digest};
use serde_json::Value;

pub use writer::SORT_KEYS_UTF8_V1_MAX_DEPTH;
pub(crate) use writer::{
    for_each_member, maps_iterate_in_key_order, needs_escape, sorted_members, word, write_object,
    write_string, write_value,
};

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
    write_value(&mut out, value, 0)?;
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
    write_object(&mut out, map, Some(skip), None, 0)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &Value) -> String {
        String::from_utf8(sort_keys_utf8_v1(value).expect("canonicalisable")).expect("utf-8")
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
        assert_eq!(cairn_core::ErrorCode::code(&err), "canonicalization_failed");
    }
}
