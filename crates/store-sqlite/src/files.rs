//! The store's files on disk: created owner-only, and found beside the database.

use std::path::{Path, PathBuf};

use cairn_ledger::StoreError;

use crate::SqliteStore;

/// Creates the store's missing folders (mode 0700) and the empty database file (mode 0600,
/// whatever the umask) when it does not exist, so that neither the file nor the write-ahead
/// log and shared-memory files SQLite creates beside it (it gives them the database file's
/// mode) are ever readable by others.
pub(crate) fn create_owner_only(path: &Path) -> Result<(), StoreError> {
    let failed = |what: &Path, e: std::io::Error| {
        StoreError::Backend(format!("cannot create `{}`: {e}", what.display()))
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt as _;
            builder.mode(0o700);
        }
        builder.create(parent).map_err(|e| failed(parent, e))?;
    }
    // A link to a file that does not exist yet: the file it names is created owner-only (SQLite
    // would otherwise create it with the umask's mode).
    let target = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let link = std::fs::read_link(path).map_err(|e| failed(path, e))?;
            path.parent().map_or(link.clone(), |dir| dir.join(&link))
        }
        _ => path.to_path_buf(),
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    match options.open(&target) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(failed(path, e)),
    }
}

impl SqliteStore {
    /// The files that make up the store at `path`: the database and the side files SQLite
    /// keeps beside it (`-wal`, `-shm`, `-journal`), whether they exist now or not.
    #[must_use]
    pub fn files(path: &Path) -> Vec<PathBuf> {
        ["", "-wal", "-shm", "-journal"]
            .iter()
            .map(|suffix| {
                let mut file = path.as_os_str().to_owned();
                file.push(suffix);
                PathBuf::from(file)
            })
            .collect()
    }

    /// Makes the store at `path` and its side files (`-wal`, `-shm`, `-journal`) owner-only
    /// (mode 0600), for a store created before Cairn created them so: they hold the retained
    /// raw arguments and observations. Files that do not exist are skipped.
    ///
    /// # Errors
    /// [`StoreError::Backend`] naming a file whose mode cannot be changed.
    pub fn restrict_to_owner(path: &Path) -> Result<(), StoreError> {
        #[cfg(unix)]
        for file in Self::files(path) {
            use std::os::unix::fs::PermissionsExt as _;
            match std::fs::symlink_metadata(&file) {
                Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o077 != 0 => {
                    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                        .map_err(|e| {
                            StoreError::Backend(format!(
                                "cannot restrict `{}`: {e}",
                                file.display()
                            ))
                        })?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Opens the SQLite file a location names (creating it), as it is: for a process that needs
/// no tuning of the write-ahead log (a test, a fuzz target, a tool). Refuses every other kind
/// of location.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqliteFiles;

impl cairn_ledger::location::StoreOpener for SqliteFiles {
    fn open(
        &self,
        location: &cairn_ledger::location::StoreLocation,
    ) -> Result<std::sync::Arc<dyn cairn_ledger::Store>, StoreError> {
        let Some(path) = location.file() else {
            return Err(StoreError::InvalidLocation {
                location: location.to_string(),
                reason: "not a SQLite file".to_owned(),
            });
        };
        let store = SqliteStore::open(path, crate::OpenMode::CreateIfMissing)?;
        Ok(std::sync::Arc::new(store))
    }

    fn files(&self, location: &cairn_ledger::location::StoreLocation) -> Vec<PathBuf> {
        location.file().map(SqliteStore::files).unwrap_or_default()
    }
}
