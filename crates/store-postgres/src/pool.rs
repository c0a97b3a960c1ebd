//! The store's connections: each with the statements prepared on it, and dropped by the pool
//! once its session is gone.

use std::collections::HashMap;

use cairn_ledger::StoreError;
use postgres::{Client, NoTls, Row, Statement, ToStatement};

use crate::error::{backend, describe};

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

/// The parameters of a statement.
pub(crate) type Params<'a> = &'a [&'a (dyn postgres::types::ToSql + Sync)];

impl Conn {
    /// The rows `query` (text or a prepared statement) answers.
    pub(crate) fn query<T>(&mut self, query: &T, params: Params<'_>) -> Result<Vec<Row>, StoreError>
    where
        T: ?Sized + ToStatement,
    {
        self.client
            .query(query, params)
            .map_err(|e| lost(&self.broken, &e))
    }

    /// The row `query` answers, if any.
    pub(crate) fn query_opt<T>(
        &mut self,
        query: &T,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError>
    where
        T: ?Sized + ToStatement,
    {
        self.client
            .query_opt(query, params)
            .map_err(|e| lost(&self.broken, &e))
    }

    /// How many rows `query` changed.
    pub(crate) fn execute<T>(&mut self, query: &T, params: Params<'_>) -> Result<u64, StoreError>
    where
        T: ?Sized + ToStatement,
    {
        self.client
            .execute(query, params)
            .map_err(|e| lost(&self.broken, &e))
    }

    /// Runs `sql`, statements separated by `;`, ignoring what they answer.
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client
            .batch_execute(sql)
            .map_err(|e| lost(&self.broken, &e))
    }
}

/// Opens connections for the pool.
pub(crate) struct Manager {
    pub(crate) config: postgres::Config,
    pub(crate) tls: crate::location::Tls,
}

/// Why a connection could not be made, with every cause (the driver's own message for a
/// failed TLS handshake, say, does not say which certificate check failed); the pool keeps
/// only this text of the last failure.
#[derive(Debug)]
pub(crate) struct ConnectError(String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = ConnectError;

    fn connect(&self) -> Result<Conn, ConnectError> {
        let client = match &self.tls {
            crate::location::Tls::Off => self.config.connect(NoTls),
            crate::location::Tls::VerifyFull(tls) => self.config.connect(tls.clone()),
        };
        Ok(Conn {
            client: client.map_err(|e| ConnectError(describe(&e)))?,
            statements: HashMap::new(),
            broken: std::cell::Cell::new(false),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), ConnectError> {
        conn.client
            .simple_query("")
            .map(|_| ())
            .map_err(|e| ConnectError(describe(&e)))
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

impl r2d2::HandleError<ConnectError> for Quiet {
    fn handle_error(&self, _: ConnectError) {}
}
