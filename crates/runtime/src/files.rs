//! Durable small-file writes shared by the keyring and the decision files: a file created
//! with its permission bits from the first instant and flushed before it counts, and the
//! directory entry flushed after a create or rename.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Creates `path` (failing if it exists) with permission bits `mode`, writes `bytes` and
/// flushes them to disk; removes the file again if the write fails, so that no truncated file
/// is left behind. The error says which step failed (`create` or `write`).
pub(crate) fn write_new(
    path: &Path,
    mode: u32,
    bytes: &[u8],
) -> Result<(), (&'static str, io::Error)> {
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

/// Flushes a directory's entries (new and renamed files) to disk.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|handle| handle.sync_all())
}
