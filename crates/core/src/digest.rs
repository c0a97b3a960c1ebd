//! Digests in Cairn's text form (C-1): `sha256:<64 lowercase hex>` and the keyed
//! `hmac-sha256:<key_id>:<64 hex>` used for low-entropy values.

use std::fmt;
use std::str::FromStr;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::error::{CoreError, excerpt};

const SHA256_PREFIX: &str = "sha256:";
const HMAC_PREFIX: &str = "hmac-sha256:";

/// A SHA-256 digest. Its text form is `sha256:` followed by 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Hashes `bytes` with SHA-256.
    #[must_use]
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Wraps 32 raw digest bytes.
    #[must_use]
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 raw digest bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits without the `sha256:` prefix.
    #[must_use]
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 64 lowercase hex digits without a prefix (the form VCE 0.1 uses).
    ///
    /// # Errors
    /// [`CoreError::InvalidDigest`] when the text is not exactly 64 lowercase hex digits.
    pub fn from_bare_hex(text: &str) -> Result<Self, CoreError> {
        parse_hex32(text)
            .map(Self)
            .map_err(|reason| CoreError::InvalidDigest {
                value: excerpt(text),
                reason,
            })
    }

    /// A short form for people: the prefix and the first 12 hex digits.
    #[must_use]
    pub fn short(&self) -> String {
        let hex = self.hex();
        format!("{SHA256_PREFIX}{}…", hex.get(..12).unwrap_or(&hex))
    }
}

fn parse_hex32(text: &str) -> Result<[u8; 32], &'static str> {
    if text.len() != 64 {
        return Err("expected 64 hex digits");
    }
    // One pass that checks and decodes: only `0-9a-f` (lowercase) is a digit here.
    let nibble = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        let (Some(&high), Some(&low)) = (pair.first(), pair.get(1)) else {
            return Err("expected 64 hex digits");
        };
        match (nibble(high), nibble(low)) {
            (Some(high), Some(low)) => *byte = (high << 4) | low,
            _ => return Err("expected lowercase hex digits"),
        }
    }
    Ok(out)
}

impl Digest {
    /// Writes the text form into a stack buffer: records carry several digests and are
    /// serialised on every tool call, so this avoids the formatting machinery.
    fn text(&self, buf: &mut [u8; 71]) -> Result<(), fmt::Error> {
        let (prefix, hex) = buf.split_at_mut(SHA256_PREFIX.len());
        prefix.copy_from_slice(SHA256_PREFIX.as_bytes());
        // Encoding 32 bytes into a 64-byte buffer cannot fail.
        hex::encode_to_slice(self.0, hex).map_err(|_| fmt::Error)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 71];
        self.text(&mut buf)?;
        f.write_str(std::str::from_utf8(&buf).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl FromStr for Digest {
    type Err = CoreError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some(hex) = text.strip_prefix(SHA256_PREFIX) else {
            return Err(CoreError::InvalidDigest {
                value: excerpt(text),
                reason: "expected the prefix `sha256:`",
            });
        };
        Self::from_bare_hex(hex).map_err(|_| CoreError::InvalidDigest {
            value: excerpt(text),
            reason: "expected `sha256:` and 64 lowercase hex digits",
        })
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 71];
        self.text(&mut buf)
            .map_err(|_| serde::ser::Error::custom("digest encoding failed"))?;
        let text = std::str::from_utf8(&buf)
            .map_err(|_| serde::ser::Error::custom("digest encoding failed"))?;
        serializer.serialize_str(text)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Digest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A SHA-256 digest: `sha256:` and 64 lowercase hex digits.",
            "pattern": "^sha256:[0-9a-f]{64}$"
        })
    }
}

/// A secret key for keyed digests. The key never appears in a record: only its id does.
#[derive(Clone)]
pub struct HmacKey {
    id: String,
    secret: Vec<u8>,
}

impl HmacKey {
    /// Builds a key from its public id and its secret bytes.
    ///
    /// # Errors
    /// [`CoreError::InvalidId`] when the id is empty or has characters other than ASCII
    /// letters, digits, `-`, `_` and `.` (a `:` would make the text form ambiguous).
    pub fn new(id: &str, secret: Vec<u8>) -> Result<Self, CoreError> {
        let valid = !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !valid {
            return Err(CoreError::InvalidId {
                kind: "hmac key id",
                value: excerpt(id),
                reason: "expected 1-64 ASCII letters, digits, `-`, `_` or `.`",
            });
        }
        Ok(Self {
            id: id.to_owned(),
            secret,
        })
    }

    /// The key's public id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Computes the keyed digest of `bytes`.
    #[must_use]
    #[expect(clippy::expect_used, reason = "HMAC accepts keys of every length")]
    pub fn digest(&self, bytes: &[u8]) -> KeyedDigest {
        let mut mac = <Hmac<Sha256> as hmac::Mac>::new_from_slice(&self.secret)
            .expect("HMAC accepts keys of every length");
        mac.update(bytes);
        KeyedDigest {
            key_id: self.id.clone(),
            mac: mac.finalize().into_bytes().into(),
        }
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // INVARIANT: the secret is never printed, not even in debug output.
        f.debug_struct("HmacKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A keyed digest `hmac-sha256:<key_id>:<64 hex>` for low-entropy values (C-1).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct KeyedDigest {
    key_id: String,
    mac: [u8; 32],
}

impl KeyedDigest {
    /// The id of the key that produced this digest.
    #[must_use]
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
}

impl fmt::Display for KeyedDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{HMAC_PREFIX}{}:{}", self.key_id, hex::encode(self.mac))
    }
}

impl fmt::Debug for KeyedDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyedDigest({self})")
    }
}

impl FromStr for KeyedDigest {
    type Err = CoreError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| CoreError::InvalidDigest {
            value: excerpt(text),
            reason,
        };
        let rest = text
            .strip_prefix(HMAC_PREFIX)
            .ok_or_else(|| invalid("expected the prefix `hmac-sha256:`"))?;
        let (key_id, hex) = rest
            .split_once(':')
            .ok_or_else(|| invalid("expected `hmac-sha256:<key_id>:<64 hex>`"))?;
        HmacKey::new(key_id, Vec::new()).map_err(|_| invalid("invalid key id"))?;
        let mac = parse_hex32(hex).map_err(invalid)?;
        Ok(Self {
            key_id: key_id.to_owned(),
            mac,
        })
    }
}

impl Serialize for KeyedDigest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyedDigest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input_matches_the_known_value() {
        let d = Digest::of(b"");
        assert_eq!(
            d.to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(d.to_string().parse::<Digest>(), Ok(d));
    }

    #[test]
    fn digest_text_form_is_strict() {
        let good = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert!(good.parse::<Digest>().is_ok());
        for bad in [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "sha256:e3b0",
            "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:é3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",
        ] {
            let err = bad.parse::<Digest>().expect_err(bad);
            assert_eq!(crate::ErrorCode::code(&err), "invalid_digest");
        }
    }

    #[test]
    fn hmac_matches_rfc4231_case_2_and_round_trips() {
        let key = HmacKey::new("k1", b"Jefe".to_vec()).expect("valid id");
        let d = key.digest(b"what do ya want for nothing?");
        assert_eq!(
            d.to_string(),
            "hmac-sha256:k1:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(d.to_string().parse::<KeyedDigest>(), Ok(d));
        assert!(!format!("{key:?}").contains("Jefe"));
    }
}
