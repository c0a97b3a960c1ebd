//! Stage 5: after the restore gate has passed, the task's own open work keeps the envelope at
//! REVIEW_REQUIRED: verification still pending, or a next action that is blocked.

use serde_json::Value;

use super::Stage;
use super::codes::{NEXT_ACTION_BLOCKED, NEXT_ACTION_INVALID, VERIFICATION_PENDING};
use super::pyjson::{is_str, shown};
use super::top::Top;

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
            let status = item.get("status");
            if item.is_object() && OPEN_STATUSES.iter().any(|s| is_str(status, s)) {
                stage.review(
                    VERIFICATION_PENDING,
                    format!(
                        "`$.pending_verification[{position}]` (`{}`) is `{}`: the task's verification is not done",
                        shown(item.get("verification_id")),
                        shown(status)
                    ),
                );
            }
        }
    }
    let Some(Value::Object(next_action)) = top.next_action else {
        stage.block(NEXT_ACTION_INVALID, "`$.next_action` is not an object");
        return;
    };
    match next_action.get("blocked_by") {
        None => {}
        Some(Value::Array(blockers)) if blockers.is_empty() => {}
        Some(blockers @ Value::Array(_)) => stage.review(
            NEXT_ACTION_BLOCKED,
            format!(
                "`$.next_action.blocked_by` is `{}`: the next action waits on them",
                shown(Some(blockers))
            ),
        ),
        Some(other) => stage.block(
            NEXT_ACTION_INVALID,
            format!(
                "`$.next_action.blocked_by` is `{}`, not an array",
                shown(Some(other))
            ),
        ),
    }
}
