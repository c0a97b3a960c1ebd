//! Looking members up in the small JSON objects of interchange documents.
//!
//! `serde_json::Map::get` either walks a `BTreeMap` comparing names with `memcmp`, or, when
//! `serde_json`'s `preserve_order` is on (as in the `cairn` binary), hashes the name with
//! SipHash first. The validators look up a few dozen members of objects of a handful of
//! members per decision; for those a scan that compares lengths first and then whole words is
//! cheaper in both builds (in the `preserve_order` build it took 15% off a VCE 0.1 decision and
//! 17% off an RLC 0.1 one).

use serde_json::{Map, Value};

use crate::sort_keys::word;

/// Objects with more members than this are searched with `Map::get`, so that a hostile
/// document with thousands of members does not turn each lookup into a long scan.
const SCAN_LIMIT: usize = 16;

/// `map.get(name)`.
#[must_use]
#[inline]
pub fn field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if map.len() > SCAN_LIMIT {
        return map.get(name);
    }
    map.iter()
        .find(|(key, _)| same_text(key, name))
        .map(|(_, value)| value)
}

/// `value.get(name)`: [`field`] of an object, `None` for any other value.
#[must_use]
#[inline]
pub fn field_of<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    value.as_object().and_then(|map| field(map, name))
}

/// `a == b`, comparing lengths first and then a word at a time: for the short names of JSON
/// members a call into the C library's `memcmp` costs more than the comparison.
#[must_use]
#[inline]
pub fn same_text(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

/// [`same_text`] of bytes.
#[must_use]
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    x.by_ref().zip(y.by_ref()).all(|(p, q)| word(p) == word(q))
        && word(x.remainder()) == word(y.remainder())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_what_map_get_finds_in_small_and_large_objects() {
        let names = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcde",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "abcdefgh_",
            "abcdefghijklmnop",
            "abcdefghijklmnopq",
            "é",
            "\u{1F600}",
        ];
        for size in [0, 1, 5, SCAN_LIMIT, SCAN_LIMIT + 1, 40] {
            let mut map = Map::new();
            for (position, name) in names.iter().cycle().take(size).enumerate() {
                map.insert(format!("{name}{}", position / names.len()), json!(position));
            }
            let value = Value::Object(map.clone());
            for name in names
                .iter()
                .map(|n| format!("{n}0"))
                .chain(names.map(String::from))
            {
                assert_eq!(field(&map, &name), map.get(&name), "{name:?} among {size}");
                assert_eq!(
                    field_of(&value, &name),
                    value.get(&name),
                    "{name:?} among {size}"
                );
            }
        }
        assert_eq!(field_of(&json!([1]), "a"), None);
        assert_eq!(field_of(&json!("a"), "a"), None);
    }

    #[test]
    fn compares_texts_of_every_length_byte_for_byte() {
        let base = "0123456789abcdefghijklmnopqrstuv";
        for length in 0..=base.len() {
            let a = &base[..length];
            assert!(same_text(a, a), "{a:?}");
            for at in 0..length {
                let mut changed = a.as_bytes().to_vec();
                changed[at] = b'_';
                let changed = String::from_utf8(changed).unwrap_or_default();
                assert!(!same_text(a, &changed), "{a:?} at {at}");
            }
            if length > 0 {
                assert!(!same_text(a, &base[..length - 1]), "{a:?}");
            }
        }
    }
}
