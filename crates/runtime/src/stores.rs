//! Opening a store where a [`StoreLocation`] says. Only the binaries know every kind of store;
//! the edges take an opener ([`StoreOpener`]) and a location, never a path that stands for
//! something else.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

pub use cairn_ledger::location::StoreLocation;
use cairn_ledger::{Store, StoreError};

/// Opens stores by location.
pub trait StoreOpener: Send + Sync {
    /// Opens (creating if needed) the store at `location`.
    ///
    /// # Errors
    /// The store's own errors.
    fn open(&self, location: &StoreLocation) -> Result<Arc<dyn Store>, StoreError>;

    /// The files the store at `location` consists of (its side files too), which no tool
    /// call may touch; by default the file of a file store, and none for the other kinds.
    fn files(&self, location: &StoreLocation) -> Vec<PathBuf> {
        location
            .file()
            .map(|p| vec![p.to_path_buf()])
            .unwrap_or_default()
    }
}

/// Opens `location` with `opener`, or hands back the store a location holds open.
///
/// # Errors
/// The store's own errors.
pub fn open_at(
    opener: &dyn StoreOpener,
    location: &StoreLocation,
) -> Result<Arc<dyn Store>, StoreError> {
    match location {
        StoreLocation::Open(store) => Ok(Arc::clone(store)),
        other => opener.open(other),
    }
}

/// The opener of a long-lived process (the resident server, a test, a fuzz target): each
/// store is opened once through `inner` and kept.
pub struct KeptStores<O> {
    inner: O,
    open: Mutex<HashMap<String, Arc<dyn Store>>>,
}

impl<O: StoreOpener> KeptStores<O> {
    /// Keeps the stores `inner` opens.
    #[must_use]
    pub fn new(inner: O) -> Self {
        Self {
            inner,
            open: Mutex::default(),
        }
    }
}

impl<O: StoreOpener> StoreOpener for KeptStores<O> {
    fn open(&self, location: &StoreLocation) -> Result<Arc<dyn Store>, StoreError> {
        let key = match location {
            StoreLocation::File(path) => format!("file:{}", path.display()),
            StoreLocation::Postgres(url) => format!("postgres:{url}"),
            StoreLocation::Open(store) => return Ok(Arc::clone(store)),
        };
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(store) = open.get(&key) {
            return Ok(Arc::clone(store));
        }
        let store = self.inner.open(location)?;
        open.insert(key, Arc::clone(&store));
        Ok(store)
    }

    fn files(&self, location: &StoreLocation) -> Vec<PathBuf> {
        self.inner.files(location)
    }
}
