//! Where a store is: a SQLite file, a PostgreSQL URL, or a store a process already holds
//! open (a service's, shared by its tenants). Every opener ([`StoreOpener`]) takes a
//! [`StoreLocation`]; each store crate opens its own kind, and only the binaries know them all.

use std::path::PathBuf;
use std::sync::Arc;

use crate::store::{Store, StoreError};

/// A store's location.
#[derive(Clone)]
pub enum StoreLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL URL (printed only with its password masked, [`redact`]).
    Postgres(String),
    /// A store already open — a service's, whose runs are kept apart by tenant.
    Open(Arc<dyn Store>),
}

impl StoreLocation {
    /// The location `text` names: a `postgres://`/`postgresql://` URL, else a file path.
    /// `None` for an empty text.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        if text.is_empty() {
            None
        } else if is_postgres_url(text) {
            Some(Self::Postgres(text.to_owned()))
        } else {
            Some(Self::File(PathBuf::from(text)))
        }
    }

    /// The files the store consists of (a SQLite file; its side files are the opener's to
    /// add), which no tool call may touch: none for the other kinds.
    #[must_use]
    pub fn file(&self) -> Option<&std::path::Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Postgres(_) | Self::Open(_) => None,
        }
    }
}

impl PartialEq for StoreLocation {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::File(a), Self::File(b)) => a == b,
            (Self::Postgres(a), Self::Postgres(b)) => a == b,
            (Self::Open(a), Self::Open(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for StoreLocation {}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string())
    }
}

/// Prints a file's path, a URL with its password masked, or `(open store)`.
impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => f.write_str(&redact(url)),
            Self::Open(_) => f.write_str("(open store)"),
        }
    }
}

/// Whether `text` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
#[must_use]
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// `url` with its password replaced by `***`, both where a URL carries one (`user:pw@host`)
/// and as a `password=` parameter: the only form of a store URL Cairn prints, logs or puts in
/// an error.
#[must_use]
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

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
        assert!(StoreLocation::parse("").is_none());
    }
}
