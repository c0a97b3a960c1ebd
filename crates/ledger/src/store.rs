//! The `Store` trait: what the ledger needs from a durable backend (SQLite, PostgreSQL).
//!
//! The trait is synchronous: hooks run once per tool call in a fresh process and must answer
//! in milliseconds, without an async runtime. Services call it from blocking tasks.

use cairn_core::{Code, Digest, ErrorCode, RunId, TaskId, TenantId, Timestamp};
use thiserror::Error;

use crate::record::{IntentRecord, SealedRecord, TerminationReason};

/// Whether opening a store may create it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the store if it is missing.
    CreateIfMissing,
    /// The store must exist (read-side commands: verify, export, show).
    MustExist,
}

/// What is known about a run when it is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMeta {
    /// The tenant.
    pub tenant_id: TenantId,
    /// The run.
    pub run_id: RunId,
    /// The task it executes.
    pub task_id: TaskId,
    /// When it was opened.
    pub opened_at: Timestamp,
}

/// A run's lifecycle summary (I-2), derived from its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// Identity and opening time.
    pub meta: RunMeta,
    /// How many records the run has.
    pub records: u64,
    /// When its latest record was written.
    pub last_recorded_at: Option<Timestamp>,
    /// Why it ended, if a terminal record exists.
    pub termination: Option<TerminationReason>,
    /// Whether a signed checkpoint is stored for it.
    pub checkpointed: bool,
}

impl RunInfo {
    /// Whether the run has its terminal record.
    #[must_use]
    pub const fn terminated(&self) -> bool {
        self.termination.is_some()
    }
}

/// Where a writer resumes an unterminated run: its summary, the digest of its last record
/// and the Merkle tree of its record digests so far.
#[derive(Debug, Clone)]
pub struct ResumePoint {
    /// The run.
    pub info: RunInfo,
    /// The digest of its last record (`None` before the first).
    pub head: Option<Digest>,
    /// The RFC 6962 tree over its record digests, ready for the next leaf.
    pub tree: crate::merkle::RootBuilder,
}

impl ResumePoint {
    /// The resume point of the run `info` whose record digests, in step order, are
    /// `digests` (reading them all: the slow way every store can take).
    #[must_use]
    pub fn from_digests(info: RunInfo, digests: &[Digest]) -> Self {
        let mut tree = crate::merkle::RootBuilder::new();
        for digest in digests {
            tree.push(crate::merkle::leaf_hash(digest.as_bytes()));
        }
        Self {
            info,
            head: digests.last().copied(),
            tree,
        }
    }
}

/// What a store keeps of a run's head beside the run, to resume it without reading it: the
/// kept head digest and Merkle frontier, and the digest of the run's last record to check
/// them against (each `None` when absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeptHead<'a> {
    /// The head digest kept with the run.
    pub head: Option<&'a str>,
    /// The frontier kept with the run ([`crate::merkle::RootBuilder::frontier`]).
    pub frontier: Option<&'a [u8]>,
    /// The digest of the run's last record, as stored.
    pub last_record: Option<&'a str>,
}

impl KeptHead<'_> {
    /// The resume point of the run `info` from what was kept — only when the kept head is
    /// the last record's digest and the frontier covers every record; `None` otherwise, and
    /// the store resumes from the records ([`ResumePoint::from_digests`]), which are
    /// authoritative.
    #[must_use]
    pub fn resume(&self, info: &RunInfo) -> Option<ResumePoint> {
        if let (Some(head), Some(frontier), Some(last)) =
            (self.head, self.frontier, self.last_record)
            && head == last
            && let Ok(digest) = head.parse::<Digest>()
            && let Some(tree) = crate::merkle::RootBuilder::from_frontier(frontier)
            && tree.len() == info.records
        {
            return Some(ResumePoint {
                info: info.clone(),
                head: Some(digest),
                tree,
            });
        }
        None
    }
}

/// Which runs to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only this tenant's runs.
    pub tenant_id: Option<TenantId>,
    /// Only runs without a terminal record.
    pub unterminated_only: bool,
    /// Only runs whose latest activity (or opening, if none) is before this instant.
    pub idle_before: Option<Timestamp>,
}

/// A dimension of the cost rollup (I-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CostDimension {
    /// By `task_id`.
    Task,
    /// By tool name.
    Tool,
    /// By `tenant_id`.
    Tenant,
    /// By the run's termination reason (`unterminated` when it has none).
    Termination,
}

impl CostDimension {
    /// The dimension's name as the CLI spells it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Task => "task",
            Self::Tool => "tool",
            Self::Tenant => "tenant",
            Self::Termination => "termination",
        }
    }
}

/// One row of a cost rollup.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CostRow {
    /// The value of the dimension (a task id, tool name, tenant or termination reason).
    pub key: String,
    /// Distinct runs contributing to the row.
    pub runs: u64,
    /// Tool calls recorded (allowed and denied).
    pub calls: u64,
    /// Of which denied.
    pub denied: u64,
    /// Total argument bytes of those calls.
    pub arg_bytes: u64,
}

/// Raw content kept by digest, with its own retention (I-4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredContent {
    /// The digest the content is addressed by.
    pub digest: Digest,
    /// The bytes as stored.
    pub bytes: Vec<u8>,
    /// When it was stored.
    pub stored_at: Timestamp,
    /// When it may be deleted.
    pub expires_at: Timestamp,
}

/// Content to keep by digest until `expires_at` (a later expiry wins when stored again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentItem {
    /// The digest the bytes hash to.
    pub digest: Digest,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// When they were stored.
    pub stored_at: Timestamp,
    /// When they may be deleted.
    pub expires_at: Timestamp,
}

/// A continuity envelope saved with the boundary record that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeItem<'a> {
    /// The envelope's id (as the boundary record names it).
    pub envelope_id: &'a str,
    /// The envelope it replaces (a reconciliation writes a superseding envelope).
    pub supersedes: Option<&'a str>,
    /// The `continuity-envelope/v1` JSON.
    pub body: &'a str,
}

/// An envelope as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEnvelope {
    /// The envelope's id.
    pub envelope_id: String,
    /// The step of the boundary record saved with it.
    pub step_index: u64,
    /// The envelope it replaces, if any.
    pub supersedes: Option<String>,
    /// The `continuity-envelope/v1` JSON.
    pub body: String,
}

/// One atomic write: records of one run, the content they reference, and the checkpoint
/// that closes the run (with its terminal record).
#[derive(Debug, Clone, Copy, Default)]
pub struct Commit<'a> {
    /// Consecutive sealed records of one run.
    pub records: &'a [SealedRecord],
    /// Content addressed by the records' digests.
    pub content: &'a [ContentItem],
    /// The signed checkpoint note, when the commit closes the run.
    pub checkpoint_note: Option<&'a str>,
    /// A continuity envelope saved with the commit's last record (its boundary record).
    pub envelope: Option<EnvelopeItem<'a>>,
}

impl Commit<'_> {
    /// Checks the commit's records continue a run whose next free step is `next`: all of one
    /// run, consecutive from `next`. A store calls it with its run locked.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] for a step already taken (or a record of another run),
    /// [`StoreError::NonContiguous`] for a gap.
    pub fn check_continues(&self, next: u64) -> Result<(), StoreError> {
        let Some(first) = self.records.first().map(SealedRecord::record) else {
            return Ok(());
        };
        for (offset, record) in self.records.iter().map(SealedRecord::record).enumerate() {
            let expected = next + offset as u64;
            if record.step_index < expected
                || record.tenant_id != first.tenant_id
                || record.run_id != first.run_id
            {
                return Err(StoreError::Conflict {
                    run: record.run_id.clone(),
                    step: record.step_index,
                });
            }
            if record.step_index > expected {
                return Err(StoreError::NonContiguous {
                    run: record.run_id.clone(),
                    expected,
                    got: record.step_index,
                });
            }
        }
        Ok(())
    }
}

/// A stored record that could not be read back as a valid record: a corrupted row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowFault {
    /// The row's step index, as far as the row says.
    pub step_index: u64,
    /// What is wrong.
    pub detail: String,
}

/// One row as read back: a record, or the reason it could not be read.
pub type StoredRow = Result<IntentRecord, RowFault>;

/// The columns a store keeps beside a record's body, copied from the body to index and roll
/// up the records. The body is the only source verification trusts; a row whose columns
/// disagree with its body is reported as a [`RowFault`] ([`IndexColumns::read_row`]), so
/// every store reads rows the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexColumns<'a> {
    /// The record kind (`step`, `boundary`, `terminal`).
    pub kind: &'a str,
    /// The task.
    pub task_id: &'a str,
    /// The tool of a step.
    pub tool_name: Option<&'a str>,
    /// The argument size of a step.
    pub args_size: Option<i64>,
    /// The admission decision of a step (`allow`, `deny`).
    pub decision: Option<&'a str>,
    /// The termination reason of a terminal record.
    pub termination_reason: Option<&'a str>,
    /// When the record was written, in microseconds since the Unix epoch.
    pub recorded_at_us: i64,
    /// The record's digest (`sha256:…`).
    pub digest: std::borrow::Cow<'a, str>,
}

impl<'a> IndexColumns<'a> {
    /// The columns of `record`.
    #[must_use]
    pub fn of(record: &'a IntentRecord) -> Self {
        Self {
            kind: record.kind.as_str(),
            task_id: record.task_id.as_str(),
            tool_name: record.tool.as_ref().map(|t| t.name.as_str()),
            args_size: record
                .args
                .as_ref()
                .map(|a| i64::try_from(a.size).unwrap_or(i64::MAX)),
            decision: record.admission.as_ref().map(|a| a.decision.as_str()),
            termination_reason: record.termination.as_ref().map(|t| t.reason.as_str()),
            recorded_at_us: record.recorded_at.unix_micros(),
            digest: std::borrow::Cow::Owned(record.digest.to_string()),
        }
    }

    /// The record a stored row holds, or the fault that keeps it from being read: a body
    /// that is not a record, or a column that disagrees with the body (named).
    pub fn read_row(&self, step_index: u64, body: &str) -> StoredRow {
        let fault = |detail: String| Err(RowFault { step_index, detail });
        let record: IntentRecord = match serde_json::from_str(body) {
            Ok(record) => record,
            Err(e) => return fault(format!("the stored body is not a valid record: {e}")),
        };
        let of_body = IndexColumns::of(&record);
        let mismatch = if self.kind != of_body.kind {
            Some("kind")
        } else if self.task_id != of_body.task_id {
            Some("task_id")
        } else if self.tool_name != of_body.tool_name {
            Some("tool_name")
        } else if self.args_size != of_body.args_size {
            Some("args_size")
        } else if self.decision != of_body.decision {
            Some("decision")
        } else if self.termination_reason != of_body.termination_reason {
            Some("termination_reason")
        } else if self.recorded_at_us != of_body.recorded_at_us {
            Some("recorded_at")
        } else if self.digest != of_body.digest {
            Some("digest")
        } else {
            None
        };
        match mismatch {
            Some(column) => fault(format!(
                "the `{column}` column disagrees with the record body"
            )),
            None => Ok(record),
        }
    }
}

/// Errors of a store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// Another writer already holds this step of the run.
    #[error("step {step} of run `{run}` was already written by another writer")]
    Conflict {
        /// The run.
        run: RunId,
        /// The contested step.
        step: u64,
    },
    /// A record would leave a gap or rewrite history.
    #[error("run `{run}` expects step {expected} next, got step {got}")]
    NonContiguous {
        /// The run.
        run: RunId,
        /// The next free step index.
        expected: u64,
        /// The step index offered.
        got: u64,
    },
    /// The run was opened already.
    #[error("run `{run}` already exists")]
    RunExists {
        /// The run.
        run: RunId,
    },
    /// No such run.
    #[error("run `{run}` does not exist in this store")]
    RunNotFound {
        /// The run.
        run: RunId,
    },
    /// The run already has its terminal record.
    #[error("run `{run}` is already terminated")]
    RunTerminated {
        /// The run.
        run: RunId,
    },
    /// The store was written by a newer Cairn or its schema is unknown.
    #[error("store schema version {found} is newer than this cairn understands ({supported})")]
    SchemaTooNew {
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// There is no store at the given location.
    #[error("no store at `{path}` (run `cairn demo`, or pass `--store`)")]
    NotFound {
        /// Where it was looked for.
        path: String,
    },
    /// The store's location (a path, a URL) cannot name a store; printed without secrets.
    #[error("`{location}` is not a usable store location: {reason}")]
    InvalidLocation {
        /// The location, with any password masked.
        location: String,
        /// Why not.
        reason: String,
    },
    /// The file exists but is not a Cairn store; it is left untouched.
    #[error("`{path}` is not a Cairn store: {reason}")]
    NotAStore {
        /// The file.
        path: String,
        /// Why it is not one.
        reason: String,
    },
    /// The store's own structure is damaged (garbage pages, a broken index): evidence of
    /// corruption or tampering, not a usage error.
    #[error("the store is corrupt: {0}")]
    Corrupt(String),
    /// The backend failed (I/O, disk full, locked database, ...).
    #[error("store backend error: {0}")]
    Backend(String),
    /// The store's server cannot be reached, or the connection was lost. When it was lost
    /// during a commit, whether the commit landed is unknown: a writer resumes from the
    /// store's head, which says.
    #[error("the store cannot be reached: {0}")]
    Unavailable(String),
    /// A statement ran longer than the store allows (its statement timeout).
    #[error("the store did not answer in time: {0}")]
    Timeout(String),
    /// The store only reads (a read-only replica or transaction): nothing was written.
    #[error("the store is read-only: {0}")]
    ReadOnly(String),
}

cairn_core::error_codes! {
    StoreError {
        /// Another writer appended the step first.
        STEP_CONFLICT = Conflict("step_conflict");
        /// An append that would leave a gap in the steps.
        NON_CONTIGUOUS_STEP = Conflict("non_contiguous_step");
        /// A run with that id exists.
        RUN_EXISTS = Conflict("run_exists");
        /// No run with that id.
        RUN_NOT_FOUND = NotFound("run_not_found");
        /// The run has its terminal record.
        RUN_TERMINATED = Conflict("run_terminated");
        /// A store written by a newer Cairn.
        SCHEMA_TOO_NEW = Invalid("store_schema_too_new");
        /// No store at the path.
        STORE_NOT_FOUND = NotFound("store_not_found");
        /// A location that cannot name a store (a malformed URL).
        INVALID_STORE_LOCATION = Invalid("invalid_store_location");
        /// A file that is not a Cairn store.
        NOT_A_STORE = Invalid("not_a_store");
        /// Stored rows that no longer read.
        STORE_CORRUPT = Tamper("store_corrupt");
        /// The database failed.
        STORE_BACKEND = Internal("store_backend");
        /// The database server cannot be reached or the connection was lost.
        STORE_UNAVAILABLE = Unavailable("store_unavailable");
        /// A statement ran out of time.
        STORE_TIMEOUT = Unavailable("store_timeout");
        /// The database only reads.
        STORE_READ_ONLY = Unavailable("store_read_only");
    }
}

impl ErrorCode for StoreError {
    fn error_code(&self) -> Code {
        match self {
            Self::Conflict { .. } => Self::STEP_CONFLICT,
            Self::NonContiguous { .. } => Self::NON_CONTIGUOUS_STEP,
            Self::RunExists { .. } => Self::RUN_EXISTS,
            Self::RunNotFound { .. } => Self::RUN_NOT_FOUND,
            Self::RunTerminated { .. } => Self::RUN_TERMINATED,
            Self::SchemaTooNew { .. } => Self::SCHEMA_TOO_NEW,
            Self::NotFound { .. } => Self::STORE_NOT_FOUND,
            Self::InvalidLocation { .. } => Self::INVALID_STORE_LOCATION,
            Self::NotAStore { .. } => Self::NOT_A_STORE,
            Self::Corrupt(_) => Self::STORE_CORRUPT,
            Self::Backend(_) => Self::STORE_BACKEND,
            Self::Unavailable(_) => Self::STORE_UNAVAILABLE,
            Self::Timeout(_) => Self::STORE_TIMEOUT,
            Self::ReadOnly(_) => Self::STORE_READ_ONLY,
        }
    }
}

/// A durable home for runs, records, checkpoints and content.
///
/// Implementations must make [`Store::append`] atomic (all records and the checkpoint, or
/// nothing) and must refuse a second record for a step that exists, so that of two writers
/// racing for the same step exactly one wins.
pub trait Store: Send + Sync {
    /// Registers a new run.
    ///
    /// # Errors
    /// [`StoreError::RunExists`] if the run was opened before.
    fn open_run(&self, meta: &RunMeta) -> Result<(), StoreError>;

    /// Appends consecutive records of one run, the content they reference and optionally the
    /// run's signed checkpoint note, in one atomic, durable transaction.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when a step is taken, [`StoreError::NonContiguous`] on a gap,
    /// [`StoreError::RunTerminated`] after the terminal record.
    fn append(&self, commit: &Commit<'_>) -> Result<(), StoreError>;

    /// Keeps raw content of `run` that no record of it carries yet — what the model was
    /// shown after a call, whose digest the run's *next* record will carry. The content is a
    /// copy for investigators (the chain holds its digest), so it need not be synced to disk
    /// before this returns: it becomes durable with the next durable commit. Content already
    /// kept has its expiry extended, as [`Store::append`] does.
    ///
    /// # Errors
    /// Backend failures.
    fn keep_content(
        &self,
        tenant: &TenantId,
        run: &RunId,
        content: &[ContentItem],
    ) -> Result<(), StoreError>;

    /// Appends several commits — of several runs — each all-or-nothing as [`Store::append`],
    /// answering one result per commit, in order. A store that can make them durable
    /// together (one transaction, one sync to disk) should: a service's group commit calls
    /// this for every run with records waiting. By default, one [`Store::append`] each.
    fn append_group(&self, commits: &[Commit<'_>]) -> Vec<Result<(), StoreError>> {
        commits.iter().map(|commit| self.append(commit)).collect()
    }

    /// A run's summary, if it exists.
    ///
    /// # Errors
    /// Backend failures.
    fn run(&self, tenant: &TenantId, run: &RunId) -> Result<Option<RunInfo>, StoreError>;

    /// Every run with this id, across tenants.
    ///
    /// # Errors
    /// Backend failures.
    fn find_runs(&self, run: &RunId) -> Result<Vec<RunInfo>, StoreError>;

    /// Runs matching `filter`, oldest first.
    ///
    /// # Errors
    /// Backend failures.
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError>;

    /// Every stored row of the run in step order.
    ///
    /// # Errors
    /// Backend failures (a corrupted row is returned as a [`RowFault`], not an error).
    fn rows(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredRow>, StoreError>;

    /// One record by step index.
    ///
    /// # Errors
    /// Backend failures.
    fn record(
        &self,
        tenant: &TenantId,
        run: &RunId,
        step: u64,
    ) -> Result<Option<StoredRow>, StoreError>;

    /// The digests of the run's records in step order (to resume a writer).
    ///
    /// # Errors
    /// Backend failures.
    fn digests(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<Digest>, StoreError>;

    /// Where a writer resumes `run` (see [`ResumePoint`]), if it exists. This reads every
    /// digest of the run; a store that keeps the tree's frontier with the run's head answers
    /// without reading the run, so that resuming costs the same however long the run is.
    ///
    /// # Errors
    /// Backend failures.
    fn resume_point(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<ResumePoint>, StoreError> {
        let Some(info) = self.run(tenant, run)? else {
            return Ok(None);
        };
        let digests = self.digests(tenant, run)?;
        Ok(Some(ResumePoint::from_digests(info, &digests)))
    }

    /// The run's signed checkpoint note, if closed.
    ///
    /// # Errors
    /// Backend failures.
    fn checkpoint(&self, tenant: &TenantId, run: &RunId) -> Result<Option<String>, StoreError>;

    /// Every envelope saved for the run, by the step of its boundary record.
    ///
    /// # Errors
    /// Backend failures.
    fn envelopes(&self, tenant: &TenantId, run: &RunId) -> Result<Vec<StoredEnvelope>, StoreError>;

    /// The latest envelope saved for the run (by the step of its boundary record).
    ///
    /// # Errors
    /// Backend failures.
    fn latest_envelope(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<StoredEnvelope>, StoreError>;

    /// Content by digest, if still retained. The caller re-hashes it (I-4).
    ///
    /// # Errors
    /// Backend failures.
    fn content(&self, digest: &Digest) -> Result<Option<StoredContent>, StoreError>;

    /// Deletes content whose retention ended at or before `now`; returns how many items.
    ///
    /// # Errors
    /// Backend failures.
    fn gc_content(&self, now: Timestamp) -> Result<u64, StoreError>;

    /// Rollups of calls, denials and argument bytes (I-5), over every tenant's runs or
    /// over `tenant`'s only.
    ///
    /// # Errors
    /// Backend failures.
    fn cost(
        &self,
        by: CostDimension,
        tenant: Option<&TenantId>,
    ) -> Result<Vec<CostRow>, StoreError>;
}
