//! The gateway on a project's own store: each MCP session is a run of the project's store,
//! decided by the project's policies (with the upstream tools' declared arguments learned),
//! lanes, reconciliation state, self-protection and approvals — the runtime's one
//! implementation of each, through [`cairn_runtime::Runs`] and the [`Executor`].

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use cairn_core::{Clock, Digest, RunId, TenantId};
use cairn_runtime::approvals::{ApprovalId, ApprovalOptions};
use cairn_runtime::config::{GateCache, LearnedTool};
use cairn_runtime::decision_files::DecisionFiles;
use cairn_runtime::keyring::Keyring;
use cairn_runtime::layout::Project;
use cairn_runtime::ledger::Store;
use cairn_runtime::ledger::record::{Label, TerminationReason, ToolRef};
use cairn_runtime::protect::{ProjectGuard, Protected};
use cairn_runtime::restrictions::{self, ToolClasses};
use cairn_runtime::{
    Admitted, ApprovalDenial, CallContext, CallError, DenyCause, Durability, Executor, Gate,
    GateRequest, GateVerdict, IfMissing, RecorderOptions, Replay, RunName, Runs, ToolCall,
    UpstreamTool,
};

use crate::admission::{Admission, Admit, CallRequest, Ended, Refusal, Settled, Ticket};
use crate::error::GatewayError;

/// What the gateway hands self-protection besides `.cairn/`: the MCP clients' configuration
/// files that name the gateway (an agent that rewrites them takes the gateway off its own
/// path), and the `cairn` commands only a person runs.
pub const PROTECTED: Protected = Protected {
    files: &[
        ".mcp.json",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
        ".codex/config.toml",
        ".gemini/settings.json",
    ],
    file_text: &[
        ".mcp.json",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
        ".codex/config.toml",
        ".gemini/settings.json",
    ],
    program: cairn_runtime::protect::PERSON_PROGRAM,
    program_options: cairn_runtime::protect::PERSON_PROGRAM_OPTIONS,
    person_commands: cairn_runtime::protect::PERSON_COMMANDS,
};

/// The rule of a call refused because the policies did not load.
pub const RULE_POLICIES_UNLOADED: &str = "cairn.mcp.policies-unloaded";

/// Where and how a project's sessions are recorded.
#[derive(Clone)]
pub struct LocalSessions {
    project: Project,
    runs: Runs,
    /// The store the runs are in (to find the abandoned ones).
    store: Arc<dyn Store>,
    /// The policy gate every session's is read through.
    gates: Arc<GateCache>,
    tenant: TenantId,
    principal: String,
    keys_dir: PathBuf,
    hold: Duration,
    /// Folders of the store and keys when they live outside the project (protected too).
    extra_protected: Vec<PathBuf>,
    /// Which tools only read (a continuity restriction refuses the others).
    tools: ToolClasses,
}

impl std::fmt::Debug for LocalSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSessions")
            .field("project", &self.project.root())
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

/// The settings of [`LocalSessions::new`].
#[derive(Debug, Clone)]
pub struct LocalSettings {
    /// The tenant runs are recorded under.
    pub tenant: TenantId,
    /// Who the calls are made as.
    pub principal: String,
    /// `sync` (each intent record committed before the call is forwarded) or `batch`.
    pub durability: Durability,
    /// How long a held call waits for a person in flight (zero: refused at once).
    pub hold: Duration,
    /// The key folder (the project's `.cairn/keys` unless given).
    pub keys_dir: Option<PathBuf>,
    /// Files and folders outside the project to protect as well (a store or key folder
    /// given explicitly).
    pub extra_protected: Vec<PathBuf>,
    /// Exposed tool names (or prefixes ending in `*`) that only read; every other tool is
    /// consequential.
    pub read_only_tools: Vec<String>,
}

impl LocalSessions {
    /// Sessions of `project` recorded in `store`.
    #[must_use]
    pub fn new(
        project: Project,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        settings: LocalSettings,
    ) -> Self {
        let keys_dir = settings
            .keys_dir
            .clone()
            .unwrap_or_else(|| project.keys_dir());
        let mut extra = settings.extra_protected;
        if project.state_is_apart() {
            extra.push(project.state().to_path_buf());
        }
        extra.push(keys_dir.clone());
        Self {
            store: Arc::clone(&store),
            gates: Arc::default(),
            runs: Runs::new(
                store,
                clock,
                RecorderOptions {
                    durability: settings.durability,
                    content_retention: None,
                },
            ),
            project,
            tenant: settings.tenant,
            principal: settings.principal,
            keys_dir,
            hold: settings.hold,
            extra_protected: extra,
            tools: ToolClasses::new(settings.read_only_tools, Vec::new()),
        }
    }

    /// The session `session`'s admission: its run is `mcp-<session>`, opened at its first
    /// call.
    ///
    /// # Errors
    /// When the run id is not valid.
    pub fn open(&self, session: &str) -> Result<LocalAdmission, GatewayError> {
        let run = RunId::new(format!("mcp-{session}"))?;
        Ok(LocalAdmission {
            sessions: self.clone(),
            run: Mutex::new(run),
            gate: Arc::new(LearnedGate {
                cache: Arc::clone(&self.gates),
                learned: RwLock::default(),
                current: RwLock::default(),
            }),
            executor: Mutex::new(None),
            closed: std::sync::atomic::AtomicBool::new(false),
            lock: Mutex::new(None),
            carried: Mutex::new(None),
        })
    }

    /// Where the gateways of this project say which runs they write: a lock file per open
    /// run, held by the process writing it.
    fn locks(&self) -> PathBuf {
        self.project.state().join("mcp")
    }

    /// Closes the runs of sessions whose gateway is gone — killed, or its machine restarted —
    /// with a terminal record (`cancelled`, `mcp_session_abandoned`) and a signed checkpoint,
    /// and returns them. A run whose gateway still runs (its lock is held) is left alone.
    ///
    /// # Errors
    /// The key does not load; a run's own failure is logged and the run left for later.
    pub fn sweep(&self) -> Result<Vec<RunId>, GatewayError> {
        let Ok(entries) = std::fs::read_dir(self.locks()) else {
            return Ok(Vec::new());
        };
        let mut closed = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "lock") {
                continue;
            }
            let Ok(file) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
            else {
                continue;
            };
            if file.try_lock().is_err() {
                continue; // its gateway still runs
            }
            let run = std::fs::read_to_string(&path).unwrap_or_default();
            match self.close_abandoned(run.trim()) {
                Ok(Some(run)) => closed.push(run),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(lock = %path.display(), %error, "an abandoned MCP session's run could not be closed");
                    continue;
                }
            }
            let _ = std::fs::remove_file(&path);
        }
        Ok(closed)
    }

    /// Closes `run` when it is still open.
    fn close_abandoned(&self, run: &str) -> Result<Option<RunId>, GatewayError> {
        let Ok(run) = RunId::new(run) else {
            return Ok(None);
        };
        let open = self
            .store
            .run(&self.tenant, &run)?
            .is_some_and(|info| !info.terminated());
        if !open {
            return Ok(None);
        }
        let opened =
            self.runs
                .open_or_resume(&self.tenant, RunName::Exact(&run), &IfMissing::Refuse)?;
        let key = Keyring::open(&self.keys_dir)
            .active_signing_key()
            .map_err(cairn_runtime::RuntimeError::from)?;
        opened.recorder.terminate(
            TerminationReason::Cancelled,
            Some(Label::new("mcp_session_abandoned")?),
            &key,
        )?;
        Ok(Some(run))
    }
}

/// The project's policy gate with the upstreams' tools learned: read again before each call
/// (an edited policy takes effect on the next call; an unchanged set is reused), and until it
/// first loads every call is refused.
struct LearnedGate {
    /// The project's, shared by every session (they learn the same tools: one parse).
    cache: Arc<GateCache>,
    learned: RwLock<Vec<LearnedTool>>,
    current: RwLock<Option<Arc<dyn Gate>>>,
}

impl LearnedGate {
    /// Loads the project's policy set with the learned tools.
    fn refresh(&self, project: &Project) -> Result<Arc<dyn Gate>, GatewayError> {
        let learned = self
            .learned
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let tools = project.tools();
        let loaded = self
            .cache
            .load_learning(&project.policies(), tools.as_deref(), &learned);
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        match loaded {
            Ok(gate) => {
                let gate: Arc<dyn Gate> = gate;
                *current = Some(Arc::clone(&gate));
                Ok(gate)
            }
            Err(error) => {
                *current = None;
                Err(error.into())
            }
        }
    }

    fn loaded(&self) -> Option<Arc<dyn Gate>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Gate for LearnedGate {
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        match self.loaded() {
            Some(gate) => gate.decide(request),
            None => GateVerdict::built_in_deny(
                self,
                RULE_POLICIES_UNLOADED,
                DenyCause::Fault {
                    reason: "policies_unloaded",
                },
            ),
        }
    }

    fn policy_set_version(&self) -> Option<Digest> {
        self.loaded().and_then(|gate| gate.policy_set_version())
    }

    fn could_allow(&self, tool: &str, principal: &str) -> bool {
        self.loaded()
            .is_some_and(|gate| gate.could_allow(tool, principal))
    }
}

/// One MCP session's run on a project's store.
pub struct LocalAdmission {
    sessions: LocalSessions,
    /// The run: `mcp-<session>`, or the host session's own (`mcp-cc-<host session>`,
    /// continued in its next generation after a restart) once the first call names it.
    run: Mutex<RunId>,
    gate: Arc<LearnedGate>,
    /// The run's executor, opened at the first call; `None` before it and after closing.
    executor: Mutex<Option<Executor>>,
    closed: std::sync::atomic::AtomicBool,
    /// The lock that says this process writes the run (see [`LocalSessions::sweep`]),
    /// taken before the run is opened and let go once it is closed.
    lock: Mutex<Option<(PathBuf, std::fs::File)>>,
    /// The observation a reopened executor carries on (see [`LocalAdmission::reopen`]).
    carried: Mutex<Option<Digest>>,
}

/// Whether `error` says another writer moved the run on — a person's approval or
/// reconciliation, written from another process: the run is read again and the call decided
/// afresh (nothing of the refused append was written).
fn moved_on(error: &cairn_runtime::RuntimeError) -> bool {
    cairn_core::ErrorCode::code(error) == "step_conflict"
}

impl std::fmt::Debug for LocalAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalAdmission")
            .field("run", &self.run_id())
            .finish_non_exhaustive()
    }
}

/// The run of a host session the client names: `mcp-cc-<session>` when the session id is a
/// clean run id, else none (the gateway's own run is kept).
fn host_run_base(session: &str) -> Option<String> {
    let base = format!("mcp-cc-{session}");
    RunId::new(&base).ok().map(|_| base)
}

impl LocalAdmission {
    /// Takes this process's lock for the session's run `name` (before it is opened).
    fn take_lock(&self, name: &str) -> Result<(), GatewayError> {
        let dir = self.sessions.locks();
        let io = |e: std::io::Error| GatewayError::Upstream {
            server: "gateway".to_owned(),
            reason: format!("cannot take the session's lock in `{}`: {e}", dir.display()),
        };
        cairn_runtime::files::create_private_dir(&dir).map_err(io)?;
        let path = dir.join(format!("{name}.lock"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        file.try_lock().map_err(|_| GatewayError::Upstream {
            server: "gateway".to_owned(),
            reason: format!("another gateway writes the session's run `{name}` now"),
        })?;
        *self.lock.lock().unwrap_or_else(PoisonError::into_inner) = Some((path, file));
        Ok(())
    }

    /// Writes the opened run's id into the lock, for a later sweep to find.
    fn name_in_lock(&self, run: &RunId) -> Result<(), GatewayError> {
        use std::io::{Seek as _, Write as _};
        let mut lock = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((path, file)) = lock.as_mut() {
            let written = file
                .set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(run.as_str().as_bytes()))
                .and_then(|()| file.sync_data());
            written.map_err(|e| GatewayError::Upstream {
                server: "gateway".to_owned(),
                reason: format!("cannot write the session's lock `{}`: {e}", path.display()),
            })?;
        }
        Ok(())
    }

    fn run_id(&self) -> RunId {
        self.run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The executor on the session's run, opened (or resumed) on first use, with the
    /// project's lanes replayed from the run's records and its configuration guarded.
    fn executor<'a>(
        &self,
        slot: &'a mut Option<Executor>,
        host_session: Option<String>,
    ) -> Result<&'a mut Executor, GatewayError> {
        if slot.is_none() {
            let sessions = &self.sessions;
            if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(GatewayError::Upstream {
                    server: "gateway".to_owned(),
                    reason: format!("the session's run `{}` is closed", self.run_id()),
                });
            }
            let root = sessions.project.root().to_path_buf();
            let lanes = self.lane_book()?;
            let name = host_session
                .clone()
                .unwrap_or_else(|| self.run_id().to_string());
            if self
                .lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
            {
                self.take_lock(&name)?;
            }
            let opened = match host_session {
                // A host that names its session (Claude Code's `claudecode/sessionId`): the
                // run is that session's, beside the hooks' run of it, and a gateway restarted
                // in the same session continues in the run's next generation.
                Some(base) => sessions.runs.open_or_resume(
                    &sessions.tenant,
                    RunName::Session {
                        base: &base,
                        from: 1,
                    },
                    &IfMissing::Open { task: None },
                )?,
                None => {
                    let run = self.run_id();
                    sessions.runs.open_or_resume(
                        &sessions.tenant,
                        RunName::Exact(&run),
                        &IfMissing::Open { task: None },
                    )?
                }
            };
            *self.run.lock().unwrap_or_else(PoisonError::into_inner) =
                opened.recorder.run_id().clone();
            self.name_in_lock(opened.recorder.run_id())?;
            let mut recorder = opened.recorder;
            recorder.carry_observation(
                self.carried
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
            let gate: Arc<dyn Gate> = Arc::clone(&self.gate) as Arc<dyn Gate>;
            let executor = sessions
                .runs
                .executor(
                    recorder,
                    gate,
                    sessions.principal.clone(),
                    Replay::Records { lanes },
                )?
                .with_guard(ProjectGuard::new(
                    &root,
                    &sessions.extra_protected,
                    PROTECTED,
                ))
                .with_approval_options(ApprovalOptions::default());
            *slot = Some(executor);
        }
        slot.as_mut()
            .ok_or_else(|| GatewayError::Panic("the executor vanished".to_owned()))
    }

    /// The project's lanes as a new run starts with them, the upstream tools the
    /// configuration says only read bound as changing nothing (as the hooks bind theirs), so
    /// that a lanes file does not quietly refuse every read.
    fn lane_book(&self) -> Result<Option<cairn_runtime::lanes::LaneBook>, GatewayError> {
        let sessions = &self.sessions;
        let mut lanes =
            cairn_runtime::config::load_lanes(&sessions.project.lanes(), sessions.project.root())?;
        if let Some(book) = lanes.as_mut() {
            let learned = self
                .gate
                .learned
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            for (tool, _) in learned.iter() {
                if !sessions.tools.is_consequential(tool) {
                    book.bind_read_only(tool);
                }
            }
        }
        Ok(lanes)
    }

    fn admit_once(&self, call: &CallRequest) -> Result<Admitted, GatewayError> {
        self.gate.refresh(&self.sessions.project)?;
        let mut slot = self.executor.lock().unwrap_or_else(PoisonError::into_inner);
        let host_session = call.host_session.as_deref().and_then(host_run_base);
        let tool_call = ToolCall {
            tool: ToolRef {
                name: Label::new(&call.exposed)?,
                version: Label::new(&call.version)?,
            },
            args: &call.args,
            lane: None,
        };
        let context = CallContext {
            agent: None,
            call_id: Some(call.call_id.clone()),
            approval: None,
            mcp: Some(UpstreamTool {
                server: call.server.clone(),
                tool: call.tool.clone(),
            }),
        };
        let executor = self.executor(&mut slot, host_session.clone())?;
        self.restrict(executor, &call.exposed, host_session.as_deref());
        match executor.admit_with(&tool_call, &context) {
            Err(error) if moved_on(&error) => {
                self.reopen(&mut slot);
                let executor = self.executor(&mut slot, host_session.clone())?;
                self.restrict(executor, &call.exposed, host_session.as_deref());
                Ok(executor.admit_with(&tool_call, &context)?)
            }
            admitted => Ok(admitted?),
        }
    }

    /// Sets what refuses the session's consequential calls now, as the hooks do: a side
    /// effect awaiting reconciliation first, then the project's decisions — compared with the
    /// snapshot of the host session the calls belong to (`host_run`: `mcp-cc-<id>`, whose
    /// hooks' snapshot is `cc-<id>`), or with the latest snapshot.
    /// A call the configuration says only reads is never restricted: its decision files are
    /// not read.
    fn restrict(&self, executor: &mut Executor, tool: &str, host_run: Option<&str>) {
        if !self.sessions.tools.is_consequential(tool) {
            executor.restrict(None, &self.sessions.tools);
            return;
        }
        let restriction = executor.continuity_restriction(
            Some((
                DecisionFiles::open(self.sessions.project.state(), &self.sessions.keys_dir),
                restrictions::DECISION_WINDOW,
            )),
            host_run.and_then(|run| run.strip_prefix("mcp-")),
        );
        executor.restrict(restriction, &self.sessions.tools);
    }

    /// Lets the executor go, so that the next call reads the run again — what another writer
    /// recorded in it included — carrying on the observation it held.
    fn reopen(&self, slot: &mut Option<Executor>) {
        if let Some(old) = slot.take() {
            *self.carried.lock().unwrap_or_else(PoisonError::into_inner) =
                old.recorder_ref().current_observation();
        }
    }

    /// Waits up to the hold for a person to decide the request `id`; `Ok(None)` when it was
    /// approved (admit the call again), else the refusal to answer.
    fn hold(&self, call: &CallRequest, id: &str) -> Result<Option<String>, GatewayError> {
        let hold = self.sessions.hold;
        let approval = ApprovalId::parse(id).map_err(cairn_runtime::RuntimeError::from)?;
        let waited = self.sessions.runs.approvals().wait(
            &self.sessions.tenant,
            &self.run_id(),
            &approval,
            hold,
        )?;
        Ok(waited.told(&call.exposed, id, hold, self.run_id().as_str()))
    }
}

impl Admission for LocalAdmission {
    fn run(&self) -> String {
        self.run_id().to_string()
    }

    fn admit(&self, call: &CallRequest) -> Result<Admit, GatewayError> {
        let run = self.run_id().to_string();
        let mut admitted = self.admit_once(call)?;
        if let Admitted::Denied(denial) = &admitted
            && let DenyCause::Approval(ApprovalDenial {
                waiting: Some(waiting),
                ..
            }) = &denial.cause
            && !self.sessions.hold.is_zero()
        {
            let step = denial.receipt.step_index;
            match self.hold(call, &waiting.id)? {
                None => admitted = self.admit_once(call)?,
                Some(message) => {
                    return Ok(Admit::Refuse(Refusal {
                        rule_ids: denial.rule_ids.clone(),
                        code: denial.cause.code().to_owned(),
                        message,
                        step: Some(step),
                        digest: Some(denial.receipt.digest.to_string()),
                    }));
                }
            }
        }
        Ok(match admitted {
            Admitted::Permitted(permit) => Admit::Forward(Ticket::new(
                permit.step_index(),
                permit.digest().to_string(),
                Some(permit),
            )),
            Admitted::Denied(denial) => Admit::Refuse(Refusal {
                message: format!(
                    "{} (Cairn recorded this refusal as step {} of run `{run}`.)",
                    denial.told(&run, &call.exposed),
                    denial.receipt.step_index
                ),
                rule_ids: denial.rule_ids.clone(),
                code: denial.cause.code().to_owned(),
                step: Some(denial.receipt.step_index),
                digest: Some(denial.receipt.digest.to_string()),
            }),
        })
    }

    fn settle(&self, ticket: Ticket, outcome: Settled) -> Result<(), GatewayError> {
        let Some(permit) = ticket.permit else {
            return Err(GatewayError::Panic(
                "a local ticket without its permit".to_owned(),
            ));
        };
        let mut slot = self.executor.lock().unwrap_or_else(PoisonError::into_inner);
        let executor = slot.as_mut().ok_or_else(|| GatewayError::Upstream {
            server: "gateway".to_owned(),
            reason: format!(
                "the session's run `{}` was closed before the call's outcome arrived",
                self.run_id()
            ),
        })?;
        executor.execute_effect(permit, || match outcome {
            Settled::Answered(value) => Ok(value),
            Settled::NotSent(reason) => Err(CallError::NotExecuted(reason)),
            Settled::Unknown(reason) => Err(CallError::OutcomeUnknown(reason)),
        })?;
        Ok(())
    }

    fn admissible(&self, tools: &[(String, String)]) -> Vec<bool> {
        let loaded = self.gate.refresh(&self.sessions.project).is_ok();
        // The lanes as the session's run has them (rulings recorded in it included), or as a
        // new run would; lanes that do not load admit nothing.
        let slot = self.executor.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh;
        let lanes = match slot.as_ref() {
            Some(executor) => Ok(executor.lanes()),
            None => {
                fresh = self.lane_book();
                fresh.as_ref().map(Option::as_ref)
            }
        };
        let principal = &self.sessions.principal;
        tools
            .iter()
            .map(|(server, tool)| {
                let exposed = crate::names::exposed(server, tool);
                loaded
                    && self.gate.could_allow(&exposed, principal)
                    && match lanes {
                        Ok(Some(book)) => book.could_admit(principal, &exposed),
                        Ok(None) => true,
                        Err(_) => false,
                    }
            })
            .collect()
    }

    fn learn(&self, tools: &[LearnedTool]) -> Result<(), GatewayError> {
        *self
            .gate
            .learned
            .write()
            .unwrap_or_else(PoisonError::into_inner) = tools.to_vec();
        self.gate.refresh(&self.sessions.project).map(|_| ())
    }

    fn close(&self, ended: Ended) -> Result<(), GatewayError> {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        // The slot stays locked until the run is closed: a second close (the session's end
        // and the process's, racing) waits for the first and then finds nothing to do.
        let mut slot = self.executor.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(executor) = slot.take() else {
            return Ok(());
        };
        let key = match Keyring::open(&self.sessions.keys_dir).active_signing_key() {
            Ok(key) => key,
            Err(error) => {
                // Nothing is closed: the executor stays for another try.
                *slot = Some(executor);
                return Err(cairn_runtime::RuntimeError::from(error).into());
            }
        };
        let reason = match ended {
            Ended::Closed => TerminationReason::Completed,
            Ended::Cancelled => TerminationReason::Cancelled,
        };
        let observation = executor.recorder_ref().current_observation();
        match executor.terminate(reason, None, &key) {
            Err(error) if moved_on(&error) => {
                // Another writer moved the run on: close it from where it is now.
                let opened = self.sessions.runs.open_or_resume(
                    &self.sessions.tenant,
                    RunName::Exact(&self.run_id()),
                    &IfMissing::Refuse,
                )?;
                let mut recorder = opened.recorder;
                recorder.carry_observation(observation);
                recorder.terminate(reason, None, &key)?;
            }
            closed => {
                closed?;
            }
        }
        drop(slot);
        if let Some((path, _file)) = self
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }
}
