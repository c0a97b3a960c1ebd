//! One hook invocation: parse, find the project, lock the session, act, answer.
//!
//! [`handle`] never panics and never returns an error: every failure becomes an answer. A
//! `PreToolUse` that cannot be decided — a corrupt store, an unreadable or invalid
//! configuration, a panic (caught with `catch_unwind`) — is denied with exit 2 and the reason
//! on stderr (fail closed); every other event answers exit 0 with the error on stderr, so a
//! compaction, a session start or a session end is never blocked.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;

use cairn_core::{Clock, ErrorCode, RunId, TenantId};
use cairn_runtime::ledger::{Store, StoreError};
use cairn_runtime::{
    Durability, Executor, Gate, IfMissing, Recorder, RecorderOptions, Replay, RunName, Runs,
    StoreLocation, StoreOpener,
};

use crate::answer::Answer;
use crate::config::HookConfig;
use crate::error::HookError;
use crate::gate::Fault;
use crate::host::{Compaction, Host, run_base};
use crate::input::{self, Event, HookInput};
use crate::project::Project;
use crate::session::{SessionFiles, SessionState};

/// What a hook invocation gets from its process.
#[derive(Clone)]
pub struct Environment {
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Opens the store.
    pub stores: Arc<dyn StoreOpener>,
    /// The store, when given explicitly (`--store`, or the service's own); else the
    /// project's.
    pub store: Option<StoreLocation>,
    /// The key directory, when given explicitly (`--keys`); else the project's `.cairn/keys`.
    pub keys_dir: Option<PathBuf>,
    /// A test-only fault to inject (see [`Fault`]).
    pub fault: Option<Fault>,
    /// Where the policy gate is loaded through: kept between calls in a long-lived process
    /// (see [`crate::resident`]), a fresh one in a process that answers one call.
    pub gates: Arc<cairn_runtime::config::GateCache>,
    /// How a call's project is found (the one the hook names, the session's, or `cwd`'s).
    pub binding: crate::project::Binding,
    /// For a service answering many agents' hooks: the tenant every run is recorded under
    /// (whatever the project's `hooks.json` says) and the prefix of the runs' ids (the agent
    /// token's id), so that each agent's sessions are its own.
    pub namespace: Option<Namespace>,
    /// A gate fixed by the process instead of the project's policy files: a service answering
    /// the hooks of a tenant that has a policy set of its own.
    pub gate: Option<Arc<dyn Gate>>,
}

/// Whose calls a service answers (see [`Environment::namespace`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// The tenant of every run.
    pub tenant: TenantId,
    /// The runs are named `<prefix>.<host>-<session>`.
    pub run_prefix: String,
    /// Who the calls are made as — the service's one principal of the caller, the same on
    /// its steps API (whatever the folder's `hooks.json` says).
    pub principal: String,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("store", &self.store)
            .field("keys_dir", &self.keys_dir)
            .field("fault", &self.fault)
            .field("binding", &self.binding)
            .finish_non_exhaustive()
    }
}

impl Environment {
    /// The store of `project`'s calls: the one given explicitly, else the project's own.
    ///
    /// # Errors
    /// The store's, when it does not open.
    fn store_of(&self, project: &Project) -> Result<Arc<dyn Store>, StoreError> {
        let location = self
            .store
            .clone()
            .unwrap_or_else(|| StoreLocation::File(project.store_path()));
        cairn_runtime::stores::open_at(self.stores.as_ref(), &location)
    }

    /// The gate of `project`'s calls: the one the process fixed, else the project's policy
    /// set (through the gate cache).
    ///
    /// # Errors
    /// [`HookError`] when the policy set does not load.
    fn gate_of(&self, project: &Project) -> Result<Arc<dyn Gate>, HookError> {
        if let Some(gate) = &self.gate {
            return Ok(Arc::clone(gate));
        }
        let tools = project.tools();
        let gate: Arc<dyn Gate> = self.gates.load(&project.policies(), tools.as_deref())?;
        Ok(gate)
    }

    /// Prepares what the first calls in `project` would otherwise wait for: the store opened
    /// (the long-lived opener keeps it) and the policy gate built (the gate cache keeps it).
    /// A failure is left alone: the call that needs the store or the gate meets it again and
    /// answers it as it always does. The resident server runs this beside its first calls,
    /// which wait for what it is building rather than build it twice.
    ///
    /// Opening the store early is safe against a newer Cairn migrating it later: the store
    /// checks its schema again in every write transaction (`store_schema_too_new`).
    pub fn warm(&self, project: &Project) {
        let _ = self.store_of(project);
        let _ = self.gate_of(project);
    }
}

/// Answers one hook invocation of `host` with `stdin` as its input.
#[must_use]
pub fn handle(host: Host, stdin: &[u8], env: &Environment) -> Answer {
    let input = match input::parse(host, stdin) {
        Ok(input) => input,
        Err(error) => return malformed(&error, input::blocks_on_failure(stdin)),
    };
    match &input.event {
        // A model request whose history starts from no summary (most of them) is nothing to
        // Cairn: answered without opening the session.
        Event::Ignored(_) | Event::ModelRequest { summary: None } => return Answer::silent(),
        Event::Unknown { name, tool_shaped } => return unknown(name, *tool_shaped),
        _ => {}
    }
    let project = match env
        .binding
        .resolve(input.host, &input.session_id, input.cwd.as_deref())
    {
        Ok(Some(project)) => project,
        Ok(None) => return no_project(&input),
        Err(error) => return failure(&input.event, &error),
    };
    env.binding
        .remember(input.host, &input.session_id, &project);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run(&input, &project, env)));
    let error = match outcome {
        Ok(Ok(answer)) => return answer,
        Ok(Err(error)) => error,
        Err(panic) => HookError::Panic(panic_message(panic.as_ref())),
    };
    failure(&input.event, &error)
}

/// The answer when no project is found for `input` (no `--project`, no `CLAUDE_PROJECT_DIR`,
/// no session binding, no `.cairn/` at or above `cwd`). The hook was configured to decide and
/// has nothing to decide with: a `PreToolUse` is denied (issue 34, 11) with how to fix it;
/// every other event passes with a note, so that a compaction or a stop is never blocked.
fn no_project(input: &HookInput) -> Answer {
    let start = input.cwd.clone().unwrap_or_else(|| PathBuf::from("."));
    let line = format!(
        "error[{}]: no .cairn/ project at or above `{}`",
        HookError::PROJECT_MISSING.name(),
        start.display()
    );
    match &input.event {
        Event::PreToolUse(tool) => Answer::fail_closed(format!(
            "Cairn denied this `{}` call: its hook runs here but finds no project to decide it with ({line}). Nothing was run or recorded. Run `cairn hooks install` in the project (its hooks name the project with `--project`), or remove Cairn's hooks from settings that do not belong to a Cairn project.",
            tool.name
        )),
        _ => Answer::note(format!(
            "cairn: {line}; nothing recorded (run `cairn hooks install` there)"
        )),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The answer to an input that is not the host's hook JSON: denied (exit 2) when it
/// `blocks` ([`input::blocks_on_failure`]: a `PreToolUse`, a tool call under another name, or
/// an input whose event cannot be told); an event that must never be blocked gets exit 0.
fn malformed(error: &HookError, blocks: bool) -> Answer {
    let line = format!("error[{}]: {error}", error.code());
    if blocks {
        Answer::fail_closed(format!(
            "Cairn denied this call: its hook input could not be read, so the call could not be decided ({line}). Nothing was run or recorded."
        ))
    } else {
        Answer::note(format!("cairn: {line}"))
    }
}

/// An event Cairn does not know: exit 0 with a structured error, unless it carries a tool
/// call about to run (it may be a renamed `PreToolUse`), which is denied (exit 2).
fn unknown(name: &str, tool_shaped: bool) -> Answer {
    let line = format!(
        "error[hook_event_unknown]: unknown hook event `{name}`; nothing recorded (cairn hook understands PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, PreCompact, PostCompact, SessionStart, Stop and SessionEnd)"
    );
    if tool_shaped {
        Answer::fail_closed(format!(
            "Cairn denied this call: it arrived as the unknown event `{name}` carrying a tool call, which Cairn cannot decide ({line})."
        ))
    } else {
        Answer::note(format!("cairn: {line}"))
    }
}

/// The answer to a failure while handling `event`.
fn failure(event: &Event, error: &HookError) -> Answer {
    let line = format!("error[{}]: {error}", error.code());
    match event {
        Event::PreToolUse(tool) => Answer::fail_closed(format!(
            "Cairn denied this `{}` call because it could not decide it safely ({line}). Nothing was run. Fix the cause and retry; `cairn ledger verify --all` checks the store.",
            tool.name
        )),
        Event::PreCompact { .. } | Event::PostCompact { .. } => Answer::system_message(&format!(
            "Cairn could not record this compaction (continuity_evidence_missing): {line}"
        ))
        .with_note(format!("cairn: {line}")),
        _ => Answer::note(format!("cairn: {line}")),
    }
}

/// Runs one event with the session locked; the state is saved whatever the outcome, since
/// it only ever records what is already durable.
fn run(input: &HookInput, project: &Project, env: &Environment) -> Result<Answer, HookError> {
    let config = HookConfig::load(project)?;
    let mut session = Session::open(input, project, env, config)?;
    let result = session.dispatch(&input.event);
    let saved = session.files.save(&session.state);
    let answer = result?;
    saved?;
    Ok(answer)
}

/// One session, locked, with its state and (lazily) its store's runs.
pub(crate) struct Session<'a> {
    pub(crate) host: Host,
    pub(crate) env: &'a Environment,
    pub(crate) project: &'a Project,
    pub(crate) config: HookConfig,
    pub(crate) files: SessionFiles,
    pub(crate) state: SessionState,
    pub(crate) session_id: String,
    pub(crate) base: String,
    runs: Option<Runs>,
    run: Option<(RunId, bool)>,
    /// Whether a held call is being admitted again after a person approved it (it is not
    /// held twice).
    pub(crate) holding: bool,
}

impl<'a> Session<'a> {
    fn open(
        input: &HookInput,
        project: &'a Project,
        env: &'a Environment,
        config: HookConfig,
    ) -> Result<Self, HookError> {
        let base = match &env.namespace {
            Some(namespace) => format!(
                "{}.{}",
                namespace.run_prefix,
                run_base(input.host, &input.session_id)
            ),
            None => run_base(input.host, &input.session_id),
        };
        project
            .prepare_state()
            .map_err(|e| HookError::io(project.state(), &e))?;
        let files = SessionFiles::lock(&project.sessions(), &base)?;
        let state = files.load(&input.session_id)?;
        Ok(Self {
            host: input.host,
            env,
            project,
            config,
            files,
            state,
            session_id: input.session_id.clone(),
            base,
            runs: None,
            run: None,
            holding: false,
        })
    }

    fn dispatch(&mut self, event: &Event) -> Result<Answer, HookError> {
        let compaction_event = match event {
            Event::PostCompact { .. } | Event::ModelRequest { .. } => true,
            Event::SessionStart { source } => source == "compact",
            _ => false,
        };
        if !compaction_event {
            self.settle_unrecorded_compaction()?;
        }
        match event {
            Event::PreToolUse(tool) => self.pre_tool_use(tool),
            Event::PostToolUse { tool, outcome } => self.post_tool_use(tool, outcome, event.name()),
            Event::UserPromptSubmit { prompt, agent } => {
                self.user_prompt(prompt.as_deref(), agent.as_deref())
            }
            Event::PreCompact { trigger } => match self.host.compaction() {
                Compaction::Bracketed => self.pre_compact(trigger),
                Compaction::Announced => self.announced_compaction(trigger),
                Compaction::FromHistory => Ok(self.compaction_may_follow(trigger)),
            },
            Event::ModelRequest { summary } => self.model_request(summary.as_ref()),
            Event::PostCompact { trigger, summary } => {
                self.post_compact(trigger, summary.as_deref())
            }
            Event::SessionStart { source } => self.session_start(source),
            Event::Stop => self.stop(),
            Event::SubagentStop { agent } => self.subagent_stop(agent.as_deref()),
            Event::SessionEnd { reason } => self.session_end(reason),
            Event::Ignored(_) | Event::Unknown { .. } => Ok(Answer::silent()),
        }
    }

    /// The runs of the session's store (opened once per invocation), written durably before
    /// each answer (`sync`).
    pub(crate) fn runs(&mut self) -> Result<Runs, HookError> {
        if let Some(runs) = &self.runs {
            return Ok(runs.clone());
        }
        let runs = Runs::new(
            self.env.store_of(self.project)?,
            Arc::clone(&self.env.clock),
            RecorderOptions {
                durability: Durability::Sync,
                content_retention: self.config.content_retention,
            },
        );
        self.runs = Some(runs.clone());
        Ok(runs)
    }

    /// The key directory.
    pub(crate) fn keys_dir(&self) -> PathBuf {
        self.env
            .keys_dir
            .clone()
            .unwrap_or_else(|| self.project.keys_dir())
    }

    /// Who the session's calls are made as: the service's principal of the caller, else the
    /// project's (`hooks.json`, by default the host's).
    pub(crate) fn principal(&self) -> String {
        self.env.namespace.as_ref().map_or_else(
            || self.config.principal(self.host),
            |namespace| namespace.principal.clone(),
        )
    }

    /// The tenant runs are recorded under.
    pub(crate) fn tenant(&self) -> Result<TenantId, HookError> {
        if let Some(namespace) = &self.env.namespace {
            return Ok(namespace.tenant.clone());
        }
        Ok(TenantId::new(&self.config.tenant)?)
    }

    /// The session's runs, from the generation the state knows.
    fn session_runs(&self) -> RunName<'_> {
        RunName::Session {
            base: &self.base,
            from: match &self.run {
                Some(_) => self.state.generation,
                None => self.state.generation.max(1),
            },
        }
    }

    /// The session's current run and whether it exists in the store yet. A session whose
    /// run was closed (its `SessionEnd`) continues in its next run.
    pub(crate) fn run_id(&mut self) -> Result<(RunId, bool), HookError> {
        if let Some(run) = &self.run {
            return Ok(run.clone());
        }
        let tenant = self.tenant()?;
        let (run, generation, exists) = self.runs()?.current(&tenant, self.session_runs())?;
        self.adopt_generation(generation);
        self.run = Some((run.clone(), exists));
        Ok((run, exists))
    }

    /// The state describes another run than `generation`: that run was closed, so its
    /// bookkeeping is stale.
    fn adopt_generation(&mut self, generation: u32) {
        if generation != self.state.generation {
            self.state = SessionState::new(&self.session_id);
            self.state.generation = generation;
        }
    }

    /// The writer of the session's current run (opening the run if needed), carrying the
    /// latest observation digest from the state. The run is resumed directly — the store is
    /// asked about it once, which matters on a path that runs for every tool call.
    pub(crate) fn recorder(&mut self) -> Result<Recorder, HookError> {
        let tenant = self.tenant()?;
        let opened = self.runs()?.open_or_resume(
            &tenant,
            self.session_runs(),
            &IfMissing::Open { task: None },
        )?;
        self.adopt_generation(opened.generation);
        let mut recorder = opened.recorder;
        self.run = Some((recorder.run_id().clone(), true));
        recorder.carry_observation(self.state.observation);
        Ok(recorder)
    }

    /// An executor on the session's current run with `gate` and the project's lanes, built
    /// from the run's records (they rebuild the unresolved side effects and replay the lanes).
    pub(crate) fn executor(&mut self, gate: Arc<dyn Gate>) -> Result<Executor, HookError> {
        // The lanes as the records left them (rulings, handoffs), for the boundary's facts
        // and context; a lanes file that does not load leaves them out here (a tool call
        // would be denied for it).
        let lanes = cairn_runtime::config::load_lanes(&self.project.lanes(), self.guard().root())
            .ok()
            .flatten();
        self.executor_with(gate, Replay::Records { lanes })
    }

    /// An executor on the session's current run, knowing what `replay` reads; notes in the
    /// state whether a side effect awaits reconciliation when the records were read.
    ///
    /// Without the records, the executor knows no unresolved side effect: callers skip them
    /// only when the state knows there is none — hooks are the only writers of
    /// `side_effect_unknown` for a session's run and save that hint before writing one, and a
    /// `cairn reconcile` elsewhere only clears effects.
    pub(crate) fn executor_with(
        &mut self,
        gate: Arc<dyn Gate>,
        replay: Replay,
    ) -> Result<Executor, HookError> {
        let read = matches!(replay, Replay::Records { .. });
        let recorder = self.recorder()?;
        let principal = self.principal();
        let executor = self.runs()?.executor(recorder, gate, principal, replay)?;
        if read {
            self.state.unresolved_hint = Some(executor.unresolved().iter().next().is_some());
        }
        Ok(executor)
    }

    /// The project's policy gate.
    pub(crate) fn policy_gate(&self) -> Result<Arc<dyn Gate>, HookError> {
        self.env.gate_of(self.project)
    }

    /// The project's guard: its configuration, its state folder (outside the working tree),
    /// and the store and keys when they live elsewhere (`--store`, `--keys`).
    pub(crate) fn guard(&self) -> cairn_runtime::protect::ProjectGuard {
        let mut extra: Vec<PathBuf> = self.env.keys_dir.iter().cloned().collect();
        if self.project.state_is_apart() {
            extra.push(self.project.state().to_path_buf());
        }
        if let Some(store) = &self.env.store {
            extra.extend(self.env.stores.files(store));
        }
        cairn_runtime::protect::ProjectGuard::new(self.project.root(), &extra, crate::PROTECTED)
    }

    /// The current instant.
    pub(crate) fn now(&self) -> cairn_core::Timestamp {
        self.env.clock.now()
    }
}
