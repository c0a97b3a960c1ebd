//! Side effects whose outcome is unknown (SPEC E-2, E-5).
//!
//! A call that was dispatched but whose outcome is unknown (a timeout after dispatch, a
//! crash) is recorded under its idempotency key — derived from durable identity, the run and
//! the step (`<run_id>:<step_index>`), never from a fresh random id. Until a reconciliation
//! record names the observed outcome and its evidence, the capability stays blocked: the
//! executor refuses it before the gate is even asked. Blind retry is impossible by
//! construction, in this process and in any later one, because the blocked set is rebuilt
//! from the records.

use std::collections::BTreeMap;

use cairn_ledger::record::{BoundaryEvent, IntentRecord, Label, RecordKind};
use cairn_ledger::store::StoredRow;

use crate::error::RuntimeError;

/// The boundary event recording an unknown outcome.
pub const SIDE_EFFECT_UNKNOWN: &str = "side_effect_unknown";
/// The boundary event recording a reconciliation.
pub const RECONCILIATION: &str = "reconciliation";
/// The rule id a refusal names while a capability is blocked on reconciliation.
pub const RECONCILIATION_RULE: &str = "cairn.reconciliation-required";

/// The idempotency key of the call recorded at `step` of `run`.
#[must_use]
pub fn idempotency_key(run: &str, step: u64) -> String {
    format!("{run}:{step}")
}

/// Unresolved side effects: idempotency key → the blocked tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unresolved(BTreeMap<String, String>);

impl Unresolved {
    /// Rebuilds the set from a run's records, in step order.
    #[must_use]
    pub fn from_rows(rows: &[StoredRow]) -> Self {
        let records: Vec<&IntentRecord> = rows.iter().filter_map(|r| r.as_ref().ok()).collect();
        let mut set = Self::default();
        for record in &records {
            let Some(boundary) = record
                .boundary
                .as_ref()
                .filter(|_| record.kind == RecordKind::Boundary)
            else {
                continue;
            };
            let Some(key) = boundary.idempotency_key.as_ref().map(Label::as_str) else {
                continue;
            };
            match boundary.event.as_str() {
                SIDE_EFFECT_UNKNOWN => {
                    let tool = key
                        .rsplit_once(':')
                        .and_then(|(_, step)| step.parse::<u64>().ok())
                        .and_then(|step| records.iter().find(|r| r.step_index == step))
                        .and_then(|r| r.tool.as_ref())
                        .map(|t| t.name.as_str().to_owned());
                    if let Some(tool) = tool {
                        set.0.insert(key.to_owned(), tool);
                    }
                }
                RECONCILIATION => {
                    set.0.remove(key);
                }
                _ => {}
            }
        }
        set
    }

    /// Marks `key` (a call of `tool`) unresolved.
    pub fn insert(&mut self, key: String, tool: String) {
        self.0.insert(key, tool);
    }

    /// Resolves `key`; false if it was not unresolved.
    pub fn resolve(&mut self, key: &str) -> bool {
        self.0.remove(key).is_some()
    }

    /// The unresolved key blocking `tool`, if any.
    #[must_use]
    pub fn blocking(&self, tool: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(_, t)| t.as_str() == tool)
            .map(|(k, _)| k.as_str())
    }

    /// Whether `key` is unresolved.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Every unresolved key with its tool.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, t)| (k.as_str(), t.as_str()))
    }
}

/// The outcome a reconciliation recorded for `key`, if one did (the latest wins).
#[must_use]
pub fn reconciled_outcome(rows: &[StoredRow], key: &str) -> Option<String> {
    rows.iter()
        .filter_map(|r| r.as_ref().ok())
        .filter_map(|r| r.boundary.as_ref())
        .filter(|b| {
            b.event.as_str() == RECONCILIATION
                && b.idempotency_key
                    .as_ref()
                    .is_some_and(|k| k.as_str() == key)
        })
        .filter_map(|b| b.side_effect_status.as_ref().map(|s| s.as_str().to_owned()))
        .next_back()
}

/// The boundary event recording an unknown outcome for `key`.
///
/// # Errors
/// When the key is not a valid label (it always is for valid run ids).
pub fn unknown_event(key: &str) -> Result<BoundaryEvent, RuntimeError> {
    let mut event = BoundaryEvent::new(Label::new(SIDE_EFFECT_UNKNOWN)?);
    event.idempotency_key = Some(Label::new(key)?);
    event.side_effect_status = Some(Label::new(SIDE_EFFECT_UNKNOWN)?);
    Ok(event)
}
