//! Run checkpoints: the C2SP tlog-checkpoint body (origin, record count, RFC 6962 root),
//! signed as a C2SP signed note, and the verification that turns a note into a
//! [`VerifiedCheckpoint`].
//!
//! A signed checkpoint looks like this (the key name is the operator's, the origin names the
//! run):
//!
//! ```text
//! cairn/acme/run-42
//! 17
//! <standard base64 of the 32-byte RFC 6962 root>
//!
//! — cairn-prod <base64 of key id (4 bytes, big-endian) || Ed25519 signature>
//! ```
//!
//! Parsing is deliberately strict: exactly the three lines Cairn writes, each canonical, so
//! that a verified note and [`Checkpoint::body`] agree byte for byte.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use thiserror::Error;

use cairn_core::{Code, ErrorCode, RunId, TenantId};

use crate::keys::{KeyError, SigningKey, TrustedKeys, VerifierKey};
use crate::merkle::Hash;

/// Errors raised when building, signing, opening or comparing checkpoints.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CheckpointError {
    /// The checkpoint body is not the canonical three-line tlog-checkpoint Cairn writes.
    #[error("malformed checkpoint `{field}`: {reason}")]
    MalformedBody {
        /// The line at fault: `origin`, `size`, `root` or `body` for the whole text.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The text is not a well-formed signed note.
    #[error("malformed signed note: {reason}")]
    MalformedNote {
        /// What the note parser reported.
        reason: String,
    },
    /// No key is trusted, so no checkpoint can verify.
    #[error("no trusted verifier keys are configured")]
    NoTrustedKeys,
    /// The note carries no signature by any trusted key.
    #[error("the note has no signature from a trusted key (signed by: {signed_by})")]
    NoTrustedSignature {
        /// The `name+keyid` of each signature line found, comma-separated.
        signed_by: String,
    },
    /// A signature by a trusted key does not verify: the body or the signature was altered.
    #[error("the signature of trusted key `{name}+{key_id:08x}` does not verify")]
    SignatureInvalid {
        /// The key name.
        name: String,
        /// The key id.
        key_id: u32,
    },
    /// Two different trusted keys share a name and key id, so a signature is ambiguous.
    #[error("trusted keys are ambiguous: several keys are named `{name}+{key_id:08x}`")]
    AmbiguousKey {
        /// The key name.
        name: String,
        /// The key id.
        key_id: u32,
    },
    /// Signing failed (invalid note text or key).
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The verified checkpoint is for another origin (another tenant or run).
    #[error("checkpoint `origin` is `{found}`, expected `{expected}`")]
    OriginMismatch {
        /// The origin expected.
        expected: String,
        /// The origin in the checkpoint.
        found: String,
    },
    /// The verified checkpoint covers another number of records.
    #[error("checkpoint `size` is {found}, expected {expected}")]
    SizeMismatch {
        /// The size expected.
        expected: u64,
        /// The size in the checkpoint.
        found: u64,
    },
    /// The verified checkpoint commits to another Merkle root.
    #[error("checkpoint `root` is {found}, expected {expected}")]
    RootMismatch {
        /// The root expected, in hex.
        expected: String,
        /// The root in the checkpoint, in hex.
        found: String,
    },
}

cairn_core::error_codes! {
    CheckpointError {
        /// A checkpoint body that does not parse.
        MALFORMED_CHECKPOINT = Tamper("malformed_checkpoint");
        /// A signed note that does not parse.
        MALFORMED_NOTE = Tamper("malformed_note");
        /// Verification was asked with no trusted key.
        NO_TRUSTED_KEYS = Invalid("no_trusted_keys");
        /// No signature by a trusted key.
        NO_TRUSTED_SIGNATURE = Tamper("no_trusted_signature");
        /// A signature by a trusted key that does not verify.
        SIGNATURE_INVALID = Tamper("signature_invalid");
        /// Two trusted keys share a name and id.
        AMBIGUOUS_KEY = Invalid("ambiguous_key");
        /// The checkpoint names another run.
        ORIGIN_MISMATCH = Tamper("origin_mismatch");
        /// The checkpoint covers another number of records.
        SIZE_MISMATCH = Tamper("size_mismatch");
    }
}

impl ErrorCode for CheckpointError {
    fn error_code(&self) -> Code {
        match self {
            Self::MalformedBody { .. } => Self::MALFORMED_CHECKPOINT,
            Self::MalformedNote { .. } => Self::MALFORMED_NOTE,
            Self::NoTrustedKeys => Self::NO_TRUSTED_KEYS,
            Self::NoTrustedSignature { .. } => Self::NO_TRUSTED_SIGNATURE,
            Self::SignatureInvalid { .. } => Self::SIGNATURE_INVALID,
            Self::AmbiguousKey { .. } => Self::AMBIGUOUS_KEY,
            Self::Key(inner) => inner.error_code(),
            Self::OriginMismatch { .. } => Self::ORIGIN_MISMATCH,
            Self::SizeMismatch { .. } => Self::SIZE_MISMATCH,
            Self::RootMismatch { .. } => crate::merkle::MerkleError::ROOT_MISMATCH,
        }
    }
}

/// A tree head: the log (here: the run) it belongs to, its number of leaves (records) and its
/// RFC 6962 root over the record digests.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Checkpoint {
    /// The log identity, `cairn/<tenant>/<run>` for a run.
    pub origin: String,
    /// The number of leaves (records) covered.
    pub size: u64,
    /// The Merkle Tree Hash of those leaves.
    pub root: Hash,
}

impl Checkpoint {
    /// The origin line of a run's checkpoint: `cairn/<tenant>/<run>`.
    ///
    /// Identifiers cannot contain `/`, `+` or white space, so the origin is unambiguous and
    /// a checkpoint can never be replayed as another tenant's or run's.
    #[must_use]
    pub fn origin_for(tenant: &TenantId, run: &RunId) -> String {
        format!("cairn/{tenant}/{run}")
    }

    /// The tlog-checkpoint body: origin, decimal size and standard base64 root, each line
    /// ending in a newline, and no extension lines.
    #[must_use]
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            BASE64.encode(self.root)
        )
    }

    /// Parses a body as written by [`Checkpoint::body`].
    ///
    /// The C2SP spec allows opaque extension lines after the root; Cairn never writes any,
    /// and accepting them would let a verified note say more than the [`Checkpoint`] it
    /// yields, so they are refused. Also refused: a missing final newline, an empty origin or
    /// one with control characters, a size that is not canonical decimal (sign, leading zero,
    /// overflow), and a root that is not canonical standard base64 of exactly 32 bytes.
    ///
    /// # Errors
    /// [`CheckpointError::MalformedBody`] naming the line at fault.
    pub fn parse_body(text: &str) -> Result<Checkpoint, CheckpointError> {
        let malformed = |field, reason| CheckpointError::MalformedBody { field, reason };
        let text = text
            .strip_suffix('\n')
            .ok_or_else(|| malformed("body", "must end with a newline"))?;
        let mut lines = text.split('\n');
        let origin = lines.next().unwrap_or_default();
        let size = lines
            .next()
            .ok_or_else(|| malformed("size", "line is missing"))?;
        let root = lines
            .next()
            .ok_or_else(|| malformed("root", "line is missing"))?;
        if lines.next().is_some() {
            return Err(malformed(
                "body",
                "has lines after the root (extension lines are not accepted)",
            ));
        }
        Ok(Checkpoint {
            origin: parse_origin(origin)?.to_owned(),
            size: parse_size(size)?,
            root: parse_root(root)?,
        })
    }
}

impl fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkpoint")
            .field("origin", &self.origin)
            .field("size", &self.size)
            .field("root", &hex::encode(self.root))
            .finish()
    }
}

/// Checks the origin line: non-empty and free of control characters.
fn parse_origin(line: &str) -> Result<&str, CheckpointError> {
    let malformed = |reason| CheckpointError::MalformedBody {
        field: "origin",
        reason,
    };
    if line.is_empty() {
        Err(malformed("must not be empty"))
    } else if line.chars().any(char::is_control) {
        Err(malformed("must not contain control characters"))
    } else {
        Ok(line)
    }
}

/// Parses the size line: ASCII decimal, no sign, no leading zero except for `0` itself.
fn parse_size(line: &str) -> Result<u64, CheckpointError> {
    let malformed = |reason| CheckpointError::MalformedBody {
        field: "size",
        reason,
    };
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed("must be a decimal number"));
    }
    if line.len() > 1 && line.starts_with('0') {
        return Err(malformed("must not have leading zeros"));
    }
    line.parse()
        .map_err(|_| malformed("does not fit in 64 bits"))
}

/// Parses the root line: canonical standard base64 (with padding) of 32 bytes.
fn parse_root(line: &str) -> Result<Hash, CheckpointError> {
    let malformed = |reason| CheckpointError::MalformedBody {
        field: "root",
        reason,
    };
    let bytes = BASE64
        .decode(line)
        .map_err(|_| malformed("is not standard base64"))?;
    let root: Hash = bytes
        .try_into()
        .map_err(|_| malformed("must decode to exactly 32 bytes"))?;
    // The engine already refuses non-canonical padding and trailing bits; comparing the
    // re-encoding makes "one root, one text" an explicit guarantee.
    if BASE64.encode(root) != line {
        return Err(malformed("is not canonical base64"));
    }
    Ok(root)
}

/// Signs `checkpoint` with `key`, producing the full signed note.
///
/// # Errors
/// [`CheckpointError::MalformedBody`] when the checkpoint's body would not parse back to the
/// same checkpoint (for example an origin with a newline), or [`CheckpointError::Key`] when
/// signing fails.
pub fn sign(
    checkpoint: &Checkpoint,
    key: &SigningKey,
) -> Result<SignedCheckpoint, CheckpointError> {
    let body = checkpoint.body();
    // INVARIANT: Cairn only signs bodies that `open` will parse back to the same checkpoint.
    if Checkpoint::parse_body(&body)? != *checkpoint {
        return Err(CheckpointError::MalformedBody {
            field: "origin",
            reason: "does not survive a round trip through the body",
        });
    }
    let note = key.sign_note_text(body.as_bytes())?;
    Ok(SignedCheckpoint {
        checkpoint: checkpoint.clone(),
        note,
    })
}

/// A checkpoint together with the signed note produced for it by [`sign`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedCheckpoint {
    checkpoint: Checkpoint,
    note: String,
}

impl SignedCheckpoint {
    /// The checkpoint that was signed.
    #[must_use]
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The signed note text, ready to be stored or published.
    #[must_use]
    pub fn note(&self) -> &str {
        &self.note
    }

    /// The signed note text, by value.
    #[must_use]
    pub fn into_note(self) -> String {
        self.note
    }
}

/// A checkpoint whose note carries at least one valid signature by a trusted key. Only
/// [`open`] builds one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    checkpoint: Checkpoint,
    note: String,
    signers: Vec<VerifierKey>,
}

impl VerifiedCheckpoint {
    /// The checkpoint the note's body holds.
    #[must_use]
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The note as it was opened.
    #[must_use]
    pub fn note(&self) -> &str {
        &self.note
    }

    /// The trusted keys whose signatures verified, in the note's order.
    #[must_use]
    pub fn signers(&self) -> &[VerifierKey] {
        &self.signers
    }

    /// Checks that the verified checkpoint is the one expected (same origin, size and root),
    /// for example the one recomputed from the stored records of a run.
    ///
    /// # Errors
    /// [`CheckpointError::OriginMismatch`], [`CheckpointError::SizeMismatch`] or
    /// [`CheckpointError::RootMismatch`], checked in that order.
    pub fn ensure_matches(&self, expected: &Checkpoint) -> Result<(), CheckpointError> {
        let found = &self.checkpoint;
        if found.origin != expected.origin {
            return Err(CheckpointError::OriginMismatch {
                expected: expected.origin.clone(),
                found: found.origin.clone(),
            });
        }
        if found.size != expected.size {
            return Err(CheckpointError::SizeMismatch {
                expected: expected.size,
                found: found.size,
            });
        }
        if found.root != expected.root {
            return Err(CheckpointError::RootMismatch {
                expected: hex::encode(expected.root),
                found: hex::encode(found.root),
            });
        }
        Ok(())
    }
}

/// Opens a signed checkpoint note: parses it, requires at least one valid signature by a key
/// in `trusted` (signatures by other keys are ignored, as the signed-note spec requires),
/// and only then parses the body.
///
/// # Errors
/// - [`CheckpointError::MalformedNote`] when `note` is not a well-formed signed note;
/// - [`CheckpointError::NoTrustedKeys`] when `trusted` is empty;
/// - [`CheckpointError::NoTrustedSignature`] when no signature is by a trusted key;
/// - [`CheckpointError::SignatureInvalid`] when a trusted key's signature does not verify;
/// - [`CheckpointError::AmbiguousKey`] when two trusted keys share a name and key id;
/// - [`CheckpointError::MalformedBody`] when the signed body is not a canonical checkpoint.
pub fn open(note: &str, trusted: &TrustedKeys) -> Result<VerifiedCheckpoint, CheckpointError> {
    let (body, signers) = open_note(note, trusted)?;
    let checkpoint = Checkpoint::parse_body(&body)?;
    Ok(VerifiedCheckpoint {
        checkpoint,
        note: note.to_owned(),
        signers,
    })
}

/// Opens any signed note Cairn writes (a checkpoint, a lane handoff): requires at least one
/// valid signature by a key in `trusted` and returns the signed text with the trusted keys
/// that signed it. The caller parses the text.
///
/// # Errors
/// As [`open`], except [`CheckpointError::MalformedBody`], which only `open` raises.
pub fn open_note(
    note: &str,
    trusted: &TrustedKeys,
) -> Result<(String, Vec<VerifierKey>), CheckpointError> {
    let parsed = signed_note::Note::from_bytes(note.as_bytes()).map_err(|e| {
        CheckpointError::MalformedNote {
            reason: e.to_string(),
        }
    })?;
    if trusted.is_empty() {
        return Err(CheckpointError::NoTrustedKeys);
    }
    let (verified, _unknown) = parsed
        .verify(&trusted.verifier_list())
        .map_err(|e| verification_error(e, note))?;
    let signers = verified
        .iter()
        .filter_map(|sig| trusted.find(sig.name(), sig.id()).cloned())
        .collect();
    // The text was checked to be UTF-8 by the note parser; this cannot fail.
    let body = std::str::from_utf8(parsed.text()).map_err(|_| CheckpointError::MalformedNote {
        reason: "the note text is not UTF-8".to_owned(),
    })?;
    Ok((body.to_owned(), signers))
}

/// Maps a `signed_note` verification failure to our error, naming the signers on
/// "no trusted signature" so that the user sees which key they would need to trust.
fn verification_error(error: signed_note::NoteError, note: &str) -> CheckpointError {
    use signed_note::{NoteError, VerificationError};
    match error {
        NoteError::UnverifiedNote => CheckpointError::NoTrustedSignature {
            signed_by: signature_names(note),
        },
        NoteError::InvalidSignature { name, id } => {
            CheckpointError::SignatureInvalid { name, key_id: id }
        }
        NoteError::VerificationError(VerificationError::AmbiguousKey { name, id }) => {
            CheckpointError::AmbiguousKey { name, key_id: id }
        }
        other => CheckpointError::MalformedNote {
            reason: other.to_string(),
        },
    }
}

/// `name+keyid` of every signature line of an already parsed note, for error messages.
fn signature_names(note: &str) -> String {
    let Some((_, sigs)) = note.rsplit_once("\n\n") else {
        return String::new();
    };
    sigs.lines()
        .filter_map(|line| signed_note::Signature::from_bytes(line.as_bytes()).ok())
        .map(|sig| format!("`{}+{:08x}`", sig.name(), sig.id()))
        .collect::<Vec<_>>()
        .join(", ")
}
