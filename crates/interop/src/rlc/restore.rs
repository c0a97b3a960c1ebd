//! Stage 4, the restore state: the lane restore results must answer every required
//! `source_revalidation` check for the right lane, with the lane's digest and every one of its
//! source refs, and without conflicts.
//!
//! The reference returns at its first problem; this stage reports every problem it can see
//! and reaches the same decision, because the reference's answer does not depend on the order
//! of the checks: any blocking problem → `BLOCKED`, otherwise any `pending` check →
//! `REVIEW_REQUIRED`. Three gates stop the stage early because nothing after them can be
//! trusted: missing results, results that are not an object, and results that fail their
//! schema.

use crate::lookup::{field, field_of};
use crate::schema::Schema;
use cairn_core::CodedFinding;
use serde_json::{Map, Value};

use super::refset::RefSet;
use super::semantic::{At, Lane, Lanes, shape};
use super::text::{tick, tick_list, tick_value};
use super::{codes, schema};

/// Runs the restore stage for `extension` (already through stages 1–3, indexed as `lanes`).
pub(crate) fn check(
    results_schema: &Schema,
    extension: &Map<String, Value>,
    lanes: &Lanes<'_>,
    restore: Option<&Value>,
    findings: &mut Vec<CodedFinding>,
) {
    let (restore_value, restore) = match restore {
        None | Some(Value::Null) => {
            findings.push(CodedFinding::new(
                codes::RESTORE_RESULTS_MISSING,
                "no lane restore results were supplied",
            ));
            return;
        }
        Some(value @ Value::Object(restore)) => (value, restore),
        Some(_) => {
            findings.push(CodedFinding::new(
                codes::RESTORE_RESULTS_INVALID,
                "`restore_results` must be a json object",
            ));
            return;
        }
    };
    if !schema::check(
        results_schema,
        restore_value,
        codes::RESTORE_RESULTS_INVALID,
        "restore_results",
        findings,
    ) {
        return;
    }
    let ours = field(extension, "extension_id");
    let theirs = field(restore, "extension_id");
    if ours != theirs {
        findings.push(CodedFinding::new(
            codes::RESTORE_EXTENSION_MISMATCH,
            format!(
                "`restore_results.extension_id` is {} but the extension is {}",
                tick_value(theirs),
                tick_value(ours)
            ),
        ));
    }
    let rows = index_rows(field(restore, "lane_checks"), findings);
    let Some(Value::Array(required)) =
        field(extension, "restore_requirements").and_then(|r| field_of(r, "required_lane_checks"))
    else {
        findings.push(shape(
            "$.restore_requirements.required_lane_checks",
            "must be an array",
        ));
        return;
    };
    for (index, requirement) in required.iter().enumerate() {
        check_requirement(index, requirement, &rows, lanes, findings);
    }
}

/// The path of a result row, formatted only when a finding needs it.
#[derive(Clone, Copy)]
struct RowPath(usize);

impl std::fmt::Display for RowPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "restore_results.lane_checks[{}]", self.0)
    }
}

/// One row of `lane_checks` with its position.
struct Row<'a> {
    index: usize,
    check_id: &'a str,
    body: &'a Map<String, Value>,
}

/// Indexes the result rows by `check_id`, reporting rows without one and repeated ids (the
/// first row with an id answers for it).
fn index_rows<'a>(rows: Option<&'a Value>, findings: &mut Vec<CodedFinding>) -> Vec<Row<'a>> {
    let Some(Value::Array(rows)) = rows else {
        findings.push(shape("restore_results.lane_checks", "must be an array"));
        return Vec::new();
    };
    let mut indexed: Vec<Row<'a>> = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let path = RowPath(index);
        let Value::Object(body) = row else {
            findings.push(shape(path, "must be an object"));
            continue;
        };
        let Some(Value::String(check_id)) = field(body, "check_id") else {
            findings.push(shape(format!("{path}.check_id"), "must be a string"));
            continue;
        };
        if let Some(first) = indexed.iter().find(|row| row.check_id == check_id) {
            findings.push(CodedFinding::new(
                codes::DUPLICATE_RESULT_CHECK,
                format!(
                    "`{path}.check_id`: check {} is already answered by `{}`",
                    tick(check_id),
                    RowPath(first.index)
                ),
            ));
            continue;
        }
        indexed.push(Row {
            index,
            check_id,
            body,
        });
    }
    indexed
}

/// One required check against its result row.
fn check_requirement(
    index: usize,
    requirement: &Value,
    rows: &[Row<'_>],
    lanes: &Lanes<'_>,
    findings: &mut Vec<CodedFinding>,
) {
    let path = At("$.restore_requirements.required_lane_checks", index);
    let Value::Object(requirement) = requirement else {
        findings.push(shape(path, "must be an object"));
        return;
    };
    let check_id = field(requirement, "check_id");
    let lane_id = field(requirement, "lane_id");
    let Some(lane) = lanes.get(lane_id) else {
        // Stage 3 reports checks on unknown lanes; reaching here means the shapes disagree.
        findings.push(shape(format!("{path}.lane_id"), "must name a known lane"));
        return;
    };
    let row = check_id
        .and_then(Value::as_str)
        .and_then(|id| rows.iter().find(|row| row.check_id == id));
    let Some(row) = row else {
        findings.push(CodedFinding::new(
            codes::LANE_CHECK_MISSING,
            format!(
                "`restore_results.lane_checks`: required check {} for lane {} has no result",
                tick_value(check_id),
                tick(lane.id)
            ),
        ));
        return;
    };
    let row_path = RowPath(row.index);
    let row_lane = field(row.body, "lane_id");
    if row_lane != lane_id {
        findings.push(CodedFinding::new(
            codes::LANE_CHECK_WRONG_LANE,
            format!(
                "`{row_path}.lane_id`: check {} is for lane {} but the result is for {}",
                tick(row.check_id),
                tick(lane.id),
                tick_value(row_lane)
            ),
        ));
        return;
    }
    check_status(row_path, row, lane, findings);
}

/// The status of a result row, then, for `passed`, its conflicts, digest and source refs.
fn check_status(
    row_path: RowPath,
    row: &Row<'_>,
    lane: &Lane<'_>,
    findings: &mut Vec<CodedFinding>,
) {
    let status = field(row.body, "status");
    let (code, what) = match status.and_then(Value::as_str) {
        Some("passed") => {
            check_passed(row_path, row, lane, findings);
            return;
        }
        // INVARIANT: a pending check is REVIEW_REQUIRED for its lane and nothing else is
        // checked for it, as in the reference.
        Some("pending") => (codes::LANE_CHECK_PENDING, "is still pending revalidation"),
        Some("failed") => (codes::LANE_CHECK_FAILED, "failed revalidation"),
        Some("conflict") => (codes::LANE_CHECK_CONFLICT, "reports conflicting ownership"),
        _ => {
            findings.push(shape(
                format!("{row_path}.status"),
                &format!("is {}, not a known status", tick_value(status)),
            ));
            return;
        }
    };
    findings.push(CodedFinding::new(
        code,
        format!(
            "`{row_path}.status`: check {} of lane {} {what}",
            tick(row.check_id),
            tick(lane.id)
        ),
    ));
}

fn check_passed(
    row_path: RowPath,
    row: &Row<'_>,
    lane: &Lane<'_>,
    findings: &mut Vec<CodedFinding>,
) {
    let conflicts = field(row.body, "conflict_refs");
    if conflicts.is_some_and(truthy) {
        let listed: Vec<&str> = conflicts
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        findings.push(CodedFinding::new(
            codes::CONFLICT_REFS_PRESENT,
            format!(
                "`{row_path}.conflict_refs`: passed check {} of lane {} still lists conflicts {}",
                tick(row.check_id),
                tick(lane.id),
                tick_list(listed)
            ),
        ));
    }
    let observed = field(row.body, "observed_lane_digest");
    let declared = field(lane.body, "lane_digest");
    if observed != declared {
        findings.push(CodedFinding::new(
            codes::LANE_DIGEST_STALE,
            format!(
                "`{row_path}.observed_lane_digest` is {} but lane {} is {}",
                tick_value(observed),
                tick(lane.id),
                tick_value(declared)
            ),
        ));
    }
    let checked = field(row.body, "source_refs_checked");
    let sources = field(lane.body, "source_refs");
    if !matches!(checked, Some(Value::Array(_))) || !matches!(sources, Some(Value::Array(_))) {
        findings.push(shape(
            format!("{row_path}.source_refs_checked"),
            "and the lane's `source_refs` must be arrays",
        ));
        return;
    }
    let checked = RefSet::of(checked);
    let sources = RefSet::of(sources);
    let unchecked: Vec<&str> = sources.missing_from(&checked);
    if !unchecked.is_empty() {
        findings.push(CodedFinding::new(
            codes::SOURCE_REFS_UNCHECKED,
            format!(
                "`{row_path}.source_refs_checked`: source refs {} of lane {} were not revalidated",
                tick_list(unchecked),
                tick(lane.id)
            ),
        ));
    }
}

/// Python truthiness of a JSON value, as the reference tests `conflict_refs`.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}
