//! Ed25519 signing and verifier keys in the C2SP signed-note text encodings, and the set of
//! keys a verifier trusts.
//!
//! Encodings (identical to Go's `golang.org/x/mod/sumdb/note`, via the `signed_note` crate):
//! - verifier key: `<name>+<key id as 8 hex digits>+<base64(0x01 || 32-byte public key)>`;
//! - private key: `PRIVATE+KEY+<name>+<key id>+<base64(0x01 || 32-byte seed)>`;
//! - key id: the first four bytes, big-endian, of `SHA-256(name || 0x0A || 0x01 || public key)`.
//!
//! This module is pure: randomness for new keys is passed in, and key files are read and
//! written by the runtime's keyring.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::Signer as _;
use rand_core::CryptoRngCore;
use thiserror::Error;

use cairn_core::{Code, ErrorCode};

/// The signed-note algorithm byte of Ed25519 keys and signatures.
pub const ALG_ED25519: u8 = 0x01;

/// The literal prefix of an encoded private key. It keeps a secret from being mistaken for
/// (and published as) a verifier key.
const PRIVATE_PREFIX: &str = "PRIVATE+KEY+";

/// Errors raised when parsing keys or signing with them.
///
/// No variant ever carries private key material, so these errors are safe to log.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// A key name is not a valid signed-note key name.
    #[error("invalid key `name` `{name}`: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An encoded key does not have the expected shape.
    #[error("malformed {kind} key: `{field}` {reason}")]
    Malformed {
        /// `verifier` or `private`.
        kind: &'static str,
        /// The part of the encoding that is wrong (`prefix`, `name`, `key_id`, `key_data`).
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The key data names an algorithm other than Ed25519.
    #[error(
        "unsupported key algorithm {algorithm:#04x} in `key_data`; only Ed25519 (0x01) is supported"
    )]
    UnsupportedAlgorithm {
        /// The algorithm byte found.
        algorithm: u8,
    },
    /// The key id written in the encoding is not the one computed from the name and key.
    #[error(
        "`key_id` {stated:08x} of key `{name}` does not match its key data (expected {computed:08x})"
    )]
    KeyIdMismatch {
        /// The key name.
        name: String,
        /// The key id written in the encoding.
        stated: u32,
        /// The key id computed from the name and the public key.
        computed: u32,
    },
    /// The text to sign is not acceptable as the text of a signed note.
    #[error("cannot sign note `text`: {reason}")]
    NoteText {
        /// Why the text was refused.
        reason: String,
    },
}

cairn_core::error_codes! {
    KeyError {
        /// A key name outside the allowed form.
        INVALID_NAME = Invalid("invalid_key_name");
        /// Key text that does not parse.
        MALFORMED = Invalid("malformed_key");
        /// A key of an algorithm Cairn does not verify.
        UNSUPPORTED_ALGORITHM = Invalid("unsupported_key_algorithm");
        /// A key whose id does not match its name and bytes.
        KEY_ID_MISMATCH = Invalid("key_id_mismatch");
        /// Text that cannot be signed as a note.
        NOTE_TEXT_INVALID = Invalid("note_text_invalid");
    }
}

impl ErrorCode for KeyError {
    fn error_code(&self) -> Code {
        match self {
            Self::InvalidName { .. } => Self::INVALID_NAME,
            Self::Malformed { .. } => Self::MALFORMED,
            Self::UnsupportedAlgorithm { .. } => Self::UNSUPPORTED_ALGORITHM,
            Self::KeyIdMismatch { .. } => Self::KEY_ID_MISMATCH,
            Self::NoteText { .. } => Self::NOTE_TEXT_INVALID,
        }
    }
}

/// Checks that `name` can be a signed-note key name: non-empty, no Unicode white space, no
/// `+` (which separates the fields of an encoded key), and, because signed notes refuse
/// control characters anywhere, no control character either.
///
/// # Errors
/// [`KeyError::InvalidName`] saying which rule is broken.
pub fn validate_key_name(name: &str) -> Result<(), KeyError> {
    let reason = if name.is_empty() {
        Some("must not be empty")
    } else if name.contains('+') {
        Some("must not contain `+`")
    } else if name.chars().any(char::is_whitespace) {
        Some("must not contain white space")
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(KeyError::InvalidName {
            name: name.to_owned(),
            reason,
        }),
        None if signed_note::is_key_name_valid(name) => Ok(()),
        // The reference implementation is the final word on what a valid name is.
        None => Err(KeyError::InvalidName {
            name: name.to_owned(),
            reason: "is not a valid signed-note key name",
        }),
    }
}

/// The C2SP key id of an Ed25519 public key under `name`.
#[must_use]
pub fn ed25519_key_id(name: &str, public_key: &[u8; 32]) -> u32 {
    signed_note::key_id(name, &tagged(public_key))
}

/// `0x01 || key`: the algorithm-tagged key data of the encodings.
fn tagged(key: &[u8; 32]) -> [u8; 33] {
    let mut out = [0u8; 33];
    let (alg, rest) = out.split_at_mut(1);
    alg.fill(ALG_ED25519);
    rest.copy_from_slice(key);
    out
}

/// The fields of an encoded key once split: `name`, stated key id, and the 32 key bytes that
/// follow the algorithm byte.
struct KeyFields<'a> {
    name: &'a str,
    key_id: u32,
    key: [u8; 32],
}

/// Splits `<name>+<8 hex>+<base64(0x01 || 32 bytes)>`. The base64 data may itself contain
/// `+`, so only the first two `+` separate fields.
fn split_fields<'a>(kind: &'static str, text: &'a str) -> Result<KeyFields<'a>, KeyError> {
    let malformed = |field, reason| KeyError::Malformed {
        kind,
        field,
        reason,
    };
    let (name, rest) = text
        .split_once('+')
        .ok_or_else(|| malformed("name", "is not followed by `+`"))?;
    validate_key_name(name)?;
    let (id_hex, data) = rest
        .split_once('+')
        .ok_or_else(|| malformed("key_id", "is not followed by `+`"))?;
    if id_hex.len() != 8 || !id_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(malformed("key_id", "must be exactly 8 hexadecimal digits"));
    }
    let key_id = u32::from_str_radix(id_hex, 16)
        .map_err(|_| malformed("key_id", "must be exactly 8 hexadecimal digits"))?;
    let bytes = BASE64
        .decode(data)
        .map_err(|_| malformed("key_data", "is not canonical standard base64"))?;
    let (algorithm, key) = bytes
        .split_first()
        .ok_or_else(|| malformed("key_data", "is empty"))?;
    if *algorithm != ALG_ED25519 {
        return Err(KeyError::UnsupportedAlgorithm {
            algorithm: *algorithm,
        });
    }
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| malformed("key_data", "must hold exactly 32 key bytes after 0x01"))?;
    Ok(KeyFields { name, key_id, key })
}

/// Refuses a stated key id that differs from the computed one.
fn check_key_id(name: &str, stated: u32, public_key: &[u8; 32]) -> Result<u32, KeyError> {
    let computed = ed25519_key_id(name, public_key);
    if stated == computed {
        Ok(computed)
    } else {
        Err(KeyError::KeyIdMismatch {
            name: name.to_owned(),
            stated,
            computed,
        })
    }
}

/// An Ed25519 signing key with its signed-note name.
///
/// `Debug` shows the name and key id only: the secret never reaches logs by accident.
#[derive(Clone)]
pub struct SigningKey {
    name: String,
    key_id: u32,
    key: ed25519_dalek::SigningKey,
}

impl SigningKey {
    /// Draws a new key from `rng` and names it `name`.
    ///
    /// # Errors
    /// [`KeyError::InvalidName`] when `name` is not a valid signed-note key name.
    pub fn generate<R: CryptoRngCore + ?Sized>(
        rng: &mut R,
        name: &str,
    ) -> Result<SigningKey, KeyError> {
        validate_key_name(name)?;
        // An Ed25519 private key is 32 uniformly random bytes (RFC 8032 §5.1.5), which is
        // also what `signed_note::generate_key` draws; the tests check both agree.
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        let key_id = ed25519_key_id(name, key.verifying_key().as_bytes());
        Ok(SigningKey {
            name: name.to_owned(),
            key_id,
            key,
        })
    }

    /// Parses `PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 || 32-byte seed)>`, refusing a
    /// key id that does not match the name and the derived public key.
    ///
    /// # Errors
    /// [`KeyError::Malformed`], [`KeyError::InvalidName`], [`KeyError::UnsupportedAlgorithm`]
    /// or [`KeyError::KeyIdMismatch`]; none of them repeats the secret.
    pub fn from_private_text(text: &str) -> Result<SigningKey, KeyError> {
        let rest = text
            .strip_prefix(PRIVATE_PREFIX)
            .ok_or(KeyError::Malformed {
                kind: "private",
                field: "prefix",
                reason: "must be `PRIVATE+KEY+`",
            })?;
        let fields = split_fields("private", rest)?;
        let key = ed25519_dalek::SigningKey::from_bytes(&fields.key);
        let key_id = check_key_id(fields.name, fields.key_id, key.verifying_key().as_bytes())?;
        Ok(SigningKey {
            name: fields.name.to_owned(),
            key_id,
            key,
        })
    }

    /// The encoded private key, `PRIVATE+KEY+<name>+<key id>+<base64(0x01 || seed)>`.
    ///
    /// **This is the secret.** Anyone holding this text can sign checkpoints in this key's
    /// name; write it only to a file readable by its owner alone, never to a log or record.
    #[must_use]
    pub fn to_private_text(&self) -> String {
        format!(
            "{PRIVATE_PREFIX}{}+{:08x}+{}",
            self.name,
            self.key_id,
            BASE64.encode(tagged(self.key.as_bytes()))
        )
    }

    /// The key's signed-note name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's C2SP key id.
    #[must_use]
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The public half, to be distributed to verifiers.
    #[must_use]
    pub fn verifier_key(&self) -> VerifierKey {
        VerifierKey::from_parts(&self.name, self.key_id, self.key.verifying_key())
    }

    /// Signs `text` (which must end in a newline) and returns the whole signed note: the
    /// text, a blank line and one signature line `— <name> <base64(key id || signature)>`.
    ///
    /// # Errors
    /// [`KeyError::NoteText`] when `text` is not valid note text (not UTF-8, a control
    /// character other than newline, no final newline, or too large).
    pub fn sign_note_text(&self, text: &[u8]) -> Result<String, KeyError> {
        let note_error = |e: signed_note::NoteError| KeyError::NoteText {
            reason: e.to_string(),
        };
        let mut note = signed_note::Note::new(text, &[]).map_err(note_error)?;
        note.add_sigs(&[&NoteSigner(self)]).map_err(note_error)?;
        String::from_utf8(note.to_bytes()).map_err(|_| KeyError::NoteText {
            reason: "the signed note is not UTF-8".to_owned(),
        })
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("name", &self.name)
            .field("key_id", &format_args!("{:08x}", self.key_id))
            .finish_non_exhaustive()
    }
}

/// Presents a [`SigningKey`] to `signed_note` without making that crate's trait part of our
/// public API.
struct NoteSigner<'a>(&'a SigningKey);

impl signed_note::Signer for NoteSigner<'_> {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn key_id(&self) -> u32 {
        self.0.key_id
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, ed25519_dalek::SignatureError> {
        Ok(self.0.key.try_sign(msg)?.to_vec())
    }
}

/// An Ed25519 verifier (public) key with its signed-note name, as
/// `<name>+<8 hex key id>+<base64(0x01 || public key)>`.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    key_id: u32,
    key: ed25519_dalek::VerifyingKey,
}

impl VerifierKey {
    /// Parses `<name>+<8 hex key id>+<base64(0x01 || 32-byte public key)>`.
    ///
    /// The key id may be written in either case (as the reference implementation accepts);
    /// [`Display`](fmt::Display) always writes lower case.
    ///
    /// # Errors
    /// [`KeyError::Malformed`], [`KeyError::InvalidName`], [`KeyError::UnsupportedAlgorithm`]
    /// or [`KeyError::KeyIdMismatch`].
    pub fn parse(text: &str) -> Result<VerifierKey, KeyError> {
        let fields = split_fields("verifier", text)?;
        let malformed = |reason| KeyError::Malformed {
            kind: "verifier",
            field: "key_data",
            reason,
        };
        let key = ed25519_dalek::VerifyingKey::from_bytes(&fields.key)
            .map_err(|_| malformed("is not an Ed25519 public key"))?;
        // A small-order key admits signatures that verify for many messages; no honest
        // generator produces one, so it is refused outright.
        if key.is_weak() {
            return Err(malformed("is a weak (small-order) Ed25519 public key"));
        }
        let key_id = check_key_id(fields.name, fields.key_id, key.as_bytes())?;
        Ok(VerifierKey::from_parts(fields.name, key_id, key))
    }

    /// Builds the key from checked parts.
    fn from_parts(name: &str, key_id: u32, key: ed25519_dalek::VerifyingKey) -> VerifierKey {
        VerifierKey {
            name: name.to_owned(),
            key_id,
            key,
        }
    }

    /// The key's signed-note name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's C2SP key id.
    #[must_use]
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The 32 bytes of the Ed25519 public key.
    #[must_use]
    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// `name+keyid`: how reports name a signer (the full text also carries the key).
    #[must_use]
    pub fn id_label(&self) -> String {
        format!("{}+{:08x}", self.name, self.key_id)
    }
}

impl fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}+{:08x}+{}",
            self.name,
            self.key_id,
            BASE64.encode(tagged(self.key.as_bytes()))
        )
    }
}

impl fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifierKey({self})")
    }
}

impl FromStr for VerifierKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// The verifier keys whose signatures a verifier accepts. Several may be trusted at once, so
/// that checkpoints signed before and after a key rotation all verify.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedKeys {
    keys: Vec<VerifierKey>,
}

impl TrustedKeys {
    /// Trusts every key in `keys`. Exact duplicates are kept once, so that configuring the
    /// same key twice does not make signature lookups ambiguous.
    #[must_use]
    pub fn new(keys: Vec<VerifierKey>) -> TrustedKeys {
        let mut unique: Vec<VerifierKey> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.contains(&key) {
                unique.push(key);
            }
        }
        TrustedKeys { keys: unique }
    }

    /// Whether no key is trusted (then nothing verifies).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The number of trusted keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The trusted keys, in the order given.
    pub fn iter(&self) -> std::slice::Iter<'_, VerifierKey> {
        self.keys.iter()
    }

    /// The trusted key with this name and key id, if any.
    #[must_use]
    pub fn find(&self, name: &str, key_id: u32) -> Option<&VerifierKey> {
        self.keys
            .iter()
            .find(|key| key.name == name && key.key_id == key_id)
    }

    /// The keys as the `signed_note` lookup structure.
    pub(crate) fn verifier_list(&self) -> signed_note::VerifierList {
        signed_note::VerifierList::new(
            self.keys
                .iter()
                .map(|key| Box::new(NoteVerifier(key.clone())) as Box<dyn signed_note::Verifier>)
                .collect(),
        )
    }
}

impl<'a> IntoIterator for &'a TrustedKeys {
    type Item = &'a VerifierKey;
    type IntoIter = std::slice::Iter<'a, VerifierKey>;

    fn into_iter(self) -> Self::IntoIter {
        self.keys.iter()
    }
}

/// Presents a [`VerifierKey`] to `signed_note`'s note verification.
///
/// It uses `verify_strict`, which refuses non-canonical encodings that plain `verify`
/// tolerates; signatures made by an honest signer always pass both.
struct NoteVerifier(VerifierKey);

impl signed_note::Verifier for NoteVerifier {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn key_id(&self) -> u32 {
        self.0.key_id
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        ed25519_dalek::Signature::from_slice(sig)
            .is_ok_and(|sig| self.0.key.verify_strict(msg, &sig).is_ok())
    }
}
