//! The executor's side of approvals: a call the policies permit only with a person's
//! approval is admitted when an approval of exactly that action is in force — its use is
//! recorded with the step, atomically — and otherwise held, raising a request (or pointing at
//! the one an identical call raised) that a person decides.

use cairn_core::Digest;
use cairn_ledger::record::{ApprovalEvent, BoundaryEvent, Label};
use cairn_policy::Arguments;
use rand_core::RngCore;

use super::{
    APPROVAL_EXPIRED, APPROVAL_REQUESTED, APPROVAL_USED, Approval, ApprovalBook, ApprovalId,
    ApprovalState, action_digest, rules,
};
use crate::error::{RuntimeError, label};
use crate::executor::{CallContext, Executor};
use crate::recorder::ToolCall;
use crate::verdict::{ApprovalDenial, DenyCause, GateVerdict, WaitingRequest};

/// How the executor raises approval requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalOptions {
    /// How long a request waits for a person before it lapses (an identical call then
    /// raises a new one).
    pub request_ttl: jiff::SignedDuration,
}

impl Default for ApprovalOptions {
    fn default() -> Self {
        Self {
            request_ttl: jiff::SignedDuration::from_hours(1),
        }
    }
}

/// The records an approval adds around a step: its use or expiry before it, the request a
/// held step raises after it.
#[derive(Debug, Default)]
pub(crate) struct ApprovalPlan {
    pub before: Option<BoundaryEvent>,
    pub after: Option<BoundaryEvent>,
}

impl ApprovalPlan {
    pub(crate) const fn is_empty(&self) -> bool {
        self.before.is_none() && self.after.is_none()
    }
}

/// What the run's approvals make of an action.
enum Found<'a> {
    /// An approval in force under the same policies: the call runs.
    Use(&'a Approval),
    /// A request for this action waits for a person already.
    Waiting(&'a Approval),
    /// Refused or revoked: nothing more is asked of a person.
    Final(&'a Approval, ApprovalState),
    /// A new request, for `code` (and the earlier approval that does not do).
    Ask(&'static str, &'static str, Option<&'a Approval>),
}

impl Executor {
    /// Turns the gate's "a person must approve" into an allow — an approval of exactly this
    /// action is in force — or a held call, with the records either adds.
    pub(crate) fn decide_approval(
        &self,
        verdict: &GateVerdict,
        call: &ToolCall<'_>,
        args: &Arguments<'_>,
        context: &CallContext,
    ) -> Result<(GateVerdict, ApprovalPlan), RuntimeError> {
        let reason = match verdict.cause() {
            Some(DenyCause::ApprovalRequired { reason }) => reason.clone(),
            _ => return Ok((verdict.clone(), ApprovalPlan::default())),
        };
        let recorder = self.recorder_ref();
        let now = recorder.now();
        let version = verdict.policy_set_version();
        let action = action_digest(&call.tool, args.value())?;
        let rows = recorder
            .store()
            .rows(recorder.tenant_id(), recorder.run_id())?;
        let book = ApprovalBook::from_rows(&rows);
        let asking = verdict.rule_ids().to_vec();

        // An approval the caller cites must be one of this run's.
        if let Some(cited) = context.approval.as_deref() {
            let known = ApprovalId::parse(cited)
                .ok()
                .and_then(|id| book.get(&id).map(|_| id));
            if known.is_none() {
                let message = format!(
                    "This call needs a person's approval ({reason}). The approval `{cited}` it cites is not a request of this run: approvals are bound to the run (and tenant) whose call was held. Retry without citing it to raise a request here."
                );
                let denial = ApprovalDenial {
                    code: "approval_other_run",
                    waiting: None,
                    earlier: Some(cited.chars().take(40).collect()),
                    reason,
                    message,
                };
                return held(
                    version,
                    asking,
                    rules::OTHER_RUN,
                    denial,
                    ApprovalPlan::default(),
                );
            }
        }

        let found = match book.latest_for(&action) {
            Some(a) => match a.state(now) {
                ApprovalState::Active if a.request.policy_set_version == Some(version) => {
                    Found::Use(a)
                }
                ApprovalState::Active => {
                    Found::Ask("approval_policy_changed", rules::POLICY_CHANGED, Some(a))
                }
                ApprovalState::Pending if a.request.policy_set_version == Some(version) => {
                    Found::Waiting(a)
                }
                ApprovalState::Pending => {
                    Found::Ask("approval_policy_changed", rules::POLICY_CHANGED, Some(a))
                }
                state @ (ApprovalState::Refused | ApprovalState::Revoked) => Found::Final(a, state),
                ApprovalState::Expired => Found::Ask("approval_expired", rules::EXPIRED, Some(a)),
                ApprovalState::UsedUp => Found::Ask("approval_used_up", rules::USED_UP, Some(a)),
                ApprovalState::Lapsed => other_action(&book, &action, now),
            },
            None => other_action(&book, &action, now),
        };

        match found {
            Found::Use(approval) => {
                let mut event = BoundaryEvent::new(label(APPROVAL_USED)?);
                event.approval = Some(Box::new(bare(approval, action)?));
                let mut rule_ids = asking;
                rule_ids.push(label(rules::GRANTED)?);
                Ok((
                    GateVerdict::allow(version, rule_ids),
                    ApprovalPlan {
                        before: Some(event),
                        after: None,
                    },
                ))
            }
            Found::Waiting(approval) => {
                let id = approval.request.id.as_str();
                let expires = approval.request.expires_at;
                let message = format!(
                    "This call needs a person's approval ({reason}). An identical call is already waiting as request {id} (until {expires}); this one did not run either. {next}",
                    next = next_steps(id)
                );
                let denial = ApprovalDenial {
                    code: "approval_pending",
                    waiting: Some(WaitingRequest {
                        id: id.to_owned(),
                        expires_at: expires,
                        new: false,
                    }),
                    earlier: None,
                    reason,
                    message,
                };
                held(
                    version,
                    asking,
                    rules::PENDING,
                    denial,
                    ApprovalPlan::default(),
                )
            }
            Found::Final(approval, state) => {
                let id = approval.request.id.as_str();
                let by = approval.decided_by().unwrap_or("a person");
                let (code, rule, what) = if state == ApprovalState::Refused {
                    ("approval_refused", rules::REFUSED, "refused")
                } else {
                    (
                        "approval_revoked",
                        rules::REVOKED,
                        "revoked the approval of",
                    )
                };
                let message = format!(
                    "This call needs a person's approval ({reason}), and {by} {what} exactly this call (request {id}). It did not run. Do not retry it: ask the user how to go on."
                );
                let denial = ApprovalDenial {
                    code,
                    waiting: None,
                    earlier: Some(id.to_owned()),
                    reason,
                    message,
                };
                held(version, asking, rule, denial, ApprovalPlan::default())
            }
            Found::Ask(code, rule, earlier) => {
                let recorder = self.recorder_ref();
                let mut nonce = [0_u8; 16];
                rand_core::OsRng.fill_bytes(&mut nonce);
                let nonce = hex(&nonce);
                let id = ApprovalId::derive(recorder.tenant_id(), recorder.run_id(), &nonce)?;
                let expires_at = now.saturating_add(self.approval_options().request_ttl);
                let mut event = BoundaryEvent::new(label(APPROVAL_REQUESTED)?);
                event.approval = Some(Box::new(ApprovalEvent {
                    action_digest: action,
                    approver: None,
                    call_id: context.call_id.as_deref().and_then(|c| Label::new(c).ok()),
                    expires_at: Some(expires_at),
                    id: label(id.as_str())?,
                    nonce: Some(label(&nonce)?),
                    policy_set_version: Some(version),
                    step: None,
                    tool: Some(call.tool.clone()),
                    uses: None,
                }));
                let mut before = None;
                if let Some(a) =
                    earlier.filter(|a| a.state(now) == ApprovalState::Expired && !a.expiry_recorded)
                {
                    let mut expired = BoundaryEvent::new(label(APPROVAL_EXPIRED)?);
                    expired.approval = Some(Box::new(bare(a, a.request.action_digest)?));
                    before = Some(expired);
                }
                let why = match (code, earlier) {
                    (_, None) => String::new(),
                    ("approval_expired", Some(a)) => format!(
                        "The approval {} of this call expired at {}; it is not reused. ",
                        a.request.id,
                        a.expires_at().map(|t| t.to_string()).unwrap_or_default()
                    ),
                    ("approval_used_up", Some(a)) => format!(
                        "The approval {} admitted this exact call {} time(s) already and is used up. ",
                        a.request.id,
                        a.used.len()
                    ),
                    ("approval_policy_changed", Some(a)) => format!(
                        "The policies changed since request {} was made under them, so it does not admit this call. ",
                        a.request.id
                    ),
                    (_, Some(a)) => format!(
                        "The approval {} covers another call (other arguments or another tool); an approval admits only the exact call a person saw. ",
                        a.request.id
                    ),
                };
                let message = format!(
                    "This call needs a person's approval ({reason}). {why}Cairn held it: it did not run. Request {id} waits for a person until {expires_at}. {next}",
                    next = next_steps(id.as_str())
                );
                let denial = ApprovalDenial {
                    code,
                    waiting: Some(WaitingRequest {
                        id: id.as_str().to_owned(),
                        expires_at,
                        new: true,
                    }),
                    earlier: earlier.map(|a| a.request.id.as_str().to_owned()),
                    reason,
                    message,
                };
                held(
                    version,
                    asking,
                    rule,
                    denial,
                    ApprovalPlan {
                        before,
                        after: Some(event),
                    },
                )
            }
        }
    }
}

/// What the agent does next while a request waits.
fn next_steps(id: &str) -> String {
    format!(
        "A person decides it with `cairn approvals approve {id}` or `cairn approvals deny {id}` (the agent cannot). Once it is approved, make exactly the same call again (same tool, same arguments) and it runs; a changed call needs its own approval."
    )
}

/// A new request when nothing of this action's is left to use or wait for: for a call whose
/// tool has an approval in force for other arguments, saying so.
fn other_action<'a>(
    book: &'a ApprovalBook,
    action: &Digest,
    now: cairn_core::Timestamp,
) -> Found<'a> {
    let other = book
        .iter()
        .filter(|a| a.request.action_digest != *action && a.state(now) == ApprovalState::Active)
        .last();
    match other {
        Some(a) => Found::Ask("approval_other_action", rules::OTHER_ACTION, Some(a)),
        None => Found::Ask("approval_pending", rules::PENDING, None),
    }
}

/// The deny of a held call: the asking policies and the approval rule that refused it.
fn held(
    version: Digest,
    mut rule_ids: Vec<Label>,
    rule: &str,
    denial: ApprovalDenial,
    plan: ApprovalPlan,
) -> Result<(GateVerdict, ApprovalPlan), RuntimeError> {
    rule_ids.push(label(rule)?);
    Ok((
        GateVerdict::deny(version, rule_ids, DenyCause::Approval(denial)),
        plan,
    ))
}

/// The part of an approval event that names an approval and its action only.
fn bare(approval: &Approval, action: Digest) -> Result<ApprovalEvent, RuntimeError> {
    Ok(ApprovalEvent {
        action_digest: action,
        approver: None,
        call_id: None,
        expires_at: None,
        id: label(approval.request.id.as_str())?,
        nonce: None,
        policy_set_version: None,
        step: None,
        tool: None,
        uses: None,
    })
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
