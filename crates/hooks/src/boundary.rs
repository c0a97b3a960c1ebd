//! Compaction and the end of a session, as hooks see them.
//!
//! - `PreCompact`: the decision snapshot is written (`.cairn/decisions/snapshots/<session>.json`,
//!   through `cairn_runtime::decision_files`) and its digest bound into the chain by a
//!   `decision_snapshot` record; when it cannot be written, a `continuity_evidence_missing`
//!   record says so and the user is told. It never blocks the compaction (always exit 0).
//! - `PostCompact`: `Executor::compact` saves the envelope with its `context_compaction`
//!   record — once per compaction — binding the digest of the summary the host sent (Claude
//!   Code sends it; Codex does not, so its compactions bind the empty summary and are reported
//!   as unbound) and the trigger `PreCompact` named. A compaction seen without its
//!   `PreCompact` had no snapshot: `continuity_evidence_missing` when the project has
//!   decisions.
//! - `SessionStart` with `source: "compact"` hands the model the authoritative context, once
//!   per compaction, blocks first. Claude Code sends it *before* `PostCompact`: the context is
//!   built then from the durable record as it stands (saying the summary's digest is still to
//!   be bound) and nothing is recorded until `PostCompact`; Codex sends it after. The
//!   rehydration — `Executor::rehydrate` (the envelope from the store, never the summary) and
//!   the decision comparison — runs at the next event, and the model is told again only when
//!   it brings news (validation failed, a block cleared). A compaction shown but never
//!   followed by its `PostCompact` is recorded, unbound, at the next other event.
//! - `SessionEnd` closes the run: terminal record and signed checkpoint, after the calls
//!   still without an outcome are recorded as unknown and a due rehydration has run. `Stop`
//!   does not close it: it ends a turn, not the session, and Claude Code fires it after every
//!   answer — closing the run there would end the ledger while the session goes on. A run
//!   with a side effect still awaiting reconciliation is not closed (closing it would make
//!   `cairn reconcile` impossible); it stays listed by `cairn runs list --unterminated`.
//! - A session resumed after its run was closed continues in the next run, linked to it
//!   (`session_resumed`); decision snapshots are named after the session, so the baseline
//!   carries over.
//!
//! # Session facts
//!
//! The envelope's facts come from the project and the session: principal
//! `agent:claude-code` / `agent:codex` (or `principal_id`), authorization mode
//! `platform_owned` (or as configured, with the delegation), the capability in flight = the
//! last tool admitted before the boundary (`none` before any), version `unversioned`, the
//! approval in force (the runtime reads it from the run's records: at the compaction the one
//! active then, after it the live state of the one the envelope carried), the objective
//! (`objective` in `.cairn/hooks.json`, else the active lane's, else a placeholder), the constraint references `decision:<key>@r<revision>` of the decision book
//! and `lane:<id>`, and the unresolved idempotency keys as pending obligations. Rehydration
//! compares with the same facts, so only the durable state (policy version, side effects,
//! approvals,
//! checkpoint, summary digest) can make it fail.

use cairn_core::{ErrorCode, Timestamp};
use cairn_runtime::Executor;
use cairn_runtime::boundary::SessionFacts;
use cairn_runtime::continuity::ContinuityStatus;
use cairn_runtime::decision_files::DecisionFiles;
use cairn_runtime::decisions::{Comparison, DecisionState};
use cairn_runtime::envelopes::load_bound_envelope;
use cairn_runtime::keyring::Keyring;
use cairn_runtime::ledger::record::{BoundaryEvent, Label, TerminationReason};

use crate::answer::Answer;
use crate::context::{ContextFacts, DecisionLine, LaneLine, SummaryNote, render};
use crate::engine::Session;
use crate::error::HookError;
use crate::session::{Boundary, ContinuityNote, DecisionNote, Phase, SnapshotNote};
use crate::tools::Settle;
use cairn_runtime::restrictions::Restriction;

/// What became of the decision snapshot before a boundary.
enum Snap {
    NotConfigured,
    Written(cairn_core::Digest),
    Missing { code: &'static str, message: String },
}

/// `text` as a record label, or `fallback` when it is not one.
fn label_or(text: &str, fallback: &str) -> Result<Label, HookError> {
    Ok(Label::new(text).or_else(|_| Label::new(fallback))?)
}

/// The objective an envelope holds is at most 4096 bytes.
fn clip(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    text.get(..end).unwrap_or_default().to_owned()
}

impl Session<'_> {
    /// The project's decision files; for a service answering many tenants, the caller's
    /// tenant's own (the ones `/v1/decisions` sets and approves).
    fn decision_files(
        &self,
    ) -> Result<DecisionFiles, cairn_runtime::decision_files::DecisionFilesError> {
        match &self.env.namespace {
            Some(namespace) => {
                DecisionFiles::open_tenant(self.project.state(), &namespace.tenant, self.keys_dir())
            }
            None => DecisionFiles::open(self.project.state(), self.keys_dir()),
        }
    }

    /// Writes the decision snapshot for the boundary at `now` under `name`.
    fn snapshot_decisions(&self, name: &str, now: Timestamp) -> Snap {
        let files = match self.decision_files() {
            Ok(files) => files,
            Err(e) => {
                return Snap::Missing {
                    code: e.code(),
                    message: e.to_string(),
                };
            }
        };
        let missing = |code: &'static str, message: String| {
            // Best effort: the boundary record names no snapshot, so the comparison says
            // `continuity_evidence_missing` even if an older snapshot of this name exists.
            let _ = files.record_missing_snapshot(name, now);
            Snap::Missing { code, message }
        };
        let book = match files.book() {
            Ok(book) => book,
            Err(e) => return missing(e.code(), e.to_string()),
        };
        if book.is_empty() {
            return Snap::NotConfigured;
        }
        let snapshot = match files.boundary_snapshot(name, &book, now, self.config.decision_window)
        {
            Ok(snapshot) => snapshot,
            Err(e) => return missing(e.code(), e.to_string()),
        };
        match files.save_snapshot(name, &snapshot, now) {
            Ok(()) => Snap::Written(snapshot.digest()),
            Err(e) => missing(e.code(), e.to_string()),
        }
    }

    /// Starts a new boundary at `now`; with `snapshot`, the decision snapshot is taken (at
    /// `PreCompact`), else its absence is recorded when the project has decisions.
    fn begin_boundary(&mut self, trigger: &str, snapshot: bool) -> Result<Snap, HookError> {
        let now = self.now();
        // Snapshots are named after the session (its first run), not the current run: a
        // session resumed in a linked run compares with the same baseline.
        let name = self.base.clone();
        let snap = if snapshot {
            self.snapshot_decisions(&name, now)
        } else {
            let configured = self
                .decision_files()
                .and_then(|f| f.book())
                .map_or(true, |book| !book.is_empty());
            if configured {
                if let Ok(files) = self.decision_files() {
                    let _ = files.record_missing_snapshot(&name, now);
                }
                Snap::Missing {
                    code: "no_pre_compact",
                    message: "the compaction was seen without its PreCompact event, so no decision snapshot was taken before it".to_owned(),
                }
            } else {
                Snap::NotConfigured
            }
        };
        self.state.boundary = Boundary {
            seq: self.state.boundary.seq.saturating_add(1),
            phase: Phase::Started,
            trigger: Some(trigger.to_owned()),
            at: Some(now),
            capability: self.state.last_tool.clone(),
            snapshot: match snap {
                Snap::NotConfigured => SnapshotNote::NotConfigured,
                Snap::Written(_) => SnapshotNote::Written,
                Snap::Missing { .. } => SnapshotNote::Missing,
            },
            summary_sha256: None,
            summary: None,
            summary_bound: false,
            unbound: false,
            shown: false,
            continuity: None,
        };
        let mut recorder = self.recorder()?;
        let event = match &snap {
            Snap::NotConfigured => None,
            Snap::Written(digest) => {
                let mut event = BoundaryEvent::new(Label::new("decision_snapshot")?);
                event.evidence_ref = Some(Label::new(format!("decision-snapshot:{digest}"))?);
                Some(event)
            }
            Snap::Missing { code, .. } => {
                let mut event = BoundaryEvent::new(Label::new("continuity_evidence_missing")?);
                event.reason = Some(label_or(code, "snapshot_not_written")?);
                Some(event)
            }
        };
        if let Some(mut event) = event {
            event.trigger = Some(label_or(trigger, "unknown")?);
            recorder.record_boundary(event, None)?;
        }
        recorder.flush()?;
        Ok(snap)
    }

    /// `PreCompact`: snapshot the decisions; never blocks.
    pub(crate) fn pre_compact(&mut self, trigger: &str) -> Result<Answer, HookError> {
        match self.begin_boundary(trigger, true)? {
            Snap::Missing { code, message } => {
                let name = &self.base;
                Ok(Answer::system_message(&format!(
                    "Cairn: the decision snapshot for this compaction could not be written (continuity_evidence_missing, {code}: {message}). Consequential tool calls will be refused after the compaction until the decisions are checked and the baseline re-established with `cairn decisions snapshot --name {name}`."
                ))
                .with_note(format!("cairn: continuity_evidence_missing: {code}: {message}")))
            }
            Snap::NotConfigured | Snap::Written(_) => Ok(Answer::silent()),
        }
    }

    /// Gemini CLI's `PreCompress`: it comes before every turn, whether a compaction follows
    /// or not, so it records nothing; it names the trigger of a compaction that follows
    /// ([`Self::model_request`] sees whether one did).
    pub(crate) fn compaction_may_follow(&mut self, trigger: &str) -> Answer {
        self.state.compress_trigger = Some(trigger.to_owned());
        Answer::silent()
    }

    /// Gemini CLI's `BeforeModel`: a history that starts from a summary not seen before is a
    /// compaction, just made. It is recorded as Claude Code's are — the decision snapshot
    /// (taken now: no tool ran since the compaction began, so the decisions are as they were
    /// before it), then the envelope with the summary bound — and the rehydration and the
    /// authoritative context follow at the next events (the context goes with the next
    /// `AfterTool` or `BeforeAgent`, the events whose answer the model reads). Never blocks.
    pub(crate) fn model_request(
        &mut self,
        summary: Option<&(String, usize)>,
    ) -> Result<Answer, HookError> {
        let Some((summary, after)) = summary else {
            return Ok(Answer::silent());
        };
        let digest = cairn_runtime::continuity::summary_sha256(summary);
        let after = u64::try_from(*after).unwrap_or(u64::MAX);
        let seen = self.state.seen_summary;
        self.state.seen_summary = Some((digest, after));
        if seen.is_some_and(|(known, before)| known == digest && after >= before) {
            return Ok(Answer::silent());
        }
        let trigger = self
            .state
            .compress_trigger
            .take()
            .unwrap_or_else(|| "auto".to_owned());
        let answer = self.pre_compact(&trigger)?;
        self.post_compact(&trigger, Some(summary))?;
        Ok(answer)
    }

    /// Copilot CLI's and Cursor's `PreCompact`: the one event of their compactions (no summary, nothing
    /// after; its summary request follows at once). The decisions are snapshotted and the
    /// compaction recorded now, unbound; the rehydration and the authoritative context follow
    /// at the next events. Never blocks.
    pub(crate) fn announced_compaction(&mut self, trigger: &str) -> Result<Answer, HookError> {
        let answer = self.pre_compact(trigger)?;
        self.post_compact(trigger, None)?;
        Ok(answer)
    }

    /// `PostCompact`: record the compaction, binding the summary; never blocks.
    pub(crate) fn post_compact(
        &mut self,
        trigger: &str,
        summary: Option<&str>,
    ) -> Result<Answer, HookError> {
        match self.state.boundary.phase {
            Phase::Started => self.compact(trigger, summary)?,
            // Recorded, unbound, before this event arrived (another event came between the
            // compaction and its `PostCompact`): a summary is bound now by a second envelope;
            // without one there is nothing to add.
            Phase::Compacted | Phase::Rehydrated if self.state.boundary.unbound => {
                if summary.is_some() {
                    self.compact(trigger, summary)?;
                }
            }
            // A compaction whose `PreCompact` was not seen.
            Phase::Idle | Phase::Compacted | Phase::Rehydrated => {
                self.begin_boundary(trigger, false)?;
                self.compact(trigger, summary)?;
            }
        }
        Ok(Answer::silent())
    }

    /// Records the compaction (envelope + `context_compaction`) with `summary` bound. The
    /// trigger is the one `PreCompact` sent (`manual`, `auto`), else the one `PostCompact` did.
    fn compact(&mut self, trigger: &str, summary: Option<&str>) -> Result<(), HookError> {
        let trigger = self
            .state
            .boundary
            .trigger
            .clone()
            .unwrap_or_else(|| trigger.to_owned());
        let gate = self.policy_gate()?;
        let mut executor = self.executor(gate)?;
        let facts = self.facts(&executor);
        executor.compact(
            &facts,
            summary.unwrap_or(""),
            label_or(&trigger, "unknown")?.as_str(),
        )?;
        self.state.observation = executor.recorder().current_observation();
        let boundary = &mut self.state.boundary;
        boundary.phase = Phase::Compacted;
        boundary.unbound = summary.is_none();
        // Only the digest is kept until rehydration; the text went to the content store.
        boundary.summary_sha256 = Some(cairn_runtime::continuity::summary_sha256(
            summary.unwrap_or(""),
        ));
        boundary.summary_bound = summary.is_some();
        Ok(())
    }

    /// A compaction begun and shown to the model (Claude Code's `SessionStart(compact)`)
    /// whose `PostCompact` has not come before another event: recorded now, unbound (a late
    /// `PostCompact` still binds its summary).
    pub(crate) fn settle_unrecorded_compaction(&mut self) -> Result<(), HookError> {
        let boundary = &self.state.boundary;
        if boundary.phase == Phase::Started && boundary.shown {
            let trigger = boundary
                .trigger
                .clone()
                .unwrap_or_else(|| "unknown".to_owned());
            self.compact(&trigger, None)?;
        }
        Ok(())
    }

    /// `SessionStart`: after a compaction, hand the model the authoritative context.
    ///
    /// Hosts differ in the order of a compaction's events: Claude Code sends `PreCompact`,
    /// then `SessionStart(compact)`, then `PostCompact` with the summary; Codex sends
    /// `PreCompact`, `PostCompact` (no summary), then `SessionStart(compact)`. Either way one
    /// compaction gives one `context_compaction` record — written at `PostCompact`, bound to
    /// the summary the host sent — and one rehydration, and the model is shown the context
    /// once: at `SessionStart(compact)`, built from the durable record as it stands (before
    /// `PostCompact` it says the summary's digest is still to be bound, which is true).
    pub(crate) fn session_start(&mut self, source: &str) -> Result<Answer, HookError> {
        // A new process of the host (resumed, restarted, cleared): calls the previous one
        // admitted and never reported on are over — it was killed while they ran.
        let mut told = if source == "compact" {
            Vec::new()
        } else {
            self.settle_pending(&format!("session_start_{source}"), Settle::All)?
        };
        if source == "compact" {
            match self.state.boundary.phase {
                // The compaction's `PreCompact` was not seen: no snapshot was taken.
                Phase::Idle => {
                    self.begin_boundary("unknown", false)?;
                    self.show_before_summary()?;
                }
                Phase::Started => self.show_before_summary()?,
                Phase::Compacted | Phase::Rehydrated => {}
            }
        }
        self.rehydrate_standalone_if_due()?;
        if let Some(context) = self.state.context.take() {
            told.insert(0, context);
        }
        let answer = if told.is_empty() {
            Answer::silent()
        } else {
            Answer::context("SessionStart", &told.join("\n\n"))
        };
        // Without a signing key the session is gated and recorded, but its run can never be
        // closed with a signed checkpoint: say so now, not silently at `SessionEnd`.
        Ok(match Keyring::open(self.keys_dir()).active_signing_key() {
            Ok(_) => answer,
            Err(error) => {
                let line = format!(
                    "cairn: WARNING: no usable signing key (error[{}]: {error}); this session is gated and recorded, but its run cannot be closed with a signed checkpoint at SessionEnd and stays unterminated. Run `cairn keys generate` in the project.",
                    cairn_core::ErrorCode::code(&error)
                );
                if answer.stdout.is_some() {
                    answer.with_note(line)
                } else {
                    Answer::system_message(&line).with_note(line.clone())
                }
            }
        })
    }

    /// The context for a compaction whose summary has not arrived yet, from the durable
    /// record as it stands: blocks, decisions, lane, policy.
    fn show_before_summary(&mut self) -> Result<(), HookError> {
        let gate = self.policy_gate()?;
        let mut executor = self.executor(gate)?;
        let comparison = self.compare_decisions(self.now());
        let summary = if self.host.summary_follows_start() {
            SummaryNote::Pending
        } else {
            SummaryNote::NotSent
        };
        let text = self.context_text(&mut executor, comparison.as_ref(), summary, None);
        self.state.context = Some(text);
        self.state.boundary.shown = true;
        Ok(())
    }

    /// Rehydrates with an executor of its own when a compaction awaits it.
    pub(crate) fn rehydrate_standalone_if_due(&mut self) -> Result<(), HookError> {
        if self.state.boundary.phase != Phase::Compacted {
            return Ok(());
        }
        let gate = self.policy_gate()?;
        let mut executor = self.executor(gate)?;
        self.rehydrate(&mut executor)
    }

    /// Rehydrates on `executor` when a compaction awaits it.
    pub(crate) fn rehydrate_if_due(&mut self, executor: &mut Executor) -> Result<(), HookError> {
        if self.state.boundary.phase == Phase::Compacted {
            self.rehydrate(executor)?;
        }
        Ok(())
    }

    /// E-4 after the boundary, the decision comparison, and the context for the model.
    fn rehydrate(&mut self, executor: &mut Executor) -> Result<(), HookError> {
        let now = self.now();
        let tenant = executor.recorder().tenant_id().clone();
        let run = executor.recorder().run_id().clone();
        let note = if load_bound_envelope(executor.recorder_ref().store(), &tenant, &run)?.is_none()
        {
            ContinuityNote {
                status: "no_envelope".to_owned(),
                reason: "no_envelope".to_owned(),
            }
        } else {
            let facts = self.facts(executor);
            let summary = self
                .state
                .boundary
                .summary_sha256
                .unwrap_or_else(|| cairn_runtime::continuity::summary_sha256(""));
            let decision = executor.rehydrate_with_digest(&facts, &summary, now)?;
            ContinuityNote {
                status: decision.status().as_str().to_owned(),
                reason: decision.reason().as_str().to_owned(),
            }
        };
        let blocked = note.status == ContinuityStatus::BlockedOnReconciliation.as_str();
        let failed = note.status == ContinuityStatus::ContinuityValidationFailed.as_str();
        // The model is told after every compaction, once; again only when the decision for
        // this compaction changes (a block cleared by reconciliation) or validation failed.
        let boundary = &self.state.boundary;
        let tell = !boundary.shown
            || failed
            || boundary
                .continuity
                .as_ref()
                .is_some_and(|last| *last != note);
        self.state.continuity = Some(note.clone());
        self.state.boundary.continuity = Some(note);
        if !blocked {
            self.state.boundary.phase = Phase::Rehydrated;
            self.state.boundary.summary_sha256 = None;
        }
        let comparison = self.compare_decisions(now);
        if tell {
            let summary = if self.state.boundary.summary_bound {
                SummaryNote::Bound
            } else {
                SummaryNote::NotSent
            };
            let continuity = self
                .state
                .continuity
                .as_ref()
                .map(|c| (c.status.clone(), c.reason.clone()));
            self.state.context =
                Some(self.context_text(executor, comparison.as_ref(), summary, continuity));
            self.state.boundary.shown = true;
        }
        self.state.observation = executor.recorder().current_observation();
        Ok(())
    }

    /// The decision comparison for the latest boundary, when decisions were configured then.
    fn compare_decisions(&mut self, now: Timestamp) -> Option<Result<Comparison, String>> {
        if self.state.boundary.snapshot == SnapshotNote::NotConfigured {
            return None;
        }
        let result = self
            .decision_files()
            .and_then(|files| files.compare_now(Some(&self.base), now, self.config.decision_window))
            .map_err(|e| format!("{}: {e}", e.code()));
        self.state.decisions = Some(match &result {
            Ok(comparison) => DecisionNote {
                state: comparison.state().as_str().to_owned(),
                reason: comparison.reason().code().to_owned(),
                determining_key: comparison.determining_key().map(|k| k.as_str().to_owned()),
                restricts: comparison.state().restricts_consequential(),
            },
            Err(message) => DecisionNote {
                state: "unreadable".to_owned(),
                reason: message.clone(),
                determining_key: None,
                restricts: true,
            },
        });
        Some(result)
    }

    /// The decision invariants' restriction on consequential calls, recomputed now (a person
    /// may have approved a change or re-established the baseline since the last call).
    pub(crate) fn decision_restriction(&mut self) -> Result<Option<Restriction>, HookError> {
        let now = self.now();
        let name = self.base.clone();
        Ok(match self.compare_decisions(now) {
            None => None,
            Some(Ok(comparison)) => cairn_runtime::restrictions::decisions(&comparison, &name),
            Some(Err(message)) => Some(cairn_runtime::restrictions::decisions_unreadable(&message)),
        })
    }

    /// The session facts of the envelope (see the module documentation).
    fn facts(&self, executor: &Executor) -> SessionFacts {
        // Every executor of a session carries the project's lanes (`Session::executor`,
        // `pre_tool_use`): no second load here.
        let active = executor
            .lanes()
            .and_then(|book| book.active_lane().and_then(|id| book.lane(id)))
            .map(|lane| lane.spec().clone());
        let objective = self
            .config
            .objective
            .clone()
            .or_else(|| active.as_ref().map(|lane| lane.objective.clone()))
            .filter(|o| !o.trim().is_empty())
            .unwrap_or_else(|| {
                format!(
                    "the user's task in this {} session (no objective configured: set `objective` in .cairn/hooks.json)",
                    self.host.display_name()
                )
            });
        let mut refs: Vec<String> = self
            .decision_files()
            .and_then(|files| files.book())
            .map(|book| {
                book.current()
                    .map(|entry| format!("decision:{}@r{}", entry.key().as_str(), entry.revision()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(lane) = &active {
            refs.push(format!("lane:{}", lane.lane_id));
        }
        SessionFacts {
            session_id: clip(&self.session_id, 256),
            principal_id: self.principal(),
            authorization_mode: self.config.authorization_mode,
            delegated_principal_id: self.config.delegated_principal_id.clone(),
            delegated_scope: self.config.delegated_scope.clone(),
            capability_name: clip(
                self.state.boundary.capability.as_deref().unwrap_or("none"),
                256,
            ),
            capability_version: "unversioned".to_owned(),
            approval: None,
            objective: clip(&objective, 4096),
            exact_constraint_refs: refs,
            pending_obligations: executor
                .unresolved()
                .iter()
                .map(|(key, _)| format!("reconcile:{key}"))
                .collect(),
            sandbox_snapshot_ref: None,
            budget_remaining: None,
        }
    }

    /// The re-injected context after a rehydration.
    fn context_text(
        &self,
        executor: &mut Executor,
        comparison: Option<&Result<Comparison, String>>,
        summary: SummaryNote,
        continuity: Option<(String, String)>,
    ) -> String {
        let facts = self.facts(executor);
        let recorder = executor.recorder();
        let run_id = recorder.run_id().to_string();
        let run = format!("{}/{run_id}", recorder.tenant_id());
        let records = recorder.next_step();
        let mut blocks: Vec<String> = executor
            .unresolved()
            .iter()
            .map(|(key, tool)| {
                format!(
                    "a `{tool}` call's side effect has an unknown outcome (idempotency key `{key}`); do not retry it. Resolve: cairn reconcile --run {run_id} --key {key} --outcome applied|not_executed --evidence REF"
                )
            })
            .collect();
        let mut advice = approval_advice(executor, continuity.as_ref());
        let (decisions_state, decisions) = match comparison {
            None => (None, Vec::new()),
            Some(Err(message)) => {
                blocks.push(format!("the decision files cannot be read ({message})"));
                (Some(("unreadable".to_owned(), message.clone())), Vec::new())
            }
            Some(Ok(comparison)) => {
                if let Some(restriction) =
                    cairn_runtime::restrictions::decisions(comparison, &self.base)
                {
                    blocks.push(restriction.message);
                }
                let lines: Vec<DecisionLine> = comparison
                    .decisions()
                    .iter()
                    .map(|d| DecisionLine {
                        key: d.key().as_str().to_owned(),
                        revision: d.before().revision,
                        observed_revision: d
                            .after()
                            .and_then(|o| o.revision_ref())
                            .map(|r| r.revision),
                        state: d.state().as_str().to_owned(),
                        reason: d.reason().code().to_owned(),
                    })
                    .collect();
                let unverified: Vec<&str> = lines
                    .iter()
                    .filter(|l| l.state == DecisionState::Unverified.as_str())
                    .map(|l| l.key.as_str())
                    .collect();
                if !unverified.is_empty() {
                    advice.push(format!(
                        "decision(s) {} are unverified: nobody has re-asserted them since the compaction. Do not infer them from the summary; ask the user, who can confirm each with `cairn decisions set KEY VALUE`.",
                        unverified.join(", ")
                    ));
                }
                (
                    Some((
                        comparison.state().as_str().to_owned(),
                        comparison.reason().code().to_owned(),
                    )),
                    lines,
                )
            }
        };
        let lane = executor.lanes().and_then(|book| {
            let id = book.active_lane()?;
            let spec = book.lane(id)?.spec();
            Some(LaneLine {
                id: id.to_owned(),
                owner: spec.owner_ref.clone(),
                objective: spec.objective.clone(),
                status: book.status(id).map_or("unknown", |s| s.as_str()).to_owned(),
                ruling: book.ruling_ref(id).map(str::to_owned),
                allowed: spec.mutation_scope.allowed_refs.clone(),
                denied: spec.mutation_scope.denied_refs.clone(),
            })
        });
        render(&ContextFacts {
            run,
            records,
            compaction: self.state.boundary.seq,
            summary,
            continuity,
            objective: facts.objective,
            decisions_state,
            decisions,
            lane,
            policy_version: executor.gate().policy_set_version().map(|d| d.to_string()),
            blocks,
            advice,
        })
    }

    /// `SessionEnd`: close the run with its terminal record and signed checkpoint.
    pub(crate) fn session_end(&mut self, reason: &str) -> Result<Answer, HookError> {
        let (run, exists) = self.run_id()?;
        if !exists {
            return Ok(Answer::silent());
        }
        // A call still running when the session ends has an unknown outcome (a host sends
        // `SessionEnd` when it is stopped mid-call); then a compaction still to be checked is
        // checked before the run closes, so every compaction of a closed run has its
        // rehydration record.
        // (What was settled is reported by the note below: the run stays open.)
        self.settle_pending("session_end", Settle::All)?;
        self.settle_unrecorded_compaction()?;
        self.rehydrate_standalone_if_due()?;
        let tenant = self.tenant()?;
        let unresolved = self.runs()?.unresolved(&tenant, &run)?;
        if let Some((key, tool)) = unresolved.iter().next() {
            return Ok(Answer::note(format!(
                "cairn: run `{run}` stays open: a `{tool}` side effect (idempotency key `{key}`) awaits reconciliation (`cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF`); `cairn runs list --unterminated` lists it"
            )));
        }
        let key = Keyring::open(self.keys_dir())
            .active_signing_key()
            .map_err(cairn_runtime::RuntimeError::from)?;
        let recorder = self.recorder()?;
        let detail: String = reason
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            .take(64)
            .collect();
        let closed = recorder.terminate(
            TerminationReason::Completed,
            Some(label_or(&format!("session_end:{detail}"), "session_end")?),
            &key,
        )?;
        self.state.next_run();
        Ok(Answer::note(format!(
            "cairn: run `{run}` closed: {} records, signed checkpoint",
            closed.terminal.step_index.saturating_add(1)
        )))
    }
}

/// What the re-injected context says of the run's approvals, from its records: an approval
/// the envelope carried that did not survive the boundary, the approvals in force and the
/// requests waiting for a person — and that the summary grants nothing.
fn approval_advice(executor: &Executor, continuity: Option<&(String, String)>) -> Vec<String> {
    use cairn_runtime::approvals::{ApprovalBook, ApprovalState};
    let recorder = executor.recorder_ref();
    let Ok(rows) = recorder
        .store()
        .rows(recorder.tenant_id(), recorder.run_id())
    else {
        return vec!["the run's approvals cannot be read now: no approval is assumed".to_owned()];
    };
    let book = ApprovalBook::from_rows(&rows);
    let now = recorder.now();
    let mut advice = Vec::new();
    if let Some((_, reason)) = continuity
        && let Some(what) = match reason.as_str() {
            "approval_expired" => Some("expired"),
            "approval_revoked" => Some("was revoked"),
            "approval_not_active" => Some("is no longer active (used up, refused or pending)"),
            "approval_binding_changed" | "action_digest_changed" => Some("changed"),
            _ => None,
        }
    {
        advice.push(format!(
            "the approval carried across this compaction {what} ({reason}): it is not reused. A held call needs a person's approval again."
        ));
    }
    for approval in book.iter() {
        let request = &approval.request;
        match approval.state(now) {
            ApprovalState::Active => advice.push(format!(
                "approval {} is in force: it admits the `{}` call with exactly the approved arguments until {}.",
                request.id,
                request.tool.name,
                approval.expires_at().map(|t| t.to_string()).unwrap_or_default()
            )),
            ApprovalState::Pending => advice.push(format!(
                "request {} (a held `{}` call) waits for a person's decision.",
                request.id, request.tool.name
            )),
            _ => {}
        }
    }
    if book.iter().next().is_some() {
        advice.push("An approval exists only as Cairn records it: the summary saying that a person approved something grants nothing.".to_owned());
    }
    advice
}
