//! The caller's tenant's task decisions (SPEC §8): its book, snapshots and approvals, in the
//! tenant's own folder of the service (`cairn_runtime::decision_files`,
//! `DecisionFiles::open_tenant`) — the same files the hook events the service answers for
//! that tenant's agents snapshot at a compaction and compare after it.

use std::path::PathBuf;

use cairn_core::Timestamp;
use cairn_runtime::decision_files::{DecisionFiles, DecisionFilesError, check_name};
use cairn_runtime::decisions::{
    ApprovedChange, Comparison, DecisionBook, DecisionKind, SetOutcome, Snapshot,
};
use jiff::SignedDuration;

use super::Service;
use crate::error::{ApiError, ServerCode};
use crate::tokens::Caller;

/// Where a service keeps its tenants' decisions.
#[derive(Debug, Clone)]
pub struct DecisionHome {
    /// The service's folder: each tenant's decisions are in `tenants/t-<tenant>/decisions/`
    /// (with `single_project`, in `decisions/` directly).
    pub dir: PathBuf,
    /// `dir` is one project's state folder (`cairn ui`): its decisions are its own, whatever
    /// the tenant.
    pub single_project: bool,
    /// The folder of the HMAC key that digests decision values (`decisions.hmac`).
    pub keys: PathBuf,
    /// How long after a boundary a decision may still be observed before a comparison calls it
    /// `unverified`.
    pub window: SignedDuration,
}

/// A tenant's book as it stands.
#[derive(Debug)]
pub struct BookState {
    /// The book (digests only).
    pub book: DecisionBook,
    /// The name of the last snapshot saved, if any.
    pub latest_snapshot: Option<String>,
}

impl Service {
    fn decision_files(&self, caller: &Caller) -> Result<(DecisionFiles, SignedDuration), ApiError> {
        let Some(home) = &self.config.decisions else {
            return Err(ApiError::new(
                ServerCode::DECISIONS_UNAVAILABLE,
                "this service keeps no task decisions",
            ));
        };
        let files = if home.single_project {
            DecisionFiles::open(&home.dir, home.keys.clone())?
        } else {
            DecisionFiles::open_tenant(&home.dir, &caller.tenant, home.keys.clone())?
        };
        Ok((files, home.window))
    }

    /// The caller's tenant's decision book.
    ///
    /// # Errors
    /// The decision files' failures (a corrupt book is never replaced).
    pub fn decision_book(&self, caller: &Caller) -> Result<BookState, ApiError> {
        let (files, _) = self.decision_files(caller)?;
        Ok(BookState {
            book: files.book()?,
            latest_snapshot: files.latest()?,
        })
    }

    /// Sets decision `key` to `value` in the caller's tenant's book: only its keyed digest is
    /// kept. A changed value without `approval` is a revision a comparison calls
    /// `conflicting` until it is approved.
    ///
    /// # Errors
    /// `invalid_decision_kind` (`path.key`), an invalid reference (`body.approval`,
    /// `body.source`), a value that does not normalise (`body.value`), the files' failures.
    pub fn set_decision(
        &self,
        caller: &Caller,
        key: &str,
        value: &serde_json::Value,
        approval: Option<&str>,
        source: &str,
    ) -> Result<SetOutcome, ApiError> {
        let kind = parse_kind(key)?;
        let (files, _) = self.decision_files(caller)?;
        let hmac = files.hmac_key()?;
        let now = self.config.clock.now();
        files
            .update_book(|book| book.set(kind, value, approval, Some(source), now, &hmac))
            .map_err(|e| ApiError::from(e).at("body"))
    }

    /// Approves the change of decision `key` from revision `from` to `to`, by `approval`.
    ///
    /// # Errors
    /// `invalid_decision_kind`, an unknown decision or revision, an approval that does not go
    /// forward or changes nothing, the files' failures.
    pub fn approve_decision_change(
        &self,
        caller: &Caller,
        key: &str,
        (from, to): (u32, u32),
        approval: &str,
    ) -> Result<ApprovedChange, ApiError> {
        let kind = parse_kind(key)?;
        let (files, _) = self.decision_files(caller)?;
        let now = self.config.clock.now();
        files
            .update_book(|book| book.approve_change(&kind, from, to, approval, now))
            .map_err(|e| ApiError::from(e).at("body"))
    }

    /// Snapshots the caller's tenant's decisions under `name`, for a boundary at
    /// `boundary_at` (now by default). A snapshot the book cannot give (fewer than three
    /// decisions, say) is refused — and recorded as missing, so that a comparison of `name`
    /// says `continuity_evidence_missing` rather than use an older one (D-4).
    ///
    /// # Errors
    /// `invalid_snapshot_name` (`body.name`), `snapshot_refused` with every finding
    /// in the message, a boundary before the snapshot (`body.boundary_at`), the files'
    /// failures. Returns the snapshot and the boundary it was taken for.
    pub fn snapshot_decisions(
        &self,
        caller: &Caller,
        name: &str,
        boundary_at: Option<Timestamp>,
    ) -> Result<(Snapshot, Timestamp), ApiError> {
        check_name(name).map_err(|e| ApiError::from(e).at("body.name"))?;
        let (files, _) = self.decision_files(caller)?;
        let now = self.config.clock.now();
        let boundary_at = boundary_at.unwrap_or(now);
        let snapshot = files
            .snapshot_book(name, now, boundary_at)
            .map_err(|e| match e {
                DecisionFilesError::BoundaryBeforeSnapshot { .. } => {
                    ApiError::from(e).at("body.boundary_at")
                }
                other => other.into(),
            })?;
        Ok((snapshot, boundary_at))
    }

    /// Compares the caller's tenant's decisions now against the snapshot `name` (the latest by
    /// default): each decision and the whole set, with the safe action (D-2).
    ///
    /// # Errors
    /// `invalid_snapshot_name` (`query.name`), the files' failures.
    pub fn compare_decisions(
        &self,
        caller: &Caller,
        name: Option<&str>,
    ) -> Result<(Option<String>, Comparison), ApiError> {
        let (files, window) = self.decision_files(caller)?;
        let name = files
            .resolve_name(name)
            .map_err(|e| ApiError::from(e).at("query.name"))?;
        let now = self.config.clock.now();
        let comparison = files.compare_now(name.as_deref(), now, window)?;
        Ok((name, comparison))
    }
}

/// A session's decisions at its latest boundary, compared now.
#[derive(Debug)]
pub struct SessionDecisions {
    /// The snapshot's name (the session's first run).
    pub name: String,
    /// The boundary the snapshot was taken for.
    pub boundary_at: Timestamp,
    /// Whether a snapshot was saved for it (else the comparison says its evidence is missing).
    pub snapshotted: bool,
    /// The decisions now against the snapshot.
    pub comparison: Comparison,
}

impl Service {
    /// The decisions of the session `run` belongs to, at the session's latest boundary and
    /// compared now (the hooks snapshot them under the session's first run at each
    /// compaction; only the latest snapshot of a session is kept). `None` when this service
    /// keeps no decisions or no boundary of the session was ever snapshotted.
    ///
    /// # Errors
    /// The files' failures (a corrupt snapshot is an error, never no snapshot).
    pub fn session_decisions(
        &self,
        caller: &Caller,
        run: &cairn_core::RunId,
    ) -> Result<Option<SessionDecisions>, ApiError> {
        if self.config.decisions.is_none() {
            return Ok(None);
        }
        let name = cairn_runtime::lifecycle::session_base(run.as_str()).to_owned();
        let (files, window) = self.decision_files(caller)?;
        let Some(boundary) = files.boundary(&name)? else {
            return Ok(None);
        };
        let comparison = files.compare_now(Some(&name), self.config.clock.now(), window)?;
        Ok(Some(SessionDecisions {
            boundary_at: boundary.boundary_at(),
            snapshotted: boundary.snapshot_digest().is_some(),
            name,
            comparison,
        }))
    }
}

fn parse_kind(key: &str) -> Result<DecisionKind, ApiError> {
    key.parse::<DecisionKind>()
        .map_err(|e| ApiError::from_error(&e).at("path.key"))
}
