//! The compacted path of a scenario: the envelope a boundary writer would derive from the
//! history (E-3), with the scenario's overrides and deliberate losses applied.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::scenario::{Event, EventKind, LossyEdit, Scenario};
use crate::envelope::ENVELOPE_SCHEMA_VERSION;
use crate::summary::summary_sha256;
use crate::types::SideEffectStatus;

/// What the compacted path sees: the envelope (as JSON, so validation runs as it would on a
/// stored one), the summary text and the events the compaction kept.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactedPath {
    /// The envelope document (bare).
    pub envelope: Value,
    /// The summary presented after the boundary.
    pub summary: String,
    /// The kept events: the selection, plus the records the envelope references, plus any
    /// the compactor added.
    pub kept_events: Vec<Event>,
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

fn event_ref(event: Option<&Event>) -> Value {
    event.map_or_else(|| Value::from(0), |e| Value::String(e.id.clone()))
}

fn opt_string(value: Option<String>) -> Value {
    value.map_or(Value::Null, Value::String)
}

/// The envelope a boundary writer would derive (E-3), before overrides and edits.
fn derived_envelope(scenario: &Scenario) -> Map<String, Value> {
    let history = &scenario.history;
    let current = &scenario.current;
    let mut constraint_refs = Vec::new();
    let mut evidence_refs = Vec::new();
    let mut obligations: Vec<String> = Vec::new();
    for event in history {
        match &event.kind {
            EventKind::UserConstraint { .. } => constraint_refs.push(event.id.clone()),
            EventKind::Evidence { .. } => evidence_refs.push(event.id.clone()),
            EventKind::ObligationOpened { obligation } if !obligations.contains(obligation) => {
                obligations.push(obligation.clone());
            }
            EventKind::ObligationClosed { obligation } => obligations.retain(|o| o != obligation),
            _ => {}
        }
    }
    let approval = current.approval.as_ref();
    let mut m = Map::new();
    let mut put = |key: &str, value: Value| {
        m.insert(key.to_owned(), value);
    };
    put("schema_version", Value::from(ENVELOPE_SCHEMA_VERSION));
    put(
        "envelope_id",
        Value::String(format!("ce-{}", scenario.name)),
    );
    put("session_id", Value::from("session-eval"));
    put("source_trace_id", Value::from("trace-eval"));
    put("reset_reason", Value::from("context_compaction"));
    put(
        "objective",
        Value::String(
            scenario
                .description
                .clone()
                .unwrap_or_else(|| scenario.name.clone()),
        ),
    );
    put("exact_constraint_refs", strings(&constraint_refs));
    put("pending_obligations", strings(&obligations));
    put("tenant_id", Value::from(current.tenant_id.as_str()));
    put("principal_id", Value::from(current.principal_id.as_str()));
    put(
        "authorization_mode",
        Value::from(current.authorization_mode.as_str()),
    );
    put(
        "delegated_principal_id",
        opt_string(current.delegated_principal_id.clone()),
    );
    put(
        "delegated_scope",
        opt_string(current.delegated_scope.clone()),
    );
    put(
        "policy_version",
        Value::from(current.policy_version.as_str()),
    );
    put(
        "capability_name",
        Value::from(current.capability_name.as_str()),
    );
    put(
        "capability_version",
        Value::from(current.capability_version.as_str()),
    );
    put("approval_id", opt_string(approval.map(|a| a.id.clone())));
    put(
        "action_digest",
        opt_string(approval.map(|a| a.action_digest.to_string())),
    );
    put(
        "approval_expires_at",
        opt_string(approval.map(|a| a.expires_at.to_string())),
    );
    put(
        "idempotency_key",
        opt_string(current.idempotency_key.clone()),
    );
    put(
        "side_effect_status",
        Value::from(current.side_effect_status.as_str()),
    );
    put(
        "checkpoint_ref",
        Value::from(current.checkpoint_ref.as_str()),
    );
    put("sandbox_snapshot_ref", Value::Null);
    put("budget_remaining", Value::Null);
    let mut range = Map::new();
    range.insert("first".to_owned(), event_ref(history.first()));
    range.insert("last".to_owned(), event_ref(history.last()));
    put("source_event_range", Value::Object(range));
    put(
        "summary_sha256",
        Value::String(summary_sha256(&scenario.compaction.summary).to_string()),
    );
    put("evidence_refs", strings(&evidence_refs));
    put("requires_reauthorization", Value::Bool(true));
    m
}

/// Removes `item` from the string array at `key`, if there is one.
fn remove_from(envelope: &mut Map<String, Value>, key: &str, item: &str) {
    if let Some(Value::Array(items)) = envelope.get_mut(key) {
        items.retain(|v| v.as_str() != Some(item));
    }
}

fn string_array(envelope: &Map<String, Value>, key: &str) -> Vec<String> {
    match envelope.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Builds the compacted path of a scenario: the derived envelope, its overrides, the lossy
/// edits in order, and the kept events.
#[must_use]
pub fn compact(scenario: &Scenario) -> CompactedPath {
    let compaction = &scenario.compaction;
    let mut envelope = derived_envelope(scenario);
    for (key, value) in &compaction.envelope {
        envelope.insert(key.clone(), value.clone());
    }
    let mut summary = compaction.summary.clone();
    let mut selected: Vec<String> = compaction.selected_events.clone();
    let mut applied_keys: Vec<&str> = Vec::new();
    let mut added: Vec<Event> = Vec::new();
    for edit in &compaction.lossy_edits {
        match edit {
            LossyEdit::DropConstraintRef(id) => {
                remove_from(&mut envelope, "exact_constraint_refs", id);
                selected.retain(|s| s != id);
            }
            LossyEdit::DropEvidenceRef(id) => {
                remove_from(&mut envelope, "evidence_refs", id);
                selected.retain(|s| s != id);
            }
            LossyEdit::DropEvent(id) => selected.retain(|s| s != id),
            LossyEdit::DropObligation(name) => {
                remove_from(&mut envelope, "pending_obligations", name);
                let ids: BTreeSet<&str> = scenario
                    .history
                    .iter()
                    .filter(|e| matches!(&e.kind, EventKind::ObligationOpened { obligation } if obligation == name))
                    .map(|e| e.id.as_str())
                    .collect();
                selected.retain(|s| !ids.contains(s.as_str()));
            }
            LossyEdit::MarkSideEffectApplied(key) => {
                applied_keys.push(key);
                if envelope.get("idempotency_key").and_then(Value::as_str) == Some(key.as_str()) {
                    envelope.insert(
                        "side_effect_status".to_owned(),
                        Value::from(SideEffectStatus::Applied.as_str()),
                    );
                }
            }
            LossyEdit::InjectInstruction { text, rebind } => {
                summary = format!("{}\n{text}", summary.trim_end());
                if *rebind {
                    envelope.insert(
                        "summary_sha256".to_owned(),
                        Value::String(summary_sha256(&summary).to_string()),
                    );
                }
            }
            LossyEdit::AddEvent(event) => added.push(event.clone()),
            LossyEdit::SetEnvelopeField { field, value } => {
                envelope.insert(field.clone(), value.clone());
            }
        }
    }
    // The envelope's references are resolved from the durable store (E-8).
    let mut reachable: BTreeSet<String> = selected.into_iter().collect();
    reachable.extend(string_array(&envelope, "exact_constraint_refs"));
    reachable.extend(string_array(&envelope, "evidence_refs"));
    let mut kept_events: Vec<Event> = scenario
        .history
        .iter()
        .filter(|e| reachable.contains(&e.id))
        .cloned()
        .map(|mut event| {
            if let EventKind::ToolCall {
                idempotency_key,
                outcome,
                ..
            }
            | EventKind::Reconciliation {
                idempotency_key,
                outcome,
            } = &mut event.kind
                && applied_keys.contains(&idempotency_key.as_str())
            {
                *outcome = SideEffectStatus::Applied;
            }
            event
        })
        .collect();
    kept_events.extend(added);
    CompactedPath {
        envelope: Value::Object(envelope),
        summary,
        kept_events,
    }
}
