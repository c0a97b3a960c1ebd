//! What the single-pass walk writes as it goes: nothing ([`Nothing`]), or the document's
//! `json-sort-keys-utf8-v1` form ([`CanonicalWriter`]), so that a caller who needs both the schema
//! check and the canonical bytes walks the document once instead of twice; [`CanonicalHasher`] hashes
//! that form as it is written (every VCE 0.1 decision digests its envelope); [`MarkedCanonicalWriter`] also
//! notes where the items of one top-level array lie in those bytes (every RLC 0.1 decision
//! digests each lane as well).
//!
//! The walk calls the sink exactly once per value of the instance, in document order: a
//! container whose members its schema node walks is opened, its members or items announced,
//! and closed; any other value (a scalar, or a container no node walks) is handed over whole.
//! A sink that needs members in key order says so ([`Sink::IN_KEY_ORDER`]), and the walk
//! sorts the members of an object whose map does not iterate in that order.

use std::ops::Range;

use crate::sort_keys::{write_string, write_value};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// Receives the instance as the walk visits it.
pub(crate) trait Sink {
    /// Whether object members must come in key order (code-point order of their names).
    const IN_KEY_ORDER: bool;

    /// Whether the member `key` of an object at nesting `depth` (its members' depth) is left
    /// out of what is written; its value is still checked.
    fn skips(&self, key: &str, depth: usize) -> bool;
    fn open_object(&mut self);
    /// A member named `key` follows; `first` when nothing of this object was written yet.
    /// `written` is `,"key":` already in `json-sort-keys-utf8-v1` form, when the schema
    /// declares the name.
    fn member(&mut self, first: bool, key: &str, written: Option<&[u8]>);
    fn close_object(&mut self);
    fn open_array(&mut self);
    /// An item follows; `first` for the first one.
    fn item(&mut self, first: bool);
    fn close_array(&mut self);
    /// A value whose members (if any) the walk does not visit, at nesting `depth`.
    fn whole(&mut self, value: &Value, depth: usize);
    /// A value equal to a literal of the schema, whose `json-sort-keys-utf8-v1` form is
    /// `written`.
    fn literal(&mut self, written: &[u8]);
}

/// The sink of a plain validity check.
pub(crate) struct Nothing;

impl Sink for Nothing {
    const IN_KEY_ORDER: bool = false;

    #[inline(always)]
    fn skips(&self, _: &str, _: usize) -> bool {
        false
    }
    #[inline(always)]
    fn open_object(&mut self) {}
    #[inline(always)]
    fn member(&mut self, _: bool, _: &str, _: Option<&[u8]>) {}
    #[inline(always)]
    fn close_object(&mut self) {}
    #[inline(always)]
    fn open_array(&mut self) {}
    #[inline(always)]
    fn item(&mut self, _: bool) {}
    #[inline(always)]
    fn close_array(&mut self) {}
    #[inline(always)]
    fn whole(&mut self, _: &Value, _: usize) {}
    #[inline(always)]
    fn literal(&mut self, _: &[u8]) {}
}

/// Writes the instance's `json-sort-keys-utf8-v1` form without its top-level member `skip`,
/// with the writer of `crate::sort_keys` (so the bytes are those of
/// `crate::sort_keys::sort_keys_utf8_v1_without`).
pub(crate) struct CanonicalWriter<'a> {
    pub(crate) out: Vec<u8>,
    pub(crate) skip: Option<&'a str>,
    /// A value could not be written (a number Python would not print as JSON); the bytes are
    /// then incomplete and the caller's own writer reports why.
    pub(crate) failed: bool,
}

impl Sink for CanonicalWriter<'_> {
    const IN_KEY_ORDER: bool = true;

    #[inline]
    fn skips(&self, key: &str, depth: usize) -> bool {
        depth == 1 && self.skip == Some(key)
    }
    #[inline]
    fn open_object(&mut self) {
        self.out.push(b'{');
    }
    #[inline]
    fn member(&mut self, first: bool, key: &str, written: Option<&[u8]>) {
        if let Some(written) = written {
            let written = if first {
                written.get(1..).unwrap_or_default()
            } else {
                written
            };
            self.out.extend_from_slice(written);
            return;
        }
        if !first {
            self.out.push(b',');
        }
        write_string(&mut self.out, key);
        self.out.push(b':');
    }
    #[inline]
    fn close_object(&mut self) {
        self.out.push(b'}');
    }
    #[inline]
    fn open_array(&mut self) {
        self.out.push(b'[');
    }
    #[inline]
    fn item(&mut self, first: bool) {
        if !first {
            self.out.push(b',');
        }
    }
    #[inline]
    fn close_array(&mut self) {
        self.out.push(b']');
    }
    #[inline]
    fn literal(&mut self, written: &[u8]) {
        self.out.extend_from_slice(written);
    }
    #[inline]
    fn whole(&mut self, value: &Value, depth: usize) {
        let written = match value {
            Value::String(text) => {
                write_string(&mut self.out, text);
                Ok(())
            }
            // The root object is the one place a member may be left out.
            Value::Object(map) if depth == 0 => whole_root(&mut self.out, map, self.skip),
            other => write_value(&mut self.out, other, depth),
        };
        self.failed |= written.is_err();
    }
}

fn whole_root(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    skip: Option<&str>,
) -> Result<(), cairn_core::CoreError> {
    crate::sort_keys::write_object(out, map, skip, None, 0).map(|_| ())
}

/// Where to note positions as the walk writes a document's canonical form: each item of its
/// top-level array member `array`, and inside each object item the member `member`.
#[derive(Debug, Clone, Copy)]
pub struct SortKeysMarks<'a> {
    /// The top-level member whose array items are marked.
    pub array: &'a str,
    /// The member marked inside each object item.
    pub member: &'a str,
}

/// Where one item of the marked array lies in the written bytes: the whole item, and its
/// member [`SortKeysMarks::member`] with one adjoining comma (the one before it, or, when it
/// comes first, the one after it), so that removing `member_span` from `whole` gives the item's form
/// without that member — the ranges `crate::sort_keys::write_object` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkedItem {
    /// The item's bytes.
    pub whole: Range<usize>,
    /// Its marked member with one adjoining comma, if it has that member.
    pub member_span: Option<Range<usize>>,
}

/// [`CanonicalWriter`] that also notes the positions [`SortKeysMarks`] asks for. An item the walk
/// hands over whole (not an object, or an object no schema node walks) gets no mark.
pub(crate) struct MarkedCanonicalWriter<'a, 'm> {
    pub(crate) inner: CanonicalWriter<'a>,
    marks: SortKeysMarks<'m>,
    /// Containers open around what is written next: 1 among the root's members.
    level: usize,
    /// The root member being written is the marked array.
    in_marked_member: bool,
    /// Among the marked array's items.
    marking: bool,
    pub(crate) items: Vec<Option<MarkedItem>>,
    item_start: usize,
    /// The marked member of the current item: where it starts, and whether it came first
    /// (so that the comma after it belongs to the span), until the next member or the end of
    /// the item closes it.
    open_member: Option<(usize, bool)>,
    member_span: Option<Range<usize>>,
}

impl<'a, 'm> MarkedCanonicalWriter<'a, 'm> {
    pub(crate) fn new(inner: CanonicalWriter<'a>, marks: SortKeysMarks<'m>) -> Self {
        Self {
            inner,
            marks,
            level: 0,
            in_marked_member: false,
            marking: false,
            items: Vec::new(),
            item_start: 0,
            open_member: None,
            member_span: None,
        }
    }

    /// Inside an object item of the marked array.
    fn in_item(&self) -> bool {
        self.marking && self.level == 3
    }

    /// Closes the open member span at the current end of the bytes, taking the comma written next
    /// when `comma_follows` and the marked member came first.
    fn close_cut(&mut self, comma_follows: bool) {
        if let Some((start, first)) = self.open_member.take() {
            let end = self.inner.out.len() + usize::from(first && comma_follows);
            self.member_span = Some(start..end);
        }
    }
}

impl Sink for MarkedCanonicalWriter<'_, '_> {
    const IN_KEY_ORDER: bool = true;

    #[inline]
    fn skips(&self, key: &str, depth: usize) -> bool {
        self.inner.skips(key, depth)
    }
    fn open_object(&mut self) {
        self.inner.open_object();
        self.level += 1;
        if self.in_item() {
            self.open_member = None;
            self.member_span = None;
        }
    }
    fn member(&mut self, first: bool, key: &str, written: Option<&[u8]>) {
        if self.level == 1 {
            self.in_marked_member = key == self.marks.array;
        } else if self.in_item() {
            self.close_cut(!first);
            if key == self.marks.member {
                self.open_member = Some((self.inner.out.len(), first));
            }
        }
        self.inner.member(first, key, written);
    }
    fn close_object(&mut self) {
        if self.in_item() {
            self.close_cut(false);
            self.inner.close_object();
            let span = MarkedItem {
                whole: self.item_start..self.inner.out.len(),
                member_span: self.member_span.take(),
            };
            if let Some(slot) = self.items.last_mut() {
                *slot = Some(span);
            }
        } else {
            self.inner.close_object();
        }
        self.level = self.level.saturating_sub(1);
    }
    fn open_array(&mut self) {
        self.inner.open_array();
        self.level += 1;
        if self.level == 2 && self.in_marked_member {
            self.marking = true;
        }
    }
    fn item(&mut self, first: bool) {
        self.inner.item(first);
        if self.marking && self.level == 2 {
            self.item_start = self.inner.out.len();
            self.items.push(None);
        }
    }
    fn close_array(&mut self) {
        self.inner.close_array();
        if self.level == 2 {
            self.marking = false;
        }
        self.level = self.level.saturating_sub(1);
    }
    #[inline]
    fn whole(&mut self, value: &Value, depth: usize) {
        self.inner.whole(value, depth);
    }
    #[inline]
    fn literal(&mut self, written: &[u8]) {
        self.inner.literal(written);
    }
}

/// [`CanonicalWriter`] whose bytes are hashed with SHA-256 as they are written, and then let go:
/// before each member or item every whole 64-byte block written so far goes to the hasher
/// (hashed bytes are dropped once there are half a [`HASHING_BUFFER`] of them), so the buffer
/// stays about a KiB however long the document, and the hashing is spread through the walk,
/// whose loads the processor overlaps with it (5% off a VCE 0.1 decision against hashing the
/// written bytes afterwards).
pub(crate) struct CanonicalHasher<'a> {
    pub(crate) inner: CanonicalWriter<'a>,
    hasher: Sha256,
    /// How many bytes at the start of the buffer are hashed.
    hashed: usize,
}

impl<'a> CanonicalHasher<'a> {
    /// Hashes what a [`CanonicalWriter`] leaving out the top-level member `skip` would write.
    pub(crate) fn new(skip: Option<&'a str>) -> Self {
        Self {
            inner: CanonicalWriter {
                out: Vec::with_capacity(HASHING_BUFFER),
                skip,
                failed: false,
            },
            hasher: Sha256::new(),
            hashed: 0,
        }
    }

    /// Hashes the whole blocks written so far and lets them go.
    #[inline]
    fn feed(&mut self) {
        let ready = (self.inner.out.len() - self.hashed) & !(BLOCK - 1);
        if ready == 0 {
            return;
        }
        let end = self.hashed + ready;
        if let Some(blocks) = self.inner.out.get(self.hashed..end) {
            self.hasher.update(blocks);
        }
        self.hashed = end;
        if end >= HASHING_BUFFER / 2 {
            self.inner.out.drain(..end);
            self.hashed = 0;
        }
    }

    /// The SHA-256 of everything written.
    pub(crate) fn finish(mut self) -> [u8; 32] {
        if let Some(rest) = self.inner.out.get(self.hashed..) {
            self.hasher.update(rest);
        }
        self.hasher.finalize().into()
    }
}

/// SHA-256's block size.
const BLOCK: usize = 64;

/// Room for the hashed bytes not yet dropped, a block, and one value written before the next
/// feed (a longer value grows the buffer).
const HASHING_BUFFER: usize = 1024;

impl Sink for CanonicalHasher<'_> {
    const IN_KEY_ORDER: bool = true;

    #[inline]
    fn skips(&self, key: &str, depth: usize) -> bool {
        self.inner.skips(key, depth)
    }
    #[inline]
    fn open_object(&mut self) {
        self.inner.open_object();
    }
    #[inline]
    fn member(&mut self, first: bool, key: &str, written: Option<&[u8]>) {
        self.feed();
        self.inner.member(first, key, written);
    }
    #[inline]
    fn close_object(&mut self) {
        self.inner.close_object();
    }
    #[inline]
    fn open_array(&mut self) {
        self.inner.open_array();
    }
    #[inline]
    fn item(&mut self, first: bool) {
        self.feed();
        self.inner.item(first);
    }
    #[inline]
    fn close_array(&mut self) {
        self.inner.close_array();
    }
    #[inline]
    fn whole(&mut self, value: &Value, depth: usize) {
        self.inner.whole(value, depth);
    }
    #[inline]
    fn literal(&mut self, written: &[u8]) {
        self.inner.literal(written);
    }
}
