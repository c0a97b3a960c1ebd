//! `cairn ledger boundary`: one compaction for an investigator — the envelope the record binds
//! (what the agent's authority is rebuilt from), the summary the model was given (retained,
//! re-hashed, untrusted) and how the run came back, as the console's boundary page shows it
//! (`cairn_runtime::crossing`).

use std::fmt::Write as _;

use cairn_runtime::content::{Retained, RetainedText};
use cairn_runtime::crossing::{Crossing, SavedEnvelope, crossing};
use serde_json::{Value, json};

use crate::args::RunSelector;
use crate::context::{Context, resolve_run};
use crate::failure::{Failure, exit};
use crate::output::Outcome;

/// Runs `cairn ledger boundary`.
pub fn run(ctx: &Context, selector: &RunSelector, step: u64) -> Result<Outcome, Failure> {
    let store = ctx.open_existing_store()?;
    let info = resolve_run(store.as_ref(), selector)?;
    let (tenant, run) = (&info.meta.tenant_id, &info.meta.run_id);
    let seen = crossing(store.as_ref(), tenant, run, step, info.records)?
        .ok_or_else(|| crate::context::no_step(&info, step))?;
    let session = cairn_runtime::lifecycle::session_base(run.as_str());
    let json = json!({
        "run_id": run,
        "tenant_id": tenant,
        "step": step,
        "compaction": seen.compaction,
        "digest_matches_content": seen.digest_matches,
        "envelope": envelope_json(&seen.envelope),
        "summary": summary_json(seen.summary.as_ref()),
        "after": seen.after,
        "after_read_to": seen.read_to,
        "previous_compaction": seen.previous,
        "next_compaction": seen.next,
        "decision_snapshot": session,
    });
    let altered = !seen.digest_matches
        || matches!(seen.envelope, SavedEnvelope::Altered { .. })
        || matches!(seen.summary, Some(Retained::Altered { .. }));
    Ok(Outcome {
        json,
        human: human(&seen, session),
        exit: if altered { exit::TAMPER } else { exit::OK },
        silent: false,
    })
}

fn envelope_json(envelope: &SavedEnvelope) -> Value {
    match envelope {
        SavedEnvelope::Bound(value) => json!({"status": "bound", "envelope": value}),
        SavedEnvelope::Altered { actual } => json!({"status": "altered", "actual_digest": actual}),
        SavedEnvelope::Missing => json!({"status": "missing"}),
    }
}

/// The summary as retained content travels (`RetainedText`), marked untrusted.
fn summary_json(summary: Option<&Retained>) -> Value {
    let Some(retained) = summary else {
        return json!({"status": "none"});
    };
    let mut value = serde_json::to_value(RetainedText::from(retained)).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        fields.insert("untrusted".to_owned(), Value::Bool(true));
    }
    value
}

fn human(seen: &Crossing, session: &str) -> String {
    let record = &seen.compaction;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "compaction   {}/{} step {} at {}{}",
        record.tenant_id,
        record.run_id,
        record.step_index,
        record.recorded_at,
        if seen.digest_matches {
            ""
        } else {
            " — TAMPERED: its content does not hash to its digest"
        }
    );
    let _ = writeln!(
        out,
        "lane         {}",
        record.lane_id.as_ref().map_or("-", |l| l.as_str())
    );
    let _ = writeln!(out, "\nwhat the durable record says (authoritative):");
    match &seen.envelope {
        SavedEnvelope::Missing => {
            let _ = writeln!(out, "  no envelope is stored for this compaction");
        }
        SavedEnvelope::Altered { actual } => {
            let _ = writeln!(
                out,
                "  ALTERED: the stored envelope hashes to {actual}, not to the digest the record holds; not trusted"
            );
        }
        SavedEnvelope::Bound(envelope) => {
            for name in [
                "objective",
                "exact_constraint_refs",
                "pending_obligations",
                "principal_id",
                "authorization_mode",
                "capability_name",
                "policy_version",
                "side_effect_status",
                "idempotency_key",
                "approval_id",
                "approval_expires_at",
                "budget_remaining",
                "checkpoint_ref",
            ] {
                if let Some(value) = envelope.get(name).filter(|v| !v.is_null()) {
                    let text = value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_owned);
                    let _ = writeln!(out, "  {name:<22} {text}");
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "\nthe summary the model was given (UNTRUSTED: a derived view, no authority):"
    );
    match &seen.summary {
        None => {
            let _ = writeln!(out, "  the record names none");
        }
        Some(Retained::Gone) => {
            let _ = writeln!(out, "  not retained (expired or never kept)");
        }
        Some(Retained::Altered { actual }) => {
            let _ = writeln!(
                out,
                "  ALTERED: the retained bytes hash to {actual}, not to the digest the record holds"
            );
        }
        Some(Retained::Matches(bytes)) => {
            let text: String = String::from_utf8_lossy(bytes).chars().take(2000).collect();
            let _ = writeln!(out, "  {}", text.replace('\n', "\n  "));
        }
    }
    let _ = writeln!(out, "\nafter the boundary:");
    if matches!(&seen.envelope, SavedEnvelope::Bound(e)
        if e.get("side_effect_status").and_then(Value::as_str) == Some("side_effect_unknown"))
    {
        let _ = writeln!(
            out,
            "  rehydration BLOCKED on reconciliation: a write's outcome was unknown; nothing is rehydrated (and no record written) until it is reconciled"
        );
    }
    if seen.after.is_empty() {
        let _ = writeln!(
            out,
            "  no rehydration, failed validation or reconciliation recorded"
        );
    }
    for later in &seen.after {
        if let Some(boundary) = &later.boundary {
            let _ = writeln!(
                out,
                "  step {:<6} {}{}",
                later.step_index,
                boundary.event,
                boundary
                    .reason
                    .as_ref()
                    .map_or_else(String::new, |r| format!(" ({r})"))
            );
        }
    }
    let _ = write!(
        out,
        "\ndecisions: `cairn decisions compare --name {session}` compares the session's latest snapshot now"
    );
    out
}
