//! PostgreSQL's errors as the store's: each a stable code, none with a secret in it.

use cairn_ledger::StoreError;
use postgres::error::SqlState;

/// The store error for a failed statement or connection.
pub(crate) fn backend(e: &postgres::Error) -> StoreError {
    let message = describe(e);
    let Some(state) = e.code() else {
        // No SQLSTATE: the connection itself failed (closed, reset, refused, timed out).
        return if e.is_closed() || is_io(e) {
            StoreError::Unavailable(message)
        } else {
            StoreError::Backend(message)
        };
    };
    if *state == SqlState::QUERY_CANCELED || *state == SqlState::LOCK_NOT_AVAILABLE {
        StoreError::Timeout(message)
    } else if *state == SqlState::READ_ONLY_SQL_TRANSACTION {
        StoreError::ReadOnly(message)
    } else if state.code().starts_with("08")
        || *state == SqlState::ADMIN_SHUTDOWN
        || *state == SqlState::CRASH_SHUTDOWN
        || *state == SqlState::CANNOT_CONNECT_NOW
        || *state == SqlState::TOO_MANY_CONNECTIONS
    {
        StoreError::Unavailable(message)
    } else if *state == SqlState::DATA_CORRUPTED || *state == SqlState::INDEX_CORRUPTED {
        StoreError::Corrupt(message)
    } else {
        StoreError::Backend(message)
    }
}

/// What went wrong, in the server's words when it gave them (the driver's own text for a
/// server error is only "db error"), else the driver's and its causes'.
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{}: {} [{}]", db.severity(), db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str(&format!("; {detail}"));
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(&format!(": {cause_text}"));
        }
        source = cause.source();
    }
    text
}

/// Whether `e` was caused by an I/O error (a refused or reset connection).
fn is_io(e: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Whether `e` is a unique violation of the constraint `constraint`.
pub(crate) fn violates(e: &postgres::Error, constraint: &str) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::UNIQUE_VIOLATION
            && db
                .constraint()
                .is_some_and(|name| name.starts_with(constraint))
    })
}
