//! Decision-value normalisation (C-4): the `cairn-normalize/v1` normaliser and the digests
//! of normalised values that decision snapshots (§8) hold instead of raw values.
//!
//! A decision value is normalised before it is digested so that two spellings of the same
//! value (a different key order, a precomposed `é` against `e` + U+0301) give the same digest,
//! and the normaliser's name is stored next to every digest so the rule can be versioned.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use unicode_normalization::UnicodeNormalization;

use crate::canonical::jcs;
use crate::digest::{Digest, HmacKey, KeyedDigest};
use crate::error::{CoreError, excerpt};

/// The name of the first normaliser: NFC on every string and key, then RFC 8785 (JCS).
pub const NORMALIZER_V1: &str = "cairn-normalize/v1";

/// Normalises a decision value by the `cairn-normalize/v1` rule.
///
/// Every string and every object key is put in Unicode Normalization Form C; numbers,
/// booleans and the array order are kept as they are. `null` is kept: a key whose value is
/// `null` is a different value from an absent key. Key order needs no work here because the
/// digest is computed over the JCS form, which sorts keys.
///
/// Two keys of one object can become equal after NFC (`"é"` and `"e\u{301}"`). This function
/// never fails, so it keeps the entry whose original key sorts last by code point; the digest
/// functions refuse such objects instead (see [`normalized_digest`]).
#[must_use]
pub fn normalize_v1(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(text.nfc().collect()),
        Value::Array(items) => Value::Array(items.iter().map(normalize_v1).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let mut out = Map::new();
            for (key, item) in entries {
                out.insert(key.nfc().collect(), normalize_v1(item));
            }
            Value::Object(out)
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

/// A digest of a normalised decision value, with the normaliser that produced it.
///
/// Serialised as `{"normalizer": "cairn-normalize/v1", "digest": "sha256:…"}`, or with a keyed
/// digest `"hmac-sha256:<key_id>:<hex>"` for low-entropy values. Deserialising checks that
/// the normaliser is known and the digest is in one of the two text forms.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawNormalizedDigest")]
pub struct NormalizedDigest {
    normalizer: String,
    digest: String,
}

impl NormalizedDigest {
    /// The normaliser's name, such as [`NORMALIZER_V1`].
    #[must_use]
    pub fn normalizer(&self) -> &str {
        &self.normalizer
    }

    /// The digest text: `sha256:<hex>` or `hmac-sha256:<key_id>:<hex>`.
    #[must_use]
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether the digest is keyed (HMAC) rather than a plain SHA-256.
    #[must_use]
    pub fn is_keyed(&self) -> bool {
        self.digest.starts_with("hmac-sha256:")
    }
}

impl fmt::Debug for NormalizedDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NormalizedDigest({} {})", self.normalizer, self.digest)
    }
}

impl schemars::JsonSchema for NormalizedDigest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NormalizedDigest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "A digest of a normalised decision value and the normaliser that produced it.",
            "properties": {
                "normalizer": { "const": NORMALIZER_V1 },
                "digest": {
                    "type": "string",
                    "pattern": "^(sha256:|hmac-sha256:[A-Za-z0-9._-]{1,64}:)[0-9a-f]{64}$"
                }
            },
            "required": ["normalizer", "digest"],
            "additionalProperties": false
        })
    }
}

/// The unchecked wire form of [`NormalizedDigest`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNormalizedDigest {
    normalizer: String,
    digest: String,
}

impl TryFrom<RawNormalizedDigest> for NormalizedDigest {
    type Error = CoreError;

    fn try_from(raw: RawNormalizedDigest) -> Result<Self, Self::Error> {
        if raw.normalizer != NORMALIZER_V1 {
            return Err(CoreError::Canonicalization {
                reason: format!("unknown normalizer `{}`", excerpt(&raw.normalizer)),
            });
        }
        let plain = raw.digest.parse::<Digest>().is_ok();
        if !plain {
            raw.digest.parse::<KeyedDigest>()?;
        }
        Ok(Self {
            normalizer: raw.normalizer,
            digest: raw.digest,
        })
    }
}

/// SHA-256 over the JCS form of [`normalize_v1`]`(value)`, as `sha256:<hex>`.
///
/// Use [`normalized_keyed_digest`] instead when the value has little entropy (a yes/no, a
/// short path), because a plain digest of such a value can be reversed by guessing.
///
/// # Errors
/// [`CoreError::Canonicalization`] when two keys of one object are equal after NFC (the
/// digest would otherwise silently cover only one of them), or when JCS refuses the value.
pub fn normalized_digest(value: &Value) -> Result<NormalizedDigest, CoreError> {
    let bytes = normalized_bytes(value)?;
    Ok(NormalizedDigest {
        normalizer: NORMALIZER_V1.to_owned(),
        digest: Digest::of(&bytes).to_string(),
    })
}

/// HMAC-SHA-256 with `key` over the JCS form of [`normalize_v1`]`(value)`, as
/// `hmac-sha256:<key_id>:<hex>`; for low-entropy decision values (C-1).
///
/// # Errors
/// As [`normalized_digest`].
pub fn normalized_keyed_digest(
    value: &Value,
    key: &HmacKey,
) -> Result<NormalizedDigest, CoreError> {
    let bytes = normalized_bytes(value)?;
    Ok(NormalizedDigest {
        normalizer: NORMALIZER_V1.to_owned(),
        digest: key.digest(&bytes).to_string(),
    })
}

fn normalized_bytes(value: &Value) -> Result<Vec<u8>, CoreError> {
    check_no_key_collisions(value, &mut String::from("$"))?;
    jcs(&normalize_v1(value))
}

/// Refuses objects with two keys that are equal after NFC, naming the object's path.
fn check_no_key_collisions(value: &Value, path: &mut String) -> Result<(), CoreError> {
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                check_no_key_collisions(item, path)?;
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            let mut seen = std::collections::BTreeSet::new();
            for key in map.keys() {
                let normal: String = key.nfc().collect();
                if !seen.insert(normal) {
                    return Err(CoreError::Canonicalization {
                        reason: format!(
                            "two keys of `{}` are equal after nfc normalisation, one is `{}`",
                            excerpt(path),
                            excerpt(key)
                        ),
                    });
                }
            }
            for (key, item) in map {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                check_no_key_collisions(item, path)?;
                path.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nfc_equal_values_in_any_key_order_share_a_digest() {
        let composed = json!({"scope": "caf\u{e9}", "r\u{e9}sum\u{e9}": [1, null], "a": true});
        let decomposed =
            json!({"a": true, "re\u{301}sume\u{301}": [1, null], "scope": "cafe\u{301}"});
        let left = normalized_digest(&composed).expect("digest");
        let right = normalized_digest(&decomposed).expect("digest");
        assert_eq!(left, right);
        assert_eq!(left.normalizer(), NORMALIZER_V1);
        assert!(left.digest().starts_with("sha256:"));
        assert_eq!(normalize_v1(&decomposed), composed);
    }

    #[test]
    fn null_is_distinct_from_an_absent_key() {
        let with_null = normalized_digest(&json!({"a": null})).expect("digest");
        let empty = normalized_digest(&json!({})).expect("digest");
        assert_ne!(with_null, empty);
        assert_eq!(normalize_v1(&json!({"a": null})), json!({"a": null}));
    }

    #[test]
    fn different_values_differ() {
        let a = normalized_digest(&json!({"target": "main"})).expect("digest");
        let b = normalized_digest(&json!({"target": "Main"})).expect("digest");
        assert_ne!(a, b);
        let n1 = normalized_digest(&json!(1)).expect("digest");
        let n2 = normalized_digest(&json!("1")).expect("digest");
        assert_ne!(n1, n2);
    }

    #[test]
    fn digest_is_sha256_of_jcs_of_the_normalised_value() {
        let value = json!({"b": "e\u{301}", "a": [null, 1.5]});
        let expected = Digest::of("{\"a\":[null,1.5],\"b\":\"\u{e9}\"}".as_bytes());
        let got = normalized_digest(&value).expect("digest");
        assert_eq!(got.digest(), expected.to_string());
    }

    #[test]
    fn keyed_digest_uses_the_key_and_names_it() {
        let key = HmacKey::new("decisions-1", b"secret".to_vec()).expect("key");
        let other = HmacKey::new("decisions-1", b"other".to_vec()).expect("key");
        let value = json!({"approval_boundary": "cafe\u{301}"});
        let keyed = normalized_keyed_digest(&value, &key).expect("digest");
        assert!(keyed.digest().starts_with("hmac-sha256:decisions-1:"));
        assert!(keyed.is_keyed());
        let composed = json!({"approval_boundary": "caf\u{e9}"});
        assert_eq!(
            keyed,
            normalized_keyed_digest(&composed, &key).expect("digest")
        );
        assert_ne!(
            keyed,
            normalized_keyed_digest(&value, &other).expect("digest")
        );
        assert_ne!(
            keyed.digest(),
            normalized_digest(&value).expect("digest").digest()
        );
    }

    #[test]
    fn keys_colliding_after_nfc_are_refused_by_the_digests() {
        let value = json!({"outer": [{"caf\u{e9}": 1, "cafe\u{301}": 2}]});
        let err = normalized_digest(&value).expect_err("collision");
        assert_eq!(crate::ErrorCode::code(&err), "canonicalization_failed");
        assert!(err.to_string().contains("$.outer[0]"), "{err}");
        // The infallible normaliser keeps the entry whose original key sorts last.
        assert_eq!(normalize_v1(&value), json!({"outer": [{"caf\u{e9}": 1}]}));
    }

    #[test]
    fn serialises_as_normalizer_and_digest() {
        let d = normalized_digest(&json!({"a": 1})).expect("digest");
        let text = serde_json::to_value(&d).expect("serialise");
        assert_eq!(
            text,
            json!({"normalizer": "cairn-normalize/v1", "digest": d.digest()})
        );
        let back: NormalizedDigest = serde_json::from_value(text).expect("deserialise");
        assert_eq!(back, d);
        for bad in [
            json!({"normalizer": "cairn-normalize/v0", "digest": d.digest()}),
            json!({"normalizer": "cairn-normalize/v1", "digest": "sha256:abc"}),
            json!({"normalizer": "cairn-normalize/v1", "digest": d.digest(), "extra": 1}),
        ] {
            assert!(serde_json::from_value::<NormalizedDigest>(bad).is_err());
        }
        let key = HmacKey::new("k1", b"s".to_vec()).expect("key");
        let keyed = normalized_keyed_digest(&json!(true), &key).expect("digest");
        let back: NormalizedDigest =
            serde_json::from_value(serde_json::to_value(&keyed).expect("serialise"))
                .expect("deserialise");
        assert_eq!(back, keyed);
    }
}
