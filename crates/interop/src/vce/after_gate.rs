//! Stage 5: after the restore gate has passed, the task's own open work keeps the envelope at
//! REVIEW_REQUIRED: verification still pending, or a next action that is blocked.

use std::fmt::Write as _;

use crate::lookup::{field, field_of};
use serde_json::Value;

use super::Stage;
use super::codes::{NEXT_ACTION_BLOCKED, NEXT_ACTION_INVALID, VERIFICATION_PENDING};
use super::pyjson::{is_str, push_shown, shown};
use super::top::Top;

/// Room for a message quoting one or two short values, so that it is written without growing.
const MESSAGE_CAPACITY: usize = 160;

/// The `pending_verification` statuses that mean the verification is not done.
const OPEN_STATUSES: [&str; 4] = ["pending", "running", "blocked", "failed"];

/// Checks `pending_verification` and `next_action.blocked_by`.
///
/// The reference looks at `pending_verification` first and returns REVIEW_REQUIRED before it
/// inspects `next_action`, so a malformed `next_action` beside pending verification would be
/// REVIEW_REQUIRED there and BLOCKED here. The schema stage rules that input out
/// (`next_action` is a required object whose `blocked_by` is an array), so the two agree on
/// every input that reaches this stage.
pub(super) fn check(top: &Top<'_>, stage: &mut Stage) {
    if let Some(Value::Array(items)) = top.pending_verification {
        for (position, item) in items.iter().enumerate() {
            let status = field_of(item, "status");
            if item.is_object() && OPEN_STATUSES.iter().any(|s| is_str(status, s)) {
                // Built in place: these two findings are the usual ones of a valid envelope.
                let mut message = String::with_capacity(MESSAGE_CAPACITY);
                let _ = write!(message, "`$.pending_verification[{position}]` (`");
                push_shown(&mut message, field_of(item, "verification_id"));
                message.push_str("`) is `");
                push_shown(&mut message, status);
                message.push_str("`: the task's verification is not done");
                stage.review(VERIFICATION_PENDING, message);
            }
        }
    }
    let Some(Value::Object(next_action)) = top.next_action else {
        stage.block(NEXT_ACTION_INVALID, "`$.next_action` is not an object");
        return;
    };
    match field(next_action, "blocked_by") {
        None => {}
        Some(Value::Array(blockers)) if blockers.is_empty() => {}
        Some(blockers @ Value::Array(_)) => {
            let mut message = String::with_capacity(MESSAGE_CAPACITY);
            message.push_str("`$.next_action.blocked_by` is `");
            push_shown(&mut message, Some(blockers));
            message.push_str("`: the next action waits on them");
            stage.review(NEXT_ACTION_BLOCKED, message);
        }
        Some(other) => stage.block(
            NEXT_ACTION_INVALID,
            format!(
                "`$.next_action.blocked_by` is `{}`, not an array",
                shown(Some(other))
            ),
        ),
    }
}
