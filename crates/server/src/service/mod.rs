//! The service's state and its operations, each synchronous (the handlers run them on tokio's
//! blocking pool, or at once when they cannot wait): the live runs with their executors, the
//! permits waiting for an outcome, and the group commit of their records. The evidence an
//! investigator reads is in `evidence`, the tenant's tokens in `tokens`, its task decisions in
//! `decisions`, its policy set in `policies`; a run's lanes and their events are in `lanes`.

mod approvals;
mod commit;
mod decisions;
mod evidence;
mod lanes;
mod policies;
mod tokens;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cairn_core::{Clock, Digest, RunId, TaskId, TenantId};
use cairn_runtime::ledger::keys::{SigningKey, TrustedKeys};
use cairn_runtime::ledger::record::TerminationReason;
use cairn_runtime::ledger::store::{RunFilter, RunInfo};
use cairn_runtime::ledger::{Store, StoreError};
use cairn_runtime::{
    Admitted, CallError, Durability, EffectOutcome, Executor, Gate, IfMissing, Permit,
    RecorderOptions, Replay, RunName, Runs, RuntimeError, ToolCall,
};

use crate::error::{ApiError, ServerCode};
use crate::tokens::{Caller, Role, TokenBook};
pub use commit::{Commit, Ticket};
use commit::{GroupCommit, RunKey};
pub use decisions::{DecisionHome, SessionDecisions};
pub use lanes::{LaneState, LanesFile};
pub use policies::{PolicyAdmin, PolicyFile, PolicySetView};

/// Everything `cairn serve` holds: the authority the agents reach only through it.
pub struct ServiceConfig {
    /// The store every run is recorded in.
    pub store: Arc<dyn Store>,
    /// The policy gate every call is decided by, unless `policies` gives each tenant its own.
    pub gate: Arc<dyn Gate>,
    /// The key closing runs with a signed checkpoint.
    pub signing_key: SigningKey,
    /// The keys a run's checkpoint is verified against.
    pub trusted: TrustedKeys,
    /// The tokens accepted.
    pub tokens: TokenBook,
    /// When records become durable: [`Commit::Group`] (durable before the answer) unless the
    /// operator says otherwise.
    pub durability: Commit,
    /// How long raw arguments and observations are kept.
    pub content_retention: Option<jiff::SignedDuration>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// What answers the hosts' hook events (`/v1/hooks/{host}`), if anything.
    pub hooks: Option<Arc<dyn HookAnswerer>>,
    /// Where spans go (nowhere by default).
    pub traces: crate::traces::Traces,
    /// Where the tenants' task decisions are kept (`/v1/decisions`), if anywhere.
    pub decisions: Option<DecisionHome>,
    /// The lanes every run is put in (`lanes.json`), if any: read when a run is opened or
    /// resumed; a running lane changes only by a recorded ruling.
    pub lanes: Option<LanesFile>,
    /// Each tenant's policy set (`/v1/policies`), if the service manages them; else `gate`
    /// decides every tenant's calls.
    pub policies: Option<Arc<dyn PolicyAdmin>>,
    /// How held calls wait for people and where new requests are pushed.
    pub approvals: ApprovalSettings,
}

/// Answers a host's hook event for an agent, as `cairn hook` would locally. The service hands
/// it the bytes and the caller; it knows the hosts' JSON, the service does not.
pub trait HookAnswerer: Send + Sync {
    /// The answer to the event `input` of `host` sent by `caller` (an agent): the JSON the
    /// client prints and exits with.
    ///
    /// # Errors
    /// `hook_host_unknown` for a host it does not answer.
    fn answer(
        &self,
        caller: &Caller,
        host: &str,
        input: &[u8],
    ) -> Result<serde_json::Value, ApiError>;
}

/// The most records one run holds waiting for the group commit before it commits them itself.
const MAX_WAITING_RECORDS: usize = 4_096;

/// A run this replica writes: its executor and the calls admitted but not yet reported.
struct LiveRun {
    /// `None` once the run is closed (a terminate consumed it).
    executor: Option<Executor>,
    permits: HashMap<u64, Waiting>,
    /// When a request last used it.
    used: Instant,
}

/// An admitted call waiting for its outcome: its permit, and its span when traced.
struct Waiting {
    permit: Permit,
    span: Option<crate::traces::ToolSpan>,
}

/// A live run and who may commit its records.
struct Live {
    /// Held by whoever may commit the run's records: the group commit while its copy of them
    /// is made durable, and every operation but an admission decided at once (which never
    /// commits). The group commit holds no run lock while it syncs, so requests go on.
    committing: Mutex<()>,
    run: Mutex<LiveRun>,
}

impl Live {
    fn new(executor: Executor) -> Arc<Self> {
        Arc::new(Self {
            committing: Mutex::new(()),
            run: Mutex::new(LiveRun {
                executor: Some(executor),
                permits: HashMap::new(),
                used: Instant::now(),
            }),
        })
    }

    /// The run, for an operation that may commit: after any group commit of it in flight.
    fn lock_to_commit(&self) -> (MutexGuard<'_, ()>, MutexGuard<'_, LiveRun>) {
        let committing = self
            .committing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let run = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        (committing, run)
    }
}

/// The running service.
pub struct Service {
    pub(crate) config: ServiceConfig,
    metrics: crate::metrics::Metrics,
    live: Mutex<HashMap<RunKey, Arc<Live>>>,
    group: GroupCommit,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("durability", &self.config.durability)
            .finish_non_exhaustive()
    }
}

pub use approvals::{ApprovalSettings, Webhook};

/// `record_not_found` for step `step` of the run `info` describes.
fn no_step(info: &RunInfo, step: u64) -> ApiError {
    ApiError::new(
        ServerCode::RECORD_NOT_FOUND,
        format!(
            "run `{}` has no step {step} (it has {} records)",
            info.meta.run_id, info.records
        ),
    )
    .at("path.step")
}

/// What the admission of a step answered.
#[derive(Debug, Clone)]
pub struct StepDecision {
    /// The step index of its intent record.
    pub step: u64,
    /// The intent record's digest.
    pub digest: Digest,
    /// Allowed or not.
    pub allowed: bool,
    /// The determining rules.
    pub rule_ids: Vec<String>,
    /// For a denial, the stable reason.
    pub reason: Option<&'static str>,
    /// For a denial, what exactly was wrong.
    pub detail: Option<String>,
    /// For a denial, what the model is told: the rule, why, and what to do next (the words
    /// every edge uses, `Denial::told`).
    pub message: Option<String>,
    /// The policy-set version that decided.
    pub policy_set_version: Option<Digest>,
    /// For a held call, the request a person decides.
    pub approval: Option<cairn_runtime::WaitingRequest>,
    /// What the answer waits for: the group commit of its record ([`Service::durable`]).
    pub commit: Option<Ticket>,
}

/// What a step asks.
#[derive(Debug)]
pub struct StepRequest<'a> {
    /// The call.
    pub call: ToolCall<'a>,
    /// What the model was shown since the last step, recorded before the call.
    pub observation: Option<&'a serde_json::Value>,
    /// Commit before answering, whatever the service's durability.
    pub sync: bool,
    /// The host's call id and an approval the call cites.
    pub context: cairn_runtime::CallContext,
    /// For a call through the MCP gateway: which tools only read. The run's continuity
    /// restrictions (an unknown outcome awaiting reconciliation, the tenant's decisions
    /// conflicting or dropped since their latest snapshot) then refuse the others, as the
    /// gateway does on a local store ([`cairn_runtime::restrictions`]).
    pub continuity: Option<cairn_runtime::restrictions::ToolClasses>,
}

/// How an admitted call ended, as the client reports it.
#[derive(Debug, Clone)]
pub enum ReportedOutcome {
    /// It ran and returned this.
    Applied(serde_json::Value),
    /// It ran and failed with this error.
    Failed(String),
    /// It certainly did not take effect.
    NotExecuted(String),
    /// It may have taken effect (timeout, crash, lost connection).
    Unknown(String),
}

/// What recording an outcome gave.
#[derive(Debug, Clone)]
pub struct OutcomeRecorded {
    /// The digest of the observation recorded for it.
    pub observation_digest: Option<Digest>,
    /// The idempotency key the capability is now blocked under, for an unknown outcome.
    pub idempotency_key: Option<String>,
    /// What the answer waits for: the group commit of its records ([`Service::durable`]).
    pub commit: Option<Ticket>,
}

impl Service {
    /// A service over `config`.
    #[must_use]
    pub fn new(config: ServiceConfig) -> Self {
        Self {
            config,
            metrics: crate::metrics::Metrics::default(),
            live: Mutex::default(),
            group: GroupCommit::default(),
        }
    }

    /// When records become durable.
    #[must_use]
    pub const fn durability(&self) -> Commit {
        self.config.durability
    }

    /// Waits until the records `ticket` names are committed (the group commit's round that
    /// holds them is durable); at once without a ticket.
    ///
    /// # Errors
    /// `record_not_committed` when no round commits them in time: the call is not admitted.
    pub async fn durable(&self, ticket: Option<&Ticket>) -> Result<(), ApiError> {
        match ticket {
            Some(ticket) => self.group.durable(ticket).await,
            None => Ok(()),
        }
    }

    /// The ticket of what `executor`'s run has waiting now, when the service answers only
    /// once it is committed (group durability) and something waits. Taken under the run's
    /// lock.
    fn ticket(&self, executor: &Executor) -> Option<Ticket> {
        let recorder = executor.recorder_ref();
        (self.config.durability == Commit::Group && recorder.waiting_records() > 0).then(|| {
            self.group
                .ticket((recorder.tenant_id().clone(), recorder.run_id().clone()))
        })
    }

    /// What the service counts.
    #[must_use]
    pub const fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// The largest body accepted.
    #[must_use]
    pub const fn max_body_bytes(&self) -> usize {
        self.config.max_body_bytes
    }

    /// The caller a bearer token authenticates.
    ///
    /// # Errors
    /// `token_invalid`.
    pub fn authenticate(&self, bearer: &str) -> Result<Caller, ApiError> {
        self.config.tokens.authenticate(bearer).ok_or_else(|| {
            ApiError::new(
                ServerCode::TOKEN_INVALID,
                "the bearer token is malformed, unknown or revoked",
            )
            .at("header.authorization")
        })
    }

    /// The runs of the service's store, written with its durability.
    fn runs(&self) -> Runs {
        Runs::new(
            Arc::clone(&self.config.store),
            Arc::clone(&self.config.clock),
            self.options(),
        )
    }

    fn options(&self) -> RecorderOptions {
        // Batched records are committed by the service's group commit (all runs together,
        // see `flush_waiting`), never by the request that happens to cross the window; a run
        // commits on its own only when this many records wait.
        let durability = match self.config.durability {
            Commit::Sync => Durability::Sync,
            Commit::Group | Commit::Async { .. } => Durability::Batch {
                max_records: MAX_WAITING_RECORDS,
                max_delay: std::time::Duration::from_secs(3_600),
            },
        };
        RecorderOptions {
            durability,
            content_retention: self.config.content_retention,
        }
    }

    /// The stored id of the run `name` an agent names: its token's id, a dot, the name, so
    /// that whose a run is can be read off its id, by this service and by an investigator.
    ///
    /// # Errors
    /// `invalid_id` when the result is not a run id.
    pub fn agent_run_id(caller: &Caller, name: &str) -> Result<RunId, ApiError> {
        let invalid = |e: cairn_core::CoreError| ApiError::from(e).at("body.name");
        RunId::new(name).map_err(invalid)?;
        RunId::new(format!("{}.{name}", caller.token_id)).map_err(invalid)
    }

    /// Who `run` acts for: the agent whose token opened it — `agent:<token id>`, read off the
    /// run's id `<token id>.<name>` — whoever resumes it; `caller`'s own principal for a run
    /// not named so (one copied in from another store).
    fn run_principal(caller: &Caller, run: &RunId) -> String {
        match run.as_str().split_once('.') {
            Some((token, _)) if !token.is_empty() => {
                format!("{}:{token}", Role::Agent.as_str())
            }
            _ => caller.principal(),
        }
    }

    /// Whether `caller` may see `run` at all: its tenant's runs for an investigator or an
    /// admin, the runs it opened for an agent.
    fn may_see(caller: &Caller, run: &RunId) -> bool {
        match caller.role {
            Role::Agent => run
                .as_str()
                .strip_prefix(caller.token_id.as_str())
                .is_some_and(|rest| rest.starts_with('.')),
            Role::Investigator | Role::Approver | Role::Admin => true,
        }
    }

    /// Parses `text` as a run `caller` may see; anything else is `run_not_found`, so that a
    /// caller cannot tell another tenant's or agent's run from one that does not exist.
    ///
    /// # Errors
    /// `run_not_found`.
    pub fn run_id(caller: &Caller, text: &str) -> Result<RunId, ApiError> {
        RunId::new(text)
            .ok()
            .filter(|run| Self::may_see(caller, run))
            .ok_or_else(|| ApiError::run_not_found(text))
    }

    /// Opens a run for an agent.
    ///
    /// # Errors
    /// `run_exists`; store failures.
    pub fn open_run(
        &self,
        caller: &Caller,
        run: RunId,
        task: Option<TaskId>,
        human_approved: bool,
    ) -> Result<RunInfo, ApiError> {
        // Read before the run exists: a lanes file that does not load opens nothing.
        let lanes = self.lane_book()?;
        let runs = self.runs();
        let recorder = runs.open(&caller.tenant, &run, task.as_ref())?;
        let mut executor = runs.executor(
            recorder,
            self.gate_of(&caller.tenant),
            caller.principal(),
            Replay::Records { lanes },
        )?;
        if human_approved {
            executor.require_a_person_for_every_call()?;
        }
        self.lock_live()
            .insert((caller.tenant.clone(), run.clone()), Live::new(executor));
        self.run_info(caller, &run)
    }

    /// A run's lifecycle summary.
    ///
    /// # Errors
    /// `run_not_found`; store failures.
    pub fn run_info(&self, caller: &Caller, run: &RunId) -> Result<RunInfo, ApiError> {
        self.flush_run(&caller.tenant, run)?;
        self.config
            .store
            .run(&caller.tenant, run)?
            .ok_or_else(|| ApiError::run_not_found(run.as_str()))
    }

    /// Up to `count` records of `run` from step `from`, read one by one (a page of a run of
    /// any length costs the same), with the run's summary. A row that does not read is
    /// returned as its fault, never skipped.
    ///
    /// # Errors
    /// `run_not_found`; store failures.
    pub fn records_page(
        &self,
        caller: &Caller,
        run: &RunId,
        from: u64,
        count: u64,
    ) -> Result<(RunInfo, Vec<cairn_runtime::ledger::store::StoredRow>), ApiError> {
        let info = self.run_info(caller, run)?;
        let end = from.saturating_add(count).min(info.records);
        let mut rows = Vec::new();
        for step in from..end {
            if let Some(row) = self.config.store.record(&caller.tenant, run, step)? {
                rows.push(row);
            }
        }
        Ok((info, rows))
    }

    /// One step of `run` for an incident, as `cairn ledger show` reads it
    /// ([`cairn_runtime::content::step_view`]).
    ///
    /// # Errors
    /// `run_not_found`; `record_not_found`; store failures.
    pub fn step_view(
        &self,
        caller: &Caller,
        run: &RunId,
        step: u64,
    ) -> Result<cairn_runtime::content::StepView, ApiError> {
        let info = self.run_info(caller, run)?;
        cairn_runtime::content::step_view(self.config.store.as_ref(), &caller.tenant, run, step)?
            .ok_or_else(|| no_step(&info, step))
    }

    /// The compaction at `step` of `run` and what followed it, as `cairn ledger boundary`
    /// reads it ([`cairn_runtime::crossing::crossing`]).
    ///
    /// # Errors
    /// `run_not_found`; `record_not_found`; a step that is not a compaction; store failures.
    pub fn crossing(
        &self,
        caller: &Caller,
        run: &RunId,
        step: u64,
    ) -> Result<cairn_runtime::crossing::Crossing, ApiError> {
        let info = self.run_info(caller, run)?;
        cairn_runtime::crossing::crossing(
            self.config.store.as_ref(),
            &caller.tenant,
            run,
            step,
            info.records,
        )
        .map_err(|e| ApiError::from(e).at("path.step"))?
        .ok_or_else(|| no_step(&info, step))
    }

    /// What a person should know of each of `runs` at a glance (`runtime::Runs::attention`:
    /// one read of each run's records).
    ///
    /// # Errors
    /// Store failures.
    pub fn attention(
        &self,
        caller: &Caller,
        runs: &[RunId],
    ) -> Result<Vec<cairn_runtime::Attention>, ApiError> {
        let reader = self.runs();
        runs.iter()
            .map(|run| {
                self.flush_run(&caller.tenant, run)?;
                Ok(reader.attention(&caller.tenant, run)?)
            })
            .collect()
    }

    /// The runs `caller` may see, with the CLI's filters.
    ///
    /// # Errors
    /// Store failures.
    pub fn list_runs(
        &self,
        caller: &Caller,
        unterminated_only: bool,
        idle_before: Option<cairn_core::Timestamp>,
    ) -> Result<Vec<RunInfo>, ApiError> {
        self.flush_all();
        let runs = self.config.store.list_runs(&RunFilter {
            tenant_id: Some(caller.tenant.clone()),
            unterminated_only,
            idle_before,
        })?;
        Ok(runs
            .into_iter()
            .filter(|info| Self::may_see(caller, &info.meta.run_id))
            .collect())
    }

    /// Calls, denials and argument bytes of the caller's tenant's runs, grouped `by` (I-5).
    ///
    /// # Errors
    /// Store failures.
    pub fn cost(
        &self,
        caller: &Caller,
        by: cairn_runtime::ledger::store::CostDimension,
    ) -> Result<Vec<cairn_runtime::ledger::store::CostRow>, ApiError> {
        self.flush_all();
        Ok(self.config.store.cost(by, Some(&caller.tenant))?)
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<RunKey, Arc<Live>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decides and records one step without waiting for anything: when the service batches,
    /// this replica holds the run, no one else holds it right now, and its batch has room, so
    /// that no store call and no lock wait can happen. `None` otherwise: the caller runs
    /// [`Service::admit`] where blocking is allowed.
    ///
    /// # Errors
    /// As [`Service::admit`].
    pub fn try_admit_now(
        &self,
        caller: &Caller,
        run: &RunId,
        request: &StepRequest<'_>,
    ) -> Option<Result<StepDecision, ApiError>> {
        // A step the continuity restrictions apply to reads the tenant's decision files:
        // never on the request's own thread.
        if !self.batches(request) || reads_decisions(request) {
            return None;
        }
        let live = self
            .lock_live()
            .get(&(caller.tenant.clone(), run.clone()))
            .cloned()?;
        let mut guard = live.run.try_lock().ok()?;
        self.admit_batched(caller, &mut guard, request)
    }

    /// Whether `request` is admitted into the group commit rather than committed before the
    /// reply.
    fn batches(&self, request: &StepRequest<'_>) -> bool {
        !request.sync && self.config.durability != Commit::Sync
    }

    /// Decides `request` on the held run and leaves its record to the group commit, when the
    /// run is open and its batch has room (`None` otherwise: the caller commits). Neither a
    /// store call nor the run's commit lock: an admission never waits for a group commit
    /// syncing the run's earlier records.
    fn admit_batched(
        &self,
        caller: &Caller,
        held: &mut LiveRun,
        request: &StepRequest<'_>,
    ) -> Option<Result<StepDecision, ApiError>> {
        let LiveRun {
            executor,
            permits,
            used,
        } = held;
        *used = Instant::now();
        let executor = executor.as_mut()?;
        if executor.recorder_ref().waiting_records() + 1 >= MAX_WAITING_RECORDS {
            return None;
        }
        let traces = &self.config.traces;
        self.restrict(caller, executor, request);
        Some(self.counted(caller, || {
            let mut decision = admit_with(executor, permits, traces, request)?;
            decision.commit = self.ticket(executor);
            Ok(decision)
        }))
    }

    /// The live run, resumed from the store when this replica does not hold it yet.
    fn live_run(&self, caller: &Caller, run: &RunId) -> Result<Arc<Live>, ApiError> {
        let key = (caller.tenant.clone(), run.clone());
        if let Some(live) = self.lock_live().get(&key) {
            return Ok(Arc::clone(live));
        }
        let runs = self.runs();
        let opened = runs
            .open_or_resume(&caller.tenant, RunName::Exact(run), &IfMissing::Refuse)
            .map_err(|error| match error {
                RuntimeError::Store(StoreError::RunNotFound { .. }) => {
                    ApiError::run_not_found(run.as_str())
                }
                other => other.into(),
            })?;
        // The run acts for the agent that opened it, whoever's request resumes it here (a
        // person's reconciliation or lane ruling must not become the principal that the
        // agent's later calls are decided for).
        let mut executor = runs.executor(
            opened.recorder,
            self.gate_of(&caller.tenant),
            Self::run_principal(caller, run),
            Replay::Records {
                lanes: self.lane_book()?,
            },
        )?;
        if let Some(request_ttl) = self.config.approvals.request_ttl {
            executor = executor
                .with_approval_options(cairn_runtime::approvals::ApprovalOptions { request_ttl });
        }
        let live = Live::new(executor);
        // Another request may have resumed it meanwhile: keep the first.
        Ok(Arc::clone(self.lock_live().entry(key).or_insert(live)))
    }

    /// Runs `work` on the run's executor. A writer that finds its step taken by another
    /// writer (another replica on the same database) is dropped, so that the next request
    /// resumes from what the store holds.
    fn with_executor<T>(
        &self,
        caller: &Caller,
        run: &RunId,
        work: impl FnOnce(&mut Executor, &mut HashMap<u64, Waiting>) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let live = self.live_run(caller, run)?;
        let (committing, mut guard) = live.lock_to_commit();
        let LiveRun {
            executor,
            permits,
            used,
        } = &mut *guard;
        *used = Instant::now();
        let Some(executor) = executor.as_mut() else {
            return Err(StoreError::RunTerminated { run: run.clone() }.into());
        };
        let result = work(executor, permits);
        if let Err(error) = &result
            && matches!(error.code(), "step_conflict" | "non_contiguous_step")
        {
            drop(guard);
            drop(committing);
            self.lock_live()
                .remove(&(caller.tenant.clone(), run.clone()));
        }
        result
    }

    /// Decides and records one step: in `batch` durability its record is left to the group
    /// commit (see [`Service::flush_waiting`]) unless the run's batch is full; in `sync`, or
    /// when the request asks for it, the record is committed before this returns.
    ///
    /// # Errors
    /// Store failures (the call is then not admitted: the client must deny it).
    pub fn admit(
        &self,
        caller: &Caller,
        run: &RunId,
        request: &StepRequest<'_>,
    ) -> Result<StepDecision, ApiError> {
        if self.batches(request) {
            let live = self.live_run(caller, run)?;
            let mut guard = live.run.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(decided) = self.admit_batched(caller, &mut guard, request) {
                return decided;
            }
        }
        self.with_executor(caller, run, |executor, permits| {
            let traces = &self.config.traces;
            self.restrict(caller, executor, request);
            self.counted(caller, || {
                let mut decision = admit_with(executor, permits, traces, request)?;
                decision.commit = self.ticket(executor);
                Ok(decision)
            })
        })
    }

    /// Sets the continuity restriction `request` is decided under: for a call through the
    /// MCP gateway, what holds now (with the tenant's decisions when this service keeps
    /// them); for any other step, none.
    fn restrict(&self, caller: &Caller, executor: &mut Executor, request: &StepRequest<'_>) {
        let Some(tools) = request
            .continuity
            .as_ref()
            .filter(|_| reads_decisions(request))
        else {
            executor.restrict(
                None,
                &cairn_runtime::restrictions::ToolClasses::new(Vec::new(), Vec::new()),
            );
            return;
        };
        let decisions = self.config.decisions.as_ref().map(|home| {
            (
                cairn_runtime::decision_files::DecisionFiles::open_tenant(
                    &home.dir,
                    &caller.tenant,
                    home.keys.clone(),
                ),
                home.window,
            )
        });
        let restriction = executor.continuity_restriction(decisions, None);
        executor.restrict(restriction, tools);
    }

    /// Runs `admit`, counting its decision and timing it.
    fn counted(
        &self,
        caller: &Caller,
        admit: impl FnOnce() -> Result<StepDecision, ApiError>,
    ) -> Result<StepDecision, ApiError> {
        let started = Instant::now();
        let decided = admit();
        self.metrics
            .admit_seconds
            .observe(started.elapsed().as_secs_f64());
        if let Ok(decision) = &decided {
            self.metrics
                .decisions
                .get_or_create(&crate::metrics::DecisionLabels {
                    tenant: caller.tenant.to_string(),
                    decision: if decision.allowed { "allow" } else { "deny" }.to_owned(),
                    rule: decision
                        .rule_ids
                        .first()
                        .cloned()
                        .unwrap_or_else(|| "none".to_owned()),
                })
                .inc();
        }
        decided
    }

    /// Records how the call admitted at `step` ended.
    ///
    /// # Errors
    /// `step_not_found` when no admitted call waits at `step`; store failures.
    pub fn outcome(
        &self,
        caller: &Caller,
        run: &RunId,
        step: u64,
        outcome: ReportedOutcome,
        sync: bool,
    ) -> Result<OutcomeRecorded, ApiError> {
        self.with_executor(caller, run, |executor, permits| {
            let Waiting { permit, span } = permits.remove(&step).ok_or_else(|| {
                ApiError::new(
                    ServerCode::OUTCOME_NOT_AWAITED,
                    format!("no admitted call waits for its outcome at step {step} of `{run}`"),
                )
                .at("path.step")
            })?;
            let call_digest = permit.digest().to_string();
            let ended = match &outcome {
                ReportedOutcome::Applied(_) => "applied",
                ReportedOutcome::Failed(_) => "failed",
                ReportedOutcome::NotExecuted(_) => "not_executed",
                ReportedOutcome::Unknown(_) => "unknown",
            };
            if let Some(span) = span {
                span.end(ended);
            }
            let effect = executor.execute_effect(permit, move || match outcome {
                ReportedOutcome::Applied(value) => Ok(value),
                ReportedOutcome::Failed(error) | ReportedOutcome::NotExecuted(error) => {
                    Err(CallError::NotExecuted(error))
                }
                ReportedOutcome::Unknown(error) => Err(CallError::OutcomeUnknown(error)),
            })?;
            if sync {
                executor.recorder().flush()?;
            }
            if matches!(effect, EffectOutcome::Unknown { .. }) {
                self.traced_boundary("side_effect_unknown", caller, run, step, &call_digest);
            }
            Ok(OutcomeRecorded {
                observation_digest: executor.recorder().current_observation(),
                idempotency_key: match effect {
                    EffectOutcome::Unknown { idempotency_key } => Some(idempotency_key),
                    EffectOutcome::Applied(_) | EffectOutcome::NotExecuted(_) => None,
                },
                commit: self.ticket(executor),
            })
        })
    }

    /// Records what the model was shown that is not a tool result.
    ///
    /// # Errors
    /// Store failures.
    pub fn observe(
        &self,
        caller: &Caller,
        run: &RunId,
        observation: &serde_json::Value,
    ) -> Result<Digest, ApiError> {
        self.with_executor(
            caller,
            run,
            |executor, _| Ok(executor.observe(observation)?),
        )
    }

    /// Closes the run with its terminal record and the service's signed checkpoint.
    ///
    /// # Errors
    /// `run_terminated`; store and signing failures (the run then stays open).
    pub fn terminate(
        &self,
        caller: &Caller,
        run: &RunId,
        reason: TerminationReason,
        detail: Option<cairn_runtime::ledger::record::Label>,
    ) -> Result<cairn_runtime::ClosedRun, ApiError> {
        // Another replica may have written the run since this one last did: the close is
        // tried once more on the run as the store holds it.
        for attempt in 0..2 {
            let live = self.live_run(caller, run)?;
            let (committing, mut guard) = live.lock_to_commit();
            let Some(executor) = guard.executor.as_mut() else {
                return Err(StoreError::RunTerminated { run: run.clone() }.into());
            };
            // What waits is committed first, on its own: a close that fails must not take
            // admitted steps with it.
            executor.recorder().flush()?;
            let Some(executor) = guard.executor.take() else {
                return Err(StoreError::RunTerminated { run: run.clone() }.into());
            };
            let closed = executor.terminate(reason, detail.clone(), &self.config.signing_key);
            drop(guard);
            drop(committing);
            // Closed or not, this replica lets go of the run: a retry resumes it from the store.
            self.lock_live()
                .remove(&(caller.tenant.clone(), run.clone()));
            match closed {
                Err(RuntimeError::Store(
                    StoreError::Conflict { .. } | StoreError::NonContiguous { .. },
                )) if attempt == 0 => {}
                other => {
                    let closed = other?;
                    let terminal = closed.terminal;
                    self.traced_boundary(
                        "run_terminated",
                        caller,
                        run,
                        terminal.step_index,
                        &terminal.digest.to_string(),
                    );
                    return Ok(closed);
                }
            }
        }
        Err(StoreError::RunTerminated { run: run.clone() }.into())
    }

    /// Records a compaction: the envelope from the durable state and `facts`, bound to
    /// `summary`'s digest, with its `context_compaction` record.
    ///
    /// # Errors
    /// `invalid_input` naming every finding when the facts make no valid envelope; store
    /// failures.
    pub fn compact(
        &self,
        caller: &Caller,
        run: &RunId,
        facts: &cairn_runtime::boundary::SessionFacts,
        summary: &str,
        trigger: &str,
    ) -> Result<cairn_runtime::boundary::Compaction, ApiError> {
        let done = self.with_executor(caller, run, |executor, _| {
            Ok(executor.compact(facts, summary, trigger)?)
        })?;
        let receipt = done.receipt;
        self.traced_boundary(
            "context_compaction",
            caller,
            run,
            receipt.step_index,
            &receipt.digest.to_string(),
        );
        Ok(done)
    }

    /// Decides whether the run may resume after its last compaction; records the outcome.
    ///
    /// # Errors
    /// `invalid_input` when no envelope was ever saved for the run; store failures.
    pub fn rehydrate(
        &self,
        caller: &Caller,
        run: &RunId,
        facts: &cairn_runtime::boundary::SessionFacts,
        summary: &str,
    ) -> Result<cairn_runtime::continuity::ContinuityDecision, ApiError> {
        let now = self.config.clock.now();
        self.with_executor(caller, run, |executor, _| {
            Ok(executor.rehydrate(facts, summary, now)?)
        })
    }

    /// Records the observed outcome of an unknown side effect (a person's act).
    ///
    /// # Errors
    /// `invalid_input` when `key` is not unresolved in the run; store failures.
    pub fn reconcile(
        &self,
        caller: &Caller,
        run: &RunId,
        key: &str,
        outcome: cairn_runtime::reconcile::ObservedOutcome,
        evidence: &str,
    ) -> Result<cairn_runtime::Receipt, ApiError> {
        self.with_executor(caller, run, |executor, _| {
            if !executor.unresolved().contains(key) {
                return Err(ApiError::new(
                    ServerCode::EFFECT_NOT_UNRESOLVED,
                    format!("`{key}` is not a side effect of `{run}` waiting for reconciliation"),
                )
                .at("body.key"));
            }
            let receipt = executor.reconcile(key, outcome, evidence)?;
            executor.recorder().flush()?;
            self.traced_boundary(
                "reconciliation",
                caller,
                run,
                receipt.step_index,
                &receipt.digest.to_string(),
            );
            Ok(receipt)
        })
    }

    /// Commits what this replica holds of `run`, so that a read sees every admitted step.
    fn flush_run(&self, tenant: &TenantId, run: &RunId) -> Result<(), ApiError> {
        let live = self
            .lock_live()
            .get(&(tenant.clone(), run.clone()))
            .cloned();
        if let Some(live) = live {
            let (_committing, mut guard) = live.lock_to_commit();
            if let Some(executor) = guard.executor.as_mut() {
                executor.recorder().flush()?;
            }
        }
        Ok(())
    }

    /// Commits, together (one [`Store::append_group`]: one transaction and one sync to disk
    /// where the store can), the waiting records of every live run whose oldest waited at
    /// least `older_than` (zero: all); logs what fails (those records stay waiting and the
    /// next pass retries them).
    pub fn flush_waiting(&self, older_than: std::time::Duration) {
        let _ = self.flush(older_than);
    }

    /// One round of the group commit (group durability): every waiting record of every live
    /// run committed together, then the requests waiting on the round woken. Returns whether
    /// a run's commit failed (its records stay waiting for the next round).
    pub fn commit_round(&self) -> bool {
        let round = self.group.begin();
        let failed = self.flush(std::time::Duration::ZERO);
        let any = !failed.is_empty();
        self.group.finish(round, failed);
        any
    }

    /// The group committer (group durability): on a thread of its own, a round whenever a
    /// request waits for one — back to back while requests keep coming, the records admitted
    /// during a round going into the next — until [`Service::stop_committing`]. A round whose
    /// commit failed for a run is retried after a short pause.
    pub fn commit_rounds(&self) {
        while self.group.asked(std::time::Duration::from_secs(1)) {
            if self.commit_round() {
                std::thread::sleep(std::time::Duration::from_millis(10));
                // The records that failed still wait: another round.
                self.group.ask();
            }
        }
    }

    /// Ends [`Service::commit_rounds`].
    pub fn stop_committing(&self) {
        self.group.stop();
    }

    /// [`Service::flush_waiting`], returning the runs whose commit failed.
    fn flush(&self, older_than: std::time::Duration) -> std::collections::HashSet<RunKey> {
        let mut failed = std::collections::HashSet::new();
        let lives: Vec<Arc<Live>> = self.lock_live().values().cloned().collect();
        let now = Instant::now();
        // Each run's waiting records are copied under its lock for a moment; the commit
        // itself holds only the runs' commit locks, so their requests go on meanwhile.
        let mut due = Vec::new();
        for live in &lives {
            let committing = if older_than.is_zero() {
                live.committing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
            } else {
                match live.committing.try_lock() {
                    Ok(guard) => guard,
                    Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                    // Another operation commits this run now: its records go with it.
                    Err(std::sync::TryLockError::WouldBlock) => continue,
                }
            };
            let copy = {
                let guard = live.run.lock().unwrap_or_else(PoisonError::into_inner);
                guard.executor.as_ref().and_then(|e| {
                    let recorder = e.recorder_ref();
                    let since = recorder.waiting_since()?;
                    if now.saturating_duration_since(since) < older_than {
                        return None;
                    }
                    recorder.waiting_copy()
                })
            };
            if let Some(copy) = copy {
                due.push((live, committing, copy));
            }
        }
        self.metrics
            .live_runs
            .set(i64::try_from(lives.len()).unwrap_or(i64::MAX));
        let waiting: usize = due.iter().map(|(_, _, copy)| copy.records()).sum();
        self.metrics
            .waiting_records
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
        if due.is_empty() {
            return failed;
        }
        let started = Instant::now();
        let results = {
            let commits: Vec<_> = due.iter().map(|(_, _, copy)| copy.commit()).collect();
            self.config.store.append_group(&commits)
        };
        self.metrics
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        for ((live, committing, copy), result) in due.into_iter().zip(results) {
            let mut guard = live.run.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(executor) = guard.executor.as_mut() {
                match result {
                    Ok(()) => {
                        executor.recorder().committed_copy(&copy);
                        self.metrics.committed_records.inc_by(copy.records() as u64);
                    }
                    Err(error) => {
                        let recorder = executor.recorder_ref();
                        let run = recorder.run_id().to_string();
                        failed.insert((recorder.tenant_id().clone(), recorder.run_id().clone()));
                        tracing::error!(%run, code = cairn_core::ErrorCode::code(&error), %error, "group commit failed; retrying");
                    }
                }
            }
            drop(guard);
            drop(committing);
        }
        failed
    }

    /// Lets go of the runs no request used for `idle` that hold nothing: no record waits and
    /// no admitted call waits for its outcome. A later request resumes such a run from the
    /// store, so this only bounds the memory of a long-lived service.
    pub fn evict_idle(&self, idle: std::time::Duration) {
        let mut live = self.lock_live();
        live.retain(|_, entry| {
            let Ok(run) = entry.run.try_lock() else {
                return true;
            };
            let holds = run
                .executor
                .as_ref()
                .is_some_and(|e| e.recorder_ref().waiting_records() > 0)
                || !run.permits.is_empty();
            holds || run.used.elapsed() < idle
        });
    }

    fn flush_all(&self) {
        self.flush_waiting(std::time::Duration::ZERO);
    }

    /// A boundary span for the record at `step` (`digest`) of `run`.
    fn traced_boundary(&self, event: &str, caller: &Caller, run: &RunId, step: u64, digest: &str) {
        self.config.traces.boundary(
            event,
            crate::traces::RecordRef {
                tenant: caller.tenant.as_str(),
                run: run.as_str(),
                step,
                digest,
            },
        );
    }

    /// Exports every span still waiting (at the service's exit, outside its runtime).
    pub fn finish(&self) {
        self.config.traces.shutdown();
    }

    /// The runs this replica holds open.
    #[must_use]
    pub fn live_runs(&self) -> usize {
        self.lock_live().len()
    }
}

/// Whether `request` is a consequential call through the MCP gateway: the continuity
/// restrictions apply to it, and deciding it reads the tenant's decision files.
fn reads_decisions(request: &StepRequest<'_>) -> bool {
    request
        .continuity
        .as_ref()
        .is_some_and(|tools| tools.is_consequential(request.call.tool.name.as_str()))
}

/// Decides and records one step on `executor`, keeping the permit of an allowed call.
fn admit_with(
    executor: &mut Executor,
    permits: &mut HashMap<u64, Waiting>,
    traces: &crate::traces::Traces,
    request: &StepRequest<'_>,
) -> Result<StepDecision, ApiError> {
    if let Some(observation) = request.observation {
        executor.observe(observation)?;
    }
    let policy_set_version = executor.gate().policy_set_version();
    let admitted = executor.admit_with(&request.call, &request.context)?;
    if request.sync {
        executor.recorder().flush()?;
    }
    Ok(match admitted {
        Admitted::Permitted(permit) => {
            let decision = StepDecision {
                step: permit.step_index(),
                digest: permit.digest(),
                allowed: true,
                rule_ids: permit.rule_ids().to_vec(),
                reason: None,
                detail: None,
                message: None,
                policy_set_version,
                approval: None,
                commit: None,
            };
            let span = traces.tool_span(
                request.call.tool.name.as_str(),
                crate::traces::RecordRef {
                    tenant: executor.recorder_ref().tenant_id().as_str(),
                    run: executor.recorder_ref().run_id().as_str(),
                    step: decision.step,
                    digest: &decision.digest.to_string(),
                },
                &decision.rule_ids,
            );
            permits.insert(permit.step_index(), Waiting { permit, span });
            decision
        }
        Admitted::Denied(denial) => StepDecision {
            step: denial.receipt.step_index,
            digest: denial.receipt.digest,
            allowed: false,
            reason: Some(denial.reason()),
            detail: denial.detail().map(str::to_owned),
            message: Some(denial.told(
                executor.recorder_ref().run_id().as_str(),
                request.call.tool.name.as_str(),
            )),
            approval: match &denial.cause {
                cairn_runtime::DenyCause::Approval(held) => held.waiting.clone(),
                _ => None,
            },
            rule_ids: denial.rule_ids,
            policy_set_version,
            commit: None,
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn a_run_acts_for_the_agent_that_opened_it_whoever_resumes_it() {
        let investigator = Caller {
            token_id: "0123456789ab".to_owned(),
            tenant: "acme".parse().unwrap(),
            role: Role::Investigator,
        };
        let agent = Caller {
            token_id: "abcdef012345".to_owned(),
            role: Role::Agent,
            ..investigator.clone()
        };
        let run: RunId = "abcdef012345.session-1".parse().unwrap();
        // A person resuming the agent's run (a reconciliation, a lane ruling) decides nothing
        // for the agent under the person's own name.
        assert_eq!(
            Service::run_principal(&investigator, &run),
            agent.principal()
        );
        assert_eq!(Service::run_principal(&agent, &run), agent.principal());
        let copied: RunId = "run-1".parse().unwrap();
        assert_eq!(
            Service::run_principal(&investigator, &copied),
            investigator.principal()
        );
    }
}
