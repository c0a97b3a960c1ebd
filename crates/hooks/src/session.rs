//! A session's bookkeeping between hook invocations: `.cairn/sessions/<session>.json`
//! (`cairn.hook-session/v1`), guarded by an advisory lock on `<session>.lock`.
//!
//! Each hook invocation is a fresh process, and a host may run several at once (parallel
//! tool calls). Everything the ledger already holds is read back from the store; this file
//! only carries what no record holds yet:
//!
//! - the run the session currently writes (a session resumed after its run was closed gets
//!   a new run, `<run>.2`, `<run>.3`, …);
//! - `tool_use_id` → the step its `PreToolUse` was recorded as, so that `PostToolUse` can
//!   name the idempotency key (`<run>:<step>`) of a call whose outcome is unknown;
//! - the digest of the latest observation (the previous tool's result, a user prompt),
//!   which the next record names;
//! - the compaction in progress: its number, trigger, whether the decision snapshot was
//!   written, and — between `PostCompact` and the rehydration that checks it — the digest of
//!   the summary (never its text: the summary is user content, which goes only to the
//!   content store under the project's retention);
//! - what the model has still to be told (the re-injected context after a compaction).
//!
//! The file is a journal (mode 0600): each invocation appends the whole state as one JSON
//! line, under the lock, after the records it refers to are committed; the last complete line
//! is the state, and the journal is compacted into it now and then (it is read whole on every
//! call, so it is kept small: compacted past [`COMPACT_AT_BYTES`] or eight entries, whichever
//! is larger, so one compaction's two `fsync`s come at most every eighth call). Appending costs no
//! `fsync` and no rename — on a hook that runs on every tool call, the `fsync`s and the
//! rename of an atomically replaced file cost more than everything else together. The journal
//! survives a crash of the hook process or of the host (a torn last line is skipped); a power
//! loss may lose its last entries, which costs at most the observation link of one record and,
//! for a call in flight, the step its `PostToolUse` names (it then falls back to the latest
//! admitted step of the same tool). A journal with no valid entry is an error (a `PreToolUse`
//! is then denied, fail closed); deleting it starts the session's bookkeeping afresh without
//! touching the ledger.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_core::{Digest, Timestamp};
use serde::{Deserialize, Serialize};

use crate::error::HookError;

/// The state file's schema tag.
pub const STATE_SCHEMA_VERSION: &str = "cairn.hook-session/v1";
/// How long a hook waits for another hook process of the same session.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// How many in-flight tool calls are remembered (the oldest are forgotten first).
const MAX_PENDING_STEPS: usize = 512;
/// The largest state file read.
const MAX_STATE_BYTES: u64 = 4 << 20;

/// A call admitted by `PreToolUse`, waiting for its `PostToolUse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingStep {
    /// The step it was recorded as.
    pub step: u64,
    /// The tool.
    pub tool: String,
    /// Whether the tool is consequential.
    pub consequential: bool,
    /// The subagent that made the call, when not the main agent: its calls end with its
    /// `SubagentStop`, not with the main agent's `Stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// A call the host moved to the background before it ended (its outcome is recorded as
/// unknown), remembered by its task until the host reports the task's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundCall {
    /// The step it was recorded as.
    pub step: u64,
    /// The tool.
    pub tool: String,
    /// The host's id of the call, which the host's report of the task's end names too.
    pub tool_use_id: String,
}

/// Where the session is in the boundary protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// No compaction in progress.
    #[default]
    Idle,
    /// `PreCompact` ran: the snapshot was taken (or its absence recorded).
    Started,
    /// The compaction was recorded; rehydration is due.
    Compacted,
    /// Rehydration ran for the latest compaction.
    Rehydrated,
}

/// What became of the decision snapshot at the latest compaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotNote {
    /// No decisions are configured: nothing to watch.
    #[default]
    NotConfigured,
    /// Written before the boundary.
    Written,
    /// Could not be written (`continuity_evidence_missing`).
    Missing,
}

/// The latest compaction of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    /// How many compactions the session has had (1 for the first).
    pub seq: u64,
    /// Where the protocol stands.
    pub phase: Phase,
    /// `manual`, `auto`, …
    pub trigger: Option<String>,
    /// When `PreCompact` (or, without one, the compaction) happened.
    pub at: Option<Timestamp>,
    /// The capability in flight at the boundary (the last tool admitted), which the envelope
    /// records and rehydration compares with.
    pub capability: Option<String>,
    /// The decision snapshot.
    pub snapshot: SnapshotNote,
    /// The digest of the summary the envelope bound (`summary_sha256`), kept until
    /// rehydration has run.
    #[serde(default)]
    pub summary_sha256: Option<Digest>,
    /// The summary text, as journals written before it was kept by digest only held it:
    /// read so that it can be dropped, never written.
    #[serde(default, skip_serializing)]
    pub summary: Option<String>,
    /// Whether the host sent a summary whose digest the envelope bound.
    #[serde(default)]
    pub summary_bound: bool,
    /// Whether the compaction was recorded without a summary (Codex sends none; or the
    /// compaction had to be recorded before its `PostCompact` arrived, which then binds it).
    #[serde(default)]
    pub unbound: bool,
    /// Whether the model has been handed the authoritative context for this compaction
    /// (Claude Code's `SessionStart(compact)` comes before `PostCompact`: the context is
    /// handed over then, and the rehydration after `PostCompact` adds only what is new).
    #[serde(default)]
    pub shown: bool,
    /// The latest rehydration decision for this compaction (a blocked one is re-run at each
    /// event until it clears; the model is told again only when it changes).
    #[serde(default)]
    pub continuity: Option<ContinuityNote>,
}

/// The latest rehydration decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinuityNote {
    /// `reauthorization_required`, `blocked_on_reconciliation`,
    /// `continuity_validation_failed`, or `no_envelope`.
    pub status: String,
    /// The stable reason.
    pub reason: String,
}

/// The decision comparison at the latest rehydration (decision keys and states only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionNote {
    /// The continuity health of the set.
    pub state: String,
    /// Its reason code.
    pub reason: String,
    /// The decision that set it.
    pub determining_key: Option<String>,
    /// Whether consequential calls are denied because of it.
    pub restricts: bool,
}

/// The session's bookkeeping (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// [`STATE_SCHEMA_VERSION`].
    pub schema_version: String,
    /// The host's session id.
    pub session_id: String,
    /// Which run of the session is current: 1 for `<run>`, n for `<run>.n`.
    pub generation: u32,
    /// Calls admitted and not yet reported back, by the host's `tool_use_id`.
    pub steps: BTreeMap<String, PendingStep>,
    /// The digest of the latest observation, which the next record names.
    pub observation: Option<Digest>,
    /// The last tool admitted.
    pub last_tool: Option<String>,
    /// The latest compaction.
    pub boundary: Boundary,
    /// What the model has yet to be told after a compaction (the re-injected context),
    /// delivered by the next event whose answer can carry context.
    pub context: Option<String>,
    /// The latest rehydration decision.
    pub continuity: Option<ContinuityNote>,
    /// The latest decision comparison.
    pub decisions: Option<DecisionNote>,
    /// Whether a side effect of the current run may await reconciliation: `Some(false)` once
    /// the run's records showed none (so a `PreToolUse` need not read them again), set to
    /// `Some(true)` — and saved — before a hook records one; `None` when not known.
    #[serde(default)]
    pub unresolved_hint: Option<bool>,
    /// Calls moved to the background whose task has not reported its end, by task id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub background: BTreeMap<String, BackgroundCall>,
    /// The active lane the session's latest call was made in (empty: no lanes), once a call
    /// was; a change is recorded before the next call (`lane_changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_lane: Option<String>,
    /// The trigger the host's latest announcement of a possible compaction named (Gemini
    /// CLI's `PreCompress`, sent before every turn), for the compaction that may follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress_trigger: Option<String>,
    /// The digest of the latest compaction summary seen at the head of the model's history
    /// (Gemini CLI), and how many messages followed it then, so that one compaction is
    /// recorded once and the next one — even with the same summary — is seen by the history
    /// growing shorter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_summary: Option<(Digest, u64)>,
}

impl SessionState {
    /// A new session's state.
    #[must_use]
    pub fn new(session_id: &str) -> Self {
        Self {
            schema_version: STATE_SCHEMA_VERSION.to_owned(),
            session_id: session_id.to_owned(),
            generation: 1,
            steps: BTreeMap::new(),
            observation: None,
            last_tool: None,
            boundary: Boundary::default(),
            context: None,
            continuity: None,
            decisions: None,
            unresolved_hint: None,
            background: BTreeMap::new(),
            active_lane: None,
            compress_trigger: None,
            seen_summary: None,
        }
    }

    /// Remembers an admitted call, forgetting the oldest beyond the limit.
    pub fn remember(&mut self, tool_use_id: String, step: PendingStep) {
        // A host that sends no id of its own (Gemini CLI) gets one made of the call's name and
        // arguments, which two identical calls in flight share: the second is kept as `id#2`.
        let mut key = tool_use_id.clone();
        let mut n = 1_u32;
        while self.steps.contains_key(&key) && n < 512 {
            n = n.saturating_add(1);
            key = format!("{tool_use_id}#{n}");
        }
        self.steps.insert(key, step);
        keep_newest(&mut self.steps, |s| s.step);
    }

    /// Takes the call remembered under `tool_use_id` — the oldest, when identical calls share
    /// it (see [`Self::remember`]).
    pub fn take_step(&mut self, tool_use_id: &str) -> Option<PendingStep> {
        let key = self
            .steps
            .iter()
            .filter(|(key, _)| {
                key.as_str() == tool_use_id
                    || key
                        .strip_prefix(tool_use_id)
                        .and_then(|rest| rest.strip_prefix('#'))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .min_by_key(|(_, pending)| pending.step)
            .map(|(key, _)| key.clone())?;
        self.steps.remove(&key)
    }

    /// Remembers a call moved to the background as its `task`, forgetting the oldest beyond
    /// the limit (a forgotten one stays recorded as unknown, for a person to reconcile).
    pub fn remember_background(&mut self, task: String, call: BackgroundCall) {
        self.background.insert(task, call);
        keep_newest(&mut self.background, |c| c.step);
    }

    /// Forgets what was tied to the current run (it was closed): the next event opens the
    /// session's next run, linked to this one. What belongs to the session stays: the
    /// compactions (their count, the decision snapshot's state) and the latest rehydration
    /// and decision comparison, so that a resumed session is numbered and restricted as the
    /// session it continues.
    pub fn next_run(&mut self) {
        let mut next = Self::new(&self.session_id);
        next.generation = self.generation.saturating_add(1);
        next.boundary = self.boundary.clone();
        next.continuity = self.continuity.clone();
        next.decisions = self.decisions.clone();
        next.seen_summary = self.seen_summary;
        *self = next;
    }
}

/// Forgets the entries of `map` with the lowest `step` until at most [`MAX_PENDING_STEPS`]
/// are left.
fn keep_newest<T>(map: &mut BTreeMap<String, T>, step: impl Fn(&T) -> u64) {
    while map.len() > MAX_PENDING_STEPS {
        let oldest = map
            .iter()
            .min_by_key(|(_, entry)| step(entry))
            .map(|(key, _)| key.clone());
        match oldest {
            Some(key) => {
                map.remove(&key);
            }
            None => break,
        }
    }
}

/// The session's files, locked for the lifetime of this value.
#[derive(Debug)]
pub struct SessionFiles {
    path: PathBuf,
    _lock: File,
}

impl SessionFiles {
    /// Takes the session's lock (waiting up to [`LOCK_TIMEOUT`]) in `dir`, naming the files
    /// after `name` (the session's base run id, already in the id alphabet).
    ///
    /// # Errors
    /// [`HookError::Io`] when the folder or lock file cannot be created;
    /// [`HookError::Locked`] when another process holds the lock for too long.
    pub fn lock(dir: &Path, name: &str) -> Result<Self, HookError> {
        let lock_path = dir.join(format!("{name}.lock"));
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
        };
        // The folder is made the first time only (this runs on every tool call).
        let lock = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(|e| HookError::io(dir, &e))?;
                open()
            }
            opened => opened,
        }
        .map_err(|e| HookError::io(&lock_path, &e))?;
        let started = Instant::now();
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(HookError::Locked {
                        session: name.to_owned(),
                        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(HookError::io(&lock_path, &e));
                }
            }
        }
        Ok(Self {
            path: dir.join(format!("{name}.json")),
            _lock: lock,
        })
    }

    /// The state file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the state, or a new one when there is none: the last complete entry of the
    /// journal (a torn last line, left by a crash in the middle of an append, is skipped).
    ///
    /// # Errors
    /// [`HookError::State`] for a file that cannot be read, has no valid entry, or belongs to
    /// another session.
    pub fn load(&self, session_id: &str) -> Result<SessionState, HookError> {
        let error = |reason: String| HookError::State {
            path: self.path.clone(),
            reason,
        };
        let len = match std::fs::metadata(&self.path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(SessionState::new(session_id));
            }
            Err(e) => return Err(error(e.to_string())),
        };
        if len > MAX_STATE_BYTES {
            return Err(error(format!("{len} bytes is too large")));
        }
        let text = std::fs::read(&self.path).map_err(|e| error(e.to_string()))?;
        let mut last_error = "the file holds no entry".to_owned();
        let mut lines = text.split(|b| *b == b'\n').filter(|l| !l.is_empty()).rev();
        let mut state = loop {
            let Some(line) = lines.next() else {
                return Err(error(last_error));
            };
            match serde_json::from_slice::<SessionState>(line) {
                Ok(state) => break state,
                // Only a torn *last* line is expected; an older one stands in for it.
                Err(e) => last_error = e.to_string(),
            }
        };
        if state.schema_version != STATE_SCHEMA_VERSION {
            return Err(error(format!(
                "`schema_version` is `{}`, expected `{STATE_SCHEMA_VERSION}`",
                state.schema_version
            )));
        }
        if state.session_id != session_id {
            return Err(error(format!(
                "it belongs to session `{}`, not `{session_id}`",
                state.session_id
            )));
        }
        // A journal written before summaries were kept by digest may hold summary texts in
        // any of its entries: keep the digest, and rewrite the journal as this one entry
        // without them.
        if let Some(summary) = state.boundary.summary.take() {
            state.boundary.summary_sha256 =
                Some(cairn_runtime::continuity::summary_sha256(&summary));
        }
        if contains(&text, b"\"summary\":\"") {
            let mut line = serde_json::to_vec(&state).map_err(|e| error(e.to_string()))?;
            line.push(b'\n');
            write_private(&self.path, &line)?;
        }
        Ok(state)
    }

    /// Appends the state to the journal as one line (one `write` of a complete line, under
    /// the lock), and compacts the journal into its last entry (a temporary file renamed over
    /// it) once it passes [`COMPACT_AT_BYTES`] or eight entries of this size.
    ///
    /// The journal is not `fsync`ed: it survives a crash of the hook or of the host, and a
    /// power loss may cost its last entries (see the module documentation). The ledger's
    /// records are synced before the state refers to them.
    ///
    /// # Errors
    /// [`HookError::Io`].
    pub fn save(&self, state: &SessionState) -> Result<(), HookError> {
        let mut line = serde_json::to_vec(state).map_err(|e| HookError::State {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        line.push(b'\n');
        let io = |e: std::io::Error| HookError::io(&self.path, &e);
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(&self.path).map_err(io)?;
        file.write_all(&line).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        drop(file);
        let entries = u64::try_from(line.len())
            .unwrap_or(u64::MAX)
            .saturating_mul(8);
        if len > COMPACT_AT_BYTES.max(entries) {
            write_private(&self.path, &line)?;
        }
        Ok(())
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// Writes `bytes` to `path` atomically and owner-only (mode 0600 whatever the umask).
///
/// # Errors
/// [`HookError::Io`].
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), HookError> {
    cairn_runtime::files::replace(path, 0o600, bytes).map_err(|(_, e)| HookError::io(path, &e))
}

/// The journal is compacted into its last entry beyond this size (or eight entries).
pub const COMPACT_AT_BYTES: u64 = 32 << 10;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn state_round_trips_and_a_second_lock_waits() {
        let dir = tempfile::tempdir().unwrap();
        let files = SessionFiles::lock(dir.path(), "cc-s1").unwrap();
        let mut state = files.load("s1").unwrap();
        state.remember(
            "t1".to_owned(),
            PendingStep {
                step: 3,
                tool: "Bash".to_owned(),
                consequential: true,
                agent: Some("a1".to_owned()),
            },
        );
        files.save(&state).unwrap();
        assert_eq!(files.load("s1").unwrap(), state);
        assert!(files.load("other").is_err());
        let dir_path = dir.path().to_path_buf();
        let waiter = std::thread::spawn(move || {
            let started = Instant::now();
            let _second = SessionFiles::lock(&dir_path, "cc-s1").unwrap();
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(files);
        assert!(waiter.join().unwrap() >= Duration::from_millis(40));
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_the_journal_compacts() {
        let dir = tempfile::tempdir().unwrap();
        let files = SessionFiles::lock(dir.path(), "cc-s2").unwrap();
        let mut state = SessionState::new("s2");
        state.last_tool = Some("Bash".to_owned());
        files.save(&state).unwrap();
        let mut torn = std::fs::read(files.path()).unwrap();
        torn.extend_from_slice(b"{\"schema_version\":\"cairn.hook-sess");
        std::fs::write(files.path(), &torn).unwrap();
        assert_eq!(files.load("s2").unwrap(), state);
        std::fs::write(files.path(), b"{\"half").unwrap();
        assert!(matches!(files.load("s2"), Err(HookError::State { .. })));
        std::fs::remove_file(files.path()).unwrap();
        for i in 0..2000 {
            state.generation = i;
            files.save(&state).unwrap();
        }
        assert!(std::fs::metadata(files.path()).unwrap().len() <= COMPACT_AT_BYTES + 1024);
        assert_eq!(files.load("s2").unwrap(), state);
    }

    #[test]
    fn pending_steps_are_bounded() {
        let mut state = SessionState::new("s");
        for step in 0..(MAX_PENDING_STEPS as u64 + 10) {
            state.remember(
                format!("t{step}"),
                PendingStep {
                    step,
                    tool: "Bash".to_owned(),
                    consequential: true,
                    agent: None,
                },
            );
        }
        assert_eq!(state.steps.len(), MAX_PENDING_STEPS);
        assert!(!state.steps.contains_key("t0"));
    }

    #[test]
    fn identical_calls_in_flight_are_kept_apart_and_taken_oldest_first() {
        let mut state = SessionState::new("s");
        let pending = |step| PendingStep {
            step,
            tool: "run_shell_command".to_owned(),
            consequential: true,
            agent: None,
        };
        state.remember("call-a".to_owned(), pending(3));
        state.remember("call-a".to_owned(), pending(5));
        state.remember("call-ab".to_owned(), pending(4));
        assert_eq!(state.steps.len(), 3);
        assert_eq!(state.take_step("call-a").map(|p| p.step), Some(3));
        assert_eq!(state.take_step("call-a").map(|p| p.step), Some(5));
        assert_eq!(state.take_step("call-a").map(|p| p.step), None);
        assert_eq!(state.take_step("call-ab").map(|p| p.step), Some(4));
    }
}
