//! `cairn cost`: rollups of calls, denials and argument bytes by task, tool, tenant or
//! termination reason (I-5), straight from the structural records; `--tenant` keeps one
//! tenant's runs.

use std::fmt::Write as _;

use cairn_ledger::store::{CostDimension, CostRow};

use crate::args::{CostArgs, CostBy};
use crate::context::{Context, parse_id};
use crate::failure::Failure;
use crate::output::Outcome;

/// Runs `cairn cost`.
pub fn run(ctx: &Context, args: &CostArgs) -> Result<Outcome, Failure> {
    let by = match args.by {
        CostBy::Task => CostDimension::Task,
        CostBy::Tool => CostDimension::Tool,
        CostBy::Tenant => CostDimension::Tenant,
        CostBy::Termination => CostDimension::Termination,
    };
    let tenant = args
        .tenant
        .as_deref()
        .map(|t| parse_id::<cairn_core::ids::Tenant>("tenant", t))
        .transpose()?;
    let rows: Vec<CostRow> = match crate::remote::Remote::from_env(ctx, "an investigator's")? {
        Some(service) => {
            #[derive(serde::Deserialize)]
            struct View {
                tenant: String,
                rows: Vec<CostRow>,
            }
            let view: View = service.get(&format!("/v1/cost?by={}", by.as_str()))?;
            if let Some(asked) = tenant.as_ref().filter(|t| t.as_str() != view.tenant) {
                return Err(Failure::new(
                    crate::failure::CliCode::USAGE,
                    format!(
                        "`--tenant {asked}`: the service answers this token for tenant `{}` only",
                        view.tenant
                    ),
                ));
            }
            view.rows
        }
        None => ctx.open_existing_store()?.cost(by, tenant.as_ref())?,
    };
    let width = rows
        .iter()
        .map(|r| r.key.len())
        .max()
        .unwrap_or(0)
        .max(by.as_str().len());
    let mut human = format!(
        "{:<width$}  {:>6}  {:>7}  {:>6}  {:>10}\n",
        by.as_str(),
        "runs",
        "calls",
        "denied",
        "arg bytes"
    );
    for row in &rows {
        let _ = writeln!(
            human,
            "{:<width$}  {:>6}  {:>7}  {:>6}  {:>10}",
            row.key, row.runs, row.calls, row.denied, row.arg_bytes
        );
    }
    Ok(Outcome::ok(
        serde_json::json!({ "by": by.as_str(), "tenant": tenant, "rows": rows }),
        human,
    ))
}
