//! The semantic rules on operational events (authority, execution evidence) and on rejected
//! approaches and pending verification.

use crate::lookup::{field, field_of};
use serde_json::{Map, Value};

use super::{Authorities, EXECUTION_EVENT_TYPES, Index};
use crate::vce::Stage;
use crate::vce::codes::{
    EVIDENCE_ARTIFACT_EXISTENCE_ONLY, EVIDENCE_ARTIFACT_UNCHECKED,
    EVIDENCE_ARTIFACT_WITHOUT_ANCHOR, EVIDENCE_REF_UNKNOWN_ARTIFACT,
    EXECUTION_EVENT_WITHOUT_EVIDENCE, NON_AUTHORITATIVE_INSTRUCTION, PENDING_VERIFICATION_INVALID,
    PENDING_VERIFICATION_PROMOTED, REJECTED_APPROACH_REOPENED, REJECTED_APPROACHES_INVALID,
};
use crate::vce::pyjson::{is_str, shown, truthy};

/// The rules on one operational event; returns 1 when it is an authoritative constraint.
pub(super) fn check_event<'a>(
    position: usize,
    event: &'a Map<String, Value>,
    authorities: &Authorities<'_>,
    index: &mut Index<'a>,
    stage: &mut Stage,
) -> usize {
    let event_id = || shown(field(event, "event_id"));
    let mut constraints = 0;
    let authority = field(event, "authority_class");
    if is_str(authority, "instruction") || is_str(authority, "constraint") {
        let source_type = match field(event, "provenance") {
            Some(Value::Object(provenance)) => field(provenance, "source_type"),
            _ => None,
        };
        if !authorities.admit(source_type) {
            stage.block(
                NON_AUTHORITATIVE_INSTRUCTION,
                format!(
                    "`$.operational_tail[{position}].provenance.source_type` is `{}`, which cannot restore `{}` authority (event `{}`)",
                    shown(source_type),
                    shown(authority),
                    event_id()
                ),
            );
        } else if is_str(authority, "constraint") {
            constraints = 1;
        }
    }
    let event_type = field(event, "event_type");
    if !EXECUTION_EVENT_TYPES.iter().any(|t| is_str(event_type, t)) {
        return constraints;
    }
    let refs = match field(event, "evidence_refs") {
        Some(Value::Array(refs)) if !refs.is_empty() => refs,
        _ => {
            stage.block(
                EXECUTION_EVENT_WITHOUT_EVIDENCE,
                format!(
                    "`$.operational_tail[{position}].evidence_refs` is empty, but event `{}` is an execution event (`{}`)",
                    event_id(),
                    shown(event_type)
                ),
            );
            return constraints;
        }
    };
    for (ref_position, reference) in refs.iter().enumerate() {
        let at = || format!("`$.operational_tail[{position}].evidence_refs[{ref_position}]`");
        if let Value::String(id) = reference {
            index.execution_artifacts.insert(id.as_str());
        }
        let artifact = match reference {
            Value::String(id) => index.artifacts.get(id.as_str()),
            _ => None,
        };
        let Some(artifact) = artifact else {
            stage.block(
                EVIDENCE_REF_UNKNOWN_ARTIFACT,
                format!(
                    "{} names `{}`, which `$.artifact_refs` does not declare",
                    at(),
                    shown(Some(reference))
                ),
            );
            continue;
        };
        // Only a finding quotes it, and most references have none.
        let shown_ref = || shown(Some(reference));
        if !truthy(field(artifact.row, "digest")) && !truthy(field(artifact.row, "receipt_ref")) {
            stage.block(
                EVIDENCE_ARTIFACT_WITHOUT_ANCHOR,
                format!(
                    "{} names `{}`, which has neither a `digest` nor a `receipt_ref`",
                    at(),
                    shown_ref()
                ),
            );
        }
        if !artifact.checked {
            stage.block(
                EVIDENCE_ARTIFACT_UNCHECKED,
                format!(
                    "{} names `{}`, which has no required evidence check in `$.restore_requirements.required_evidence_checks`",
                    at(),
                    shown_ref()
                ),
            );
        } else if !artifact.durably_checked {
            stage.block(
                EVIDENCE_ARTIFACT_EXISTENCE_ONLY,
                format!(
                    "{} names `{}`, whose required checks are existence checks only; it needs a `digest` or `receipt` check",
                    at(),
                    shown_ref()
                ),
            );
        }
    }
    constraints
}

/// Rejected approaches stay rejected; pending verification is never shown as passed.
pub(super) fn rejected_and_pending(
    rejected: Option<&Value>,
    pending: Option<&Value>,
    stage: &mut Stage,
) {
    match rejected {
        Some(Value::Array(items)) => {
            for (position, item) in items.iter().enumerate() {
                let status = field_of(item, "status");
                if !item.is_object() || !is_str(status, "rejected") {
                    stage.block(
                        REJECTED_APPROACH_REOPENED,
                        format!(
                            "`$.rejected_approaches[{position}].status` is `{}`, but a rejected approach must stay `rejected`",
                            shown(status)
                        ),
                    );
                }
            }
        }
        _ => stage.block(
            REJECTED_APPROACHES_INVALID,
            "`$.rejected_approaches` is not an array",
        ),
    }
    match pending {
        Some(Value::Array(items)) => {
            for (position, item) in items.iter().enumerate() {
                if is_str(field_of(item, "status"), "passed") {
                    stage.block(
                        PENDING_VERIFICATION_PROMOTED,
                        format!(
                            "`$.pending_verification[{position}].status` is `passed`: pending verification cannot be promoted silently"
                        ),
                    );
                }
            }
        }
        _ => stage.block(
            PENDING_VERIFICATION_INVALID,
            "`$.pending_verification` is not an array",
        ),
    }
}
