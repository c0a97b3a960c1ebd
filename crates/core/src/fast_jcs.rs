//! A fast path to RFC 8785 for the JSON Cairn canonicalises on every tool call.
//!
//! The maintained canonicaliser (`serde_json_canonicalizer`) is the reference and handles every
//! value; it is also slow (it buffers and re-parses every key). Most values Cairn hashes —
//! observations, tool results, its own records — hold only strings, booleans, nulls and
//! integers within ±(2^53 − 1), with keys in the Basic Multilingual Plane. For those, RFC 8785
//! output is exactly: keys sorted by code point (equal to UTF-16 order when no key has a
//! character beyond U+FFFF), JSON string escaping as `serde_json` does it, integers in decimal.
//! Anything else — a float, a larger integer, a key beyond the BMP — goes to the reference.
//! Property tests check the two agree byte for byte.

use serde_json::Value;

/// The largest integer JavaScript (and so RFC 8785) prints exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Writes the RFC 8785 form of `value` into `out` if the fast path covers it; returns `false`
/// (with `out` in an unspecified state) if it does not.
pub fn write_value(value: &Value, out: &mut Vec<u8>) -> bool {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => {
            let fits = if let Some(u) = number.as_u64() {
                u <= MAX_SAFE_INTEGER
            } else if let Some(i) = number.as_i64() {
                i.unsigned_abs() <= MAX_SAFE_INTEGER
            } else {
                false
            };
            if !fits {
                return false;
            }
            out.extend_from_slice(number.to_string().as_bytes());
        }
        Value::String(text) => write_str(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_value(item, out) {
                    return false;
                }
            }
            out.push(b']');
        }
        Value::Object(map) => {
            if map.keys().any(|k| k.chars().any(|c| u32::from(c) > 0xFFFF)) {
                return false;
            }
            // Sorted explicitly: serde_json's map keeps insertion order when a dependency
            // enables its `preserve_order` feature.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(key, out);
                out.push(b':');
                if !write_value(item, out) {
                    return false;
                }
            }
            out.push(b'}');
        }
    }
    true
}

/// JSON string escaping as RFC 8785 requires: `"` `\` and U+0000–U+001F only, short forms
/// for \b \t \n \f \r, lowercase `\u00xx` otherwise — which is what `serde_json` writes.
fn write_str(text: &str, out: &mut Vec<u8>) {
    // Writing a `str` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}
