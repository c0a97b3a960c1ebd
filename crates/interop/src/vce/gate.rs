//! Stage 4: the restore gate, the reference's `_restore_gate_state`.
//!
//! The reference returns at the first failed condition; this gate checks them all and reports
//! each, which cannot change the decision: every early return of the reference is BLOCKED, a
//! `pending` result only makes it REVIEW_REQUIRED when nothing blocks, and a pending result is
//! not examined further (its observed digest may be anything), exactly as in the reference.
//!
//! Two conditions stop the stage early because nothing after them has trustworthy input:
//! missing restore results and restore results that break their schema.

use std::collections::BTreeMap;

use crate::lookup::{field, field_of};
use crate::schema::Schema;
use serde_json::{Map, Value};

use super::codes::{
    CHECK_ANCHOR_MISSING, CHECK_FAILED, CHECK_METHOD_UNKNOWN, CHECK_PENDING, CHECK_RESULT_MISMATCH,
    CHECK_RESULT_MISSING, CHECK_UNKNOWN_ARTIFACT, DIGEST_MISMATCH, DUPLICATE_CHECK_RESULT,
    EXISTENCE_CHECK_ON_EXECUTION_ARTIFACT, RECEIPT_MISMATCH, REQUIRED_READ_INCOMPLETE,
    RESTORE_ENVELOPE_MISMATCH, RESTORE_REQUIREMENTS_INVALID, RESTORE_RESULTS_MISSING,
    RESTORE_SCHEMA_INVALID,
};
use super::pyjson::{is_str, py_eq, py_eq_value, shown, truthy};
use super::semantic::Index;
use super::top::Top;
use super::{Stage, schema};

/// Checks the restore results against the envelope's restore requirements.
pub(super) fn check(
    top: &Top<'_>,
    restore: Option<&Value>,
    restore_schema: &Schema,
    index: &Index<'_>,
    stage: &mut Stage,
) {
    let Some(restore) = restore else {
        stage.block(
            RESTORE_RESULTS_MISSING,
            "`restore` is missing: without restore results the restore gate fails closed",
        );
        return;
    };
    let before = stage.len();
    let subject = schema::Subject {
        schema: "restore-results",
        root: "restore",
        code: RESTORE_SCHEMA_INVALID,
    };
    schema::check(restore_schema, restore, subject, stage);
    if stage.len() > before {
        return;
    }
    let Some(results) = restore.as_object() else {
        // The schema requires an object; this only guards against a schema that does not.
        stage.block(RESTORE_SCHEMA_INVALID, "`restore` is not an object");
        return;
    };
    let claimed = field(results, "envelope_id");
    let expected = top.envelope_id;
    if !py_eq(claimed, expected) {
        stage.block(
            RESTORE_ENVELOPE_MISMATCH,
            format!(
                "`restore.envelope_id` is `{}`, but the envelope is `{}`",
                shown(claimed),
                shown(expected)
            ),
        );
    }
    let Some(Value::Object(requirements)) = top.restore_requirements else {
        stage.block(
            RESTORE_REQUIREMENTS_INVALID,
            "`$.restore_requirements` is not an object",
        );
        return;
    };
    required_reads(requirements, results, stage);
    let by_id = results_by_id(results, stage);
    match field(requirements, "required_evidence_checks") {
        Some(Value::Array(required)) => {
            for (position, requirement) in required.iter().enumerate() {
                check_requirement(position, requirement, &by_id, index, stage);
            }
        }
        _ => stage.block(
            RESTORE_REQUIREMENTS_INVALID,
            "`$.restore_requirements.required_evidence_checks` is not an array",
        ),
    }
}

/// Every required read must be among the completed reads.
fn required_reads(
    requirements: &Map<String, Value>,
    results: &Map<String, Value>,
    stage: &mut Stage,
) {
    let (Some(Value::Array(required)), Some(Value::Array(completed))) = (
        field(requirements, "required_reads"),
        field(results, "completed_reads"),
    ) else {
        stage.block(
            RESTORE_REQUIREMENTS_INVALID,
            "`$.restore_requirements.required_reads` or `restore.completed_reads` is not an array",
        );
        return;
    };
    for (position, read) in required.iter().enumerate() {
        if !completed.iter().any(|done| py_eq_value(done, read)) {
            stage.block(
                REQUIRED_READ_INCOMPLETE,
                format!(
                    "`$.restore_requirements.required_reads[{position}]` `{}` is not in `restore.completed_reads`",
                    shown(Some(read))
                ),
            );
        }
    }
}

/// Results by `check_id` (the first of a repeated id), reporting repeats.
fn results_by_id<'r>(
    results: &'r Map<String, Value>,
    stage: &mut Stage,
) -> BTreeMap<&'r str, &'r Map<String, Value>> {
    let mut by_id = BTreeMap::new();
    let Some(Value::Array(rows)) = field(results, "evidence_checks") else {
        stage.block(
            RESTORE_SCHEMA_INVALID,
            "`restore.evidence_checks` is not an array",
        );
        return by_id;
    };
    for (position, row) in rows.iter().enumerate() {
        let (Value::Object(row), Some(Value::String(check_id))) = (row, field_of(row, "check_id"))
        else {
            stage.block(
                RESTORE_SCHEMA_INVALID,
                format!("`restore.evidence_checks[{position}]` is not an object with a string `check_id`"),
            );
            continue;
        };
        if by_id.contains_key(check_id.as_str()) {
            stage.block(
                DUPLICATE_CHECK_RESULT,
                format!("`restore.evidence_checks[{position}].check_id` repeats `{check_id}`"),
            );
            continue;
        }
        by_id.insert(check_id.as_str(), row);
    }
    by_id
}

/// Judges the result of one required check.
fn check_requirement(
    position: usize,
    requirement: &Value,
    by_id: &BTreeMap<&str, &Map<String, Value>>,
    index: &Index<'_>,
    stage: &mut Stage,
) {
    let at = || format!("`$.restore_requirements.required_evidence_checks[{position}]`");
    let Value::Object(requirement) = requirement else {
        stage.block(
            RESTORE_REQUIREMENTS_INVALID,
            format!("{} is not an object", at()),
        );
        return;
    };
    let check_id = field(requirement, "check_id");
    let result = match check_id {
        Some(Value::String(id)) => by_id.get(id.as_str()),
        _ => None,
    };
    let Some(result) = result else {
        stage.block(
            CHECK_RESULT_MISSING,
            format!(
                "{} (`{}`) has no result in `restore.evidence_checks`",
                at(),
                shown(check_id)
            ),
        );
        return;
    };
    let mut mismatched = false;
    for name in ["artifact_id", "method"] {
        if !py_eq(field(result, name), field(requirement, name)) {
            mismatched = true;
            stage.block(
                CHECK_RESULT_MISMATCH,
                format!(
                    "the result of `{}` has `{name}` `{}`, but {} requires `{}`",
                    shown(check_id),
                    shown(field(result, name)),
                    at(),
                    shown(field(requirement, name))
                ),
            );
        }
    }
    if mismatched {
        return;
    }
    let status = field(result, "status");
    if is_str(status, "pending") {
        stage.review(
            CHECK_PENDING,
            format!(
                "the result of `{}` is `pending`: the check has not been done yet",
                shown(check_id)
            ),
        );
        return;
    }
    if !is_str(status, "passed") {
        stage.block(
            CHECK_FAILED,
            format!(
                "the result of `{}` is `{}`, not `passed`",
                shown(check_id),
                shown(status)
            ),
        );
        return;
    }
    judge_passed(position, requirement, result, index, stage);
}

/// Judges a `passed` result by its method.
fn judge_passed(
    position: usize,
    requirement: &Map<String, Value>,
    result: &Map<String, Value>,
    index: &Index<'_>,
    stage: &mut Stage,
) {
    let at = || format!("`$.restore_requirements.required_evidence_checks[{position}]`");
    let id = || shown(field(requirement, "check_id"));
    let artifact_id = field(requirement, "artifact_id");
    let Some(artifact) = index.artifact(artifact_id) else {
        stage.block(
            CHECK_UNKNOWN_ARTIFACT,
            format!(
                "{} names `{}`, which `$.artifact_refs` does not declare",
                at(),
                shown(artifact_id)
            ),
        );
        return;
    };
    let method = field(requirement, "method");
    let (anchor, observed_field, code) = if is_str(method, "digest") {
        ("digest", "observed_digest", DIGEST_MISMATCH)
    } else if is_str(method, "receipt") {
        ("receipt_ref", "receipt_ref", RECEIPT_MISMATCH)
    } else if is_str(method, "existence") {
        if index.is_execution_artifact(artifact_id) {
            stage.block(
                EXISTENCE_CHECK_ON_EXECUTION_ARTIFACT,
                format!(
                    "`{}` only checks that `{}` exists, but an execution event relies on it",
                    id(),
                    shown(artifact_id)
                ),
            );
        }
        return;
    } else {
        stage.block(
            CHECK_METHOD_UNKNOWN,
            format!("{} has method `{}`", at(), shown(method)),
        );
        return;
    };
    let expected = field(artifact, anchor);
    let observed = field(result, observed_field);
    if !truthy(expected) {
        stage.block(
            CHECK_ANCHOR_MISSING,
            format!(
                "{} is a `{}` check, but artifact `{}` has no `{anchor}`",
                at(),
                shown(method),
                shown(artifact_id)
            ),
        );
    } else if !py_eq(observed, expected) {
        stage.block(
            code,
            format!(
                "the result of `{}` observed `{}`, but artifact `{}` has `{anchor}` `{}`",
                id(),
                shown(observed),
                shown(artifact_id),
                shown(expected)
            ),
        );
    }
}
