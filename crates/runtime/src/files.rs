//! Durable small-file writes shared by the keyring, the decision files and the hooks' own
//! files: a file created with its permission bits from the first instant and flushed before
//! it counts, a file replaced atomically, and the directory entry flushed after a create or
//! rename; and an exclusive lock held by whoever updates a file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates `path` (failing if it exists) with permission bits `mode`, writes `bytes` and
/// flushes them to disk; removes the file again if the write fails, so that no truncated file
/// is left behind. The error says which step failed (`create` or `write`).
pub fn write_new(path: &Path, mode: u32, bytes: &[u8]) -> Result<(), (&'static str, io::Error)> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| ("create", e))?;
    if let Err(source) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = fs::remove_file(path);
        return Err(("write", source));
    }
    Ok(())
}

/// An exclusive lock on the lock file `path` (created owner-only if missing, never
/// truncated), waiting for any other holder in this or another process; released when the
/// returned handle is dropped. The error says which step failed (`open` or `lock`).
pub fn lock_exclusive(path: &Path) -> Result<File, (&'static str, io::Error)> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| ("open", e))?;
    file.lock().map_err(|e| ("lock", e))?;
    Ok(file)
}

/// Creates `dir` and its missing parents, each readable only by the owner (mode 0700); an
/// existing folder is left as it is.
///
/// # Errors
/// The folder cannot be created.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Flushes a directory's entries (new and renamed files) to disk.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|handle| handle.sync_all())
}

/// Replaces `path` with `bytes` atomically, the new file having exactly the permission bits
/// `mode` (whatever the umask): a hidden temporary file beside it ([`temp_path`]), written
/// and flushed, renamed over `path`, then the folder flushed. On failure `path` is untouched
/// and the temporary file removed. The error says which step failed.
///
/// # Errors
/// `(step, error)`: `create`, `write`, `restrict`, `replace` or `sync`.
pub fn replace(path: &Path, mode: u32, bytes: &[u8]) -> Result<(), (&'static str, io::Error)> {
    let temp = temp_path(path);
    write_new(&temp, mode, bytes)?;
    let placed = fs::set_permissions(&temp, fs::Permissions::from_mode(mode))
        .map_err(|e| ("restrict", e))
        .and_then(|()| fs::rename(&temp, path).map_err(|e| ("replace", e)));
    if let Err(failure) = placed {
        let _ = fs::remove_file(&temp);
        return Err(failure);
    }
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty());
    sync_dir(dir.unwrap_or_else(|| Path::new("."))).map_err(|e| ("sync", e))
}

/// A fresh temporary name beside `path`: hidden, and unique per process and call.
#[must_use]
pub fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file = path
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{file}.{}.{n}.tmp", std::process::id()))
}
