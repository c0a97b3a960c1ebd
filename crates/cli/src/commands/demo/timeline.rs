//! The demo's printed timeline: one row per record — each step with its decision and the
//! rules that determined it, each boundary with its event and what it bound — the continuity
//! decisions in between (a decision blocked on reconciliation writes no record, so only the
//! timeline shows it), the signed checkpoint, the verification and the commands to explore
//! the run.

use std::fmt::Write as _;

use cairn_ledger::IntentRecord;
use cairn_ledger::record::{AllowDeny, BoundaryEvent, Label};

use super::scenario::ContinuityNote;

/// What the timeline shows.
pub(super) struct Run<'a> {
    pub store: &'a str,
    pub records: &'a [IntentRecord],
    pub notes: &'a [ContinuityNote],
    pub closed: &'a cairn_runtime::ClosedRun,
    pub report: &'a cairn_ledger::RunReport,
    pub signer: &'a str,
}

/// What a boundary record bound, in a few words (envelope ids, which repeat the run id, with
/// the run id elided).
fn boundary_detail(boundary: &BoundaryEvent, run: &str) -> String {
    let short = |id: &Label| id.as_str().replace(run, "…");
    let mut parts = Vec::new();
    if let Some(status) = &boundary.side_effect_status
        && status != &boundary.event
    {
        parts.push(status.to_string());
    }
    if let Some(reason) = &boundary.reason {
        parts.push(reason.to_string());
    }
    if let Some(trigger) = &boundary.trigger {
        parts.push(format!("trigger {trigger}"));
    }
    if let Some(key) = &boundary.idempotency_key {
        parts.push(format!("key {key}"));
    }
    if let Some(envelope) = &boundary.envelope_id {
        parts.push(format!("envelope {}", short(envelope)));
    }
    if let Some(old) = &boundary.supersedes_envelope_id {
        parts.push(format!("supersedes {}", short(old)));
    }
    if let Some(summary) = &boundary.summary_digest {
        parts.push(format!("summary {}", summary.short()));
    }
    if let Some(evidence) = &boundary.evidence_ref {
        parts.push(format!("evidence {evidence}"));
    }
    parts.join(", ")
}

fn decision_row(record: &IntentRecord) -> (String, String) {
    match &record.admission {
        Some(a) => (
            match a.decision {
                AllowDeny::Allow => "allow".to_owned(),
                AllowDeny::Deny => "DENY".to_owned(),
            },
            if a.rule_ids.is_empty() {
                "(default deny)".to_owned()
            } else {
                a.rule_ids
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
        ),
        None => (String::new(), String::new()),
    }
}

fn row(out: &mut String, record: &IntentRecord) {
    let step = record.step_index;
    let kind = record.kind.as_str();
    if let Some(boundary) = &record.boundary {
        let _ = writeln!(
            out,
            "  {step:>4}  {kind:<8}  {:<24}  {:<8}  {}",
            boundary.event,
            "",
            boundary_detail(boundary, record.run_id.as_str())
        );
        return;
    }
    if let Some(t) = &record.termination {
        let detail = t.detail.as_ref().map_or("", Label::as_str);
        let _ = writeln!(out, "  {step:>4}  {kind:<8}  {} ({detail})", t.reason);
        return;
    }
    let tool = record
        .tool
        .as_ref()
        .map_or_else(String::new, |t| format!("{}@{}", t.name, t.version));
    let (decision, rule) = decision_row(record);
    let args = record
        .args
        .as_ref()
        .map_or_else(String::new, |a| format!("{} B", a.size));
    let obs = record
        .observation_digest
        .map_or_else(String::new, |d| d.short());
    let _ = writeln!(
        out,
        "  {step:>4}  {kind:<8}  {tool:<24}  {decision:<8}  {rule:<36}  {args:>6}  {obs}"
    );
}

fn note(out: &mut String, note: &ContinuityNote) {
    let decision = &note.decision;
    let what = match decision.event_types() {
        [] => "no record written: nothing resumes until the write is reconciled".to_owned(),
        _ => "the next call goes through the gate afresh".to_owned(),
    };
    let _ = writeln!(
        out,
        "        ↳ rehydration: {} ({}), authorized: {}\n          {what}",
        decision.status().as_str(),
        decision.reason().as_str(),
        decision.authorized(),
    );
}

/// Renders the timeline.
pub(super) fn render(run: &Run<'_>) -> String {
    let mut out = String::new();
    let Some(first) = run.records.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "Cairn demo: a support-triage agent across a context compaction, recorded and verified\n"
    );
    let _ = writeln!(out, "  store   {}", run.store);
    let _ = writeln!(
        out,
        "  run     {}/{}  (task {})",
        first.tenant_id, first.run_id, first.task_id
    );
    if let Some(admission) = run.records.iter().find_map(|r| r.admission.as_ref()) {
        let _ = writeln!(out, "  policy  {}", admission.policy_set_version.short());
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:>4}  {:<8}  {:<24}  {:<8}  {:<36}  {:>6}  observation",
        "step", "kind", "tool / event", "decision", "rule / detail", "args"
    );
    for record in run.records {
        row(&mut out, record);
        for n in run
            .notes
            .iter()
            .filter(|n| n.after_step == record.step_index)
        {
            note(&mut out, n);
        }
    }
    let _ = writeln!(
        out,
        "\n  The summary written at the compaction said the ticket write failed and should be\n  \
         made again. It carries no authority: the durable record of the unknown write blocked\n  \
         the retry until a lookup by idempotency key showed the ticket had been created."
    );
    let cp = run.closed.checkpoint.checkpoint();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  checkpoint  {}  ({} records, signed by {})",
        cp.origin, cp.size, run.signer
    );
    if run.report.is_intact() {
        let _ = writeln!(
            out,
            "  verify      intact: chain, Merkle root and signature check out"
        );
    } else {
        let _ = writeln!(out, "  verify      FAILED:");
        for finding in &run.report.findings {
            let _ = writeln!(out, "                {}", finding.message);
        }
    }
    let store = run.store;
    let id = &first.run_id;
    let _ = writeln!(out, "\n  Explore it:");
    let _ = writeln!(out, "    cairn --store {store} runs list");
    let _ = writeln!(
        out,
        "    cairn --store {store} ledger show --run {id} --step 3"
    );
    let _ = writeln!(
        out,
        "    cairn --store {store} ledger export --run {id} --format jsonl"
    );
    let _ = writeln!(out, "    cairn --store {store} ledger verify --all");
    if let Some(compaction) = run.records.iter().find(|r| {
        r.boundary
            .as_ref()
            .is_some_and(|b| b.event.as_str() == "context_compaction")
    }) {
        let _ = writeln!(
            out,
            "    cairn --store {store} ledger boundary --run {id} --step {}",
            compaction.step_index
        );
    }
    let _ = writeln!(
        out,
        "    cairn --store {store} ui          # the same in a browser (prints a one-time link)"
    );
    out
}
