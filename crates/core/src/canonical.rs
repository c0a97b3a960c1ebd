//! Canonical JSON (C-2): RFC 8785 (JCS) for Cairn's own documents, from a maintained crate
//! with a fast path for the common values ([`crate::fast_jcs`]), and the names of the
//! canonical forms a document can declare. The interop form `json-sort-keys-utf8-v1` (C-3) is
//! written by `cairn-interop`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
