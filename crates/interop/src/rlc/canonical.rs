//! The RLC digests in the interop canonical form `json-sort-keys-utf8-v1` (SPEC C-3), written
//! with the core's writer ([`crate::sort_keys`]).
//!
//! The extension is written once: each lane's canonical form *without* `lane_digest` is the
//! lane's bytes inside the extension's canonical form minus the `lane_digest` member, so the
//! writer notes where each lane and that member lie and the lane digests hash two slices of the
//! same buffer instead of writing the lanes again. Usually the schema stage's walk has already
//! written the extension with those marks ([`MARKS`], [`ExtensionBytes::from_form`]);
//! [`ExtensionBytes::write`] writes it here when it has not.

use crate::schema::{MarkedItem, SortKeysForm, SortKeysMarks};
use crate::sort_keys::{for_each_member, write_object, write_string, write_value};
use cairn_core::CoreError;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The member the extension digest leaves out.
pub(crate) const EXTENSION_DIGEST: &str = "extension_digest";
/// The member a lane digest leaves out.
const LANE_DIGEST: &str = "lane_digest";

/// SHA-256 over the canonical form of `object` without the member `excluded`.
pub(crate) fn digest_without(
    object: &Map<String, Value>,
    excluded: &str,
) -> Result<[u8; 32], CoreError> {
    let bytes = crate::sort_keys::sort_keys_utf8_v1_without(object, excluded)?;
    Ok(Sha256::digest(&bytes).into())
}

/// The canonical form of an extension without `extension_digest`, with the position of each
/// lane of `responsibility_lanes` (`None` for items that are not objects, or that the schema
/// walk wrote whole: [`ExtensionBytes::lane_digest`] then has no answer and the lane is
/// written alone).
pub(crate) struct ExtensionBytes {
    bytes: Vec<u8>,
    /// Where each lane lies in `bytes`, and its `lane_digest` member with one adjoining comma.
    lanes: Vec<Option<MarkedItem>>,
}

/// What the extension schema's walk is asked to note as it writes the extension
/// ([`crate::schema::Schema::check_writing_sort_keys_marked`]).
pub(crate) const MARKS: SortKeysMarks<'static> = SortKeysMarks {
    array: "responsibility_lanes",
    member: LANE_DIGEST,
};

impl ExtensionBytes {
    /// The form the schema walk wrote, with [`MARKS`] noted.
    pub(crate) fn from_form(form: SortKeysForm) -> Self {
        Self {
            bytes: form.bytes,
            lanes: form.items,
        }
    }

    /// Writes `extension` once.
    pub(crate) fn write(extension: &Map<String, Value>) -> Result<Self, CoreError> {
        let mut bytes = Vec::with_capacity(4096);
        let mut lanes = Vec::new();
        bytes.push(b'{');
        let mut first = true;
        for_each_member(extension, |key, value| {
            if key == EXTENSION_DIGEST {
                return Ok(());
            }
            if !first {
                bytes.push(b',');
            }
            first = false;
            write_string(&mut bytes, key);
            bytes.push(b':');
            match (key, value) {
                ("responsibility_lanes", Value::Array(items)) => {
                    write_lanes(&mut bytes, items, &mut lanes)
                }
                _ => write_value(&mut bytes, value, 1),
            }
        })?;
        bytes.push(b'}');
        Ok(Self { bytes, lanes })
    }

    /// The extension digest (SHA-256 of the whole form).
    pub(crate) fn digest(&self) -> [u8; 32] {
        Sha256::digest(&self.bytes).into()
    }

    /// The digest of lane `index` without its `lane_digest` member, or `None` when its place
    /// is not known (see [`ExtensionBytes`]).
    pub(crate) fn lane_digest(&self, index: usize) -> Option<[u8; 32]> {
        let span = self.lanes.get(index)?.as_ref()?;
        let mut hasher = Sha256::new();
        match &span.member_span {
            Some(member) => {
                hasher.update(self.bytes.get(span.whole.start..member.start)?);
                hasher.update(self.bytes.get(member.end..span.whole.end)?);
            }
            None => hasher.update(self.bytes.get(span.whole.clone())?),
        }
        Some(hasher.finalize().into())
    }
}

/// Writes the lanes array (at depth 1), noting where each lane object lies.
fn write_lanes(
    out: &mut Vec<u8>,
    items: &[Value],
    lanes: &mut Vec<Option<MarkedItem>>,
) -> Result<(), CoreError> {
    out.push(b'[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match item {
            Value::Object(lane) => {
                let start = out.len();
                let member_span = write_object(out, lane, None, Some(LANE_DIGEST), 2)?;
                lanes.push(Some(MarkedItem {
                    whole: start..out.len(),
                    member_span,
                }));
            }
            other => {
                write_value(out, other, 2)?;
                lanes.push(None);
            }
        }
    }
    out.push(b']');
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

    use super::*;
    use crate::sort_keys::sort_keys_utf8_v1;
    use serde_json::json;

    /// Values whose canonical form exercises every branch of the writer.
    fn samples() -> Vec<Value> {
        let mut every_char = String::new();
        for code in (0u32..0x80).chain([0xe9, 0x2028, 0x2029, 0xfb33, 0x1f600]) {
            every_char.extend(char::from_u32(code));
        }
        vec![
            json!(null),
            json!([
                true,
                false,
                0,
                -1,
                u64::MAX,
                i64::MIN,
                1.5,
                -0.0,
                1e-7,
                1e16,
                123_456.789
            ]),
            json!(every_char),
            json!({"b": 1, "a": {"y": [], "x": {}}, "\u{1F600}": 2, "\u{FB33}": 3, "": [[[]]]}),
            json!({"a\"b\\c\n": "\u{0}\u{1f}\u{7f}", "k": ["é", "\u{2028}"]}),
        ]
    }

    #[test]
    fn a_digest_without_a_member_is_the_digest_of_the_reduced_object() {
        for value in samples() {
            let Value::Object(map) = value else { continue };
            for excluded in map.keys().map(String::as_str).chain(["absent"]) {
                let mut reduced = map.clone();
                reduced.remove(excluded);
                let expected: [u8; 32] =
                    Sha256::digest(sort_keys_utf8_v1(&Value::Object(reduced)).unwrap()).into();
                assert_eq!(
                    digest_without(&map, excluded).unwrap(),
                    expected,
                    "{excluded}"
                );
            }
        }
    }

    /// Lanes whose `lane_digest` member comes first, in the middle, last, alone, or not at
    /// all: the slices of the extension's bytes must digest like the lane written alone.
    #[test]
    fn lane_digests_cut_from_the_extension_equal_lanes_written_alone() {
        let lanes = json!([
            {"lane_digest": "d", "z": 1},
            {"a": [1, {"b": 2}], "lane_digest": "d", "z": "é"},
            {"a": 1, "lane_digest": {"x": [1]}},
            {"lane_digest": "d"},
            {"a": 1},
            {},
            "not a lane",
            [{"lane_digest": "nested, not a lane"}]
        ]);
        let extension = json!({
            "active_lane_id": "a",
            "extension_digest": {"value": "ignored"},
            "responsibility_lanes": lanes,
            "zz": {"lane_digest": "not in a lane"}
        });
        let Value::Object(map) = &extension else {
            unreachable!()
        };
        let written = ExtensionBytes::write(map).unwrap();
        assert_eq!(
            written.digest(),
            digest_without(map, EXTENSION_DIGEST).unwrap()
        );
        for (index, lane) in lanes.as_array().unwrap().iter().enumerate() {
            match lane {
                Value::Object(lane) => assert_eq!(
                    written.lane_digest(index),
                    Some(digest_without(lane, LANE_DIGEST).unwrap()),
                    "lane {index}"
                ),
                _ => assert_eq!(written.lane_digest(index), None),
            }
        }
        assert_eq!(written.lane_digest(lanes.as_array().unwrap().len()), None);
    }
}
