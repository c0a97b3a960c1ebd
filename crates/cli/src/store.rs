//! Where the store is — a SQLite file or a PostgreSQL URL — and opening it. Every command
//! reaches its store through here, so `--store postgres://…` (or `CAIRN_STORE`) works for
//! each of them.

use std::path::PathBuf;
use std::sync::Arc;

use cairn_ledger::store::OpenMode;
use cairn_ledger::{Store, StoreError};
use cairn_runtime::StoreOpener;
use cairn_store_postgres::{Options, PostgresStore};
use cairn_store_sqlite::{Pages, SqliteStore};

use crate::failure::Failure;

pub use cairn_ledger::location::StoreLocation;

/// The location `text` names (`--store`, `CAIRN_STORE`): a `postgres://` URL, else a file.
///
/// # Errors
/// An empty location.
pub fn parse_location(text: &str) -> Result<StoreLocation, Failure> {
    StoreLocation::parse(text).ok_or_else(|| {
        Failure::new(
            cairn_runtime::RuntimeError::INVALID_INPUT,
            "the store (`--store` or `CAIRN_STORE`) must not be empty",
        )
    })
}

/// Opening a store where it is (the kinds only the binaries know).
pub trait OpenStore {
    /// Opens the store.
    ///
    /// # Errors
    /// The store's own (missing, not a store, unreachable, …).
    fn open(&self, mode: OpenMode) -> Result<Arc<dyn Store>, Failure>;

    /// Opens the store for a writer that commits without pause (`cairn serve`): a SQLite
    /// file has its write-ahead log checkpointed by a thread of its own, and is created with
    /// small pages (each commit logs fewer bytes).
    ///
    /// # Errors
    /// The store's own.
    fn open_for_service(&self, mode: OpenMode) -> Result<Arc<dyn Store>, Failure>;
}

impl OpenStore for StoreLocation {
    fn open(&self, mode: OpenMode) -> Result<Arc<dyn Store>, Failure> {
        Ok(open(self, mode)?)
    }

    fn open_for_service(&self, mode: OpenMode) -> Result<Arc<dyn Store>, Failure> {
        match self {
            Self::File(path) => {
                let store = Arc::new(SqliteStore::open_with_pages(path, mode, Pages::Small)?);
                store.checkpoint_in_background()?;
                Ok(store)
            }
            Self::Postgres(_) | Self::Open(_) => self.open(mode),
        }
    }
}

/// The stores a hook opens, created on first use: the embedded SQLite file — as a hook
/// worker (one process per call) or the resident server (which keeps it open through
/// `cairn_hooks::KeptStores`) uses it — or, when `--store`/`CAIRN_STORE` is a `postgres://`
/// URL, the PostgreSQL store it names (which has no files of its own to protect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookStores {
    /// One process per tool call: keeping a small write-ahead log between processes saves a
    /// checkpoint, a deletion and a re-creation of the log (fsyncs) on every call.
    ShortLived,
    /// The resident server: the log is checkpointed as it grows, so it never outgrows 1 MiB
    /// however long the server runs.
    LongLived,
}

impl StoreOpener for HookStores {
    fn open(&self, location: &StoreLocation) -> Result<Arc<dyn Store>, StoreError> {
        let StoreLocation::File(path) = location else {
            return open(location, OpenMode::CreateIfMissing);
        };
        let store = SqliteStore::open(path, OpenMode::CreateIfMissing)?;
        match self {
            Self::ShortLived => store.tune_for_short_lived_process()?,
            Self::LongLived => store.tune_for_long_lived_process()?,
        }
        Ok(Arc::new(store))
    }

    fn files(&self, location: &StoreLocation) -> Vec<PathBuf> {
        location.file().map(SqliteStore::files).unwrap_or_default()
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
        StoreLocation::Open(store) => Arc::clone(store),
    })
}
