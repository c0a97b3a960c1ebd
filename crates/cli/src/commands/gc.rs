//! `cairn gc`: deletes content whose retention ended. Structural records and checkpoints are
//! never collected, so verification passes before and after.

use cairn_core::{Clock, SystemClock, Timestamp};

use crate::args::GcArgs;
use crate::context::Context;
use crate::failure::Failure;
use crate::output::Outcome;

/// Runs `cairn gc`.
pub fn run(ctx: &Context, args: &GcArgs) -> Result<Outcome, Failure> {
    let now = match &args.now {
        Some(text) => text.parse::<Timestamp>().map_err(|e| {
            Failure::new(
                cairn_core::CoreError::INVALID_TIMESTAMP,
                format!("`--now`: {e}"),
            )
        })?,
        None => SystemClock.now(),
    };
    let store = ctx.open_existing_store()?;
    let removed = store.gc_content(now)?;
    Ok(Outcome::ok(
        serde_json::json!({ "removed": removed, "now": now.to_string() }),
        format!("removed {removed} expired content item(s) as of {now}"),
    ))
}
