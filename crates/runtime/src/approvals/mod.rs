//! Approvals (SPEC T-4): a call a policy permits only with a person's approval
//! (`@approval` on a `permit`) is **held** — recorded as a refused step with an approval
//! request `apr-…` bound to the tenant, the run, the held step, the host's call id, the tool
//! and its version, the digest of the exact canonical arguments, the policy-set version, a
//! nonce and an expiry — and runs only once a person approved exactly that action.
//!
//! Everything about an approval is a boundary record in the run's chain, so `ledger verify`
//! covers it and a restart, a compaction or another process reads the same state back:
//!
//! | event | written by | binds |
//! |---|---|---|
//! | `approval_requested` | the executor, after the held step | id, nonce, step, call id, tool, action digest, policy version, request expiry |
//! | `approval_granted` | a person (`cairn approvals approve`) | id, approver, expiry, uses |
//! | `approval_refused` | a person (`cairn approvals deny`) | id, approver |
//! | `approval_revoked` | a person (`cairn approvals revoke`) | id, approver |
//! | `approval_used` | the executor, just before the step it admits | id, the admitted step |
//! | `approval_expired` | the executor, when a call meets an expired approval | id |
//!
//! [`ApprovalBook::from_rows`] reads them back; [`Approval::state`] says what an approval is
//! worth at an instant. The executor's side is in `admit`, the people's in `people`.

mod admit;
mod people;

use std::collections::BTreeMap;

use cairn_core::{Digest, RunId, TenantId, Timestamp};
use cairn_ledger::record::{ApprovalEvent, IntentRecord, RecordKind, ToolRef};
use cairn_ledger::store::StoredRow;
use serde::Serialize;

pub use admit::ApprovalOptions;
pub(crate) use admit::ApprovalPlan;
pub use people::{Approvals, Listed, PersonDecision, Waited};

pub use crate::error::ApprovalError;
use crate::error::RuntimeError;

/// The boundary event of a held call's request.
pub const APPROVAL_REQUESTED: &str = "approval_requested";
/// The boundary event of a person's approval.
pub const APPROVAL_GRANTED: &str = "approval_granted";
/// The boundary event of a person's refusal.
pub const APPROVAL_REFUSED: &str = "approval_refused";
/// The boundary event of a person's revocation of an approval.
pub const APPROVAL_REVOKED: &str = "approval_revoked";
/// The boundary event of an approval admitting a call.
pub const APPROVAL_USED: &str = "approval_used";
/// The boundary event of a call meeting an approval past its expiry.
pub const APPROVAL_EXPIRED: &str = "approval_expired";

/// The rule ids a call decided by an approval names (beside the policies that asked for it).
pub mod rules {
    /// Held: a person has not decided yet.
    pub const PENDING: &str = "cairn.approval.pending";
    /// Admitted by a person's approval of exactly this action.
    pub const GRANTED: &str = "cairn.approval.granted";
    /// A person refused exactly this action.
    pub const REFUSED: &str = "cairn.approval.refused";
    /// The approval of this action expired.
    pub const EXPIRED: &str = "cairn.approval.expired";
    /// A person revoked the approval of this action.
    pub const REVOKED: &str = "cairn.approval.revoked";
    /// The approval of this action admitted as many calls as it allows.
    pub const USED_UP: &str = "cairn.approval.used-up";
    /// The run's approval covers other arguments (or another tool).
    pub const OTHER_ACTION: &str = "cairn.approval.other-action";
    /// The approval cited is not a request of this run (or tenant).
    pub const OTHER_RUN: &str = "cairn.approval.other-run";
    /// The approval was given under another policy-set version.
    pub const POLICY_CHANGED: &str = "cairn.approval.policy-changed";
    /// The session's authorization mode is `human_approved`: the call needs a person
    /// whatever the policies say.
    pub const HUMAN_APPROVED: &str = "cairn.human-approved";
}

/// What a call is told when the session's authorization mode asks a person for it.
pub const HUMAN_APPROVED_REASON: &str = "the session's authorization mode is human_approved: each consequential call needs a person's approval";

/// The verdict for a call of a session whose authorization mode is `human_approved` (every
/// consequential call needs a person, SPEC E-1): a call the policies permit becomes a call
/// the policies permit only with a person's approval, named by the permits and
/// [`rules::HUMAN_APPROVED`]; anything refused stays refused. The edges apply it to the calls
/// they deem consequential; the executor then holds the call or admits it by an approval.
#[must_use]
pub fn with_a_person(verdict: crate::verdict::GateVerdict) -> crate::verdict::GateVerdict {
    if !verdict.allows() {
        return verdict;
    }
    let mut rule_ids = verdict.rule_ids().to_vec();
    if let Ok(rule) = cairn_ledger::record::Label::new(rules::HUMAN_APPROVED) {
        rule_ids.push(rule);
    }
    crate::verdict::GateVerdict::deny(
        verdict.policy_set_version(),
        rule_ids,
        crate::verdict::DenyCause::ApprovalRequired {
            reason: HUMAN_APPROVED_REASON.to_owned(),
        },
    )
}

/// An approval request's id: `apr-` and 24 lowercase hex digits, derived from the tenant,
/// the run and the request's random nonce — so an id names one request of one run, and an
/// id made up or copied from another run finds nothing here.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ApprovalId(String);

impl ApprovalId {
    /// Reads an id as a person or a client gives it.
    ///
    /// # Errors
    /// [`ApprovalError::InvalidId`] for anything but `apr-` and 24 lowercase hex digits.
    pub fn parse(text: &str) -> Result<Self, ApprovalError> {
        let ok = text.len() == 28
            && text.starts_with("apr-")
            && text
                .bytes()
                .skip(4)
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(ApprovalError::InvalidId {
                id: text.chars().take(40).collect(),
            })
        }
    }

    /// The id of the request with `nonce` in `run` of `tenant`.
    ///
    /// # Errors
    /// Never in practice (canonicalising three strings).
    pub fn derive(tenant: &TenantId, run: &RunId, nonce: &str) -> Result<Self, RuntimeError> {
        let digest = cairn_core::canonical::jcs_digest(&[tenant.as_str(), run.as_str(), nonce])?;
        let hex = digest.hex();
        Ok(Self(format!("apr-{}", hex.get(..24).unwrap_or(&hex))))
    }

    /// The id text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0)
    }
}

/// The digest an approval binds: the tool, its version and the RFC 8785 form of the
/// arguments, so that whitespace or key order does not make another action, and any other
/// value does.
///
/// # Errors
/// When the arguments cannot be canonicalised (a number JSON cannot carry).
pub fn action_digest(tool: &ToolRef, args: &serde_json::Value) -> Result<Digest, RuntimeError> {
    #[derive(Serialize)]
    struct Action<'a> {
        args: &'a serde_json::Value,
        tool: &'a str,
        version: &'a str,
    }
    Ok(cairn_core::canonical::jcs_digest(&Action {
        args,
        tool: tool.name.as_str(),
        version: tool.version.as_str(),
    })?)
}

/// A held call's request, as its `approval_requested` record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Request {
    /// The id.
    pub id: ApprovalId,
    /// The tenant of the run.
    pub tenant: TenantId,
    /// The run.
    pub run: RunId,
    /// The held step.
    pub step: u64,
    /// The record of the request itself.
    pub record: u64,
    /// The tool and its version.
    pub tool: ToolRef,
    /// The action's digest ([`action_digest`]).
    pub action_digest: Digest,
    /// The host's call id, when it gave one.
    pub call_id: Option<String>,
    /// The policy-set version the call was held under.
    pub policy_set_version: Option<Digest>,
    /// When it was requested.
    pub requested_at: Timestamp,
    /// Until when a person may decide it.
    pub expires_at: Timestamp,
}

/// A person's decision on a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Approved: admits up to `uses` calls of exactly the action until `expires_at`.
    Granted {
        /// Who.
        approver: String,
        /// When.
        at: Timestamp,
        /// Until when it admits calls.
        expires_at: Timestamp,
        /// How many calls it admits.
        uses: u64,
    },
    /// Refused.
    Refused {
        /// Who.
        approver: String,
        /// When.
        at: Timestamp,
    },
}

/// What an approval is worth at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Nobody decided yet, and the request has not expired.
    Pending,
    /// Nobody decided before the request expired.
    Lapsed,
    /// Approved, unexpired, with uses left.
    Active,
    /// A person refused it.
    Refused,
    /// A person revoked it after approving.
    Revoked,
    /// Approved, but past its expiry.
    Expired,
    /// Approved, and it admitted as many calls as it allows.
    UsedUp,
}

impl ApprovalState {
    /// The status a continuity state gives it (E-4 steps 5–6): an approval past its expiry
    /// is still the approval system's `active` one — step 6 finds it expired from its
    /// `expires_at`, so the decision says `approval_expired`; a request that lapsed undecided
    /// is `expired`, a used-up approval `consumed`, a refused one `denied`.
    #[must_use]
    pub const fn status(self) -> cairn_continuity::ApprovalStatus {
        use cairn_continuity::ApprovalStatus as S;
        match self {
            Self::Pending => S::Pending,
            Self::Lapsed => S::Expired,
            Self::Active | Self::Expired => S::Active,
            Self::Refused => S::Denied,
            Self::Revoked => S::Revoked,
            Self::UsedUp => S::Consumed,
        }
    }

    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Lapsed => "lapsed",
            Self::Active => "active",
            Self::Refused => "refused",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
            Self::UsedUp => "used_up",
        }
    }
}

/// One approval: its request, a person's decision, its revocation and its uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Approval {
    /// The request.
    pub request: Request,
    /// A person's decision, once made.
    pub decision: Option<Decision>,
    /// Who revoked it and when.
    pub revoked: Option<(String, Timestamp)>,
    /// The steps it admitted.
    pub used: Vec<u64>,
    /// Whether its expiry is recorded.
    pub expiry_recorded: bool,
}

impl Approval {
    /// What it is worth at `now`.
    #[must_use]
    pub fn state(&self, now: Timestamp) -> ApprovalState {
        if self.revoked.is_some() {
            return ApprovalState::Revoked;
        }
        match &self.decision {
            None if now >= self.request.expires_at => ApprovalState::Lapsed,
            None => ApprovalState::Pending,
            Some(Decision::Refused { .. }) => ApprovalState::Refused,
            Some(Decision::Granted { uses, .. }) if self.used.len() as u64 >= *uses => {
                ApprovalState::UsedUp
            }
            Some(Decision::Granted { expires_at, .. }) if now >= *expires_at => {
                ApprovalState::Expired
            }
            Some(Decision::Granted { .. }) => ApprovalState::Active,
        }
    }

    /// Who decided (or revoked) it, as recorded.
    #[must_use]
    pub fn decided_by(&self) -> Option<&str> {
        if let Some((by, _)) = &self.revoked {
            return Some(by);
        }
        match &self.decision {
            Some(Decision::Granted { approver, .. } | Decision::Refused { approver, .. }) => {
                Some(approver)
            }
            None => None,
        }
    }

    /// Until when the approval admits calls (once granted).
    #[must_use]
    pub fn expires_at(&self) -> Option<Timestamp> {
        match &self.decision {
            Some(Decision::Granted { expires_at, .. }) => Some(*expires_at),
            _ => None,
        }
    }
}

/// The boundary event by which a run records that its authorization mode is
/// `human_approved` (its `reason`), written when the run is opened so that every writer that
/// resumes it knows.
pub const AUTHORIZATION_EVENT: &str = "authorization_mode";

/// The record that says a run's authorization mode is `human_approved`.
///
/// # Errors
/// Never in practice (fixed labels).
pub fn human_approved_event() -> Result<cairn_ledger::record::BoundaryEvent, RuntimeError> {
    let mut event =
        cairn_ledger::record::BoundaryEvent::new(crate::error::label(AUTHORIZATION_EVENT)?);
    event.reason = Some(crate::error::label(
        cairn_continuity::AuthorizationMode::HumanApproved.as_str(),
    )?);
    Ok(event)
}

/// Whether a run's records say its authorization mode is `human_approved`.
#[must_use]
pub fn is_human_approved(rows: &[StoredRow]) -> bool {
    rows.iter().filter_map(|r| r.as_ref().ok()).any(|record| {
        record.kind == RecordKind::Boundary
            && record.boundary.as_ref().is_some_and(|b| {
                b.event.as_str() == AUTHORIZATION_EVENT
                    && b.reason.as_ref().map(cairn_ledger::record::Label::as_str)
                        == Some(cairn_continuity::AuthorizationMode::HumanApproved.as_str())
            })
    })
}

/// A run's approvals, read from its records in step order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalBook {
    approvals: BTreeMap<ApprovalId, Approval>,
    /// The ids in the order they were requested.
    order: Vec<ApprovalId>,
}

impl ApprovalBook {
    /// Reads the approval records of a run. Records that do not read are skipped: they are
    /// evidence of tampering, which verification reports; an approval whose records are
    /// unreadable grants nothing.
    #[must_use]
    pub fn from_rows(rows: &[StoredRow]) -> Self {
        let mut book = Self::default();
        for record in rows.iter().filter_map(|r| r.as_ref().ok()) {
            book.read(record);
        }
        book
    }

    fn read(&mut self, record: &IntentRecord) {
        let Some((event, approval)) = record
            .boundary
            .as_ref()
            .filter(|_| record.kind == RecordKind::Boundary)
            .and_then(|b| b.approval.as_ref().map(|a| (b.event.as_str(), a)))
        else {
            return;
        };
        let Ok(id) = ApprovalId::parse(approval.id.as_str()) else {
            return;
        };
        if event == APPROVAL_REQUESTED {
            if let Some(request) = request_of(record, &id, approval) {
                self.order.push(id.clone());
                self.approvals.insert(
                    id,
                    Approval {
                        request,
                        decision: None,
                        revoked: None,
                        used: Vec::new(),
                        expiry_recorded: false,
                    },
                );
            }
            return;
        }
        let Some(entry) = self.approvals.get_mut(&id) else {
            return;
        };
        // An event that binds another action than the request's is not about it.
        if approval.action_digest != entry.request.action_digest {
            return;
        }
        let approver = approval
            .approver
            .as_ref()
            .map_or_else(|| "unknown".to_owned(), |a| a.as_str().to_owned());
        let at = record.recorded_at;
        match event {
            APPROVAL_GRANTED if entry.decision.is_none() => {
                entry.decision = Some(Decision::Granted {
                    approver,
                    at,
                    expires_at: approval.expires_at.unwrap_or(at),
                    uses: approval.uses.unwrap_or(1),
                });
            }
            APPROVAL_REFUSED if entry.decision.is_none() => {
                entry.decision = Some(Decision::Refused { approver, at });
            }
            APPROVAL_REVOKED if entry.revoked.is_none() => entry.revoked = Some((approver, at)),
            APPROVAL_USED => entry.used.push(approval.step.unwrap_or(record.step_index)),
            APPROVAL_EXPIRED => entry.expiry_recorded = true,
            _ => {}
        }
    }

    /// The approval `id`, if this run requested it.
    #[must_use]
    pub fn get(&self, id: &ApprovalId) -> Option<&Approval> {
        self.approvals.get(id)
    }

    /// Every approval, in the order they were requested.
    pub fn iter(&self) -> impl Iterator<Item = &Approval> {
        self.order.iter().filter_map(|id| self.approvals.get(id))
    }

    /// The latest request for exactly `action`.
    #[must_use]
    pub fn latest_for(&self, action: &Digest) -> Option<&Approval> {
        self.iter()
            .filter(|a| a.request.action_digest == *action)
            .last()
    }

    /// The approval in force at `now`, which a continuity envelope carries: the latest one
    /// active (approved, unexpired, unrevoked, with uses left).
    #[must_use]
    pub fn in_force(&self, now: Timestamp) -> Option<&Approval> {
        self.iter()
            .filter(|a| a.state(now) == ApprovalState::Active)
            .last()
    }

    /// The latest request, whatever became of it.
    #[must_use]
    pub fn latest(&self) -> Option<&Approval> {
        self.order.last().and_then(|id| self.approvals.get(id))
    }
}

fn request_of(record: &IntentRecord, id: &ApprovalId, event: &ApprovalEvent) -> Option<Request> {
    Some(Request {
        id: id.clone(),
        tenant: record.tenant_id.clone(),
        run: record.run_id.clone(),
        step: event.step?,
        record: record.step_index,
        tool: event.tool.clone()?,
        action_digest: event.action_digest,
        call_id: event.call_id.as_ref().map(|c| c.as_str().to_owned()),
        policy_set_version: event.policy_set_version,
        requested_at: record.recorded_at,
        expires_at: event.expires_at?,
    })
}

#[cfg(test)]
mod tests;
