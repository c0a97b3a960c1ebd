//! The run recorder: the one writer of a run's records.
//!
//! It assigns step indexes, chains records, digests arguments and observations, keeps raw
//! content in the content store when retention allows, commits with the chosen durability
//! (I-6), and closes the run with a terminal record and a signed checkpoint in one atomic
//! commit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::canonical::jcs_value;
use cairn_core::{Clock, Digest, LaneId, RunId, TaskId, TenantId};
use cairn_ledger::checkpoint::{Checkpoint, SignedCheckpoint, sign};
use cairn_ledger::keys::SigningKey;
use cairn_ledger::merkle::{RootBuilder, leaf_hash};
use cairn_ledger::record::{
    Admission, ArgsRef, BoundaryEvent, DraftEvent, Label, RecordDraft, SealedRecord, Termination,
    TerminationReason, ToolRef,
};
use cairn_ledger::store::{Commit, ContentItem, EnvelopeItem, RunMeta};
use cairn_ledger::{Store, StoreError};

use crate::error::RuntimeError;

/// How long one record may keep finding its step taken by another writer, and be sealed
/// again at the run's new head, before the conflict is the caller's. Writers are not served
/// in order: one that appends without pause can keep winning, so the bound is a time, well
/// inside a hook's deadline, not a count.
pub const MAX_REBASE_TIME: Duration = Duration::from_secs(5);

/// When a record becomes durable (I-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Each record is committed (fsynced) before the call it describes may execute. Several
    /// writers may append to one run: a writer whose step another took first resumes from
    /// the run's head and commits the record as the next step (see [`Recorder::rebases`]).
    Sync,
    /// Group commit: records are committed together when `max_records` are waiting or the
    /// oldest has waited `max_delay`, and always before a boundary or the terminal record.
    Batch {
        /// Commit when this many records wait.
        max_records: usize,
        /// Commit when the oldest waiting record is this old (checked on every append).
        max_delay: Duration,
    },
}

impl Durability {
    /// The default batch window: 512 records or 20 ms.
    pub const DEFAULT_BATCH: Self = Self::Batch {
        max_records: 512,
        max_delay: Duration::from_millis(20),
    };
}

impl std::str::FromStr for Durability {
    type Err = RuntimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "sync" => Ok(Self::Sync),
            "batch" => Ok(Self::DEFAULT_BATCH),
            other => Err(RuntimeError::InvalidInput {
                field: "durability",
                reason: format!("expected `sync` or `batch`, got `{other}`"),
            }),
        }
    }
}

/// How the recorder behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecorderOptions {
    /// When records become durable.
    pub durability: Durability,
    /// How long raw arguments and observations are kept in the content store; `None` keeps
    /// nothing (the structural records are kept regardless).
    pub content_retention: Option<jiff::SignedDuration>,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Sync,
            content_retention: Some(jiff::SignedDuration::from_hours(24 * 7)),
        }
    }
}

/// What the executor is about to call.
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    /// The concrete capability.
    pub tool: ToolRef,
    /// The arguments exactly as submitted (usually JSON text). Hashed, sized, and kept only
    /// in the content store; never written into a structural record.
    pub args: &'a [u8],
    /// The lane the call is made in, if lanes are configured.
    pub lane: Option<LaneId>,
}

/// What waited for a batch commit, copied out of its writer ([`Recorder::waiting_copy`]).
#[derive(Debug, Clone)]
pub struct WaitingCopy {
    first: Digest,
    records: Vec<SealedRecord>,
    content: Vec<ContentItem>,
}

impl WaitingCopy {
    /// How many records it holds.
    #[must_use]
    pub fn records(&self) -> usize {
        self.records.len()
    }

    /// The commit that makes it durable.
    #[must_use]
    pub fn commit(&self) -> Commit<'_> {
        Commit {
            records: &self.records,
            content: &self.content,
            checkpoint_note: None,
            envelope: None,
        }
    }
}

/// Where a record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    /// Its step index.
    pub step_index: u64,
    /// Its digest.
    pub digest: Digest,
}

/// A closed run: its terminal record and the signed checkpoint.
#[derive(Debug, Clone)]
pub struct ClosedRun {
    /// Where the terminal record landed.
    pub terminal: Receipt,
    /// The signed checkpoint over every record of the run.
    pub checkpoint: SignedCheckpoint,
}

/// The single writer of one run.
pub struct Recorder {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    options: RecorderOptions,
    tenant: TenantId,
    run: RunId,
    task: TaskId,
    next_index: u64,
    head: Option<Digest>,
    tree: RootBuilder,
    pending: Vec<SealedRecord>,
    pending_content: Vec<ContentItem>,
    oldest_pending: Option<Instant>,
    observation: Option<Digest>,
    rebases: u64,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("tenant", &self.tenant)
            .field("run", &self.run)
            .field("next_index", &self.next_index)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Opens a new run and returns its writer.
    ///
    /// # Errors
    /// [`StoreError::RunExists`] (as [`RuntimeError::Store`]) if the run id is taken.
    pub fn open(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        meta: (TenantId, TaskId, RunId),
        options: RecorderOptions,
    ) -> Result<Self, RuntimeError> {
        let (tenant, task, run) = meta;
        store.open_run(&RunMeta {
            tenant_id: tenant.clone(),
            run_id: run.clone(),
            task_id: task.clone(),
            opened_at: clock.now(),
        })?;
        tracing::debug!(tenant = %tenant, run = %run, task = %task, "run opened");
        Ok(Self::new(store, clock, options, tenant, task, run))
    }

    /// Resumes writing an existing, unterminated run (a new process after a restart).
    ///
    /// # Errors
    /// [`StoreError::RunNotFound`] or [`StoreError::RunTerminated`].
    pub fn resume(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        tenant: &TenantId,
        run: &RunId,
        options: RecorderOptions,
    ) -> Result<Self, RuntimeError> {
        let point = store
            .resume_point(tenant, run)?
            .ok_or_else(|| StoreError::RunNotFound { run: run.clone() })?;
        if point.info.terminated() {
            return Err(StoreError::RunTerminated { run: run.clone() }.into());
        }
        let mut recorder = Self::new(
            store,
            clock,
            options,
            tenant.clone(),
            point.info.meta.task_id,
            run.clone(),
        );
        recorder.next_index = point.tree.len();
        recorder.head = point.head;
        recorder.tree = point.tree;
        Ok(recorder)
    }

    fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        options: RecorderOptions,
        tenant: TenantId,
        task: TaskId,
        run: RunId,
    ) -> Self {
        Self {
            store,
            clock,
            options,
            tenant,
            run,
            task,
            next_index: 0,
            head: None,
            tree: RootBuilder::new(),
            pending: Vec::new(),
            pending_content: Vec::new(),
            oldest_pending: None,
            observation: None,
            rebases: 0,
        }
    }

    /// The store the run is written to.
    #[must_use]
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The run being written.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run
    }

    /// The tenant of the run.
    #[must_use]
    pub const fn tenant_id(&self) -> &TenantId {
        &self.tenant
    }

    /// The task of the run.
    #[must_use]
    pub const fn task_id(&self) -> &TaskId {
        &self.task
    }

    /// The index the next record will get.
    #[must_use]
    pub const fn next_step(&self) -> u64 {
        self.next_index
    }

    /// The digest of the latest observation, which the next step records.
    #[must_use]
    pub const fn current_observation(&self) -> Option<Digest> {
        self.observation
    }

    /// Carries the digest of an observation recorded by an earlier writer of the same run —
    /// another process, such as a hook that saw the previous tool's result — so that the
    /// next record names it. Its bytes were kept (or not) when it was first observed.
    pub const fn carry_observation(&mut self, digest: Option<Digest>) {
        self.observation = digest;
    }

    /// Records what the model is shown next (a tool result, a user message, a denial):
    /// `H(canonical_json(observation))` becomes the next step's `observation_digest`, and the
    /// canonical bytes go to the content store if retention allows.
    ///
    /// # Errors
    /// [`RuntimeError::Core`] if the value cannot be canonicalised.
    pub fn observe(&mut self, observation: &serde_json::Value) -> Result<Digest, RuntimeError> {
        let bytes = jcs_value(observation)?;
        let digest = Digest::of(&bytes);
        self.keep_content(digest, bytes);
        self.observation = Some(digest);
        Ok(digest)
    }

    /// Records a gate decision for a tool call. With [`Durability::Sync`] the record is
    /// durable when this returns, so the caller may execute an allowed call afterwards.
    ///
    /// # Errors
    /// Store failures (nothing is executed then: the caller must treat it as a deny).
    pub fn record_step(
        &mut self,
        call: &ToolCall<'_>,
        admission: Admission,
    ) -> Result<Receipt, RuntimeError> {
        self.record_step_by(call, admission, None)
    }

    /// [`Recorder::record_step`] for a call `agent` made — a host's subagent, not the run's
    /// main agent — which the record names.
    ///
    /// # Errors
    /// As [`Recorder::record_step`].
    pub fn record_step_by(
        &mut self,
        call: &ToolCall<'_>,
        admission: Admission,
        agent: Option<Label>,
    ) -> Result<Receipt, RuntimeError> {
        let (event, digest) = self.step_draft(call, admission, agent);
        let receipt = self.append(event, call.lane.clone())?;
        tracing::debug!(
            run = %self.run,
            step = receipt.step_index,
            tool = %call.tool.name,
            args_digest = %digest,
            "step recorded"
        );
        Ok(receipt)
    }

    /// Records a step together with the boundary records that belong to it — `before` it
    /// (an approval's use, which names the step it admits) and `after` it (the request a
    /// held step raised, which names the held step) — in one atomic commit with everything
    /// waiting: none of them is durable without the others. Each event's `approval.step` is
    /// set to the step's index. Another writer's step taken first is the caller's conflict
    /// (nothing is rebased: the decision was taken on the run as it was).
    ///
    /// # Errors
    /// Store failures (nothing of it is then written).
    pub fn record_step_with(
        &mut self,
        call: &ToolCall<'_>,
        admission: Admission,
        agent: Option<Label>,
        before: Option<BoundaryEvent>,
        after: Option<BoundaryEvent>,
    ) -> Result<Receipt, RuntimeError> {
        let (step, _) = self.step_draft(call, admission, agent);
        let saved = (
            self.next_index,
            self.head,
            self.tree.clone(),
            self.pending.len(),
        );
        let step_index = self.next_index + u64::from(before.is_some());
        let with_step = |mut event: BoundaryEvent| {
            if let Some(approval) = event.approval.as_mut() {
                approval.step = Some(step_index);
            }
            DraftEvent::Boundary(event)
        };
        let drafts = before
            .map(with_step)
            .into_iter()
            .chain(std::iter::once(step))
            .chain(after.map(with_step));
        let mut receipt = None;
        for draft in drafts {
            let is_step = matches!(draft, DraftEvent::Step { .. });
            let record = match self.seal(draft, call.lane.clone()) {
                Ok(record) => record,
                Err(e) => {
                    self.restore(saved);
                    return Err(e);
                }
            };
            let sealed = Receipt {
                step_index: record.record().step_index,
                digest: record.record().digest,
            };
            self.pending.push(record);
            self.advance(sealed);
            if is_step {
                receipt = Some(sealed);
            }
        }
        let committed = self.store.append(&Commit {
            records: &self.pending,
            content: &self.pending_content,
            checkpoint_note: None,
            envelope: None,
        });
        match (committed, receipt) {
            (Ok(()), Some(receipt)) => {
                self.waiting_committed();
                Ok(receipt)
            }
            (Err(e), _) => {
                self.restore(saved);
                Err(e.into())
            }
            (Ok(()), None) => Err(RuntimeError::InvalidInput {
                field: "step",
                reason: "no step was sealed".to_owned(),
            }),
        }
    }

    /// A step's draft, its arguments' digest, and their bytes kept under the retention.
    fn step_draft(
        &mut self,
        call: &ToolCall<'_>,
        admission: Admission,
        agent: Option<Label>,
    ) -> (DraftEvent, Digest) {
        let digest = Digest::of(call.args);
        if self.options.content_retention.is_some() {
            self.keep_content(digest, call.args.to_vec());
        }
        let event = DraftEvent::Step {
            tool: call.tool.clone(),
            args: ArgsRef {
                digest,
                size: call.args.len() as u64,
            },
            admission,
            agent,
        };
        (event, digest)
    }

    /// Takes back what [`Recorder::record_step_with`] sealed but could not commit.
    fn restore(&mut self, saved: (u64, Option<Digest>, RootBuilder, usize)) {
        let (next_index, head, tree, pending) = saved;
        self.next_index = next_index;
        self.head = head;
        self.tree = tree;
        self.pending.truncate(pending);
    }

    /// The recorder's clock's reading now.
    #[must_use]
    pub fn now(&self) -> cairn_core::Timestamp {
        self.clock.now()
    }

    /// Records a boundary event. Everything waiting is committed first and the boundary
    /// record itself is committed before this returns, whatever the durability mode.
    ///
    /// # Errors
    /// Store failures.
    pub fn record_boundary(
        &mut self,
        event: BoundaryEvent,
        lane: Option<LaneId>,
    ) -> Result<Receipt, RuntimeError> {
        let receipt = self.append(DraftEvent::Boundary(event), lane)?;
        self.flush()?;
        Ok(receipt)
    }

    /// Records a boundary event together with the continuity envelope it saves, in one atomic
    /// commit with everything waiting: the envelope can never exist without its record, nor
    /// the record without its envelope. The record should carry the envelope's id and digest.
    ///
    /// # Errors
    /// Store failures (nothing of it is then written).
    pub fn record_boundary_with_envelope(
        &mut self,
        event: BoundaryEvent,
        lane: Option<LaneId>,
        envelope: EnvelopeItem<'_>,
    ) -> Result<Receipt, RuntimeError> {
        let record = self.seal(DraftEvent::Boundary(event), lane)?;
        let receipt = Receipt {
            step_index: record.record().step_index,
            digest: record.record().digest,
        };
        self.pending.push(record);
        let result = self.store.append(&Commit {
            records: &self.pending,
            content: &self.pending_content,
            checkpoint_note: None,
            envelope: Some(envelope),
        });
        if let Err(e) = result {
            self.pending.pop();
            return Err(e.into());
        }
        self.pending.clear();
        self.pending_content.clear();
        self.oldest_pending = None;
        self.advance(receipt);
        Ok(receipt)
    }

    /// When the oldest record still waiting for a batch commit was appended; `None` when
    /// nothing waits (always, in `sync` mode). A long-lived caller flushes a writer whose
    /// records have waited past the batch window and nothing else came to commit them.
    #[must_use]
    pub const fn waiting_since(&self) -> Option<Instant> {
        self.oldest_pending
    }

    /// How many records wait for a batch commit.
    #[must_use]
    pub fn waiting_records(&self) -> usize {
        self.pending.len()
    }

    /// Commits every waiting record, or keeps the waiting content when no record waits (a
    /// failure to keep content alone is logged, and the content waits for the next commit).
    ///
    /// # Errors
    /// Store failures of a record commit; the records stay waiting and a later flush retries
    /// them.
    pub fn flush(&mut self) -> Result<(), RuntimeError> {
        if let Some(commit) = self.waiting_commit() {
            self.store.append(&commit)?;
            self.waiting_committed();
        } else if !self.pending_content.is_empty() {
            // Content whose digest no record carries yet (what the model was shown after the
            // last call): kept now, for the record that will carry it. It is a copy for
            // investigators — the chain holds its digest — so a store that cannot keep it
            // now does not fail the caller's bookkeeping: it waits for the next commit.
            match self
                .store
                .keep_content(&self.tenant, &self.run, &self.pending_content)
            {
                Ok(()) => self.pending_content.clear(),
                Err(e) => {
                    tracing::warn!(run = %self.run, error = %e, "content not kept yet; retried with the next commit");
                }
            }
        }
        Ok(())
    }

    /// The commit that would make the waiting records durable, for a caller that commits
    /// several writers' records together ([`Store::append_group`]) and then calls
    /// [`Recorder::waiting_committed`]; `None` when no record waits (content alone waits for
    /// the record that carries its digest, or for [`Recorder::flush`]).
    #[must_use]
    pub fn waiting_commit(&self) -> Option<Commit<'_>> {
        if self.pending.is_empty() {
            return None;
        }
        Some(Commit {
            records: &self.pending,
            content: &self.pending_content,
            checkpoint_note: None,
            envelope: None,
        })
    }

    /// Notes that the commit [`Recorder::waiting_commit`] gave was made durable.
    pub fn waiting_committed(&mut self) {
        self.pending.clear();
        self.pending_content.clear();
        self.oldest_pending = None;
    }

    /// A copy of what waits for a batch commit, for a caller that makes it durable without
    /// holding this writer (more records may wait by then), and that no one else commits
    /// meanwhile; then [`Recorder::committed_copy`].
    #[must_use]
    pub fn waiting_copy(&self) -> Option<WaitingCopy> {
        let first = self.pending.first()?.record().digest;
        Some(WaitingCopy {
            first,
            records: self.pending.clone(),
            content: self.pending_content.clone(),
        })
    }

    /// Notes that `copy` was made durable: its records and content stop waiting, and what
    /// was appended since still waits. Nothing changes when the records waiting are no longer
    /// the copy's.
    pub fn committed_copy(&mut self, copy: &WaitingCopy) {
        if self.pending.first().map(|r| r.record().digest) != Some(copy.first) {
            return;
        }
        self.pending
            .drain(..copy.records.len().min(self.pending.len()));
        self.pending_content
            .drain(..copy.content.len().min(self.pending_content.len()));
        self.oldest_pending = (!self.pending.is_empty()).then(Instant::now);
    }

    /// Closes the run: writes the terminal record and the checkpoint signed by `key` over
    /// every record, in one atomic commit with anything still waiting.
    ///
    /// # Errors
    /// Store or signing failures; the run then stays open and can be closed again.
    pub fn terminate(
        mut self,
        reason: TerminationReason,
        detail: Option<Label>,
        key: &SigningKey,
    ) -> Result<ClosedRun, RuntimeError> {
        let record = self.seal(DraftEvent::Terminal(Termination { reason, detail }), None)?;
        let receipt = Receipt {
            step_index: record.record().step_index,
            digest: record.record().digest,
        };
        let mut tree = self.tree.clone();
        tree.push(leaf_hash(receipt.digest.as_bytes()));
        let checkpoint = Checkpoint {
            origin: Checkpoint::origin_for(&self.tenant, &self.run),
            size: tree.len(),
            root: tree.root(),
        };
        let signed = sign(&checkpoint, key)?;
        let mut records = std::mem::take(&mut self.pending);
        records.push(record);
        let result = self.store.append(&Commit {
            records: &records,
            content: &self.pending_content,
            checkpoint_note: Some(signed.note()),
            envelope: None,
        });
        if let Err(e) = result {
            records.pop();
            self.pending = records;
            return Err(e.into());
        }
        self.pending_content.clear();
        tracing::debug!(run = %self.run, records = checkpoint.size, reason = %reason, "run closed");
        Ok(ClosedRun {
            terminal: receipt,
            checkpoint: signed,
        })
    }

    /// Keeps `bytes`, whose digest is `digest`, in the content store under the run's
    /// retention (nothing when retention is off), committed with the next record.
    pub(crate) fn keep_content(&mut self, digest: Digest, bytes: Vec<u8>) {
        if let Some(retention) = self.options.content_retention {
            let now = self.clock.now();
            self.pending_content.push(ContentItem {
                digest,
                bytes,
                stored_at: now,
                expires_at: now.saturating_add(retention),
            });
        }
    }

    fn seal(
        &mut self,
        event: DraftEvent,
        lane: Option<LaneId>,
    ) -> Result<SealedRecord, RuntimeError> {
        let draft = RecordDraft {
            tenant_id: self.tenant.clone(),
            run_id: self.run.clone(),
            task_id: self.task.clone(),
            event,
            lane_id: lane,
            observation_digest: self.observation,
            recorded_at: self.clock.now(),
        };
        Ok(SealedRecord::seal(draft, self.next_index, self.head)?)
    }

    fn append(&mut self, event: DraftEvent, lane: Option<LaneId>) -> Result<Receipt, RuntimeError> {
        let record = self.seal(event, lane)?;
        let receipt = Receipt {
            step_index: record.record().step_index,
            digest: record.record().digest,
        };
        match self.options.durability {
            Durability::Sync => return self.commit_now(record),
            Durability::Batch {
                max_records,
                max_delay,
            } => {
                self.pending.push(record);
                self.advance(receipt);
                // The record is held either way; if this commit fails, the next flush retries
                // it (and the error tells the caller that it is not yet durable).
                let oldest = *self.oldest_pending.get_or_insert_with(Instant::now);
                if self.pending.len() >= max_records || oldest.elapsed() >= max_delay {
                    self.flush()?;
                }
            }
        }
        Ok(receipt)
    }

    /// Commits `record` before returning its receipt. When another writer of the run took the
    /// step first — two hosts, or two service replicas, appending to one run — the record was
    /// not written: the writer resumes from the run's new head and seals the same record again
    /// as the next step ([`SealedRecord::rechain`]), for up to [`MAX_REBASE_TIME`] — as long as
    /// the other writers only recorded steps; after a boundary or anything else that may
    /// change a decision, the conflict is returned and the call is not admitted, and this
    /// writer stays where it was: the caller resumes the run (`Recorder::resume`, as each hook
    /// call does) to decide again on what the store holds. A receipt is only ever given for
    /// the step the record was committed at.
    fn commit_now(&mut self, mut record: SealedRecord) -> Result<Receipt, RuntimeError> {
        let started = Instant::now();
        let mut lost = 0_u32;
        loop {
            let receipt = Receipt {
                step_index: record.record().step_index,
                digest: record.record().digest,
            };
            self.pending.push(record);
            let error = match self.flush() {
                Ok(()) => {
                    self.advance(receipt);
                    return Ok(receipt);
                }
                Err(error) => error,
            };
            // Not acknowledged: take it back, so that the step index can be reused.
            let Some(unwritten) = self.pending.pop() else {
                return Err(error);
            };
            let lost_the_step = matches!(
                error,
                RuntimeError::Store(StoreError::Conflict { .. } | StoreError::NonContiguous { .. })
            );
            if !lost_the_step || started.elapsed() >= MAX_REBASE_TIME {
                return Err(error);
            }
            lost += 1;
            self.rebases += 1;
            // A short, growing, jittered pause, so that writers who lost together do not meet
            // again in lock-step.
            std::thread::sleep(backoff(lost));
            self.rebase()?;
            record = unwritten.rechain(self.next_index, self.head)?;
        }
    }

    /// Moves this writer to the run's head as the store has it now.
    fn rebase(&mut self) -> Result<(), RuntimeError> {
        let point = self
            .store
            .resume_point(&self.tenant, &self.run)?
            .ok_or_else(|| StoreError::RunNotFound {
                run: self.run.clone(),
            })?;
        if point.info.terminated() {
            return Err(StoreError::RunTerminated {
                run: self.run.clone(),
            }
            .into());
        }
        // The caller decided this record on the run as it knew it. Other writers' steps do
        // not change that decision; anything else they wrote — a boundary (an unknown side
        // effect, a compaction), a lane change — might, so the conflict goes back to the
        // caller to decide again.
        for step in self.next_index..point.tree.len() {
            let plain_step = matches!(
                self.store.record(&self.tenant, &self.run, step)?,
                Some(Ok(record)) if record.kind == cairn_ledger::record::RecordKind::Step
            );
            if !plain_step {
                return Err(StoreError::Conflict {
                    run: self.run.clone(),
                    step,
                }
                .into());
            }
        }
        tracing::debug!(run = %self.run, from = self.next_index, to = point.tree.len(), "another writer appended first; resumed from the run's head");
        self.next_index = point.tree.len();
        self.head = point.head;
        self.tree = point.tree;
        Ok(())
    }

    /// How many times this writer found another writer had taken its step and resumed from
    /// the run's new head (see [`Durability::Sync`]).
    #[must_use]
    pub const fn rebases(&self) -> u64 {
        self.rebases
    }

    fn advance(&mut self, receipt: Receipt) {
        self.next_index += 1;
        self.head = Some(receipt.digest);
        self.tree.push(leaf_hash(receipt.digest.as_bytes()));
    }
}

/// The pause before the `lost`-th retry of one record: up to 2^min(lost, 6) · 50 µs, jittered.
fn backoff(lost: u32) -> Duration {
    let ceiling = 50_u64 << lost.min(6);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    Duration::from_micros(jitter % ceiling.max(1))
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Batch mode promises records are flushed before any boundary; dropping the writer is
        // one. A failure here cannot be returned, so it is logged.
        if let Err(e) = self.flush() {
            tracing::error!(run = %self.run, error = %e, "records lost when the recorder was dropped");
        }
    }
}
