//! `cairn store init` and `cairn store copy`: creating a store, and moving ledgers between
//! stores (a team leaving the laptop store for PostgreSQL), each run verified on both sides.

use std::fmt::Write as _;

use cairn_core::ErrorCode as _;
use cairn_ledger::copy::{CopyError, copy_run};
use cairn_ledger::store::{OpenMode, RunFilter};
use cairn_store_postgres::Options;
use serde_json::json;

use crate::args::StoreCommand;
use crate::context::Context;
use crate::failure::{Failure, exit, exit_code};
use crate::output::Outcome;
use crate::store::{OpenStore as _, parse_location};

/// Runs `cairn store …`.
pub fn run(ctx: &Context, command: StoreCommand) -> Result<Outcome, Failure> {
    match command {
        StoreCommand::Init { partitions } => init(ctx, partitions),
        StoreCommand::Copy {
            from,
            to,
            trusted_keys,
        } => copy(ctx, &from, &to, &trusted_keys),
    }
}

fn init(ctx: &Context, partitions: u32) -> Result<Outcome, Failure> {
    let location = ctx.store_location()?;
    let options = Options {
        partitions,
        ..Options::default()
    };
    let store = crate::store::open_with(&location, OpenMode::CreateIfMissing, &options)?;
    let runs = store.list_runs(&RunFilter::default())?.len();
    Ok(Outcome::ok(
        json!({ "store": location.to_string(), "runs": runs }),
        format!("store ready: {location} ({runs} run(s))"),
    ))
}

fn copy(
    ctx: &Context,
    from: &str,
    to: &str,
    trusted_keys: &[std::path::PathBuf],
) -> Result<Outcome, Failure> {
    let (from, to) = (parse_location(from)?, parse_location(to)?);
    if from == to {
        return Err(Failure::new(
            cairn_runtime::RuntimeError::INVALID_INPUT,
            "`--from` and `--to` name the same store",
        ));
    }
    let source = from.open(OpenMode::MustExist)?;
    let runs = source.list_runs(&RunFilter::default())?;
    let trusted = if trusted_keys.is_empty() {
        let keyring = cairn_runtime::keyring::Keyring::open(ctx.keys_dir_for(&from)?);
        match keyring.trusted_keys() {
            Ok(keys) => keys,
            // Runs without a checkpoint verify without a key.
            Err(_) if !runs.iter().any(|r| r.checkpointed) => {
                cairn_ledger::keys::TrustedKeys::new(Vec::new())
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        ctx.trusted_keys(trusted_keys)?
    };
    let target = to.open(OpenMode::CreateIfMissing)?;
    let bar = ctx.progress(runs.len() as u64, "copying runs");
    let mut lines = String::new();
    let mut results = Vec::with_capacity(runs.len());
    let mut worst = exit::OK;
    let mut totals = (0_u64, 0_u64);
    for info in &runs {
        let name = format!("{}/{}", info.meta.tenant_id, info.meta.run_id);
        match copy_run(source.as_ref(), target.as_ref(), info, &trusted) {
            Ok(copied) => {
                let what = if copied.records == 0 {
                    "already there"
                } else {
                    "copied"
                };
                totals.0 += 1;
                totals.1 += copied.records;
                let _ = writeln!(
                    lines,
                    "{what:<14} {name}: {} record(s) written, {} already there, {} content item(s), {} envelope(s); verified",
                    copied.records, copied.already, copied.content, copied.envelopes
                );
                results.push(json!({
                    "tenant_id": info.meta.tenant_id, "run_id": info.meta.run_id,
                    "result": if copied.records == 0 { "already_there" } else { "copied" },
                    "records": copied.records, "already": copied.already,
                    "content": copied.content, "envelopes": copied.envelopes,
                }));
            }
            Err(error) => {
                let code = error.code();
                worst = worst.max(exit_of(&error));
                let _ = writeln!(lines, "NOT COPIED     {name}: error[{code}]: {error}");
                results.push(json!({
                    "tenant_id": info.meta.tenant_id, "run_id": info.meta.run_id,
                    "result": "not_copied", "code": code, "message": error.to_string(),
                }));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let failed = runs.len() as u64 - totals.0;
    let _ = writeln!(
        lines,
        "{} of {} run(s) in {to}, {} record(s) written, {failed} not copied",
        totals.0,
        runs.len(),
        totals.1
    );
    Ok(Outcome {
        json: json!({ "from": from.to_string(), "to": to.to_string(), "runs": results }),
        human: lines,
        exit: worst,
        silent: false,
    })
}

/// The exit code a run that was not copied gives the command; over several runs the highest
/// wins (tamper 5 over invalid 2 over internal 1).
fn exit_of(error: &CopyError) -> u8 {
    exit_code(error.error_code().class())
}
