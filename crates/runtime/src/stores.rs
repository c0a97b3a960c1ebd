//! Opening a store where a [`StoreLocation`] says. Only the binaries know every kind of store;
//! the edges take an opener ([`StoreOpener`], from the ledger) and a location, never a path
//! that stands for something else; a long-lived process keeps what it opens ([`KeptStores`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

pub use cairn_ledger::location::{StoreLocation, StoreOpener, open_at};
use cairn_ledger::{Store, StoreError};

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
