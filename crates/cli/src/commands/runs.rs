//! `cairn runs list`: lifecycle signals (I-2). A run without a terminal record after the
//! given idle time is reported: absence is a signal, not silence.

use std::fmt::Write as _;

use cairn_core::{Clock, SystemClock, TenantId};
use cairn_ledger::store::{RunFilter, RunInfo};

use crate::args::RunsCommand;
use crate::context::{Context, parse_id};
use crate::failure::Failure;
use crate::input::parse_duration;
use crate::output::Outcome;

/// Runs `cairn runs …`.
pub fn run(ctx: &Context, command: RunsCommand) -> Result<Outcome, Failure> {
    let RunsCommand::List {
        unterminated,
        older_than,
        tenant,
    } = command;
    let now = SystemClock.now();
    let idle_before = older_than
        .as_deref()
        .map(|text| parse_duration("--older-than", text).map(|d| now.saturating_add(-d)))
        .transpose()?;
    let tenant_id = tenant
        .as_deref()
        .map(|t| parse_id::<cairn_core::ids::Tenant>("tenant", t))
        .transpose()?;
    let rows: Vec<Row> = match crate::remote::Remote::from_env(ctx, "an investigator's")? {
        Some(service) => {
            let mut query = format!("/v1/runs?unterminated={unterminated}");
            if let Some(text) = &older_than {
                query.push_str(&format!("&older_than={}", crate::remote::encoded(text)));
            }
            let rows: Vec<Row> = service.get(&query)?;
            rows.into_iter()
                .filter(|row| {
                    tenant_id
                        .as_ref()
                        .is_none_or(|t| row.tenant_id == t.as_str())
                })
                .collect()
        }
        None => {
            let store = ctx.open_existing_store()?;
            let runs = store.list_runs(&RunFilter {
                tenant_id: tenant_id.clone(),
                unterminated_only: unterminated,
                idle_before,
            })?;
            warn_without_signing_key(ctx, &runs);
            runs.iter().map(Row::from).collect()
        }
    };
    let json: Vec<serde_json::Value> = rows.iter().map(Row::json).collect();
    Ok(Outcome::ok(
        serde_json::Value::Array(json),
        human(&rows, tenant_id.as_ref()),
    ))
}

/// One run as listed: from the local store, or as the service's `GET /v1/runs` shows it.
#[derive(Debug, serde::Deserialize)]
struct Row {
    tenant_id: String,
    run_id: String,
    task_id: String,
    records: u64,
    termination: Option<String>,
    checkpointed: bool,
    opened_at: String,
    last_recorded_at: Option<String>,
}

impl From<&RunInfo> for Row {
    fn from(info: &RunInfo) -> Self {
        Self {
            tenant_id: info.meta.tenant_id.to_string(),
            run_id: info.meta.run_id.to_string(),
            task_id: info.meta.task_id.to_string(),
            records: info.records,
            termination: info.termination.map(|r| r.as_str().to_owned()),
            checkpointed: info.checkpointed,
            opened_at: info.meta.opened_at.to_string(),
            last_recorded_at: info.last_recorded_at.map(|t| t.to_string()),
        }
    }
}

impl Row {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "tenant_id": self.tenant_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "records": self.records,
            "terminated": self.termination.is_some(),
            "termination_reason": self.termination,
            "checkpointed": self.checkpointed,
            "opened_at": self.opened_at,
            "last_recorded_at": self.last_recorded_at,
        })
    }
}

/// Unterminated runs can only be closed with a signed checkpoint: when no signing key is
/// usable, say so on stderr (the listing itself keeps its shape).
fn warn_without_signing_key(ctx: &Context, runs: &[RunInfo]) {
    if !runs.iter().any(|info| !info.terminated()) {
        return;
    }
    let problem = match ctx.keyring() {
        Ok(keyring) => keyring
            .active_signing_key()
            .err()
            .map(|e| format!("error[{}]: {e}", cairn_core::ErrorCode::code(&e))),
        Err(failure) => Some(format!("error[{}]: {}", failure.code, failure.message)),
    };
    if let Some(problem) = problem {
        eprintln!(
            "warning: no usable signing key ({problem}): the unterminated runs below cannot be closed with a signed checkpoint (hooks leave them open at SessionEnd); run `cairn keys generate`"
        );
    }
}

fn human(runs: &[Row], tenant: Option<&TenantId>) -> String {
    if runs.is_empty() {
        return match tenant {
            Some(t) => format!("no matching runs for tenant `{t}`"),
            None => "no matching runs".to_owned(),
        };
    }
    let mut out = format!(
        "{:<12} {:<34} {:<24} {:>7}  {:<18} {}\n",
        "tenant", "run", "task", "records", "state", "last activity"
    );
    for row in runs {
        let _ = writeln!(
            out,
            "{:<12} {:<34} {:<24} {:>7}  {:<18} {}",
            row.tenant_id,
            row.run_id,
            row.task_id,
            row.records,
            row.termination.as_deref().unwrap_or("UNTERMINATED"),
            row.last_recorded_at.as_deref().unwrap_or(&row.opened_at)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_in_the_documented_forms_parse() {
        assert_eq!(parse_duration("--older-than", "90s").unwrap().as_secs(), 90);
        assert_eq!(
            parse_duration("--older-than", "15m").unwrap().as_secs(),
            900
        );
        assert_eq!(
            parse_duration("--older-than", "2h").unwrap().as_secs(),
            7200
        );
        assert_eq!(
            parse_duration("--older-than", "3d").unwrap().as_secs(),
            3 * 86_400
        );
        assert_eq!(
            parse_duration("--older-than", "1h30m").unwrap().as_secs(),
            5400
        );
        assert_eq!(
            parse_duration("--older-than", "bogus").unwrap_err().code,
            "invalid_input"
        );
    }
}
