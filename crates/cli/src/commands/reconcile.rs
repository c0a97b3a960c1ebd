//! `cairn reconcile`: records what the external system shows for a call whose outcome was
//! unknown — by its idempotency key, with the evidence — which unblocks the capability. It is
//! the only way past a `blocked_on_reconciliation`: nothing retries blindly.

use std::sync::Arc;

use cairn_core::{Clock, SystemClock};
use cairn_runtime::reconcile::{ObservedOutcome, reconcile_run};

use crate::args::ReconcileArgs;
use crate::context::{Context, resolve_run};
use crate::failure::Failure;
use crate::output::Outcome;

/// Runs `cairn reconcile`.
pub fn run(ctx: &Context, args: &ReconcileArgs) -> Result<Outcome, Failure> {
    let outcome: ObservedOutcome = args.outcome.parse()?;
    let store = ctx.open_existing_store()?;
    let info = resolve_run(store.as_ref(), &args.run)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let receipt = reconcile_run(
        store,
        clock,
        &info.meta.tenant_id,
        &info.meta.run_id,
        &args.key,
        outcome,
        &args.evidence,
    )?;
    Ok(Outcome::ok(
        serde_json::json!({
            "tenant_id": info.meta.tenant_id,
            "run_id": info.meta.run_id,
            "idempotency_key": args.key,
            "outcome": outcome.as_str(),
            "evidence_ref": args.evidence,
            "step_index": receipt.step_index,
            "digest": receipt.digest,
        }),
        format!(
            "reconciled `{}` as {} (evidence: {}) — recorded as step {} of run `{}/{}`",
            args.key,
            outcome.as_str(),
            args.evidence,
            receipt.step_index,
            info.meta.tenant_id,
            info.meta.run_id
        ),
    ))
}
