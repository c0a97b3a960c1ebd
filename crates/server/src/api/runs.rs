//! Runs and their steps: open, admit + record, outcomes, observations, close, reconcile,
//! read and list.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use cairn_core::{LaneId, TaskId};
use cairn_runtime::ToolCall;
use cairn_runtime::approvals::{ApprovalState, Waited};
use cairn_runtime::ledger::record::{Label, TerminationReason, ToolRef};
use cairn_runtime::ledger::store::RunInfo;
use cairn_runtime::reconcile::ObservedOutcome;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};

use super::extract::roles::{AGENT, ANYONE, PEOPLE};
use super::extract::{Authenticated, JsonBody, PathParams, QueryParams, blocking, whole_number};
use crate::error::{ApiError, ErrorBody, ServerCode};
use crate::service::{ReportedOutcome, Service, StepRequest};

/// A run's lifecycle summary.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunView {
    /// The tenant.
    pub tenant_id: String,
    /// The run (an agent's runs are named `<token id>.<name>`).
    pub run_id: String,
    /// The task it executes.
    pub task_id: String,
    /// When it was opened (RFC 3339).
    pub opened_at: String,
    /// How many records it has.
    pub records: u64,
    /// When its latest record was written.
    pub last_recorded_at: Option<String>,
    /// Why it ended; absent while it is open.
    pub termination: Option<String>,
    /// Whether a signed checkpoint is stored for it.
    pub checkpointed: bool,
}

impl From<&RunInfo> for RunView {
    fn from(info: &RunInfo) -> Self {
        Self {
            tenant_id: info.meta.tenant_id.to_string(),
            run_id: info.meta.run_id.to_string(),
            task_id: info.meta.task_id.to_string(),
            opened_at: info.meta.opened_at.to_string(),
            records: info.records,
            last_recorded_at: info.last_recorded_at.map(|t| t.to_string()),
            termination: info.termination.map(|t| t.as_str().to_owned()),
            checkpointed: info.checkpointed,
        }
    }
}

/// Opening a run.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRunRequest {
    /// The run's name; it is stored as `<token id>.<name>`.
    #[schema(
        example = "session-1",
        pattern = "^[A-Za-z0-9._:@-]+$",
        min_length = 1,
        max_length = 115
    )]
    pub name: String,
    /// The task it executes (default `task-<run id>`).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9._:@-]+$", min_length = 1, max_length = 128)]
    pub task: Option<String>,
    /// How the run's authority is granted (default `platform_owned`). `human_approved`: every
    /// call the policies permit is held until a person approves exactly it (recorded in the
    /// run, for every replica that resumes it).
    #[serde(default)]
    pub authorization: Option<super::boundaries::Authorization>,
}

/// Opens a run (agent).
#[utoipa::path(post, path = "/v1/runs", tag = "runs", request_body = OpenRunRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The run, opened", body = RunView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed; nothing was opened", body = ErrorBody),
    ))]
pub(super) async fn open_run(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    JsonBody(body): JsonBody<OpenRunRequest>,
) -> Result<(StatusCode, Json<RunView>), ApiError> {
    let caller = caller.with_role(AGENT, "open runs")?;
    let run = Service::agent_run_id(&caller, &body.name)?;
    let task = body
        .task
        .map(|t| TaskId::new(t).map_err(|e| ApiError::from(e).at("body.task")))
        .transpose()?;
    let human_approved = matches!(
        body.authorization,
        Some(super::boundaries::Authorization::HumanApproved)
    );
    let info = blocking(move || service.open_run(&caller, run, task, human_approved)).await?;
    Ok((StatusCode::CREATED, Json(RunView::from(&info))))
}

/// Filters of the run list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only runs without a terminal record.
    #[serde(default)]
    pub unterminated: Option<bool>,
    /// Only runs idle for longer than this (`90s`, `15m`, `2h`, `3d`, `1d12h`).
    #[serde(default)]
    #[param(pattern = "^(?=.)([0-9]{1,6}d)?([0-9]{1,6}h)?([0-9]{1,6}m)?([0-9]{1,6}s)?$")]
    pub older_than: Option<String>,
}

/// Lists the runs the token may see, oldest first: its tenant's (investigator, admin) or the
/// ones it opened (agent).
#[utoipa::path(get, path = "/v1/runs", tag = "runs", params(ListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The runs", body = Vec<RunView>),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn list_runs(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<Vec<RunView>>, ApiError> {
    let caller = caller.with_role(ANYONE, "list runs")?;
    let now = service.config.clock.now();
    let idle_before = query
        .older_than
        .as_deref()
        .map(|text| {
            cairn_runtime::duration::parse_duration("older_than", text)
                .map(|d| now.saturating_add(-d))
                .map_err(|e| ApiError::from(e).at("query.older_than"))
        })
        .transpose()?;
    let unterminated = query.unterminated.unwrap_or(false);
    let runs = blocking(move || service.list_runs(&caller, unterminated, idle_before)).await?;
    Ok(Json(runs.iter().map(RunView::from).collect()))
}

/// One run's lifecycle summary.
#[utoipa::path(get, path = "/v1/runs/{run}", tag = "runs",
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run", body = RunView),
        (status = "4XX", description = "Refused, or no such run for this token", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn get_run(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
) -> Result<Json<RunView>, ApiError> {
    let (caller, run) = caller.on_run(ANYONE, "read runs", &path)?;
    let info = blocking(move || service.run_info(&caller, &run)).await?;
    Ok(Json(RunView::from(&info)))
}

/// A tool call to decide and record.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepRequestBody {
    /// The tool's name.
    #[schema(
        example = "Bash",
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 64
    )]
    pub tool: String,
    /// The tool's version (default `1`).
    #[serde(default)]
    #[schema(
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 64
    )]
    pub version: Option<String>,
    /// The arguments exactly as the agent submitted them: their bytes are what the record
    /// digests and what the policy judges.
    #[schema(value_type = Object)]
    pub arguments: Box<RawValue>,
    /// The lane the call is made in (default: the active one, when lanes are configured).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9._:@-]+$", min_length = 1, max_length = 128)]
    pub lane: Option<String>,
    /// What the model was shown since the last step, recorded before the call.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub observation: Option<serde_json::Value>,
    /// `sync` commits the record on its own before answering, whatever the service's
    /// durability (in the default `group` durability the answer waits for its commit anyway).
    #[serde(default)]
    pub durability: Option<DurabilityAsk>,
    /// The host's id of the call (`tool_use_id`, `call_id`), which a held call's approval
    /// request records.
    #[serde(default)]
    #[schema(
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 256
    )]
    pub call_id: Option<String>,
    /// An approval the call cites (`apr-…`): it must be a request of this run.
    #[serde(default)]
    #[schema(pattern = "^apr-[0-9a-f]{24}$")]
    pub approval_id: Option<String>,
    /// For a call a policy holds for a person: wait up to this many seconds for the
    /// decision (at most the service's `--approval-hold-max`) and answer with it — the held
    /// call is then admitted without a retry. Default 0: answer at once.
    #[serde(default)]
    #[schema(value_type = Option<u32>, maximum = 600)]
    pub hold_seconds: Option<serde_json::Number>,
    /// For a call through the MCP gateway: the upstream server and the tool's own name
    /// there, which the policies read as `context.mcp`.
    #[serde(default)]
    pub mcp: Option<McpTargetBody>,
}

/// The upstream server and tool of a call through the MCP gateway.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpTargetBody {
    /// The upstream server's name in the gateway's configuration.
    #[schema(
        pattern = "^[A-Za-z0-9][A-Za-z0-9_-]*$",
        min_length = 1,
        max_length = 64
    )]
    pub server: String,
    /// The tool's name on that server.
    #[schema(
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 256
    )]
    pub tool: String,
    /// The gateway's configuration says the tool only reads (`read_only_tools`): it keeps
    /// running while a continuity restriction refuses consequential calls. Default `false`.
    #[serde(default)]
    pub read_only: bool,
}

/// The request a held call waits for.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldView {
    /// The request's id: a person decides it (`POST /v1/approvals/{id}/approve`).
    #[schema(example = "apr-0123456789abcdef01234567")]
    pub id: String,
    /// Until when a person may decide it (RFC 3339).
    pub expires_at: String,
    /// Whether this call raised it (else an identical earlier call did).
    pub new: bool,
}

/// A durability a request may ask for.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DurabilityAsk {
    /// Committed on its own before the answer.
    Sync,
    /// As the service's durability says.
    Batch,
}

/// The decision on a step, and where its record landed.
#[derive(Debug, Serialize, ToSchema)]
pub struct StepResponse {
    /// `allow` or `deny`.
    #[schema(example = "deny")]
    pub decision: String,
    /// The intent record's step index (report the outcome of an allowed call under it).
    pub step: u64,
    /// The intent record's digest.
    #[schema(example = "sha256:…")]
    pub digest: String,
    /// The determining rules.
    pub rule_ids: Vec<String>,
    /// The version of the policy set that decided.
    pub policy_set_version: Option<String>,
    /// Why a call was denied (a stable code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What exactly was wrong, when the reason alone does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a denial, what the model is told: the rule, why, and what to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For a held call, the request a person decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<HeldView>,
}

fn label(text: &str, field: &str) -> Result<Label, ApiError> {
    Label::new(text).map_err(|e| ApiError::from(e).at(field))
}

/// Decides a tool call and records its intent before it runs (agent, in its own runs). A
/// denied call must not run; an error answer means the call was not admitted.
#[utoipa::path(post, path = "/v1/runs/{run}/steps", tag = "runs", request_body = StepRequestBody,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Decided and recorded", body = StepResponse),
        (status = "4XX", description = "Refused: the call was not admitted", body = ErrorBody),
        (status = "5XX", description = "The service failed: the call was not admitted", body = ErrorBody),
    ))]
pub(super) async fn admit_step(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<StepRequestBody>,
) -> Result<Json<StepResponse>, ApiError> {
    let (caller, run) = caller.on_run(AGENT, "admit calls", &path)?;
    if !body.arguments.get().trim_start().starts_with('{') {
        return Err(ApiError::new(
            ServerCode::BODY_INVALID,
            "`arguments` must be a JSON object (the call's arguments by name)",
        )
        .at("body.arguments"));
    }
    let tool = ToolRef {
        name: label(&body.tool, "body.tool")?,
        version: label(body.version.as_deref().unwrap_or("1"), "body.version")?,
    };
    let lane = body
        .lane
        .as_deref()
        .map(|l| LaneId::new(l).map_err(|e| ApiError::from(e).at("body.lane")))
        .transpose()?;
    let sync = matches!(body.durability, Some(DurabilityAsk::Sync));
    // Read before anything is recorded: a bad request records nothing.
    let hold = body
        .hold_seconds
        .as_ref()
        .map_or(Ok(0), |n| whole_number(n, "body.hold_seconds"))?;
    let hold = Duration::from_secs(hold).min(service.max_approval_hold());
    let body = Arc::new(body);
    // Kept for admitting the call again after a hold, and only then: the common path copies
    // nothing.
    let retry = (!hold.is_zero()).then(|| (tool.clone(), lane.clone()));
    let decision =
        admit_now_or_blocking(&service, &caller, &run, &body, (tool, lane), sync).await?;
    if let Some(held) = decision.approval.as_ref().filter(|held| held.new) {
        service.notify_approval(&caller.tenant, &run, &held.id);
    }
    // Held for a person, with time to wait: the decision is awaited and the call admitted
    // again — the approved call is the call that runs, without a retry.
    let decision = match (decision.approval.clone(), retry) {
        (Some(held), Some((tool, lane))) => {
            let waiting = Arc::clone(&service);
            let (tenant, waited_run) = (caller.tenant.clone(), run.clone());
            let waited =
                blocking(move || waiting.wait_for_approval(&tenant, &waited_run, &held.id, hold))
                    .await?;
            if waited == Waited::Decided(ApprovalState::Active) {
                admit_now_or_blocking(&service, &caller, &run, &body, (tool, lane), sync).await?
            } else {
                let mut decision = decision;
                let what = match waited {
                    Waited::TimedOut => "nobody decided yet (still pending)".to_owned(),
                    Waited::RunClosed => "the run was closed meanwhile".to_owned(),
                    Waited::Decided(state) => format!("the request is {} now", state.as_str()),
                };
                decision.detail = Some(format!(
                    "{} Cairn held the call {} s for a person's decision: {what}.",
                    decision.detail.unwrap_or_default(),
                    hold.as_secs()
                ));
                decision
            }
        }
        (_, _) => decision,
    };
    Ok(Json(StepResponse {
        decision: if decision.allowed { "allow" } else { "deny" }.to_owned(),
        step: decision.step,
        digest: decision.digest.to_string(),
        rule_ids: decision.rule_ids,
        policy_set_version: decision.policy_set_version.map(|d| d.to_string()),
        reason: decision.reason.map(str::to_owned),
        detail: decision.detail,
        message: decision.message,
        approval: decision.approval.map(|held| HeldView {
            id: held.id,
            expires_at: held.expires_at.to_string(),
            new: held.new,
        }),
    }))
}

/// Decides and records the step `body` asks for, and waits for its record's commit: at once
/// when the run's batch allows it (a batched step of a run this replica holds touches no
/// store: deciding and sealing it is a few microseconds of computation, done here rather
/// than handed to a blocking thread, whose two thread switches cost more than the work),
/// else on the blocking pool.
async fn admit_now_or_blocking(
    service: &Arc<Service>,
    caller: &crate::tokens::Caller,
    run: &cairn_core::RunId,
    body: &Arc<StepRequestBody>,
    (tool, lane): (ToolRef, Option<LaneId>),
    sync: bool,
) -> Result<crate::service::StepDecision, ApiError> {
    let request = step_request(body, tool, lane, sync);
    let decision = match service.try_admit_now(caller, run, &request) {
        Some(decided) => decided?,
        None => {
            let StepRequest {
                call: ToolCall { tool, lane, .. },
                ..
            } = request;
            let (admitting, caller, run, body) = (
                Arc::clone(service),
                caller.clone(),
                run.clone(),
                Arc::clone(body),
            );
            blocking(move || admitting.admit(&caller, &run, &step_request(&body, tool, lane, sync)))
                .await?
        }
    };
    // In group durability the answer waits for the round that commits the record.
    service.durable(decision.commit.as_ref()).await?;
    Ok(decision)
}

/// The step `body` asks for, with its tool and lane read.
fn step_request(
    body: &StepRequestBody,
    tool: ToolRef,
    lane: Option<LaneId>,
    sync: bool,
) -> StepRequest<'_> {
    StepRequest {
        call: ToolCall {
            tool,
            args: body.arguments.get().as_bytes(),
            lane,
        },
        observation: body.observation.as_ref(),
        sync,
        context: cairn_runtime::CallContext {
            agent: None,
            call_id: body.call_id.clone(),
            approval: body.approval_id.clone(),
            mcp: body.mcp.as_ref().map(|target| cairn_runtime::UpstreamTool {
                server: target.server.clone(),
                tool: target.tool.clone(),
            }),
        },
        continuity: body.mcp.as_ref().map(|target| {
            let read_only = if target.read_only {
                vec![body.tool.clone()]
            } else {
                Vec::new()
            };
            cairn_runtime::restrictions::ToolClasses::new(read_only, Vec::new())
        }),
    }
}

/// How an admitted call ended.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRequest {
    /// `applied`: it ran and returned `result`; `failed`: it ran and failed with `error`;
    /// `not_executed`: it certainly did not take effect; `unknown`: it may have taken effect
    /// (timeout, crash, lost connection) — the capability is then refused until a person
    /// reconciles it.
    pub status: OutcomeStatus,
    /// What it returned (recorded by digest; what the model is shown next). Default `null`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
    /// The error, for every status but `applied`.
    #[serde(default)]
    pub error: Option<String>,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// It ran and returned a result.
    Applied,
    /// It ran and failed.
    Failed,
    /// It certainly did not take effect.
    NotExecuted,
    /// It may have taken effect.
    Unknown,
}

/// What recording an outcome gave.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutcomeResponse {
    /// The digest of the observation recorded for the outcome.
    pub observation_digest: Option<String>,
    /// For an unknown outcome: the key the capability is blocked under until reconciled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// Optional `?durability=sync`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DurabilityQuery {
    /// `sync` commits before answering.
    #[serde(default)]
    pub durability: Option<DurabilityAsk>,
}

/// Reports how an admitted call ended (agent, in its own runs).
#[utoipa::path(post, path = "/v1/runs/{run}/steps/{step}/outcome", tag = "runs",
    request_body = OutcomeRequest,
    params(("run" = String, Path, description = "The run id"),
           ("step" = u64, Path, description = "The step the call was admitted as"),
           DurabilityQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = OutcomeResponse),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn report_outcome(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    QueryParams(query): QueryParams<DurabilityQuery>,
    JsonBody(body): JsonBody<OutcomeRequest>,
) -> Result<Json<OutcomeResponse>, ApiError> {
    let (caller, run) = caller.on_run(AGENT, "report outcomes", &path)?;
    let step = path.step("step")?;
    let error = body.error.unwrap_or_default();
    let outcome = match body.status {
        OutcomeStatus::Applied => {
            ReportedOutcome::Applied(body.result.unwrap_or(serde_json::Value::Null))
        }
        OutcomeStatus::Failed => ReportedOutcome::Failed(error),
        OutcomeStatus::NotExecuted => ReportedOutcome::NotExecuted(error),
        OutcomeStatus::Unknown => ReportedOutcome::Unknown(error),
    };
    let sync = matches!(query.durability, Some(DurabilityAsk::Sync));
    let recording = Arc::clone(&service);
    let recorded = blocking(move || recording.outcome(&caller, &run, step, outcome, sync)).await?;
    service.durable(recorded.commit.as_ref()).await?;
    Ok(Json(OutcomeResponse {
        observation_digest: recorded.observation_digest.map(|d| d.to_string()),
        idempotency_key: recorded.idempotency_key,
    }))
}

/// Something the model was shown that is not a tool result.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationRequest {
    /// What was shown (recorded by digest).
    #[schema(value_type = Object)]
    pub observation: serde_json::Value,
}

/// The recorded observation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ObservationResponse {
    /// Its digest, carried by the next step's record.
    pub observation_digest: String,
}

/// Records what the model was shown (agent, in its own runs).
#[utoipa::path(post, path = "/v1/runs/{run}/observations", tag = "runs",
    request_body = ObservationRequest,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = ObservationResponse),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn observe(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<ObservationRequest>,
) -> Result<Json<ObservationResponse>, ApiError> {
    let (caller, run) = caller.on_run(AGENT, "record observations", &path)?;
    let digest = blocking(move || service.observe(&caller, &run, &body.observation)).await?;
    Ok(Json(ObservationResponse {
        observation_digest: digest.to_string(),
    }))
}

/// Closing a run.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminateRequest {
    /// Why it ends.
    pub reason: EndReason,
    /// A short label saying more.
    #[serde(default)]
    #[schema(
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 64
    )]
    pub detail: Option<String>,
}

/// Why a run ends (I-2).
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The task finished.
    Completed,
    /// A budget ran out.
    BudgetExhausted,
    /// The gate refused what the run needed to continue.
    PolicyDenied,
    /// The agent failed.
    Error,
    /// The run exceeded its time limit.
    Timeout,
    /// A person or system cancelled it.
    Cancelled,
}

impl From<EndReason> for TerminationReason {
    fn from(reason: EndReason) -> Self {
        match reason {
            EndReason::Completed => Self::Completed,
            EndReason::BudgetExhausted => Self::BudgetExhausted,
            EndReason::PolicyDenied => Self::PolicyDenied,
            EndReason::Error => Self::Error,
            EndReason::Timeout => Self::Timeout,
            EndReason::Cancelled => Self::Cancelled,
        }
    }
}

/// Where a record landed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceiptView {
    /// Its step index.
    pub step: u64,
    /// Its digest.
    pub digest: String,
}

impl From<cairn_runtime::Receipt> for ReceiptView {
    fn from(receipt: cairn_runtime::Receipt) -> Self {
        Self {
            step: receipt.step_index,
            digest: receipt.digest.to_string(),
        }
    }
}

/// A closed run.
#[derive(Debug, Serialize, ToSchema)]
pub struct TerminateResponse {
    /// The terminal record.
    pub terminal: ReceiptView,
    /// The signed checkpoint (a C2SP signed note) over every record of the run.
    pub checkpoint: String,
}

/// Closes a run with its terminal record and the service's signed checkpoint (agent, in its
/// own runs).
#[utoipa::path(post, path = "/v1/runs/{run}/terminate", tag = "runs",
    request_body = TerminateRequest,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Closed", body = TerminateResponse),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed; the run stays open", body = ErrorBody),
    ))]
pub(super) async fn terminate(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<TerminateRequest>,
) -> Result<Json<TerminateResponse>, ApiError> {
    let (caller, run) = caller.on_run(AGENT, "close runs", &path)?;
    let detail = body
        .detail
        .as_deref()
        .map(|d| label(d, "body.detail"))
        .transpose()?;
    let closed =
        blocking(move || service.terminate(&caller, &run, body.reason.into(), detail)).await?;
    Ok(Json(TerminateResponse {
        terminal: ReceiptView {
            step: closed.terminal.step_index,
            digest: closed.terminal.digest.to_string(),
        },
        checkpoint: closed.checkpoint.note().to_owned(),
    }))
}

/// The observed outcome of an unknown side effect.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileRequest {
    /// The idempotency key the capability is blocked under (`<run id>:<step>`).
    pub key: String,
    /// What was observed in the external system.
    pub outcome: ObservedOutcomeView,
    /// Where the observation can be checked (a ticket id, a log line).
    #[schema(
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
        min_length = 1,
        max_length = 64
    )]
    pub evidence: String,
}

/// What a person observed of an unknown side effect.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObservedOutcomeView {
    /// The effect happened.
    Applied,
    /// The effect did not happen.
    NotExecuted,
}

/// Records the observed outcome of an unknown side effect and unblocks its capability
/// (investigator or admin: a person who looked at the external system, never the agent).
#[utoipa::path(post, path = "/v1/runs/{run}/reconcile", tag = "runs",
    request_body = ReconcileRequest,
    params(("run" = String, Path, description = "The run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Recorded", body = ReceiptView),
        (status = "4XX", description = "Refused", body = ErrorBody),
        (status = "5XX", description = "The service failed", body = ErrorBody),
    ))]
pub(super) async fn reconcile(
    State(service): State<Arc<Service>>,
    caller: Authenticated,
    path: PathParams,
    JsonBody(body): JsonBody<ReconcileRequest>,
) -> Result<Json<ReceiptView>, ApiError> {
    let (caller, run) = caller.on_run(PEOPLE, "reconcile side effects", &path)?;
    let outcome = match body.outcome {
        ObservedOutcomeView::Applied => ObservedOutcome::Applied,
        ObservedOutcomeView::NotExecuted => ObservedOutcome::NotExecuted,
    };
    label(&body.evidence, "body.evidence")?;
    let receipt =
        blocking(move || service.reconcile(&caller, &run, &body.key, outcome, &body.evidence))
            .await?;
    Ok(Json(ReceiptView {
        step: receipt.step_index,
        digest: receipt.digest.to_string(),
    }))
}
