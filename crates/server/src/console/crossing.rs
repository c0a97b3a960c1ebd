//! The page of one compaction (`/ui/runs/{run}/boundaries/{step}`): what the durable record
//! says the agent carries across it, beside the summary the model was given — a derived view
//! that carries no authority — and how the run came back.

use maud::{Markup, html};

use cairn_runtime::crossing::{AFTER_SCAN, Crossing, SavedEnvelope};
use serde_json::Value;

use super::pages::{RECORDS_PER_PAGE, content, head, layout, short, url_encode, what};
use crate::SessionDecisions;
use crate::tokens::Caller;

/// A field of the envelope as text (`—` when absent or null).
fn field(envelope: &Value, name: &str) -> String {
    match envelope.get(name) {
        None | Some(Value::Null) => "—".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// A list field of the envelope.
fn items(envelope: &Value, name: &str) -> Markup {
    let list: Vec<&str> = envelope
        .get(name)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    html! {
        @if list.is_empty() { "none" } @else {
            ul.plain { @for item in list { li { code { (item) } } } }
        }
    }
}

/// What the envelope saved with the compaction holds, as the record binds it.
fn durable(crossing: &Crossing) -> Markup {
    let lane = crossing
        .compaction
        .lane_id
        .as_ref()
        .map_or("—", |l| l.as_str());
    html! {
        @match &crossing.envelope {
            SavedEnvelope::Missing => p.error role="alert" { "No envelope is stored for this compaction: nothing can be rehydrated from it." },
            SavedEnvelope::Altered { actual } => p.error role="alert" {
                "ALTERED: the stored envelope hashes to " code { (actual.to_string()) }
                ", not to the digest the compaction record holds. It is not trusted, and not shown."
            },
            SavedEnvelope::Bound(envelope) => {
                p.state.closed { "The stored envelope hashes to the digest the compaction record holds." }
                table {
                    tbody {
                        tr { th scope="row" { "Objective" } td { (field(envelope, "objective")) } }
                        tr { th scope="row" { "Constraints" } td { (items(envelope, "exact_constraint_refs")) } }
                        tr { th scope="row" { "Obligations" } td { (items(envelope, "pending_obligations")) } }
                        tr { th scope="row" { "Acting for" } td {
                            code { (field(envelope, "principal_id")) } " · " (field(envelope, "authorization_mode"))
                            @if envelope.get("delegated_scope").is_some_and(|v| !v.is_null()) {
                                " · scope " code { (field(envelope, "delegated_scope")) }
                            }
                        } }
                        tr { th scope="row" { "Capability" } td.mono { (field(envelope, "capability_name")) " v" (field(envelope, "capability_version")) } }
                        tr { th scope="row" { "Policy version" } td.mono { (field(envelope, "policy_version")) } }
                        tr { th scope="row" { "Active lane" } td.mono { (lane) } }
                        tr { th scope="row" { "Open blocks" } td {
                            @if field(envelope, "side_effect_status") == "side_effect_unknown" {
                                span.error { "BLOCKED on reconciliation: a side effect of unknown outcome, key " code { (field(envelope, "idempotency_key")) } }
                            } @else {
                                "none (" (field(envelope, "side_effect_status")) ")"
                            }
                        } }
                        tr { th scope="row" { "Approval in force" } td {
                            @if envelope.get("approval_id").is_some_and(|v| !v.is_null()) {
                                code { (field(envelope, "approval_id")) } " until " (field(envelope, "approval_expires_at"))
                                " for the action " code title=(field(envelope, "action_digest")) { (short(&field(envelope, "action_digest"))) }
                            } @else { "none" }
                        } }
                        tr { th scope="row" { "Budget left" } td { (field(envelope, "budget_remaining")) } }
                        tr { th scope="row" { "Checkpoint" } td.mono { (field(envelope, "checkpoint_ref")) } }
                        tr { th scope="row" { "Summary digest" } td.mono { (field(envelope, "summary_sha256")) } }
                    }
                }
            },
        }
    }
}

/// The session's decisions at its latest boundary, compared now.
fn decisions(crossing: &Crossing, decisions: Option<&SessionDecisions>) -> Markup {
    let Some(decisions) = decisions else {
        return html! {
            p { "No decision snapshot was taken for this run's session (no task decisions are kept for it)." }
        };
    };
    let comparison = &decisions.comparison;
    let at = crossing.compaction.recorded_at;
    let same_boundary = decisions
        .boundary_at
        .unix_micros()
        .abs_diff(at.unix_micros())
        <= 60_000_000;
    html! {
        p {
            "Snapshot " code { (decisions.name) } " taken for the boundary at " (decisions.boundary_at.to_string())
            ", compared now: " strong class={"state " (comparison.state().as_str())} { (comparison.state().as_str()) }
            " (" code { (comparison.reason().code()) } "); safe action " code { (comparison.action().as_str()) }
            @if comparison.restricts_consequential() { span.error { " — consequential calls are refused" } }
        }
        @if !same_boundary {
            p { "That is the session's latest boundary, not this one: only the latest snapshot of a session is kept." }
        }
        @if !decisions.snapshotted {
            p.error { "No snapshot could be saved at that boundary: the comparison has no evidence to compare with." }
        }
        @if !comparison.decisions().is_empty() {
            table {
                (head(&["Decision", "State", "Why", "Safe action"]))
                tbody {
                    @for result in comparison.decisions() {
                        tr {
                            td.mono { (result.key().as_str()) }
                            td { span class={"state " (result.state().as_str())} { (result.state().as_str()) } }
                            td.mono { (result.reason().code()) }
                            td.mono { (result.action().as_str()) }
                        }
                    }
                }
            }
        }
    }
}

/// How the run came back from the compaction.
fn after(run: &str, crossing: &Crossing) -> Markup {
    let step = crossing.compaction.step_index;
    let blocked = matches!(&crossing.envelope, SavedEnvelope::Bound(e)
        if e.get("side_effect_status").and_then(Value::as_str) == Some("side_effect_unknown"));
    html! {
        @if blocked {
            p.error { "Rehydration was BLOCKED on reconciliation: a write's outcome was unknown at the compaction. Nothing is rehydrated — and no rehydration record is written — until the write is reconciled; a retry of it is refused meanwhile." }
        }
        @if crossing.after.is_empty() {
            p { "No rehydration, failed validation or reconciliation recorded after it." }
        } @else {
            ol.plain {
                @for record in &crossing.after {
                    li {
                        a href={"/ui/runs/" (url_encode(run)) "/steps/" (record.step_index)} { "step " (record.step_index) } ": "
                        @if record.boundary.as_ref().is_some_and(|b| b.event.as_str() == "continuity_validation_failed") {
                            span.error { (what(record)) }
                        } @else { (what(record)) }
                    }
                }
            }
        }
        @if crossing.read_to.saturating_sub(step + 1) >= AFTER_SCAN {
            p { "Read the " (AFTER_SCAN) " records after it; the timeline has the rest." }
        }
    }
}

/// The page of the compaction `crossing` of run `run`.
pub(super) fn page(
    caller: &Caller,
    csrf: &str,
    run: &str,
    crossing: &Crossing,
    session: Option<&SessionDecisions>,
) -> Markup {
    let step = crossing.compaction.step_index;
    let boundary = crossing.compaction.boundary.as_ref();
    let to = |step: u64| format!("/ui/runs/{}/boundaries/{step}", url_encode(run));
    let body = html! {
        p { a href={"/ui/runs/" (url_encode(run)) "?from=" (step - step % RECORDS_PER_PAGE)} { "← " (run) } }
        h1 { "Across the compaction at step " (step) }
        p {
            @if let Some(trigger) = boundary.and_then(|b| b.trigger.as_ref()) { "Trigger " code { (trigger.as_str()) } " · " }
            "recorded " (crossing.compaction.recorded_at.to_string())
            @if let Some(id) = boundary.and_then(|b| b.envelope_id.as_ref()) { " · envelope " code { (id.as_str()) } }
            @if let Some(range) = boundary.and_then(|b| b.source_event_range) { " · summarises steps " (range.first) "–" (range.last) }
        }
        nav.pager aria-label="Compactions" {
            @if let Some(previous) = crossing.previous { a href=(to(previous)) rel="prev" { "← Previous compaction" } }
            @if let Some(next) = crossing.next { a href=(to(next)) rel="next" { "Next compaction →" } }
        }
        @if !crossing.digest_matches {
            p.error role="alert" { "TAMPERED: the compaction record's content does not hash to its digest." }
        }
        div.health {
            section aria-labelledby="durable" {
                h2 #durable { "What the durable record says" }
                p { "This is what the agent's authority is rebuilt from." }
                (durable(crossing))
            }
            section.untrusted aria-labelledby="summary" {
                h2 #summary { "The summary the model was given" }
                p.warning { strong { "UNTRUSTED" } ": a derived view written by the model's host. It carries no authority; only its digest is bound to the envelope." }
                (content("Retained summary", crossing.summary.as_ref()))
            }
        }
        h2 { "After the boundary" }
        (after(run, crossing))
        h2 { "Decisions across the boundary" }
        (decisions(crossing, session))
        p.cli { "The same in the CLI: " code { "cairn ledger boundary --run " (run) " --step " (step) } }
    };
    layout(
        &format!("Compaction at step {step}"),
        Some((caller, csrf)),
        &body,
    )
}
