//! A run's lifecycle as every edge starts it — the hooks, the service, and the gateway next:
//! open the run or resume it after a restart, continue a session whose run was closed in its
//! next generation, and put an executor on it that remembers what the records say (the side
//! effects awaiting reconciliation, the lanes' rulings and handoffs).
//!
//! [`Runs::open_or_resume`] is the one place a run is opened or resumed, and
//! [`Runs::executor`] the one place its records are replayed.

use std::sync::Arc;

use cairn_core::{Clock, RunId, TaskId, TenantId};
use cairn_ledger::record::{AllowDeny, BoundaryEvent, Label};
use cairn_ledger::{Store, StoreError};

use crate::effects::Unresolved;
use crate::error::RuntimeError;
use crate::executor::Executor;
use crate::recorder::{Recorder, RecorderOptions};
use crate::verdict::Gate;

/// The most runs one session may close before its next run is refused.
pub const MAX_GENERATIONS: u32 = 10_000;

/// Which run an edge writes.
#[derive(Debug, Clone, Copy)]
pub enum RunName<'a> {
    /// Exactly this run.
    Exact(&'a RunId),
    /// A session's runs: `<base>` first, then `<base>.2`, `<base>.3`, … — a session whose run
    /// was closed continues in the next, which opens by naming the run it continues. The
    /// search starts at generation `from` (what the caller last knew, at least 1).
    Session {
        /// The first run's id.
        base: &'a str,
        /// The generation to start looking at.
        from: u32,
    },
}

/// What to do when the run named does not exist.
#[derive(Debug, Clone)]
pub enum IfMissing {
    /// Open it for `task` (`None`: the run is a task of its own, `task-<run id>`).
    Open {
        /// The task the new run works on.
        task: Option<TaskId>,
    },
    /// Refuse: [`StoreError::RunNotFound`].
    Refuse,
}

/// A run opened or resumed by [`Runs::open_or_resume`].
#[derive(Debug)]
pub struct Opened {
    /// The run's writer.
    pub recorder: Recorder,
    /// The run's generation in its session (1 for an exact run).
    pub generation: u32,
}

/// What [`Runs::executor`] learns from the run's records before the first call.
#[derive(Debug)]
pub enum Replay {
    /// Read the records once: rebuild the side effects awaiting reconciliation (a restart
    /// cannot forget a blocked capability) and, with lanes, replay their rulings, evidence
    /// and handoffs.
    Records {
        /// The project's lanes, when it declares any.
        lanes: Option<cairn_lanes::LaneBook>,
    },
    /// Skip the records: the caller knows the run holds no side effect awaiting
    /// reconciliation and has no lanes (the hooks keep that hint for the run they alone
    /// write).
    Skip,
}

/// What a person should know of a run at a glance: what blocks it, what waits for them, and
/// how much was refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attention {
    /// Side effects of unknown outcome awaiting reconciliation (the run is blocked on them).
    pub unresolved: usize,
    /// Approval requests waiting for a person's decision.
    pub waiting: usize,
    /// Calls refused.
    pub denials: u64,
    /// Calls held for a person.
    pub held: u64,
    /// Boundary records (compactions, rehydrations, reconciliations, approvals, lanes).
    pub boundaries: u64,
    /// Rows that do not read (verify the run).
    pub unreadable: u64,
    /// Calls admitted.
    pub admitted: u64,
    /// The run's latest continuity boundary — a compaction, a rehydration, a failed
    /// validation, a reconciliation — as (step, event, reason).
    pub continuity: Option<(u64, Label, Option<Label>)>,
}

/// The boundary events that say where a run's continuity stands.
const CONTINUITY_EVENTS: [&str; 4] = [
    "context_compaction",
    "context_rehydration",
    "continuity_validation_failed",
    "reconciliation",
];

impl Attention {
    /// Whether a person must act: a reconciliation, an approval, or a damaged record.
    #[must_use]
    pub const fn needs_a_person(&self) -> bool {
        self.unresolved > 0 || self.waiting > 0 || self.unreadable > 0
    }
}

/// Where runs are written and how: the store, the clock and the recorder's durability and
/// retention. Cheap to clone.
#[derive(Clone)]
pub struct Runs {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    options: RecorderOptions,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The id of generation `generation` of the session runs named `base`.
#[must_use]
pub fn session_run(base: &str, generation: u32) -> String {
    if generation <= 1 {
        base.to_owned()
    } else {
        format!("{base}.{generation}")
    }
}

/// The session a run belongs to, as [`session_run`] named it: `run` without its generation
/// (`s-1.3` → `s-1`; a run of the first generation is its session's name).
#[must_use]
pub fn session_base(run: &str) -> &str {
    match run.rsplit_once('.') {
        Some((base, generation))
            if !base.is_empty()
                && !generation.starts_with('0')
                && generation.parse::<u32>().is_ok_and(|g| g >= 2) =>
        {
            base
        }
        _ => run,
    }
}

impl Runs {
    /// Runs written to `store` on `clock` with `options`.
    #[must_use]
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, options: RecorderOptions) -> Self {
        Self {
            store,
            clock,
            options,
        }
    }

    /// The run `name` names now, its generation, and whether it exists yet — without opening
    /// it (a closed run moves a session on to its next generation).
    ///
    /// # Errors
    /// Store failures; [`RuntimeError::InvalidInput`] past [`MAX_GENERATIONS`] closed runs.
    pub fn current(
        &self,
        tenant: &TenantId,
        name: RunName<'_>,
    ) -> Result<(RunId, u32, bool), RuntimeError> {
        let (base, from) = match name {
            RunName::Exact(run) => {
                let exists = self.store.run(tenant, run)?.is_some();
                return Ok((run.clone(), 1, exists));
            }
            RunName::Session { base, from } => (base, from.max(1)),
        };
        let mut generation = from;
        for _ in 0..MAX_GENERATIONS {
            let run = RunId::new(session_run(base, generation))?;
            match self.store.run(tenant, &run)? {
                Some(info) if info.terminated() => generation = generation.saturating_add(1),
                found => return Ok((run, generation, found.is_some())),
            }
        }
        Err(too_many_runs(base))
    }

    /// Opens or resumes the run `name` names: an unterminated run is resumed where its
    /// records end (after a crash too); a missing one is opened or refused as `missing` says;
    /// a closed session run moves on to the next generation, which opens with a
    /// `session_resumed` boundary naming the run it continues.
    ///
    /// # Errors
    /// [`StoreError::RunNotFound`] (missing, refused) and [`StoreError::RunTerminated`] (an
    /// exact run that is closed) as [`RuntimeError::Store`]; store failures.
    pub fn open_or_resume(
        &self,
        tenant: &TenantId,
        name: RunName<'_>,
        missing: &IfMissing,
    ) -> Result<Opened, RuntimeError> {
        let (base, mut generation) = match name {
            RunName::Exact(run) => {
                let recorder = self.resume_or_open(tenant, run, missing, None)?;
                return Ok(Opened {
                    recorder,
                    generation: 1,
                });
            }
            RunName::Session { base, from } => (base, from.max(1)),
        };
        for _ in 0..MAX_GENERATIONS {
            let run = RunId::new(session_run(base, generation))?;
            let previous =
                (generation > 1).then(|| session_run(base, generation.saturating_sub(1)));
            match self.resume_or_open(tenant, &run, missing, previous.as_deref()) {
                Ok(recorder) => {
                    return Ok(Opened {
                        recorder,
                        generation,
                    });
                }
                Err(RuntimeError::Store(StoreError::RunTerminated { .. })) => {
                    generation = generation.saturating_add(1);
                }
                Err(error) => return Err(error),
            }
        }
        Err(too_many_runs(base))
    }

    fn resume_or_open(
        &self,
        tenant: &TenantId,
        run: &RunId,
        missing: &IfMissing,
        continues: Option<&str>,
    ) -> Result<Recorder, RuntimeError> {
        let resumed = Recorder::resume(
            Arc::clone(&self.store),
            Arc::clone(&self.clock),
            tenant,
            run,
            self.options,
        );
        match (resumed, missing) {
            (
                Err(RuntimeError::Store(StoreError::RunNotFound { .. })),
                IfMissing::Open { task },
            ) => {
                let mut recorder = self.open(tenant, run, task.as_ref())?;
                if let Some(previous) = continues {
                    // The ledger shows one session across its runs: the new run starts by
                    // naming the closed run it continues.
                    let mut event = BoundaryEvent::new(Label::new("session_resumed")?);
                    event.evidence_ref = Some(Label::new(format!("run:{tenant}/{previous}"))?);
                    event.reason = Some(Label::new("previous_run_closed")?);
                    recorder.record_boundary(event, None)?;
                }
                Ok(recorder)
            }
            (resumed, _) => resumed,
        }
    }

    /// Opens the new run `run` for `task` (`None`: a task of its own, `task-<run id>`).
    ///
    /// # Errors
    /// [`StoreError::RunExists`] as [`RuntimeError::Store`] when the id is taken; store
    /// failures.
    pub fn open(
        &self,
        tenant: &TenantId,
        run: &RunId,
        task: Option<&TaskId>,
    ) -> Result<Recorder, RuntimeError> {
        let task = match task {
            Some(task) => task.clone(),
            None => TaskId::new(format!("task-{run}"))?,
        };
        Recorder::open(
            Arc::clone(&self.store),
            Arc::clone(&self.clock),
            (tenant.clone(), task, run.clone()),
            self.options,
        )
    }

    /// An executor on `recorder`'s run, deciding with `gate` for `principal`, that knows what
    /// `replay` reads from the run's records.
    ///
    /// # Errors
    /// Store failures reading the records; a lane record that no longer replays.
    pub fn executor(
        &self,
        recorder: Recorder,
        gate: Arc<dyn Gate>,
        principal: impl Into<String>,
        replay: Replay,
    ) -> Result<Executor, RuntimeError> {
        let Replay::Records { lanes } = replay else {
            return Ok(Executor::new(recorder, gate, principal));
        };
        let rows = self.store.rows(recorder.tenant_id(), recorder.run_id())?;
        let mut executor = Executor::resumed(recorder, &rows, gate, principal);
        if let Some(lanes) = lanes {
            executor.adopt_lanes(lanes, &rows)?;
        }
        Ok(executor)
    }

    /// The approvals of this store's runs, as people and waiting edges reach them.
    #[must_use]
    pub fn approvals(&self) -> crate::approvals::Approvals {
        crate::approvals::Approvals::new(Arc::clone(&self.store), Arc::clone(&self.clock))
    }

    /// What a person should know of `run` at a glance, read from its records in one pass
    /// (see [`Attention`]).
    ///
    /// # Errors
    /// Store failures.
    pub fn attention(&self, tenant: &TenantId, run: &RunId) -> Result<Attention, RuntimeError> {
        let rows = self.store.rows(tenant, run)?;
        let now = self.clock.now();
        let mut attention = Attention {
            unresolved: Unresolved::from_rows(&rows).iter().count(),
            waiting: crate::approvals::ApprovalBook::from_rows(&rows)
                .iter()
                .filter(|a| a.state(now) == crate::approvals::ApprovalState::Pending)
                .count(),
            ..Attention::default()
        };
        for row in &rows {
            let Ok(record) = row else {
                attention.unreadable += 1;
                continue;
            };
            if let Some(boundary) = &record.boundary {
                attention.boundaries += 1;
                if CONTINUITY_EVENTS.contains(&boundary.event.as_str()) {
                    attention.continuity = Some((
                        record.step_index,
                        boundary.event.clone(),
                        boundary.reason.clone(),
                    ));
                }
            }
            if record
                .admission
                .as_ref()
                .is_some_and(|a| a.decision == AllowDeny::Allow)
            {
                attention.admitted += 1;
            }
            if let Some(admission) = &record.admission
                && admission.decision == AllowDeny::Deny
            {
                let held = admission
                    .rule_ids
                    .iter()
                    .any(|rule| rule.as_str() == crate::approvals::rules::PENDING);
                if held {
                    attention.held += 1;
                } else {
                    attention.denials += 1;
                }
            }
        }
        Ok(attention)
    }

    /// The side effects of `run` awaiting reconciliation, read from its records.
    ///
    /// # Errors
    /// Store failures.
    pub fn unresolved(&self, tenant: &TenantId, run: &RunId) -> Result<Unresolved, RuntimeError> {
        Ok(Unresolved::from_rows(&self.store.rows(tenant, run)?))
    }

    /// The step of the latest call of `tool` the gate admitted in `run` — the best evidence
    /// of which step a report belongs to when the caller lost track of it.
    ///
    /// # Errors
    /// Store failures.
    pub fn latest_admitted(
        &self,
        tenant: &TenantId,
        run: &RunId,
        tool: &str,
    ) -> Result<Option<u64>, RuntimeError> {
        let rows = self.store.rows(tenant, run)?;
        Ok(rows
            .iter()
            .rev()
            .filter_map(|row| row.as_ref().ok())
            .find(|record| {
                record
                    .tool
                    .as_ref()
                    .is_some_and(|t| t.name.as_str() == tool)
                    && record
                        .admission
                        .as_ref()
                        .is_some_and(|a| a.decision == AllowDeny::Allow)
            })
            .map(|record| record.step_index))
    }
}

fn too_many_runs(base: &str) -> RuntimeError {
    RuntimeError::InvalidInput {
        field: "run",
        reason: format!("session `{base}` has more than {MAX_GENERATIONS} closed runs"),
    }
}
