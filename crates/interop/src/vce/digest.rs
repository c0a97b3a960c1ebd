//! Stage 2: the envelope digest.
//!
//! The reference's `verify_digest` accepts an envelope when `envelope_digest` is an object with
//! `algorithm` `sha256`, `canonicalization` `json-sort-keys-utf8-v1` and `value` equal to the
//! SHA-256, as bare lowercase hex (no `sha256:` prefix), of the envelope without its top-level
//! `envelope_digest`, serialised as `json-sort-keys-utf8-v1` (SPEC C-3).
//!
//! The digest is computed without copying the envelope: the canonical writer leaves the
//! top-level `envelope_digest` out as it goes. Usually the schema stage's walk has already
//! written and hashed that form (`crate::schema::Schema::check_digesting_sort_keys`), and
//! this stage only compares.

use crate::lookup::field;
use cairn_core::CoreError;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::Stage;
use super::codes::{
    ENVELOPE_DIGEST_MISMATCH, ENVELOPE_DIGEST_UNCOMPUTABLE, ENVELOPE_DIGEST_UNSUPPORTED,
};
use super::pyjson::{is_str, shown};

/// The field that carries the digest and is left out of it.
pub(super) const DIGEST_FIELD: &str = "envelope_digest";

/// Checks `envelope_digest` against the envelope, adding every finding to `stage`; `digest`
/// is the SHA-256 of the envelope's canonical form without [`DIGEST_FIELD`] when the schema
/// stage already hashed it.
pub(super) fn check(envelope: &Value, digest: Option<[u8; 32]>, stage: &mut Stage) {
    let Some(map) = envelope.as_object() else {
        stage.block(
            ENVELOPE_DIGEST_UNCOMPUTABLE,
            "`$` is not an object, so it has no digest",
        );
        return;
    };
    let Some(Value::Object(meta)) = field(map, DIGEST_FIELD) else {
        stage.block(
            ENVELOPE_DIGEST_UNSUPPORTED,
            "`$.envelope_digest` is not an object",
        );
        return;
    };
    for (name, want) in [
        ("algorithm", "sha256"),
        ("canonicalization", "json-sort-keys-utf8-v1"),
    ] {
        let got = field(meta, name);
        if !is_str(got, want) {
            stage.block(
                ENVELOPE_DIGEST_UNSUPPORTED,
                format!(
                    "`$.envelope_digest.{name}` is `{}`, not `{want}`",
                    shown(got)
                ),
            );
        }
    }
    let digest = digest.map_or_else(
        || canonical_without_field(map).map(|canonical| Sha256::digest(&canonical).into()),
        Ok,
    );
    let computed = match digest {
        Ok(digest) => to_hex(&digest),
        Err(error) => {
            stage.block(
                ENVELOPE_DIGEST_UNCOMPUTABLE,
                format!("`$` cannot be canonicalised: {error}"),
            );
            return;
        }
    };
    let claimed = field(meta, "value");
    let matches = matches!(claimed, Some(Value::String(text)) if text.as_bytes() == computed);
    if !matches {
        stage.block(
            ENVELOPE_DIGEST_MISMATCH,
            format!(
                "`$.envelope_digest.value` is `{}`, but the envelope digests to `{}`",
                shown(claimed),
                String::from_utf8_lossy(&computed)
            ),
        );
    }
}

/// The `json-sort-keys-utf8-v1` form of `map` without [`DIGEST_FIELD`].
fn canonical_without_field(map: &Map<String, Value>) -> Result<Vec<u8>, CoreError> {
    crate::sort_keys::sort_keys_utf8_v1_without(map, DIGEST_FIELD)
}

/// The bare lowercase hex SHA-256 of `map` without [`DIGEST_FIELD`], canonicalised with
/// `json-sort-keys-utf8-v1`.
#[cfg(test)]
pub(super) fn digest_without_field(map: &Map<String, Value>) -> Result<[u8; 64], CoreError> {
    canonical_without_field(map).map(|canonical| to_hex(&Sha256::digest(&canonical)))
}

fn to_hex(bytes: &[u8]) -> [u8; 64] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'0'; 64];
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        if let [high, low] = pair {
            *high = HEX.get(usize::from(byte >> 4)).copied().unwrap_or(b'0');
            *low = HEX.get(usize::from(byte & 0x0f)).copied().unwrap_or(b'0');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn streamed_digest_equals_the_digest_of_the_copy_without_the_field() {
        let envelope = json!({
            "b": [1, 2.5, "é\u{1F600}"],
            "a\"q": {"z": null, "\u{FB33}": true, "\u{1F600}": false},
            "envelope_digest": {"value": "ignored"},
            "\n": "control key",
        });
        let map = envelope.as_object().cloned().unwrap_or_default();
        let mut copy = map.clone();
        copy.remove(DIGEST_FIELD);
        let expected = crate::sort_keys::sort_keys_utf8_v1_digest(&Value::Object(copy))
            .map(|d| d.hex())
            .unwrap_or_default();
        let got = digest_without_field(&map).map(|hex| String::from_utf8_lossy(&hex).into_owned());
        assert_eq!(got.ok(), Some(expected));
    }
}
