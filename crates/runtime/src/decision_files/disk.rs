//! The file system side of the decision files: atomic writes (temporary file, `fsync`,
//! `rename`, `fsync` of the folder), reads with a size limit, and the owner-only HMAC key
//! file. Creating a file with its mode and flushing a folder are `crate::files`, shared with
//! the keyring.

use std::fs::{self, File};
use std::io::{self, Read as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use cairn_core::{Digest, HmacKey};
use serde::Serialize;

use super::DecisionFilesError;

/// The HMAC secret's length in bytes.
pub(super) const SECRET_LEN: usize = 32;
/// Permission bits that would let anyone but the owner read the key file.
const GROUP_OTHER_BITS: u32 = 0o077;

pub(super) fn io_error(action: &'static str, path: &Path, source: io::Error) -> DecisionFilesError {
    DecisionFilesError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Reads `path` as UTF-8 text of at most `limit` bytes; `None` when it does not exist.
pub(super) fn read_limited(
    path: &Path,
    limit: usize,
) -> Result<Option<String>, DecisionFilesError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_error("open", path, source)),
    };
    let size = file
        .metadata()
        .map_err(|source| io_error("inspect", path, source))?
        .len();
    let too_large = || DecisionFilesError::TooLarge {
        path: path.to_owned(),
        size,
        limit,
    };
    let cap = u64::try_from(limit).map_err(|_| too_large())?;
    if size > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| io_error("read", path, source))?;
    if bytes.len() > limit {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| DecisionFilesError::Corrupt {
            path: path.to_owned(),
            reason: "not UTF-8 text".to_owned(),
        })
}

/// Serialises `value` as pretty JSON and writes it atomically.
pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), DecisionFilesError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| DecisionFilesError::Corrupt {
        path: path.to_owned(),
        reason: format!("cannot serialise: {e}"),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Replaces `path` with `bytes` atomically: a temporary file in the same folder, `fsync`,
/// `rename` over `path`, `fsync` of the folder. On failure `path` is untouched and the
/// temporary file removed.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DecisionFilesError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    ensure_dir(dir)?;
    // Owner-only, whatever the umask: the decision book is Cairn's own state.
    crate::files::replace(path, 0o600, bytes)
        .map_err(|(action, source)| io_error(action, path, source))
}

pub(super) use crate::files::temp_path;

/// Creates `path` (failing if it exists) with mode `mode` from the first instant, writes
/// `bytes` and flushes them to disk; removes the file again if the write fails.
pub(super) fn write_new(path: &Path, mode: u32, bytes: &[u8]) -> Result<(), DecisionFilesError> {
    crate::files::write_new(path, mode, bytes)
        .map_err(|(action, source)| io_error(action, path, source))
}

pub(super) fn ensure_dir(dir: &Path) -> Result<(), DecisionFilesError> {
    fs::create_dir_all(dir).map_err(|source| io_error("create directory", dir, source))
}

/// Flushes a folder's entries (new and renamed files) to disk.
pub(super) fn sync_dir(dir: &Path) -> Result<(), DecisionFilesError> {
    crate::files::sync_dir(dir).map_err(|source| io_error("sync", dir, source))
}

/// Loads the key file, refusing it when group or others can access it.
pub(super) fn load_key_file(path: &Path) -> Result<HmacKey, DecisionFilesError> {
    let file = File::open(path).map_err(|source| io_error("open", path, source))?;
    // The mode is read from the open handle, so the file checked is the file read.
    let mode = file
        .metadata()
        .map_err(|source| io_error("inspect", path, source))?
        .permissions()
        .mode()
        & 0o7777;
    if mode & GROUP_OTHER_BITS != 0 {
        return Err(DecisionFilesError::KeyFilePermissions {
            path: path.to_owned(),
            mode,
        });
    }
    let invalid = |reason| DecisionFilesError::InvalidKeyFile {
        path: path.to_owned(),
        reason,
    };
    let mut text = String::new();
    file.take(256)
        .read_to_string(&mut text)
        .map_err(|_| invalid("expected 64 hex digits of text"))?;
    let secret = unhex(text.trim_end()).ok_or_else(|| invalid("expected 64 hex digits"))?;
    let id = format!(
        "decisions-{}",
        Digest::of(&secret).hex().get(..8).unwrap_or("0")
    );
    HmacKey::new(&id, secret.to_vec()).map_err(|_| invalid("cannot derive a key id"))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes exactly [`SECRET_LEN`] bytes from lowercase or uppercase hex.
pub(super) fn unhex(text: &str) -> Option<[u8; SECRET_LEN]> {
    if text.len() != SECRET_LEN * 2 {
        return None;
    }
    let mut out = [0u8; SECRET_LEN];
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}
