//! The people's side of approvals: find a request, list what waits, approve, refuse or
//! revoke — each a record appended to the request's run by a writer of its own, so a
//! decision is in the chain before anything acts on it — and wait for a decision (a hook
//! holding a call in flight).
//!
//! Two people deciding one request at once: both read it pending, both append; the run's
//! chain takes one record at a time, the second writer finds a boundary it did not know and
//! reads the request again — decided, so it is told by whom, and nothing is recorded twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::{Clock, Digest, RunId, TenantId};
use cairn_ledger::record::{ApprovalEvent, BoundaryEvent};
use cairn_ledger::store::RunFilter;
use cairn_ledger::{Store, StoreError};
use serde::Serialize;

use super::{
    APPROVAL_GRANTED, APPROVAL_REFUSED, APPROVAL_REVOKED, Approval, ApprovalBook, ApprovalError,
    ApprovalId, ApprovalState,
};
use crate::error::{RuntimeError, label};
use crate::recorder::{Durability, Recorder, RecorderOptions};

/// How long a note a person writes with a decision is kept in the content store (the record
/// binds its digest).
const NOTE_RETENTION_HOURS: i64 = 24 * 365;

/// The most bytes a decision's note may have.
pub const MAX_NOTE_BYTES: usize = 4096;

/// The most calls one approval may admit.
pub const MAX_USES: u64 = 1_000;

/// How often a waiting hook looks at the run again.
const POLL: Duration = Duration::from_millis(100);

/// What a person decides on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonDecision {
    /// Approve: admit up to `uses` calls of exactly the held action, for `expires_in`.
    Approve {
        /// How long the approval admits calls.
        expires_in: jiff::SignedDuration,
        /// How many calls it admits (1 by default: single use).
        uses: u64,
    },
    /// Refuse the held call.
    Deny,
    /// Revoke an approval given earlier (it admits nothing more).
    Revoke,
}

/// A request found in a store, with what it is worth now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// The approval.
    #[serde(flatten)]
    pub approval: Approval,
    /// Its state now.
    pub state: ApprovalState,
    /// Whether its run is closed.
    pub run_closed: bool,
}

/// What waiting for a decision ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The request left `pending`: this is its state now.
    Decided(ApprovalState),
    /// Nobody decided within the time.
    TimedOut,
    /// The run was closed meanwhile.
    RunClosed,
}

impl Waited {
    /// What the model is told when its call `name`, held for the request `id` of run `run`
    /// for up to `hold`, ended this way — or `None` when a person approved it (the call is
    /// admitted again, now by the approval). The same words through every edge.
    #[must_use]
    pub fn told(&self, name: &str, id: &str, hold: Duration, run: &str) -> Option<String> {
        match self {
            Self::Decided(ApprovalState::Active) => None,
            Self::Decided(state @ (ApprovalState::Refused | ApprovalState::Revoked)) => {
                Some(format!(
                    "Cairn held `{name}` for a person's approval (request {id}) and a person {} it. It did not run. Do not retry it: ask the user how to go on.",
                    if *state == ApprovalState::Refused {
                        "refused"
                    } else {
                        "revoked"
                    }
                ))
            }
            Self::Decided(state) => Some(format!(
                "Cairn held `{name}` for a person's approval (request {id}); the request is {} now. It did not run. Make the same call again to raise a new request.",
                state.as_str()
            )),
            Self::TimedOut => Some(format!(
                "Cairn held `{name}` for {} s waiting for a person's approval (request {id}) and nobody decided yet (still pending). It did not run. The request stays open: once a person approves it (`cairn approvals approve {id}`), make exactly the same call again and it runs; a changed call needs its own approval.",
                hold.as_secs()
            )),
            Self::RunClosed => Some(format!(
                "Cairn held `{name}` for a person's approval (request {id}), and the run `{run}` was closed meanwhile. It did not run."
            )),
        }
    }
}

/// The approvals of one store, as people and waiting hooks reach them.
#[derive(Clone)]
pub struct Approvals {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").finish_non_exhaustive()
    }
}

impl Approvals {
    /// The approvals of the runs in `store`, judged on `clock`.
    #[must_use]
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// The approvals of `run`.
    ///
    /// # Errors
    /// Store failures.
    pub fn of_run(&self, tenant: &TenantId, run: &RunId) -> Result<ApprovalBook, RuntimeError> {
        Ok(ApprovalBook::from_rows(&self.store.rows(tenant, run)?))
    }

    /// Every request of the open runs (of `tenant`, when given), oldest first; with
    /// `closed`, the closed runs' too.
    ///
    /// # Errors
    /// Store failures.
    pub fn list(
        &self,
        tenant: Option<&TenantId>,
        closed: bool,
    ) -> Result<Vec<Listed>, RuntimeError> {
        let now = self.clock.now();
        let runs = self.store.list_runs(&RunFilter {
            tenant_id: tenant.cloned(),
            unterminated_only: !closed,
            idle_before: None,
        })?;
        let mut listed = Vec::new();
        for info in runs {
            let book = self.of_run(&info.meta.tenant_id, &info.meta.run_id)?;
            listed.extend(book.iter().map(|approval| Listed {
                state: approval.state(now),
                approval: approval.clone(),
                run_closed: info.terminated(),
            }));
        }
        listed.sort_by(|a, b| {
            a.approval
                .request
                .requested_at
                .cmp(&b.approval.request.requested_at)
        });
        Ok(listed)
    }

    /// The request `id` (in `tenant`'s runs, when given): the open runs are searched first.
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`]; store failures.
    pub fn find(&self, tenant: Option<&TenantId>, id: &ApprovalId) -> Result<Listed, RuntimeError> {
        let now = self.clock.now();
        for closed in [false, true] {
            let runs = self.store.list_runs(&RunFilter {
                tenant_id: tenant.cloned(),
                unterminated_only: !closed,
                idle_before: None,
            })?;
            for info in runs.iter().filter(|info| info.terminated() == closed) {
                let book = self.of_run(&info.meta.tenant_id, &info.meta.run_id)?;
                if let Some(approval) = book.get(id) {
                    return Ok(Listed {
                        state: approval.state(now),
                        approval: approval.clone(),
                        run_closed: closed,
                    });
                }
            }
        }
        Err(ApprovalError::NotFound {
            id: id.to_string(),
            tenant: tenant.map(ToString::to_string),
        }
        .into())
    }

    /// Records `decision` on the request `id` by `approver` (`os:<user>`, `token:<name>`),
    /// with an optional note (kept in the content store; the record binds its digest), and
    /// returns the request as it stands after it. The decision is appended by a writer of its
    /// own; [`Approvals::decide_on`] appends it with the run's writer a caller holds.
    ///
    /// # Errors
    /// [`ApprovalError`] when the request is unknown, its run closed, or it is not in a state
    /// the decision applies to (approved or refused already, lapsed, …);
    /// [`RuntimeError::InvalidInput`] for a bad approver, note or number of uses; store
    /// failures.
    pub fn decide(
        &self,
        tenant: Option<&TenantId>,
        id: &ApprovalId,
        decision: &PersonDecision,
        approver: &str,
        note: Option<&str>,
    ) -> Result<Listed, RuntimeError> {
        let found = self.open_request(tenant, id)?;
        self.decide_found(&found, id, decision, approver, note)
    }

    /// [`Approvals::decide`] on a request already found ([`Approvals::open_request`]).
    ///
    /// # Errors
    /// As [`Approvals::decide`].
    pub fn decide_found(
        &self,
        found: &Listed,
        id: &ApprovalId,
        decision: &PersonDecision,
        approver: &str,
        note: Option<&str>,
    ) -> Result<Listed, RuntimeError> {
        let request = &found.approval.request;
        // Another writer's boundary between reading the request and appending the decision
        // makes the append fail; the request is then read again (at most a few times: only
        // people and held calls append boundaries).
        let mut last = None;
        for _ in 0..8 {
            let mut recorder = Recorder::resume(
                Arc::clone(&self.store),
                Arc::clone(&self.clock),
                &request.tenant,
                &request.run,
                RecorderOptions {
                    durability: Durability::Sync,
                    content_retention: Some(jiff::SignedDuration::from_hours(NOTE_RETENTION_HOURS)),
                },
            )?;
            match self.decide_on(&mut recorder, id, decision, approver, note) {
                Ok(()) => return self.read_again(found, id),
                Err(
                    e @ RuntimeError::Store(
                        StoreError::Conflict { .. } | StoreError::NonContiguous { .. },
                    ),
                ) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| RuntimeError::InvalidInput {
            field: "approval",
            reason: "the run kept changing while the decision was recorded".to_owned(),
        }))
    }

    /// The request `found` named, as its run holds it now (after a decision).
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`]; store failures.
    pub fn read_again(&self, found: &Listed, id: &ApprovalId) -> Result<Listed, RuntimeError> {
        let request = &found.approval.request;
        let book = self.of_run(&request.tenant, &request.run)?;
        let approval = book.get(id).ok_or_else(|| ApprovalError::NotFound {
            id: id.to_string(),
            tenant: Some(request.tenant.to_string()),
        })?;
        Ok(Listed {
            state: approval.state(self.clock.now()),
            approval: approval.clone(),
            run_closed: found.run_closed,
        })
    }

    /// The request `id`, when its run is open.
    ///
    /// # Errors
    /// As [`Approvals::find`]; [`ApprovalError::RunClosed`].
    pub fn open_request(
        &self,
        tenant: Option<&TenantId>,
        id: &ApprovalId,
    ) -> Result<Listed, RuntimeError> {
        let found = self.find(tenant, id)?;
        if found.run_closed {
            return Err(ApprovalError::RunClosed {
                id: id.to_string(),
                run: found.approval.request.run.to_string(),
            }
            .into());
        }
        Ok(found)
    }

    /// Records `decision` on the request `id` of `recorder`'s run with that writer — the
    /// run's live writer a service holds, so that it never meets a record it did not write —
    /// after reading the request again from where the writer stands. One attempt: a conflict
    /// with another writer is the caller's.
    ///
    /// # Errors
    /// As [`Approvals::decide`].
    pub fn decide_on(
        &self,
        recorder: &mut Recorder,
        id: &ApprovalId,
        decision: &PersonDecision,
        approver: &str,
        note: Option<&str>,
    ) -> Result<(), RuntimeError> {
        let approver = label(approver).map_err(|e| RuntimeError::InvalidInput {
            field: "approver",
            reason: e.to_string(),
        })?;
        if let PersonDecision::Approve { uses, .. } = decision
            && !(1..=MAX_USES).contains(uses)
        {
            return Err(RuntimeError::InvalidInput {
                field: "uses",
                reason: format!("an approval admits 1 to {MAX_USES} calls, not {uses}"),
            });
        }
        if let Some(note) = note
            && note.len() > MAX_NOTE_BYTES
        {
            return Err(RuntimeError::InvalidInput {
                field: "note",
                reason: format!("at most {MAX_NOTE_BYTES} bytes, got {}", note.len()),
            });
        }
        let book = self.of_run(recorder.tenant_id(), recorder.run_id())?;
        let approval = book.get(id).ok_or_else(|| ApprovalError::NotFound {
            id: id.to_string(),
            tenant: Some(recorder.tenant_id().to_string()),
        })?;
        let now = recorder.now();
        check_applies(approval, approval.state(now), decision, id)?;
        let (event, expires_at, uses) = match decision {
            PersonDecision::Approve { expires_in, uses } => (
                APPROVAL_GRANTED,
                Some(now.saturating_add(*expires_in)),
                Some(*uses),
            ),
            PersonDecision::Deny => (APPROVAL_REFUSED, None, None),
            PersonDecision::Revoke => (APPROVAL_REVOKED, None, None),
        };
        let mut boundary = BoundaryEvent::new(label(event)?);
        boundary.approval = Some(Box::new(ApprovalEvent {
            action_digest: approval.request.action_digest,
            approver: Some(approver),
            call_id: None,
            expires_at,
            id: label(id.as_str())?,
            nonce: None,
            policy_set_version: None,
            step: None,
            tool: None,
            uses,
        }));
        if let Some(note) = note.filter(|n| !n.trim().is_empty()) {
            let digest = Digest::of(note.as_bytes());
            recorder.keep_content(digest, note.as_bytes().to_vec());
            boundary.evidence_ref = Some(label(&format!("note:{digest}"))?);
        }
        recorder.record_boundary(boundary, None)?;
        Ok(())
    }

    /// Waits up to `timeout` for a person to decide the request `id` of `run`, looking at
    /// the run every 100 ms.
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`] when the run holds no such request; store failures.
    pub fn wait(
        &self,
        tenant: &TenantId,
        run: &RunId,
        id: &ApprovalId,
        timeout: Duration,
    ) -> Result<Waited, RuntimeError> {
        let started = Instant::now();
        loop {
            let closed = self
                .store
                .run(tenant, run)?
                .is_none_or(|info| info.terminated());
            if closed {
                return Ok(Waited::RunClosed);
            }
            let book = self.of_run(tenant, run)?;
            let approval = book.get(id).ok_or_else(|| ApprovalError::NotFound {
                id: id.to_string(),
                tenant: Some(tenant.to_string()),
            })?;
            match approval.state(self.clock.now()) {
                ApprovalState::Pending => {}
                state => return Ok(Waited::Decided(state)),
            }
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Ok(Waited::TimedOut);
            }
            std::thread::sleep(POLL.min(left));
        }
    }
}

/// Whether `decision` applies to `approval` in `state`.
fn check_applies(
    approval: &Approval,
    state: ApprovalState,
    decision: &PersonDecision,
    id: &ApprovalId,
) -> Result<(), ApprovalError> {
    let refused = |action: &'static str| ApprovalError::Decided {
        id: id.to_string(),
        state: state.as_str(),
        by: approval.decided_by().map(ToOwned::to_owned),
        action,
    };
    match (decision, state) {
        (PersonDecision::Approve { .. } | PersonDecision::Deny, ApprovalState::Pending)
        | (PersonDecision::Revoke, ApprovalState::Active) => Ok(()),
        (_, ApprovalState::Lapsed) => Err(refused(
            "nobody decided it before it expired; the agent's identical retry raises a new request",
        )),
        (PersonDecision::Revoke, ApprovalState::Pending) => Err(refused(
            "nothing was approved yet; refuse it with `cairn approvals deny`",
        )),
        (PersonDecision::Revoke, _) => Err(refused("it admits nothing more already")),
        (_, _) => Err(refused(
            "a request is decided once; revoke an approval with `cairn approvals revoke`",
        )),
    }
}
