//! Rollups of what a tenant's agents did — calls, denials, argument bytes — by task, tool,
//! tenant or termination reason (I-5), as `cairn cost` gives them for a whole store.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use cairn_runtime::ledger::store::{CostDimension, CostRow};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::roles::PEOPLE;
use super::extract::{Authenticated, QueryParams, blocking};
use crate::error::{ApiError, ErrorBody};
use crate::service::Service;

/// The dimension a rollup groups by.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CostBy {
    /// By the runs' task id.
    #[default]
    Task,
    /// By tool name (steps only).
    Tool,
    /// By tenant: the caller's own, one row.
    Tenant,
    /// By the runs' termination reason (`unterminated` for an open run).
    Termination,
}

impl From<CostBy> for CostDimension {
    fn from(by: CostBy) -> Self {
        match by {
            CostBy::Task => Self::Task,
            CostBy::Tool => Self::Tool,
            CostBy::Tenant => Self::Tenant,
            CostBy::Termination => Self::Termination,
        }
    }
}

/// What to roll up.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CostQuery {
    /// The dimension (`task` by default).
    #[serde(default)]
    #[param(inline)]
    pub by: Option<CostBy>,
}

/// One row of a rollup.
#[derive(Debug, Serialize, ToSchema)]
pub struct CostRowView {
    /// The dimension's value: a task id, a tool name, the tenant or a termination reason.
    pub key: String,
    /// Distinct runs contributing to the row.
    pub runs: u64,
    /// Tool calls recorded, admitted and denied.
    pub calls: u64,
    /// Of which denied.
    pub denied: u64,
    /// Total bytes of those calls' arguments.
    pub arg_bytes: u64,
}

impl From<CostRow> for CostRowView {
    fn from(row: CostRow) -> Self {
        Self {
            key: row.key,
            runs: row.runs,
            calls: row.calls,
            denied: row.denied,
            arg_bytes: row.arg_bytes,
        }
    }
}

/// A rollup of the caller's tenant's runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct CostView {
    /// The dimension.
    #[schema(example = "tool")]
    pub by: String,
    /// The tenant whose runs are counted (the token's).
    pub tenant: String,
    /// One row per value of the dimension, in the values' byte order.
    pub rows: Vec<CostRowView>,
}

/// Calls, denials and argument bytes of every run of the token's tenant, grouped by task,
/// tool, tenant or termination reason (investigator, admin).
#[utoipa::path(get, path = "/v1/cost", tag = "evidence", params(CostQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The rollup", body = CostView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn cost_rollup(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    QueryParams(query): QueryParams<CostQuery>,
) -> Result<Json<CostView>, ApiError> {
    let caller = caller.with_role(PEOPLE, "read cost rollups")?;
    let by = CostDimension::from(query.by.unwrap_or_default());
    let tenant = caller.tenant.to_string();
    let rows = blocking(move || service.cost(&caller, by)).await?;
    Ok(Json(CostView {
        by: by.as_str().to_owned(),
        tenant,
        rows: rows.into_iter().map(CostRowView::from).collect(),
    }))
}
