//! The store's connections: each with the statements prepared on it, and dropped by the pool
//! once its session is gone.

use std::collections::HashMap;

use cairn_ledger::StoreError;
use postgres::{Client, NoTls, Statement};

use crate::error::backend;

/// One connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) statements: HashMap<&'static str, Statement>,
    /// Set when a statement failed because the session is gone, so the pool drops the
    /// connection instead of handing it to the next call (the client itself only notices a
    /// closed socket when it next reads).
    pub(crate) broken: std::cell::Cell<bool>,
}

impl Conn {
    /// The statement `sql`, prepared once per connection.
    pub(crate) fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self
            .client
            .prepare(sql)
            .map_err(|e| lost(&self.broken, &e))?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Opens connections for the pool.
pub(crate) struct Manager {
    pub(crate) config: postgres::Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
            broken: std::cell::Cell::new(false),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken.get() || conn.client.is_closed()
    }
}

/// The store error for a failed statement on a connection whose `broken` flag is `broken`:
/// a session that is gone marks its connection for the pool to drop.
pub(crate) fn lost(broken: &std::cell::Cell<bool>, e: &postgres::Error) -> StoreError {
    let error = backend(e);
    mark_if_lost(broken, &error);
    error
}

/// Marks the connection broken when `error` says its session is gone.
pub(crate) fn mark_if_lost(broken: &std::cell::Cell<bool>, error: &StoreError) {
    if matches!(error, StoreError::Unavailable(_)) {
        broken.set(true);
    }
}

/// Pool errors are reported by the store itself, not logged by the pool.
#[derive(Debug)]
pub(crate) struct Quiet;

impl r2d2::HandleError<postgres::Error> for Quiet {
    fn handle_error(&self, _: postgres::Error) {}
}
