//! Reading the store's rows back: runs, records (checked against their bodies), envelopes,
//! and the column conversions they share.

use cairn_core::{TaskId, Timestamp};
use cairn_ledger::StoreError;
use cairn_ledger::store::{IndexColumns, RunInfo, RunMeta, StoredEnvelope, StoredRow};
use postgres::Row;

use crate::error::backend;

pub(crate) fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A column that must parse (an id, a time): a value that does not is a damaged row.
pub(crate) fn parse<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, StoreError>
where
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e| StoreError::Corrupt(format!("a stored {what} does not read: {e}")))
}

pub(crate) fn time(us: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_micros(us)
        .map_err(|e| StoreError::Corrupt(format!("a stored time does not read: {e}")))
}

pub(crate) fn get<'a, T: postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, StoreError> {
    row.try_get(index).map_err(|e| backend(&e))
}

pub(crate) const RUN_COLUMNS: &str = "r.tenant_id, r.run_id, r.task_id, r.opened_at_us, r.next_step, \
                           r.last_recorded_at_us, r.termination_reason, r.terminated, r.checkpointed";

/// A run's summary from the columns [`RUN_COLUMNS`] names, at the start of `row`.
pub(crate) fn run_info(row: &Row) -> Result<RunInfo, StoreError> {
    let terminated: bool = get(row, 7)?;
    let reason: Option<&str> = get(row, 6)?;
    let termination = match (terminated, reason) {
        (true, Some(reason)) => Some(parse(reason, "termination reason")?),
        _ => None,
    };
    Ok(RunInfo {
        meta: RunMeta {
            tenant_id: parse(get(row, 0)?, "tenant id")?,
            run_id: parse(get(row, 1)?, "run id")?,
            task_id: parse::<TaskId>(get(row, 2)?, "task id")?,
            opened_at: time(get(row, 3)?)?,
        },
        records: as_u64(get(row, 4)?),
        last_recorded_at: get::<Option<i64>>(row, 5)?.map(time).transpose()?,
        termination,
        checkpointed: get(row, 8)?,
    })
}

pub(crate) const ROW_COLUMNS: &str = "step_index, body, kind, task_id, tool_name, args_size, decision, \
                           termination_reason, recorded_at_us, digest";

/// A stored record from the columns [`ROW_COLUMNS`] names, checked against its body.
pub(crate) fn stored_row(row: &Row) -> Result<StoredRow, StoreError> {
    let columns = IndexColumns {
        kind: get(row, 2)?,
        task_id: get(row, 3)?,
        tool_name: get(row, 4)?,
        args_size: get(row, 5)?,
        decision: get(row, 6)?,
        termination_reason: get(row, 7)?,
        recorded_at_us: get(row, 8)?,
        digest: std::borrow::Cow::Borrowed(get(row, 9)?),
    };
    Ok(columns.read_row(as_u64(get(row, 0)?), get(row, 1)?))
}

pub(crate) fn envelope(row: &Row) -> Result<StoredEnvelope, StoreError> {
    Ok(StoredEnvelope {
        envelope_id: get(row, 0)?,
        step_index: as_u64(get(row, 1)?),
        supersedes: get(row, 2)?,
        body: get(row, 3)?,
    })
}
