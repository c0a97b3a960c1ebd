//! What the quick walk writes as it goes: nothing ([`Nothing`]), or the document's
//! `json-sort-keys-utf8-v1` form ([`SortKeys`]), so that a caller who needs both the schema
//! check and the canonical bytes (every VCE 0.1 decision digests its envelope) walks the
//! document once instead of twice.
//!
//! The walk calls the sink exactly once per value of the instance, in document order: a
//! container whose members its schema node walks is opened, its members or items announced,
//! and closed; any other value (a scalar, or a container no node walks) is handed over whole.
//! A sink that needs members in key order says so ([`Sink::IN_KEY_ORDER`]), and the walk
//! sorts the members of an object whose map does not iterate in that order.

use cairn_core::sort_keys::{write_string, write_value};
use serde_json::{Map, Value};

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
/// with the writer of `cairn_core::sort_keys` (so the bytes are those of
/// `cairn_core::canonical::sort_keys_utf8_v1_without`).
pub(crate) struct SortKeys<'a> {
    pub(crate) out: Vec<u8>,
    pub(crate) skip: Option<&'a str>,
    /// A value could not be written (a number Python would not print as JSON); the bytes are
    /// then incomplete and the caller's own writer reports why.
    pub(crate) failed: bool,
}

impl Sink for SortKeys<'_> {
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
    cairn_core::sort_keys::write_object(out, map, skip, None, 0).map(|_| ())
}
