//! The key directory: generating Ed25519 signing keys, storing them with owner-only
//! permissions, choosing the active signing key and loading the trusted verifier keys.
//!
//! Layout of a key directory (created with mode 0700):
//!
//! ```text
//! <dir>/<name>-<key id hex>.key   mode 0600, the private key text (PRIVATE+KEY+...)
//! <dir>/<name>-<key id hex>.pub   the verifier key text (<name>+<key id>+<base64>)
//! <dir>/active                    the file stem of the key used for signing
//! ```
//!
//! Every `*.pub` file in the directory is trusted, so after a rotation checkpoints signed by
//! the previous key still verify. Only Unix is supported: the owner-only guarantee relies on
//! Unix permission bits.

use std::fs::{self, File};
use std::io::{self, Read as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use rand_core::CryptoRngCore;
use thiserror::Error;

use cairn_core::{Code, ErrorCode};
use cairn_ledger::keys::{KeyError, SigningKey, TrustedKeys, VerifierKey};

/// The name of the file that holds the active key's file stem.
const ACTIVE_FILE: &str = "active";
/// Key files are a line of text; anything larger is not a key file.
const MAX_KEY_FILE_BYTES: u64 = 4096;
/// The longest key name the keyring accepts (it becomes part of a file name).
const MAX_KEY_NAME_LEN: usize = 100;
/// Permission bits that would let anyone but the owner use a private key file.
const GROUP_OTHER_BITS: u32 = 0o077;

/// Errors raised by the keyring. Messages name the file at fault and never include key
/// material.
#[derive(Debug, Error)]
pub enum KeyringError {
    /// A file system operation failed.
    #[error("cannot {action} `{}`: {source}", .path.display())]
    Io {
        /// What was being done (`read`, `create`, ...).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The directory has no active signing key.
    #[error("no signing key in `{}`: run `cairn keys generate` to create one", .dir.display())]
    NoSigningKey {
        /// The key directory.
        dir: PathBuf,
    },
    /// The directory has no verifier key to trust.
    #[error(
        "no trusted verifier keys (*.pub) in `{}`: run `cairn keys generate` or copy a trusted .pub file there",
        .dir.display()
    )]
    NoTrustedKeys {
        /// The key directory.
        dir: PathBuf,
    },
    /// A private key file can be accessed by group or others.
    #[error(
        "private key file `{}` has mode {mode:04o}, which lets group or others access it; run `chmod 600` on it",
        .path.display()
    )]
    KeyFilePermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The key directory, its `active` file or a `.pub` file the verifier trusts can be
    /// written by group or others, who could then choose the signer or add a trusted key.
    #[error(
        "`{}` has mode {mode:04o}, which lets group or others write it (and so choose which keys sign and are trusted); run `chmod go-w` on it",
        .path.display()
    )]
    KeysWritableByOthers {
        /// The directory or file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A key file's content is not a valid key.
    #[error("invalid key file `{}`: {source}", .path.display())]
    InvalidKeyFile {
        /// The key file.
        path: PathBuf,
        /// What is wrong with the key.
        #[source]
        source: KeyError,
    },
    /// A key file is larger than any key.
    #[error("key file `{}` is larger than {MAX_KEY_FILE_BYTES} bytes", .path.display())]
    KeyFileTooLarge {
        /// The key file.
        path: PathBuf,
    },
    /// A `.pub` file holds a private key, which must never be distributed.
    #[error(
        "`{}` holds a private key; a .pub file must hold only the verifier key (treat the key as leaked)",
        .path.display()
    )]
    PrivateKeyInPublicFile {
        /// The offending file.
        path: PathBuf,
    },
    /// A key name cannot be used by the keyring.
    #[error("invalid key `name` `{name}`: {reason}")]
    InvalidKeyName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The `active` file does not hold a key file stem.
    #[error("invalid `active` file `{}`: {reason}", .path.display())]
    InvalidActive {
        /// The `active` file.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The `active` file names a key file that does not exist.
    #[error("the active key file `{}` does not exist", .path.display())]
    ActiveKeyMissing {
        /// The missing key file.
        path: PathBuf,
    },
    /// A key file holds another key than its file name says.
    #[error("key file `{}` holds key `{found}`, but its file name says `{expected}`", .path.display())]
    KeyFileMismatch {
        /// The key file.
        path: PathBuf,
        /// The stem the file name gives.
        expected: String,
        /// The stem of the key the file holds.
        found: String,
    },
}

cairn_core::error_codes! {
    KeyringError {
        /// A key file or folder that cannot be read or written.
        KEYRING_IO = Internal("keyring_io");
        /// No active signing key.
        NO_SIGNING_KEY = Invalid("no_signing_key");
        /// A private key file others can read.
        KEY_FILE_PERMISSIONS = Invalid("key_file_permissions");
        /// A keys folder others can write.
        KEYS_WRITABLE_BY_OTHERS = Invalid("keys_writable_by_others");
        /// A key file that does not parse.
        INVALID_KEY_FILE = Invalid("invalid_key_file");
        /// A key file over the size limit.
        KEY_FILE_TOO_LARGE = Invalid("key_file_too_large");
        /// A private key in a `.pub` file.
        PRIVATE_KEY_IN_PUB_FILE = Invalid("private_key_in_pub_file");
        /// An `active` file that does not name a key.
        INVALID_ACTIVE = Invalid("invalid_active_key");
        /// The active key's file is missing.
        ACTIVE_KEY_MISSING = Invalid("active_key_missing");
        /// A private and public key that do not match.
        KEY_FILE_MISMATCH = Invalid("key_file_mismatch");
    }
}

impl ErrorCode for KeyringError {
    fn error_code(&self) -> Code {
        match self {
            Self::Io { .. } => Self::KEYRING_IO,
            Self::NoSigningKey { .. } => Self::NO_SIGNING_KEY,
            Self::NoTrustedKeys { .. } => {
                cairn_ledger::checkpoint::CheckpointError::NO_TRUSTED_KEYS
            }
            Self::KeyFilePermissions { .. } => Self::KEY_FILE_PERMISSIONS,
            Self::KeysWritableByOthers { .. } => Self::KEYS_WRITABLE_BY_OTHERS,
            Self::InvalidKeyFile { .. } => Self::INVALID_KEY_FILE,
            Self::KeyFileTooLarge { .. } => Self::KEY_FILE_TOO_LARGE,
            Self::PrivateKeyInPublicFile { .. } => Self::PRIVATE_KEY_IN_PUB_FILE,
            Self::InvalidKeyName { .. } => cairn_ledger::keys::KeyError::INVALID_NAME,
            Self::InvalidActive { .. } => Self::INVALID_ACTIVE,
            Self::ActiveKeyMissing { .. } => Self::ACTIVE_KEY_MISSING,
            Self::KeyFileMismatch { .. } => Self::KEY_FILE_MISMATCH,
        }
    }
}

/// What [`Keyring::generate`] created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedKey {
    /// The new key's public half, to hand to verifiers.
    pub verifier_key: VerifierKey,
    /// The private key file (mode 0600).
    pub private_key_path: PathBuf,
    /// The verifier key file.
    pub verifier_key_path: PathBuf,
}

/// A key directory (see the module documentation for its layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyring {
    dir: PathBuf,
}

impl Keyring {
    /// A keyring over `dir`. Nothing is read or created until a method needs it, so the
    /// directory may not exist yet (see [`Keyring::generate`]).
    #[must_use]
    pub fn open(dir: impl Into<PathBuf>) -> Keyring {
        Keyring { dir: dir.into() }
    }

    /// The key directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Generates a key named `name`, stores it and makes it the active signing key. The
    /// previous keys stay in the directory, and so stay trusted.
    ///
    /// The directory is created with mode 0700 if missing. The private key file is created
    /// with mode 0600 from the start (never readable by others, even briefly) and flushed to
    /// disk before the key is marked active.
    ///
    /// # Errors
    /// [`KeyringError::InvalidKeyName`] when `name` is not usable as both a signed-note key
    /// name and a file name (ASCII letters, digits, `-_.`, not starting with `.`), or
    /// [`KeyringError::Io`].
    pub fn generate<R: CryptoRngCore + ?Sized>(
        &self,
        rng: &mut R,
        name: &str,
    ) -> Result<GeneratedKey, KeyringError> {
        validate_file_key_name(name)?;
        // Generation fails only on the name, which the keyring's own rule above is stricter
        // about; the mapping keeps the ledger's reason should the rules ever diverge.
        let key = SigningKey::generate(rng, name).map_err(|source| {
            let reason = match source {
                KeyError::InvalidName { reason, .. } => reason,
                _ => "is not a valid signed-note key name",
            };
            KeyringError::InvalidKeyName {
                name: name.to_owned(),
                reason,
            }
        })?;
        self.ensure_dir()?;
        let verifier_key = key.verifier_key();
        let stem = file_stem(&verifier_key);
        let private_key_path = self.dir.join(format!("{stem}.key"));
        let verifier_key_path = self.dir.join(format!("{stem}.pub"));
        write_new_file(&private_key_path, 0o600, &key.to_private_text())?;
        write_new_file(&verifier_key_path, 0o644, &verifier_key.to_string())?;
        self.set_active(&stem)?;
        Ok(GeneratedKey {
            verifier_key,
            private_key_path,
            verifier_key_path,
        })
    }

    /// Loads the key named by `<dir>/active`.
    ///
    /// # Errors
    /// - [`KeyringError::NoSigningKey`] when there is no `active` file (or no directory);
    /// - [`KeyringError::InvalidActive`] / [`KeyringError::ActiveKeyMissing`] when it does not
    ///   name an existing key file;
    /// - whatever [`Keyring::load_signing_key_file`] reports, and
    ///   [`KeyringError::KeyFileMismatch`] when the file holds another key than its name says.
    pub fn active_signing_key(&self) -> Result<SigningKey, KeyringError> {
        let active_path = self.dir.join(ACTIVE_FILE);
        not_writable_by_others(&self.dir)?;
        not_writable_by_others(&active_path)?;
        let stem = match read_small_file(&active_path) {
            Ok(text) => text.trim_end().to_owned(),
            Err(KeyringError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(KeyringError::NoSigningKey {
                    dir: self.dir.clone(),
                });
            }
            Err(other) => return Err(other),
        };
        if !is_file_safe(&stem) {
            return Err(KeyringError::InvalidActive {
                path: active_path,
                reason: "must hold the file stem `<name>-<key id>` of a key in the directory",
            });
        }
        let key_path = self.dir.join(format!("{stem}.key"));
        let key = match Keyring::load_signing_key_file(&key_path) {
            Err(KeyringError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(KeyringError::ActiveKeyMissing { path: key_path });
            }
            other => other?,
        };
        let found = file_stem(&key.verifier_key());
        if found != stem {
            return Err(KeyringError::KeyFileMismatch {
                path: key_path,
                expected: stem,
                found,
            });
        }
        Ok(key)
    }

    /// Every verifier key in the directory's `*.pub` files, in file name order.
    ///
    /// # Errors
    /// [`KeyringError::NoTrustedKeys`] when there is none (or no directory), or the first
    /// error of [`Keyring::load_verifier_key_file`].
    pub fn trusted_keys(&self) -> Result<TrustedKeys, KeyringError> {
        let no_keys = || KeyringError::NoTrustedKeys {
            dir: self.dir.clone(),
        };
        not_writable_by_others(&self.dir)?;
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(no_keys()),
            Err(source) => return Err(io_error("list", &self.dir, source)),
        };
        let mut paths = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|source| io_error("list", &self.dir, source))?
                .path();
            if path.extension().is_some_and(|ext| ext == "pub") {
                not_writable_by_others(&path)?;
                paths.push(path);
            }
        }
        paths.sort();
        let keys = paths
            .iter()
            .map(|path| Keyring::load_verifier_key_file(path))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(no_keys());
        }
        Ok(TrustedKeys::new(keys))
    }

    /// Reads one verifier key file (a single line `<name>+<key id>+<base64>`; a trailing
    /// newline is allowed).
    ///
    /// # Errors
    /// [`KeyringError::Io`], [`KeyringError::KeyFileTooLarge`],
    /// [`KeyringError::PrivateKeyInPublicFile`] or [`KeyringError::InvalidKeyFile`], each
    /// naming `path`.
    pub fn load_verifier_key_file(path: &Path) -> Result<VerifierKey, KeyringError> {
        let text = read_small_file(path)?;
        let text = text.trim_end();
        if text.starts_with("PRIVATE+KEY+") {
            return Err(KeyringError::PrivateKeyInPublicFile {
                path: path.to_owned(),
            });
        }
        VerifierKey::parse(text).map_err(|source| KeyringError::InvalidKeyFile {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads one private key file, refusing it when group or others have any access to it.
    ///
    /// # Errors
    /// [`KeyringError::KeyFilePermissions`], [`KeyringError::Io`],
    /// [`KeyringError::KeyFileTooLarge`] or [`KeyringError::InvalidKeyFile`], each naming
    /// `path`.
    pub fn load_signing_key_file(path: &Path) -> Result<SigningKey, KeyringError> {
        let file = File::open(path).map_err(|source| io_error("open", path, source))?;
        // The mode is read from the open handle, so the file checked is the file read.
        let metadata = file
            .metadata()
            .map_err(|source| io_error("inspect", path, source))?;
        let mode = metadata.permissions().mode() & 0o7777;
        if mode & GROUP_OTHER_BITS != 0 {
            return Err(KeyringError::KeyFilePermissions {
                path: path.to_owned(),
                mode,
            });
        }
        let text = read_limited(file, path)?;
        SigningKey::from_private_text(text.trim_end()).map_err(|source| {
            KeyringError::InvalidKeyFile {
                path: path.to_owned(),
                source,
            }
        })
    }

    /// Creates the key directory with mode 0700 when it does not exist yet. An existing
    /// directory is left as it is.
    fn ensure_dir(&self) -> Result<(), KeyringError> {
        if self.dir.is_dir() {
            // A folder others can write is refused, not silently tightened: someone set it.
            return not_writable_by_others(&self.dir);
        }
        crate::files::create_private_dir(&self.dir)
            .map_err(|source| io_error("create directory", &self.dir, source))
    }

    /// Points `active` at `stem`, atomically: a reader sees the old or the new key, never a
    /// half-written name.
    fn set_active(&self, stem: &str) -> Result<(), KeyringError> {
        let active = self.dir.join(ACTIVE_FILE);
        let temp = self.dir.join(format!(".{ACTIVE_FILE}.{stem}.tmp"));
        // A stale temporary file from an interrupted run would block `create_new`.
        match fs::remove_file(&temp) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(io_error("remove", &temp, source)),
        }
        write_new_file(&temp, 0o644, stem)?;
        fs::rename(&temp, &active).map_err(|source| io_error("replace", &active, source))?;
        sync_dir(&self.dir)
    }
}

/// Refuses `path` (followed through links: what matters is what is read) when group or
/// others can write it. A path that does not exist is for the caller to report.
fn not_writable_by_others(path: &Path) -> Result<(), KeyringError> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(KeyringError::KeysWritableByOthers {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// `<name>-<key id as 8 hex digits>`: the file stem of a key's files.
fn file_stem(key: &VerifierKey) -> String {
    format!("{}-{:08x}", key.name(), key.key_id())
}

/// Whether `text` is non-empty, only ASCII letters, digits and `-_.`, and does not start
/// with `.` (so it can be neither a hidden file nor a path).
fn is_file_safe(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('.')
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// Refuses key names that cannot safely become part of a file name. Signed-note names may
/// contain `/` (`example.com/log`), which the keyring's layout cannot store.
fn validate_file_key_name(name: &str) -> Result<(), KeyringError> {
    let reason = if name.is_empty() {
        Some("must not be empty")
    } else if name.len() > MAX_KEY_NAME_LEN {
        Some("must be at most 100 characters")
    } else if !is_file_safe(name) {
        Some("only ASCII letters, digits and `-_.` are allowed, and it must not start with `.`")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(KeyringError::InvalidKeyName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> KeyringError {
    KeyringError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Creates `path` (failing if it exists) with permission bits `mode` from the first
/// instant, writes `text` and a newline, and flushes it to disk.
fn write_new_file(path: &Path, mode: u32, text: &str) -> Result<(), KeyringError> {
    crate::files::write_new(path, mode, format!("{text}\n").as_bytes())
        .map_err(|(action, source)| io_error(action, path, source))
}

/// Flushes a directory's entries (new and renamed files) to disk.
fn sync_dir(dir: &Path) -> Result<(), KeyringError> {
    crate::files::sync_dir(dir).map_err(|source| io_error("sync", dir, source))
}

/// Reads a whole file of at most [`MAX_KEY_FILE_BYTES`] as UTF-8.
fn read_small_file(path: &Path) -> Result<String, KeyringError> {
    let file = File::open(path).map_err(|source| io_error("open", path, source))?;
    read_limited(file, path)
}

fn read_limited(file: File, path: &Path) -> Result<String, KeyringError> {
    let mut text = String::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|source| io_error("read", path, source))?;
    if u64::try_from(text.len()).map_or(true, |len| len > MAX_KEY_FILE_BYTES) {
        return Err(KeyringError::KeyFileTooLarge {
            path: path.to_owned(),
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_ledger::checkpoint::{self, Checkpoint};
    use rand_core::OsRng;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn keyring() -> (tempfile::TempDir, Keyring) {
        let temp = tempfile::tempdir().unwrap();
        let ring = Keyring::open(temp.path().join("keys"));
        (temp, ring)
    }

    #[test]
    fn generated_private_key_is_0600_in_a_0700_directory() {
        let (_temp, ring) = keyring();
        let generated = ring.generate(&mut OsRng, "cairn-test").unwrap();
        assert_eq!(mode_of(ring.dir()), 0o700);
        assert_eq!(mode_of(&generated.private_key_path), 0o600);
        let stem = format!("cairn-test-{:08x}", generated.verifier_key.key_id());
        assert_eq!(
            generated.private_key_path,
            ring.dir().join(format!("{stem}.key"))
        );
        assert_eq!(
            fs::read_to_string(ring.dir().join("active")).unwrap(),
            format!("{stem}\n")
        );
        let public = fs::read_to_string(&generated.verifier_key_path).unwrap();
        assert_eq!(public, format!("{}\n", generated.verifier_key));
    }

    #[test]
    fn active_key_signs_and_its_public_file_verifies() {
        let (_temp, ring) = keyring();
        let generated = ring.generate(&mut OsRng, "cairn-test").unwrap();
        let key = ring.active_signing_key().unwrap();
        assert_eq!(key.verifier_key(), generated.verifier_key);
        let trusted = ring.trusted_keys().unwrap();
        let cp = Checkpoint {
            origin: "cairn/acme/run-1".to_owned(),
            size: 3,
            root: [7; 32],
        };
        let signed = checkpoint::sign(&cp, &key).unwrap();
        let opened = checkpoint::open(signed.note(), &trusted).unwrap();
        assert_eq!(opened.checkpoint(), &cp);
    }

    #[test]
    fn group_or_world_readable_private_key_is_refused() {
        let (_temp, ring) = keyring();
        let generated = ring.generate(&mut OsRng, "cairn-test").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o660] {
            fs::set_permissions(
                &generated.private_key_path,
                fs::Permissions::from_mode(mode),
            )
            .unwrap();
            let err = ring.active_signing_key().unwrap_err();
            assert_eq!(err.code(), "key_file_permissions", "{mode:o}");
            let message = err.to_string();
            assert!(
                message.contains(&generated.private_key_path.display().to_string()),
                "{message}"
            );
            assert!(message.contains(&format!("{mode:04o}")), "{message}");
        }
    }

    #[test]
    fn issue_15_a_keys_folder_or_file_others_can_write_is_refused() {
        let (_dir, ring) = keyring();
        let generated = ring.generate(&mut rand_core::OsRng, "cairn.test").unwrap();
        fs::set_permissions(ring.dir(), fs::Permissions::from_mode(0o777)).unwrap();
        for err in [
            ring.active_signing_key().unwrap_err(),
            ring.trusted_keys().unwrap_err(),
            ring.generate(&mut rand_core::OsRng, "cairn.test")
                .unwrap_err(),
        ] {
            assert_eq!(err.code(), "keys_writable_by_others");
        }
        fs::set_permissions(ring.dir(), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(
            &generated.verifier_key_path,
            fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        assert_eq!(
            ring.trusted_keys().unwrap_err().code(),
            "keys_writable_by_others"
        );
        fs::set_permissions(
            &generated.verifier_key_path,
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        assert!(ring.trusted_keys().is_ok());
        assert!(ring.active_signing_key().is_ok());
    }

    #[test]
    fn rotation_makes_the_new_key_active_and_keeps_the_old_one_trusted() {
        let (_temp, ring) = keyring();
        let first = ring.generate(&mut OsRng, "cairn-2025").unwrap();
        let old_key = ring.active_signing_key().unwrap();
        let second = ring.generate(&mut OsRng, "cairn-2026").unwrap();
        let active = ring.active_signing_key().unwrap();
        assert_eq!(active.verifier_key(), second.verifier_key);
        let trusted = ring.trusted_keys().unwrap();
        assert_eq!(trusted.len(), 2);
        assert!(trusted.iter().any(|k| *k == first.verifier_key));
        assert!(trusted.iter().any(|k| *k == second.verifier_key));

        // A checkpoint signed before the rotation still verifies.
        let cp = Checkpoint {
            origin: "cairn/acme/run-1".to_owned(),
            size: 1,
            root: [1; 32],
        };
        let signed = checkpoint::sign(&cp, &old_key).unwrap();
        let opened = checkpoint::open(signed.note(), &trusted).unwrap();
        assert_eq!(opened.signers(), &[first.verifier_key]);
    }

    #[test]
    fn same_name_twice_yields_two_distinct_keys() {
        let (_temp, ring) = keyring();
        let a = ring.generate(&mut OsRng, "cairn").unwrap();
        let b = ring.generate(&mut OsRng, "cairn").unwrap();
        assert_ne!(a.private_key_path, b.private_key_path);
        assert_eq!(ring.trusted_keys().unwrap().len(), 2);
    }

    #[test]
    fn missing_directory_reports_no_signing_key_and_no_trusted_keys() {
        let (_temp, ring) = keyring();
        let err = ring.active_signing_key().unwrap_err();
        assert_eq!(err.code(), "no_signing_key");
        assert!(err.to_string().contains("cairn keys generate"), "{err}");
        let err = ring.trusted_keys().unwrap_err();
        assert_eq!(err.code(), "no_trusted_keys");
    }

    #[test]
    fn invalid_public_key_file_is_named_in_the_error() {
        let (_temp, ring) = keyring();
        ring.generate(&mut OsRng, "cairn-test").unwrap();
        let bad = ring.dir().join("broken.pub");
        fs::write(&bad, "broken+00000000+AAAA\n").unwrap();
        let err = ring.trusted_keys().unwrap_err();
        assert_eq!(err.code(), "invalid_key_file");
        assert!(
            err.to_string().contains(&bad.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn invalid_private_key_file_is_named_without_echoing_it() {
        let (_temp, ring) = keyring();
        let generated = ring.generate(&mut OsRng, "cairn-test").unwrap();
        let text = fs::read_to_string(&generated.private_key_path).unwrap();
        // Damage the key id: the file still has mode 0600, its content no longer matches.
        let id = format!("+{:08x}+", generated.verifier_key.key_id());
        let damaged = text.trim_end().replacen(&id, "+00000000+", 1);
        fs::remove_file(&generated.private_key_path).unwrap();
        write_new_file(&generated.private_key_path, 0o600, &damaged).unwrap();
        let err = ring.active_signing_key().unwrap_err();
        assert_eq!(err.code(), "invalid_key_file");
        let message = err.to_string();
        assert!(
            message.contains(&generated.private_key_path.display().to_string()),
            "{message}"
        );
        // `PRIVATE+KEY+<name>+<id>+<key data>`: the key data is base64, which may itself
        // hold `+`, so it is everything after the fourth `+`.
        let secret = text.trim_end().splitn(5, '+').nth(4).unwrap();
        assert!(secret.len() > 40, "{secret}");
        assert!(!message.contains(secret), "{message}");
    }

    #[test]
    fn private_key_in_a_pub_file_is_refused() {
        let (_temp, ring) = keyring();
        let generated = ring.generate(&mut OsRng, "cairn-test").unwrap();
        let leaked = ring.dir().join("leaked.pub");
        fs::copy(&generated.private_key_path, &leaked).unwrap();
        let err = ring.trusted_keys().unwrap_err();
        assert_eq!(err.code(), "private_key_in_pub_file");
        assert!(err.to_string().contains("leaked.pub"), "{err}");
    }

    #[test]
    fn key_names_must_be_file_safe() {
        let (_temp, ring) = keyring();
        for bad in ["", "a/b", "a+b", "a b", ".hidden", "ключ", &"x".repeat(101)] {
            let err = ring.generate(&mut OsRng, bad).unwrap_err();
            assert_eq!(err.code(), "invalid_key_name", "{bad:?}");
        }
        assert!(!ring.dir().exists());
    }

    #[test]
    fn active_file_must_name_an_existing_matching_key() {
        let (_temp, ring) = keyring();
        let first = ring.generate(&mut OsRng, "one").unwrap();
        let second = ring.generate(&mut OsRng, "two").unwrap();
        let active = ring.dir().join("active");

        fs::write(&active, "../elsewhere\n").unwrap();
        assert_eq!(
            ring.active_signing_key().unwrap_err().code(),
            "invalid_active_key"
        );

        fs::write(&active, "gone-00000000\n").unwrap();
        assert_eq!(
            ring.active_signing_key().unwrap_err().code(),
            "active_key_missing"
        );

        // A key file renamed to another key's stem is caught.
        let stem = file_stem(&second.verifier_key);
        fs::remove_file(&second.private_key_path).unwrap();
        fs::rename(&first.private_key_path, &second.private_key_path).unwrap();
        fs::write(&active, format!("{stem}\n")).unwrap();
        assert_eq!(
            ring.active_signing_key().unwrap_err().code(),
            "key_file_mismatch"
        );
    }

    #[test]
    fn oversized_key_file_is_refused() {
        let (_temp, ring) = keyring();
        ring.generate(&mut OsRng, "cairn-test").unwrap();
        fs::write(ring.dir().join("huge.pub"), "x".repeat(5000)).unwrap();
        assert_eq!(
            ring.trusted_keys().unwrap_err().code(),
            "key_file_too_large"
        );
    }
}
