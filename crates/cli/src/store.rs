//! Where the store is — a SQLite file or a PostgreSQL URL — and opening it. Every command
//! reaches its store through here, so `--store postgres://…` (or `CAIRN_STORE`) works for
//! each of them.

use std::path::PathBuf;
use std::sync::Arc;

use cairn_ledger::Store;
use cairn_ledger::store::OpenMode;
use cairn_store_postgres::{Options, PostgresStore, is_postgres_url, redact};
use cairn_store_sqlite::{Pages, SqliteStore};

use crate::failure::Failure;

/// A store's location.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL URL (printed only redacted).
    Postgres(String),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string())
    }
}

/// Prints a file's path, or a URL with its password masked.
impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl StoreLocation {
    /// The location `text` names: a `postgres://`/`postgresql://` URL, else a file path.
    ///
    /// # Errors
    /// An empty location.
    pub fn parse(text: &str) -> Result<Self, Failure> {
        if text.is_empty() {
            return Err(Failure::new(
                cairn_runtime::RuntimeError::INVALID_INPUT,
                "the store (`--store` or `CAIRN_STORE`) must not be empty",
            ));
        }
        if is_postgres_url(text) {
            Ok(Self::Postgres(text.to_owned()))
        } else {
            Ok(Self::File(PathBuf::from(text)))
        }
    }

    /// Opens the store.
    ///
    /// # Errors
    /// The store's own (missing, not a store, unreachable, …).
    pub fn open(&self, mode: OpenMode) -> Result<Arc<dyn Store>, Failure> {
        Ok(open(self, mode)?)
    }

    /// Opens the store for a writer that commits without pause (`cairn serve`): a SQLite
    /// file has its write-ahead log checkpointed by a thread of its own, and is created with
    /// small pages (each commit logs fewer bytes).
    ///
    /// # Errors
    /// The store's own.
    pub fn open_for_service(&self, mode: OpenMode) -> Result<Arc<dyn Store>, Failure> {
        match self {
            Self::File(path) => {
                let store = Arc::new(SqliteStore::open_with_pages(path, mode, Pages::Small)?);
                store.checkpoint_in_background()?;
                Ok(store)
            }
            Self::Postgres(_) => self.open(mode),
        }
    }
}

/// Opens the store at `location` (the one place that knows every kind of store).
///
/// # Errors
/// The store's own.
pub fn open(
    location: &StoreLocation,
    mode: OpenMode,
) -> Result<Arc<dyn Store>, cairn_ledger::StoreError> {
    open_with(location, mode, &Options::default())
}

/// [`open`], with the options a new PostgreSQL store is created with.
///
/// # Errors
/// The store's own.
pub fn open_with(
    location: &StoreLocation,
    mode: OpenMode,
    options: &Options,
) -> Result<Arc<dyn Store>, cairn_ledger::StoreError> {
    Ok(match location {
        StoreLocation::File(path) => Arc::new(SqliteStore::open(path, mode)?),
        StoreLocation::Postgres(url) => Arc::new(PostgresStore::open(url, mode, options)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_postgres_stores_printed_without_their_password() {
        let location = StoreLocation::parse("postgres://cairn:s3cret@db/ledger").unwrap();
        assert_eq!(location.to_string(), "postgres://cairn:***@db/ledger");
        assert_eq!(format!("{location:?}"), "postgres://cairn:***@db/ledger");
        assert!(matches!(location, StoreLocation::Postgres(_)));
        let file = StoreLocation::parse("x/cairn.db").unwrap();
        assert_eq!(file, StoreLocation::File(PathBuf::from("x/cairn.db")));
        assert!(StoreLocation::parse("").is_err());
    }
}
