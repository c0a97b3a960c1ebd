//! What stops *consequential* calls for now, whatever the policies permit — the continuity
//! restrictions every edge (a hook, the MCP gateway) puts in front of the policy gate:
//!
//! - a side effect of unknown outcome awaiting reconciliation (P-3: nothing consequential
//!   runs, nothing is retried blindly, until a person records what happened);
//! - the task's decision invariants after a boundary: a decision `conflicting` (changed
//!   without an approval), `dropped`, or the boundary's snapshot missing
//!   (`continuity_evidence_missing`) — and decision files Cairn cannot read.
//!
//! Read-only calls still go to the policy. Which tools are consequential is the edge's
//! [`ToolClasses`]: a tool no read-only pattern names is consequential (fail closed).
//!
//! The rule ids (`cairn.hooks.*`) are the ones the hooks have recorded since these
//! restrictions were theirs; they stay stable, so one restriction has one id in every ledger.

use jiff::SignedDuration;

use cairn_core::Timestamp;
use cairn_decisions::{Comparison, ContinuityHealth};

use crate::decision_files::{DecisionFiles, DecisionFilesError};

/// Why consequential calls are refused for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restriction {
    /// The rule recorded with each refusal.
    pub rule: &'static str,
    /// The stable reason code.
    pub reason: &'static str,
    /// What the model and the user are told, with the command that resolves it.
    pub message: String,
}

/// The rule while a side effect of unknown outcome awaits reconciliation.
pub const RULE_RECONCILIATION: &str = "cairn.hooks.reconciliation-pending";
/// The rule while a decision is `conflicting`.
pub const RULE_CONFLICTING: &str = "cairn.hooks.decision-conflicting";
/// The rule while a decision is `dropped`.
pub const RULE_DROPPED: &str = "cairn.hooks.decision-dropped";
/// The rule while the pre-boundary decision snapshot is missing (or the decision files
/// cannot be read).
pub const RULE_EVIDENCE_MISSING: &str = "cairn.hooks.continuity-evidence-missing";

/// How long after a boundary a decision may take to be observed again (as `cairn decisions
/// compare` and `cairn status` judge it).
pub const DECISION_WINDOW: SignedDuration = SignedDuration::from_mins(10);

/// Tool name patterns — exact names, or a prefix ending in `*` — that say which tools only
/// read. A tool is consequential when a consequential pattern names it, or when no
/// read-only pattern does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolClasses {
    read_only: Vec<String>,
    consequential: Vec<String>,
}

fn matches(pattern: &str, tool: &str) -> bool {
    pattern
        .strip_suffix('*')
        .map_or(pattern == tool, |prefix| tool.starts_with(prefix))
}

impl ToolClasses {
    /// Tools matching `read_only` only read, unless a `consequential` pattern names them.
    #[must_use]
    pub const fn new(read_only: Vec<String>, consequential: Vec<String>) -> Self {
        Self {
            read_only,
            consequential,
        }
    }

    /// Whether `tool` may change something outside the model.
    #[must_use]
    pub fn is_consequential(&self, tool: &str) -> bool {
        self.consequential.iter().any(|p| matches(p, tool))
            || !self.read_only.iter().any(|p| matches(p, tool))
    }

    /// Adds consequential patterns (they win over read-only ones).
    pub fn add_consequential(&mut self, patterns: impl IntoIterator<Item = String>) {
        self.consequential.extend(patterns);
    }

    /// Replaces the read-only patterns.
    pub fn set_read_only(&mut self, patterns: Vec<String>) {
        self.read_only = patterns;
    }

    /// Whether `pattern` is a name or a prefix ending in `*` (no other `*`).
    #[must_use]
    pub fn pattern_is_valid(pattern: &str) -> bool {
        !pattern.is_empty() && !pattern.trim_end_matches('*').contains('*')
    }
}

/// The restriction while a `tool` call's side effect (idempotency key `key`) of run `run`
/// awaits reconciliation.
#[must_use]
pub fn reconciliation(run: &str, key: &str, tool: &str) -> Restriction {
    Restriction {
        rule: RULE_RECONCILIATION,
        reason: "blocked_on_reconciliation",
        message: format!(
            "Cairn is blocked on reconciliation: a `{tool}` call's side effect has an unknown outcome (idempotency key `{key}`), so no consequential call may run and nothing may be retried blindly. A person must look the effect up and record what happened: cairn reconcile --run {run} --key {key} --outcome applied|not_executed --evidence REF"
        ),
    }
}

/// The restriction while the decision files cannot be read (`message`: what went wrong):
/// nobody can tell whether the decisions survived the boundary.
#[must_use]
pub fn decisions_unreadable(message: &str) -> Restriction {
    Restriction {
        rule: RULE_EVIDENCE_MISSING,
        reason: "decision_files_unreadable",
        message: format!(
            "Cairn cannot read the project's decision files ({message}), so it cannot tell whether the task's decisions survived the compaction; consequential calls wait until they are repaired (`cairn decisions list`)."
        ),
    }
}

/// The restriction `comparison` imposes, if any, with the command that lifts it (`name`:
/// the snapshot it compared, which a person re-establishes).
#[must_use]
pub fn decisions(comparison: &Comparison, name: &str) -> Option<Restriction> {
    if !comparison.state().restricts_consequential() {
        return None;
    }
    let key = comparison
        .determining_key()
        .map_or("?", |k| k.as_str())
        .to_owned();
    let result = comparison
        .determining_key()
        .and_then(|k| comparison.decision(k));
    let from = result.map_or(0, |r| r.before().revision);
    let to = result
        .and_then(|r| r.after())
        .and_then(|o| o.revision_ref())
        .map_or(0, |r| r.revision);
    let reason = comparison.reason().code();
    Some(match comparison.state() {
        ContinuityHealth::Conflicting => Restriction {
            rule: RULE_CONFLICTING,
            reason: "decision_conflicting",
            message: format!(
                "Cairn stopped consequential work: decision `{key}` changed since the compaction without an approval linking revision {from} to revision {to} (conflicting, {reason}). Ask the user. A person resolves it by approving the change — cairn decisions approve-change {key} --from {from} --to {to} --approval REF — or by restoring the decision's value with `cairn decisions set {key} VALUE`."
            ),
        },
        ContinuityHealth::Dropped => Restriction {
            rule: RULE_DROPPED,
            reason: "decision_dropped",
            message: format!(
                "Cairn paused consequential work: decision `{key}` is missing since the compaction (dropped, {reason}). Ask the user. A person restores it with `cairn decisions set {key} VALUE`."
            ),
        },
        _ => Restriction {
            rule: RULE_EVIDENCE_MISSING,
            reason: "continuity_evidence_missing",
            message: format!(
                "Cairn paused consequential work: no decision snapshot was written before the compaction (continuity_evidence_missing), so nobody can tell whether the task's decisions survived it. A person checks them (`cairn decisions list`) and re-establishes the baseline with `cairn decisions snapshot --name {name}`."
            ),
        },
    })
}

/// The decision restriction of an edge that has no boundary of its own (the MCP gateway):
/// the decisions compared with the snapshot of the host session the calls belong to
/// (`session`: its snapshot name — as that session's hooks compare them, nothing restricts
/// before its first boundary), or, for calls of no known session, with the project's latest
/// snapshot (nothing restricts before any boundary was snapshotted). Files that cannot be
/// read restrict (fail closed).
#[must_use]
pub fn decisions_now(
    files: Result<DecisionFiles, DecisionFilesError>,
    session: Option<&str>,
    now: Timestamp,
    window: SignedDuration,
) -> Option<Restriction> {
    let compared = files.and_then(|files| {
        let name = match session {
            Some(name) if files.boundary(name)?.is_none() => return Ok(None),
            Some(name) => Some(name.to_owned()),
            None => files.latest()?,
        };
        let comparison = files.compare_now(name.as_deref(), now, window)?;
        Ok(Some((comparison, name)))
    });
    match compared {
        Ok(None) | Err(DecisionFilesError::NoProject { .. }) => None,
        Ok(Some((comparison, name))) => decisions(&comparison, name.as_deref().unwrap_or("NAME")),
        Err(error) => Some(decisions_unreadable(&format!(
            "{}: {error}",
            cairn_core::ErrorCode::code(&error)
        ))),
    }
}

#[cfg(test)]
mod tests {
    //! Tool classes: fail closed for unknown tools.
    use super::*;

    #[test]
    fn a_tool_no_read_only_pattern_names_is_consequential() {
        let mut classes = ToolClasses::new(vec!["fs__read_*".to_owned()], Vec::new());
        assert!(!classes.is_consequential("fs__read_file"));
        assert!(classes.is_consequential("fs__write_file"));
        assert!(classes.is_consequential("anything"));
        classes.add_consequential(["fs__read_secret".to_owned()]);
        assert!(classes.is_consequential("fs__read_secret"));
        assert!(ToolClasses::new(Vec::new(), Vec::new()).is_consequential("fs__read_file"));
        assert!(ToolClasses::pattern_is_valid("fs__read_*"));
        assert!(!ToolClasses::pattern_is_valid("fs__*_file"));
        assert!(!ToolClasses::pattern_is_valid(""));
    }
}
