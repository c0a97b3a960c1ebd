//! The PostgreSQL store's schema and its versioned migrations.
//!
//! Every table is keyed by `(tenant_id, run_id)` first; the record and content tables are
//! hash-partitioned on that key (the count is chosen when the store is created). The tables
//! live in the connection's current schema (`search_path`) and are named `cairn_*`, so a
//! store can share a database with other applications. The version is kept in
//! `cairn_schema`; migrations run in one transaction under an advisory lock, so two
//! processes opening a new store at once create it once, and a crash mid-migration leaves
//! the previous version.

use cairn_ledger::StoreError;
use postgres::Client;

use crate::error::backend;

/// The advisory lock migrations hold (`cairn.schema` as a number).
const MIGRATION_LOCK: i64 = 0x6361_6972_6e2e_7363;

/// The schema version this build writes.
pub const CURRENT_VERSION: i32 = 1;

/// The statements that bring a store from version `version - 1` to `version`.
fn migration(version: i32, partitions: u32) -> Vec<String> {
    match version {
        1 => {
            let mut sql = vec![String::from(
                "CREATE TABLE cairn_schema (
                     singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                     version    integer NOT NULL,
                     partitions integer NOT NULL
                 );
                 -- A run and its head: the next free step, the digest of the last record and the
                 -- frontier of the Merkle tree over its record digests, moved by each append in
                 -- the append's transaction (the row is the run's write lock); and what `runs
                 -- list` filters on, so that listing never reads records.
                 CREATE TABLE cairn_runs (
                     tenant_id           text    NOT NULL,
                     run_id              text    NOT NULL,
                     task_id             text    NOT NULL,
                     opened_at_us        bigint  NOT NULL,
                     next_step           bigint  NOT NULL DEFAULT 0,
                     head_digest         text,
                     frontier            bytea,
                     last_recorded_at_us bigint,
                     termination_reason  text,
                     terminated          boolean NOT NULL DEFAULT false,
                     checkpointed        boolean NOT NULL DEFAULT false,
                     PRIMARY KEY (tenant_id, run_id)
                 ) WITH (fillfactor = 50);
                 -- No index covers a column an append moves (next step, head, frontier, last
                 -- activity), and pages keep room: an append's update of the run's row is a
                 -- heap-only update that touches no index. `runs list --unterminated
                 -- --older-than` reads the unterminated runs only (the partial index), which
                 -- are the live ones.
                 CREATE INDEX cairn_runs_by_run ON cairn_runs (run_id);
                 CREATE INDEX cairn_runs_by_opening ON cairn_runs (opened_at_us, tenant_id, run_id);
                 CREATE INDEX cairn_runs_unterminated ON cairn_runs (opened_at_us, tenant_id, run_id)
                     WHERE NOT terminated;
                 -- The body is the record's JSON, the only source verification trusts; the other
                 -- columns are index copies checked against it when read.
                 CREATE TABLE cairn_records (
                     tenant_id          text   NOT NULL,
                     run_id             text   NOT NULL,
                     step_index         bigint NOT NULL,
                     kind               text   NOT NULL,
                     task_id            text   NOT NULL,
                     tool_name          text,
                     args_size          bigint,
                     decision           text,
                     termination_reason text,
                     recorded_at_us     bigint NOT NULL,
                     digest             text   NOT NULL,
                     body               text   NOT NULL,
                     PRIMARY KEY (tenant_id, run_id, step_index)
                 ) PARTITION BY HASH (tenant_id, run_id);
                 -- Raw content by digest, kept with the run that stored it (so it is partitioned
                 -- with the run); the same bytes stored by two runs are two rows.
                 CREATE TABLE cairn_content (
                     tenant_id     text   NOT NULL,
                     run_id        text   NOT NULL,
                     digest        text   NOT NULL,
                     bytes         bytea  NOT NULL,
                     size          bigint NOT NULL,
                     stored_at_us  bigint NOT NULL,
                     expires_at_us bigint NOT NULL,
                     PRIMARY KEY (tenant_id, run_id, digest)
                 ) PARTITION BY HASH (tenant_id, run_id);
                 CREATE INDEX cairn_content_by_digest ON cairn_content (digest);
                 CREATE INDEX cairn_content_by_expiry ON cairn_content (expires_at_us);
                 CREATE TABLE cairn_envelopes (
                     tenant_id   text   NOT NULL,
                     run_id      text   NOT NULL,
                     envelope_id text   NOT NULL,
                     step_index  bigint NOT NULL,
                     supersedes  text,
                     body        text   NOT NULL,
                     PRIMARY KEY (tenant_id, run_id, envelope_id)
                 );
                 CREATE INDEX cairn_envelopes_by_step ON cairn_envelopes (tenant_id, run_id, step_index);
                 CREATE TABLE cairn_checkpoints (
                     tenant_id text   NOT NULL,
                     run_id    text   NOT NULL,
                     tree_size bigint NOT NULL,
                     note      text   NOT NULL,
                     PRIMARY KEY (tenant_id, run_id)
                 );",
            )];
            for table in ["cairn_records", "cairn_content"] {
                for remainder in 0..partitions {
                    sql.push(format!(
                        "CREATE TABLE {table}_p{remainder} PARTITION OF {table}
                         FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
                    ));
                }
            }
            sql.push(format!(
                "INSERT INTO cairn_schema (version, partitions) VALUES (0, {partitions})"
            ));
            sql
        }
        _ => Vec::new(),
    }
}

/// The store's version: 0 when the current schema holds no Cairn store.
fn version(client: &mut impl postgres::GenericClient) -> Result<i32, StoreError> {
    // A plain query of the catalog (its own snapshot), not `to_regclass`: after waiting for
    // the migration lock, a session's cached view of the catalog may predate the migration
    // the lock holder just committed.
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables
                            WHERE schemaname = current_schema() AND tablename = 'cairn_schema')",
            &[],
        )
        .and_then(|row| row.try_get(0))
        .map_err(|e| backend(&e))?;
    if !exists {
        return Ok(0);
    }
    client
        .query_opt("SELECT version FROM cairn_schema", &[])
        .map_err(|e| backend(&e))?
        .map_or(Ok(0), |row| row.try_get(0).map_err(|e| backend(&e)))
}

/// The number of hash partitions the store was created with.
pub(crate) fn partitions(client: &mut Client) -> Result<u32, StoreError> {
    let count: i32 = client
        .query_one("SELECT partitions FROM cairn_schema", &[])
        .and_then(|row| row.try_get(0))
        .map_err(|e| backend(&e))?;
    Ok(u32::try_from(count).unwrap_or(0))
}

/// Refuses a database whose current schema holds no store, for commands that only read.
pub(crate) fn ensure_exists(client: &mut Client, location: &str) -> Result<(), StoreError> {
    if version(client)? == 0 {
        return Err(StoreError::NotAStore {
            path: location.to_owned(),
            reason: String::from(
                "its schema holds no Cairn store (create one with `cairn store init --store URL` or `cairn demo --store URL`)",
            ),
        });
    }
    Ok(())
}

/// Brings the store up to [`CURRENT_VERSION`], creating it (with `partitions` partitions)
/// when the schema holds none.
pub(crate) fn migrate(client: &mut Client, partitions: u32) -> Result<(), StoreError> {
    // Nothing to do, and nothing locked, in the common case.
    let found = version(client)?;
    if found > CURRENT_VERSION {
        return Err(StoreError::SchemaTooNew {
            found: i64::from(found),
            supported: i64::from(CURRENT_VERSION),
        });
    }
    if found == CURRENT_VERSION {
        return Ok(());
    }
    let mut tx = client.transaction().map_err(|e| backend(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| backend(&e))?;
    // Again under the lock: another process may have migrated meanwhile.
    let found = version(&mut tx)?;
    for next in (found + 1)..=CURRENT_VERSION {
        for statement in migration(next, partitions) {
            tx.batch_execute(&statement).map_err(|e| backend(&e))?;
        }
        tx.execute("UPDATE cairn_schema SET version = $1", &[&next])
            .map_err(|e| backend(&e))?;
    }
    tx.commit().map_err(|e| backend(&e))
}
