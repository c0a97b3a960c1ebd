//! The context Cairn re-injects after a compaction (`additionalContext`, at most 10,000
//! characters): the authoritative objective, the decisions by key, revision and state, the
//! active lane, the rehydration decision and any block with the command that resolves it —
//! labelled as coming from Cairn's durable record, not from the summary.
//!
//! It never holds a decision's value (Cairn only has their keyed digests), an argument or an
//! observation: only ids, keys, revisions, states, scopes declared in the project's files and
//! commands.

use std::fmt::Write as _;

use crate::answer::{MAX_CONTEXT_CHARS, truncate};

/// One decision as the comparison after the boundary classified it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionLine {
    /// The decision's key (`scope`, `approval_boundary`, …).
    pub key: String,
    /// Its revision in the pre-boundary snapshot.
    pub revision: u32,
    /// Its revision observed after the boundary, if any.
    pub observed_revision: Option<u32>,
    /// `preserved`, `approved_change`, `unverified`, `dropped` or `conflicting`.
    pub state: String,
    /// The reason code.
    pub reason: String,
}

/// The active lane, as the project declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneLine {
    /// Its id.
    pub id: String,
    /// Its owner.
    pub owner: String,
    /// Its objective.
    pub objective: String,
    /// Its status now.
    pub status: String,
    /// The reference of its latest ruling, when one was recorded.
    pub ruling: Option<String>,
    /// The refs it may change.
    pub allowed: Vec<String>,
    /// The refs it must not change.
    pub denied: Vec<String>,
}

/// What became of the host's summary of the conversation, as far as the record goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SummaryNote {
    /// Its digest is bound into the compaction record.
    #[default]
    Bound,
    /// The host hands hooks no summary (Codex): the compaction record binds none.
    NotSent,
    /// The host hands it over after this context (Claude Code's `PostCompact` follows its
    /// `SessionStart`): its digest will be bound then.
    Pending,
}

/// Everything the re-injected context says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextFacts {
    /// The run, `tenant/run`.
    pub run: String,
    /// How many records the run has.
    pub records: u64,
    /// The compaction's number in the session.
    pub compaction: u64,
    /// What became of the host's summary.
    pub summary: SummaryNote,
    /// The rehydration decision (`reauthorization_required`, …) and its reason.
    pub continuity: Option<(String, String)>,
    /// The objective, as configured.
    pub objective: String,
    /// The overall decision state and reason, when decisions are configured.
    pub decisions_state: Option<(String, String)>,
    /// The decisions.
    pub decisions: Vec<DecisionLine>,
    /// The active lane.
    pub lane: Option<LaneLine>,
    /// The policy-set version in force.
    pub policy_version: Option<String>,
    /// What blocks consequential calls now, each with the command that resolves it.
    pub blocks: Vec<String>,
    /// Advice that does not block (for example decisions to re-assert).
    pub advice: Vec<String>,
}

/// The text of the re-injected context.
#[must_use]
pub fn render(facts: &ContextFacts) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "[Cairn — from the durable record (run {}, {} records), not from the conversation summary]",
        facts.run, facts.records
    );
    let _ = writeln!(
        out,
        "The conversation was compacted (compaction {}). The summary is a derived, untrusted view and carries no authority: where it disagrees with what follows, this record wins. Every next tool call is decided afresh by Cairn's policy gate.",
        facts.compaction
    );
    if facts.blocks.is_empty() {
        let _ = writeln!(out, "Blocks: none.");
    } else {
        let _ = writeln!(
            out,
            "Blocks — consequential tool calls are denied until these are resolved by a person:"
        );
        for block in &facts.blocks {
            let _ = writeln!(out, "- {block}");
        }
    }
    match facts.summary {
        SummaryNote::Bound => {}
        SummaryNote::NotSent => {
            let _ = writeln!(
                out,
                "The host hands hooks no summary text, so the compaction record binds no summary digest (unbound)."
            );
        }
        SummaryNote::Pending => {
            let _ = writeln!(
                out,
                "The summary's digest is bound into the compaction record when the host hands the summary to Cairn."
            );
        }
    }
    if let Some((status, reason)) = &facts.continuity {
        let _ = writeln!(out, "Continuity: {status} ({reason}).");
    }
    let _ = writeln!(out, "Objective: {}", facts.objective);
    if let Some((state, reason)) = &facts.decisions_state {
        let _ = writeln!(
            out,
            "Decisions: {state} ({reason}). Keys, revisions and states only — Cairn holds their values as keyed digests and does not show them:"
        );
        for d in &facts.decisions {
            let observed = d
                .observed_revision
                .map_or_else(String::new, |r| format!(", observed r{r}"));
            let _ = writeln!(
                out,
                "- {} r{}{observed}: {} ({})",
                d.key, d.revision, d.state, d.reason
            );
        }
    } else {
        let _ = writeln!(out, "Decisions: none configured for this project.");
    }
    match &facts.lane {
        Some(lane) => {
            let _ = writeln!(
                out,
                "Active lane: `{}` (owner {}, {}) — {}. May change: {}. Must not change: {}. Latest ruling: {}.",
                lane.id,
                lane.owner,
                lane.status,
                lane.objective,
                list(&lane.allowed),
                list(&lane.denied),
                lane.ruling.as_deref().unwrap_or("none recorded")
            );
        }
        None => {
            let _ = writeln!(out, "Active lane: none configured.");
        }
    }
    if let Some(version) = &facts.policy_version {
        let _ = writeln!(out, "Policy set in force: {version}.");
    }
    for advice in &facts.advice {
        let _ = writeln!(out, "Note: {advice}");
    }
    truncate(&out, MAX_CONTEXT_CHARS)
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_owned()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_labelled_and_shows_keys_not_values() {
        let text = render(&ContextFacts {
            run: "local/cc-s".to_owned(),
            records: 12,
            compaction: 1,
            summary: SummaryNote::Bound,
            continuity: Some((
                "reauthorization_required".to_owned(),
                "continuity_validated".to_owned(),
            )),
            objective: "ship the fix".to_owned(),
            decisions_state: Some((
                "conflicting".to_owned(),
                "changed_without_approval".to_owned(),
            )),
            decisions: vec![DecisionLine {
                key: "scope".to_owned(),
                revision: 1,
                observed_revision: Some(2),
                state: "conflicting".to_owned(),
                reason: "changed_without_approval".to_owned(),
            }],
            lane: None,
            policy_version: None,
            blocks: vec!["scope changed: cairn decisions approve-change scope …".to_owned()],
            advice: Vec::new(),
        });
        assert!(text.starts_with("[Cairn — from the durable record"));
        assert!(text.contains("not from the conversation summary"));
        assert!(text.contains("- scope r1, observed r2: conflicting"));
        assert!(text.contains("cairn decisions approve-change"));
        // Blocks come first, right after the label.
        let blocks = text.find("Blocks —").unwrap();
        assert!(blocks < text.find("Objective:").unwrap());
        assert!(blocks < text.find("Continuity:").unwrap());
    }
}
