//! The writer behind [`super::sort_keys_utf8_v1`] (`json-sort-keys-utf8-v1`), built
//! for the digests on the hot path of every VCE 0.1 and RLC 0.1 decision, and its parts for
//! callers that write a document in pieces (RLC 0.1 digests each lane from the bytes of the
//! extension that holds it).
//!
//! Only `"`, `\` and U+0000–U+001F are ever escaped, all single bytes that never occur inside
//! a multi-byte UTF-8 sequence, so strings are scanned eight bytes at a time and the runs
//! between escapes copied as they are. Objects are written without collecting their keys when
//! the map already iterates in key order (always, unless `serde_json`'s `preserve_order`
//! feature is on, which it is in Cairn's workspace builds: then the keys are checked, and
//! sorted only when they are not in order). Numbers go through the one place that knows
//! Python's float layout. A property test holds this writer to the straightforward one.

use std::ops::Range;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use cairn_core::CoreError;

use super::number::write_number;

/// The deepest nesting of arrays and objects [`super::sort_keys_utf8_v1`] accepts.
///
/// Python's encoder stops at its recursion limit (about 1000 frames) and `serde_json` refuses
/// to parse more than 128 levels; the cap keeps a hand-built value from exhausting the stack.
pub const SORT_KEYS_UTF8_V1_MAX_DEPTH: usize = 512;

/// Writes `value` at nesting `depth` (0 for a document's root).
///
/// # Errors
/// As [`super::sort_keys_utf8_v1`].
pub fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), CoreError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number)?,
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            check_depth(depth)?;
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            write_object(out, map, None, None, depth)?;
        }
    }
    Ok(())
}

/// Writes the object `map` at nesting `depth` without its member `skip`, and returns where
/// the member `mark` lies in `out` together with one adjoining comma (the one before it, or,
/// when it comes first, the one after it): removing that range from the written bytes gives
/// the object's form without `mark`. RLC 0.1 uses it to digest a lane without `lane_digest`
/// from the bytes of the extension that contains it, without writing the lane twice.
///
/// # Errors
/// As [`super::sort_keys_utf8_v1`].
pub fn write_object(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    skip: Option<&str>,
    mark: Option<&str>,
    depth: usize,
) -> Result<Option<Range<usize>>, CoreError> {
    check_depth(depth)?;
    out.push(b'{');
    let mut first = true;
    let mut cut: Option<Range<usize>> = None;
    // The marked member came first, so the comma written before the next member is part of it.
    let mut cut_takes_next_comma = false;
    for_each_member(map, |key, value| {
        if skip == Some(key) {
            return Ok(());
        }
        let start = out.len();
        let leading = first;
        if first {
            first = false;
        } else {
            if cut_takes_next_comma {
                if let Some(cut) = cut.as_mut() {
                    cut.end += 1;
                }
                cut_takes_next_comma = false;
            }
            out.push(b',');
        }
        write_string(out, key);
        out.push(b':');
        write_value(out, value, depth + 1)?;
        if mark == Some(key) {
            cut = Some(start..out.len());
            cut_takes_next_comma = leading;
        }
        Ok(())
    })?;
    out.push(b'}');
    Ok(cut)
}

/// Calls `visit` for each member of `map` in code-point (UTF-8 byte) order.
///
/// # Errors
/// The first error `visit` returns.
pub fn for_each_member<'a>(
    map: &'a Map<String, Value>,
    mut visit: impl FnMut(&'a str, &'a Value) -> Result<(), CoreError>,
) -> Result<(), CoreError> {
    for (key, value) in members_in_key_order(map) {
        visit(key, value)?;
    }
    Ok(())
}

/// The members of `map` in code-point (UTF-8 byte) order: the map's own iterator when it
/// already yields them so (always, unless `serde_json`'s `preserve_order` feature is on),
/// else the members collected and sorted.
fn members_in_key_order(map: &Map<String, Value>) -> MembersInKeyOrder<'_> {
    if iterates_in_key_order(map) {
        MembersInKeyOrder::Map(map.iter())
    } else {
        sorted_members(map)
    }
}

/// The members of `map` collected and sorted into code-point order, for a caller that knows
/// the map's own order is not that (see [`maps_iterate_in_key_order`]).
#[must_use]
pub fn sorted_members(map: &Map<String, Value>) -> MembersInKeyOrder<'_> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    MembersInKeyOrder::Sorted(entries.into_iter())
}

/// Whether `map`'s own iterator yields its members in code-point order.
fn iterates_in_key_order(map: &Map<String, Value>) -> bool {
    // INVARIANT: `String`'s order is byte order, which is code-point order; a map that keeps
    // insertion order is checked.
    maps_iterate_in_key_order()
        || map
            .keys()
            .zip(map.keys().skip(1))
            .all(|(a, b)| a.as_bytes() < b.as_bytes())
}

/// Members in code-point order: those of [`for_each_member`] and [`sorted_members`].
pub enum MembersInKeyOrder<'a> {
    /// The map's own order, which is key order.
    Map(serde_json::map::Iter<'a>),
    /// The members, sorted.
    Sorted(std::vec::IntoIter<(&'a String, &'a Value)>),
}

impl<'a> Iterator for MembersInKeyOrder<'a> {
    type Item = (&'a String, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Map(members) => members.next(),
            Self::Sorted(members) => members.next(),
        }
    }
}

/// Whether every `serde_json` map iterates in key order, which holds unless the
/// `preserve_order` feature is switched on somewhere in the build; found out once by trying.
#[must_use]
pub fn maps_iterate_in_key_order() -> bool {
    static SORTED: OnceLock<bool> = OnceLock::new();
    *SORTED.get_or_init(|| {
        let mut probe = Map::new();
        for key in ["b", "c", "a"] {
            probe.insert(key.to_owned(), Value::Null);
        }
        probe.keys().map(String::as_str).eq(["a", "b", "c"])
    })
}

fn check_depth(depth: usize) -> Result<(), CoreError> {
    if depth >= SORT_KEYS_UTF8_V1_MAX_DEPTH {
        return Err(CoreError::Canonicalization {
            reason: format!("nesting deeper than {SORT_KEYS_UTF8_V1_MAX_DEPTH} levels"),
        });
    }
    Ok(())
}

/// Writes a string as Python's `json` does with `ensure_ascii=False`.
#[inline]
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if is_clean(bytes) {
        // Most strings need no escape: one check the compiler vectorises, then one copy, with
        // room made once for the string and its quotes.
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        write_escaped(out, bytes);
    }
}

/// [`write_string`] for a string with something to escape.
#[cold]
fn write_escaped(out: &mut Vec<u8>, mut rest: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    while let Some(at) = first_to_escape(rest) {
        let (run, tail) = rest.split_at_checked(at).unwrap_or((rest, &[]));
        out.extend_from_slice(run);
        let Some((&byte, tail)) = tail.split_first() else {
            break;
        };
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            control => {
                let high = HEX.get(usize::from(control >> 4)).copied().unwrap_or(b'0');
                let low = HEX
                    .get(usize::from(control & 0x0f))
                    .copied()
                    .unwrap_or(b'0');
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', high, low]);
            }
        }
        rest = tail;
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// No byte of `bytes` needs an escape: eight bytes at a time (the last word padded with a
/// harmless byte), without branches or early exit.
#[inline]
fn is_clean(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(8);
    let mut dirty = 0;
    for chunk in &mut chunks {
        dirty |= escape_flags(word(chunk));
    }
    dirty | escape_flags(word(chunks.remainder())) == 0
}

/// The first eight bytes of `bytes` as one word (all of them when there are fewer), in
/// which every such byte appears and nothing else but `a`: eight bytes as they are, four to
/// seven as two overlapping halves, fewer padded with `a`. Loads instead of a byte loop,
/// which cost more than the work done on the word.
///
/// Two uses rely on it: the writer's escape check (`a` is never escaped, and a byte seen
/// twice changes nothing), and `the schema module's name comparisons (for slices of equal
/// length up to eight bytes, equal words mean equal bytes).
#[must_use]
#[inline]
pub fn word(bytes: &[u8]) -> u64 {
    if let Some(full) = bytes.first_chunk::<8>() {
        return u64::from_le_bytes(*full);
    }
    if let (Some(low), Some(high)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        return u64::from(u32::from_le_bytes(*low)) | (u64::from(u32::from_le_bytes(*high)) << 32);
    }
    const PAD: u8 = b'a';
    let padded = match *bytes {
        [a, b, c] => [a, b, c, PAD, PAD, PAD, PAD, PAD],
        [a, b] => [a, b, PAD, PAD, PAD, PAD, PAD, PAD],
        [a] => [a, PAD, PAD, PAD, PAD, PAD, PAD, PAD],
        _ => [PAD; 8],
    };
    u64::from_le_bytes(padded)
}

/// Non-zero when some byte of `word` is below 0x20, `"` or `\`.
///
/// `(w - n * 0x01…01) & !w & 0x80…80` is non-zero exactly when some byte of `w` is below `n`
/// (for `n <= 128`); with `n = 1` it finds a zero byte, and a byte equal to `c` is a zero
/// byte of `w ^ c * 0x01…01`.
fn escape_flags(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGHS;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    below(word, 0x20) | below(quote, 1) | below(backslash, 1)
}

/// Whether `json-sort-keys-utf8-v1` (and any JSON writer) escapes `byte` inside a string:
/// `"`, `\` and U+0000–U+001F.
#[must_use]
pub fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The index of the first byte of `bytes` that must be escaped, eight bytes at a time.
fn first_to_escape(bytes: &[u8]) -> Option<usize> {
    bytes.chunks(8).enumerate().find_map(|(index, chunk)| {
        if escape_flags(word(chunk)) == 0 {
            return None;
        }
        chunk
            .iter()
            .position(|&b| needs_escape(b))
            .map(|at| index * 8 + at)
    })
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        reason = "test code"
    )]

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    // The straightforward writer, one character at a time: the oracle the fast one must equal.
    fn reference_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), CoreError> {
        match value {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Number(number) => write_number(out, number)?,
            Value::String(text) => reference_string(out, text),
            Value::Array(items) => {
                reference_depth(depth)?;
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    reference_value(out, item, depth + 1)?;
                }
                out.push(b']');
            }
            Value::Object(map) => {
                reference_depth(depth)?;
                // INVARIANT: keys are ordered by their UTF-8 bytes, which is code-point order, and
                // sorted here explicitly so the result does not depend on whether `serde_json`'s
                // `preserve_order` feature is switched on somewhere in the build.
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                out.push(b'{');
                for (index, (key, item)) in entries.into_iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    reference_string(out, key);
                    out.push(b':');
                    reference_value(out, item, depth + 1)?;
                }
                out.push(b'}');
            }
        }
        Ok(())
    }

    fn reference_depth(depth: usize) -> Result<(), CoreError> {
        if depth >= SORT_KEYS_UTF8_V1_MAX_DEPTH {
            return Err(CoreError::Canonicalization {
                reason: format!("nesting deeper than {SORT_KEYS_UTF8_V1_MAX_DEPTH} levels"),
            });
        }
        Ok(())
    }

    /// Writes a string the way Python's `json` module does with `ensure_ascii=False`.
    fn reference_string(out: &mut Vec<u8>, text: &str) {
        out.push(b'"');
        for ch in text.chars() {
            match ch {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\r' => out.extend_from_slice(b"\\r"),
                '\t' => out.extend_from_slice(b"\\t"),
                '\u{08}' => out.extend_from_slice(b"\\b"),
                '\u{0C}' => out.extend_from_slice(b"\\f"),
                '\u{00}'..='\u{1F}' => {
                    out.extend_from_slice(format!("\\u{:04x}", u32::from(ch)).as_bytes());
                }
                other => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        out.push(b'"');
    }

    fn reference(value: &Value) -> Result<Vec<u8>, CoreError> {
        let mut out = Vec::new();
        reference_value(&mut out, value, 0).map(|()| out)
    }

    fn fast(value: &Value) -> Result<Vec<u8>, CoreError> {
        let mut out = Vec::new();
        write_value(&mut out, value, 0).map(|()| out)
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let text = prop_oneof!["\\PC{0,12}", "[\\x00-\\x20\"\\\\é😀\u{2028}\u{7f}a]{0,12}"];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((text.clone(), inner), 0..6)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn finds_the_first_byte_to_escape_at_every_position() {
        for special in [0x00, 0x1f, b'"', b'\\', b'\n'] {
            for len in 0..20 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    assert_eq!(
                        first_to_escape(&bytes),
                        Some(at),
                        "{special} at {at} of {len}"
                    );
                }
                let plain: Vec<u8> = (0..len)
                    .map(|i| [0x20, 0x7f, 0x80, 0xff, b'!', b'#', b'['][i % 7])
                    .collect();
                assert_eq!(first_to_escape(&plain), None);
            }
        }
    }

    proptest! {
        #[test]
        fn equals_the_reference_writer(value in any_json()) {
            prop_assert_eq!(fast(&value).ok(), reference(&value).ok());
        }
    }

    #[test]
    fn leaves_out_the_skipped_key_only_at_the_top() {
        let value = json!({"b": {"skip": 1}, "skip": 2, "a": "\u{1}\"\\"});
        let mut out = Vec::new();
        write_object(&mut out, value.as_object().unwrap(), Some("skip"), None, 0).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"a\":\"\\u0001\\\"\\\\\",\"b\":{\"skip\":1}}"
        );
    }

    #[test]
    fn refuses_nesting_where_the_core_writer_does() {
        let mut value = json!(null);
        for _ in 0..SORT_KEYS_UTF8_V1_MAX_DEPTH {
            value = Value::Array(vec![value]);
        }
        assert!(fast(&value).is_ok());
        let value = Value::Array(vec![value]);
        assert!(fast(&value).is_err() && reference(&value).is_err());
    }
}
