//! Stage 3: the semantic rules of the reference's `semantic_errors`, every one BLOCKED.
//!
//! The rules run in the reference's order and every violation is reported. Rules whose input
//! the schema already constrains (see [`super::codes::PRE_EMPTED`]) are checked all the same,
//! on values of any type, so that nothing here depends on the schema stage for its safety.
//!
//! The stage also builds the [`Index`] the restore gate needs (artifacts by id, the artifacts
//! execution events rely on), so the gate does not walk the envelope again.

use std::collections::{BTreeMap, BTreeSet};

use crate::lookup::field;
use serde_json::{Map, Value};

mod events;

use super::Stage;
use super::codes::{
    ARTIFACT_REFS_INVALID, AUTHORITATIVE_SOURCES_INVALID, AUTHORITY_MODEL_INVALID,
    AUTHORITY_PRECEDENCE_INVALID, CHECK_ANCHOR_MISSING, CHECK_ID_MISSING, CHECK_UNKNOWN_ARTIFACT,
    DUPLICATE_ARTIFACT_ID, DUPLICATE_CHECK_ID, MEMORY_DEFAULT_INVALID, MISSING_TOP_LEVEL_FIELD,
    NO_ACTIVE_CONSTRAINT, OPERATIONAL_EVENT_INVALID, OPERATIONAL_TAIL_EMPTY,
    RESTORE_NOT_FAIL_CLOSED, RESTORE_REQUIREMENTS_INVALID,
};
use super::pyjson::{is_str, py_eq, shown, truthy};
use super::top::Top;

/// Event types that claim something was executed and so need durable evidence.
const EXECUTION_EVENT_TYPES: [&str; 4] = [
    "tool_call",
    "tool_result",
    "artifact_modified",
    "verification_result",
];

/// The only authority precedence VCE 0.1 accepts, highest first.
const PRECEDENCE: [&str; 5] = ["system", "developer", "user", "project_policy", "memory"];

/// The source types that may carry instruction or constraint authority (RFC-001); also the
/// set used when `authoritative_sources` is not an array.
const DEFAULT_AUTHORITATIVE_SOURCES: [&str; 2] = ["user_message", "project_policy"];

/// What the restore gate needs from the envelope, built while checking it.
pub(super) struct Index<'a> {
    /// Artifacts by id; for a repeated id, the first entry.
    artifacts: BTreeMap<&'a str, Artifact<'a>>,
    /// Ids named by the evidence refs of execution events.
    execution_artifacts: BTreeSet<&'a str>,
}

/// One declared artifact and what the required checks say about it.
struct Artifact<'a> {
    row: &'a Map<String, Value>,
    /// Its position in `artifact_refs`.
    position: usize,
    /// Some required check names it.
    checked: bool,
    /// Some required check of it is a `digest` or `receipt` check.
    durably_checked: bool,
}

impl<'a> Index<'a> {
    /// The artifact whose id is `id` (a JSON string), if declared.
    pub(super) fn artifact(&self, id: Option<&Value>) -> Option<&'a Map<String, Value>> {
        match id {
            Some(Value::String(id)) => self.artifacts.get(id.as_str()).map(|a| a.row),
            _ => None,
        }
    }

    /// Whether an execution event relies on the artifact `id`.
    pub(super) fn is_execution_artifact(&self, id: Option<&Value>) -> bool {
        matches!(id, Some(Value::String(id)) if self.execution_artifacts.contains(id.as_str()))
    }
}

/// The source types allowed to carry authority.
enum Authorities<'a> {
    Default,
    Declared(&'a [Value]),
}

impl Authorities<'_> {
    /// Python's `source_type in set(sources)`.
    fn admit(&self, source_type: Option<&Value>) -> bool {
        match self {
            Self::Default => DEFAULT_AUTHORITATIVE_SOURCES
                .iter()
                .any(|s| is_str(source_type, s)),
            Self::Declared(sources) => sources.iter().any(|s| py_eq(source_type, Some(s))),
        }
    }
}

/// Checks every semantic rule, adding each violation to `stage`, and returns the index the
/// restore gate works from.
pub(super) fn check<'a>(top: &Top<'a>, stage: &mut Stage) -> Index<'a> {
    for (name, value) in top.required() {
        if value.is_none() {
            stage.block(MISSING_TOP_LEVEL_FIELD, format!("`$.{name}` is missing"));
        }
    }
    let authorities = authority_model(top.authority_model, stage);
    let events: &[Value] = match top.operational_tail {
        Some(Value::Array(events)) if !events.is_empty() => events,
        _ => {
            stage.block(
                OPERATIONAL_TAIL_EMPTY,
                "`$.operational_tail` must be an array with at least one event",
            );
            &[]
        }
    };
    let mut artifacts = artifact_index(top.artifact_refs, stage);
    let checks = required_checks(top.restore_requirements, stage);
    note_checks(checks, &mut artifacts, stage);
    let mut index = Index {
        artifacts,
        execution_artifacts: BTreeSet::new(),
    };
    let mut active_constraints = 0_usize;
    for (position, event) in events.iter().enumerate() {
        match event {
            Value::Object(event) => {
                active_constraints +=
                    events::check_event(position, event, &authorities, &mut index, stage);
            }
            _ => stage.block(
                OPERATIONAL_EVENT_INVALID,
                format!("`$.operational_tail[{position}]` is not an object"),
            ),
        }
    }
    if active_constraints == 0 {
        stage.block(
            NO_ACTIVE_CONSTRAINT,
            "`$.operational_tail` has no `constraint` event from an authoritative source, so no active constraint survives restoration",
        );
    }
    events::rejected_and_pending(top.rejected_approaches, top.pending_verification, stage);
    index
}

/// The authority model rules; returns the sources allowed to carry authority.
fn authority_model<'a>(model: Option<&'a Value>, stage: &mut Stage) -> Authorities<'a> {
    let Some(Value::Object(model)) = model else {
        stage.block(
            AUTHORITY_MODEL_INVALID,
            "`$.authority_model` is not an object",
        );
        return Authorities::Default;
    };
    let precedence_ok = matches!(field(model, "precedence"), Some(Value::Array(items))
        if items.len() == PRECEDENCE.len()
            && items.iter().zip(PRECEDENCE).all(|(item, want)| is_str(Some(item), want)));
    if !precedence_ok {
        stage.block(
            AUTHORITY_PRECEDENCE_INVALID,
            format!(
                "`$.authority_model.precedence` is `{}`, not `system > developer > user > project_policy > memory`",
                shown(field(model, "precedence"))
            ),
        );
    }
    let memory_default = field(model, "memory_default");
    if !is_str(memory_default, "non_authoritative_memory") {
        stage.block(
            MEMORY_DEFAULT_INVALID,
            format!(
                "`$.authority_model.memory_default` is `{}`, not `non_authoritative_memory`",
                shown(memory_default)
            ),
        );
    }
    let Some(Value::Array(sources)) = field(model, "authoritative_sources") else {
        stage.block(
            AUTHORITATIVE_SOURCES_INVALID,
            "`$.authority_model.authoritative_sources` is not an array",
        );
        return Authorities::Default;
    };
    if sources.is_empty() {
        stage.block(
            AUTHORITATIVE_SOURCES_INVALID,
            "`$.authority_model.authoritative_sources` is empty",
        );
    }
    for (position, source) in sources.iter().enumerate() {
        if !DEFAULT_AUTHORITATIVE_SOURCES
            .iter()
            .any(|s| is_str(Some(source), s))
        {
            stage.block(
                AUTHORITATIVE_SOURCES_INVALID,
                format!(
                    "`$.authority_model.authoritative_sources[{position}]` is `{}`, which rfc-001 does not allow to carry authority (only `user_message`, `project_policy`)",
                    shown(Some(source))
                ),
            );
        }
    }
    Authorities::Declared(sources)
}

/// Artifacts by id (the first of a repeated id), reporting malformed and repeated entries.
fn artifact_index<'a>(
    rows: Option<&'a Value>,
    stage: &mut Stage,
) -> BTreeMap<&'a str, Artifact<'a>> {
    let mut artifacts = BTreeMap::new();
    let Some(Value::Array(rows)) = rows else {
        stage.block(ARTIFACT_REFS_INVALID, "`$.artifact_refs` is not an array");
        return artifacts;
    };
    for (position, row) in rows.iter().enumerate() {
        let Value::Object(row) = row else {
            stage.block(
                ARTIFACT_REFS_INVALID,
                format!("`$.artifact_refs[{position}]` is not an object"),
            );
            continue;
        };
        let Some(Value::String(id)) = field(row, "artifact_id").filter(|id| truthy(Some(id)))
        else {
            stage.block(
                ARTIFACT_REFS_INVALID,
                format!(
                    "`$.artifact_refs[{position}].artifact_id` is missing, empty or not a string"
                ),
            );
            continue;
        };
        if let Some(first) = artifacts.get(id.as_str()) {
            let first: &Artifact<'_> = first;
            stage.block(
                DUPLICATE_ARTIFACT_ID,
                format!(
                    "`$.artifact_refs[{position}].artifact_id` repeats `{id}` of `$.artifact_refs[{}]`",
                    first.position
                ),
            );
            continue;
        }
        artifacts.insert(
            id.as_str(),
            Artifact {
                row,
                position,
                checked: false,
                durably_checked: false,
            },
        );
    }
    artifacts
}

/// The `restore_requirements` rules; returns `required_evidence_checks` when it is an array.
fn required_checks<'a>(requirements: Option<&'a Value>, stage: &mut Stage) -> &'a [Value] {
    let Some(Value::Object(requirements)) = requirements else {
        stage.block(
            RESTORE_REQUIREMENTS_INVALID,
            "`$.restore_requirements` is not an object",
        );
        return &[];
    };
    if field(requirements, "fail_closed") != Some(&Value::Bool(true)) {
        stage.block(
            RESTORE_NOT_FAIL_CLOSED,
            format!(
                "`$.restore_requirements.fail_closed` is `{}`: the restore gate must fail closed",
                shown(field(requirements, "fail_closed"))
            ),
        );
    }
    match field(requirements, "required_evidence_checks") {
        Some(Value::Array(checks)) => checks,
        _ => {
            stage.block(
                RESTORE_REQUIREMENTS_INVALID,
                "`$.restore_requirements.required_evidence_checks` is not an array",
            );
            &[]
        }
    }
}

/// The rules on required evidence checks; records on each artifact how it is checked.
/// Entries that are not objects are skipped, as the reference skips them.
fn note_checks(checks: &[Value], artifacts: &mut BTreeMap<&str, Artifact<'_>>, stage: &mut Stage) {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (position, check) in checks.iter().enumerate() {
        let Value::Object(check) = check else {
            continue;
        };
        let at = || format!("`$.restore_requirements.required_evidence_checks[{position}]");
        let Some(Value::String(check_id)) = field(check, "check_id").filter(|id| truthy(Some(id)))
        else {
            stage.block(
                CHECK_ID_MISSING,
                format!("{}.check_id` is missing, empty or not a string", at()),
            );
            continue;
        };
        if !seen.insert(check_id.as_str()) {
            stage.block(
                DUPLICATE_CHECK_ID,
                format!("{}.check_id` repeats `{check_id}`", at()),
            );
        }
        let artifact_id = field(check, "artifact_id");
        let artifact = match artifact_id {
            Some(Value::String(id)) => artifacts.get_mut(id.as_str()),
            _ => None,
        };
        let Some(artifact) = artifact else {
            stage.block(
                CHECK_UNKNOWN_ARTIFACT,
                format!(
                    "{}.artifact_id` names `{}`, which `$.artifact_refs` does not declare",
                    at(),
                    shown(artifact_id)
                ),
            );
            continue;
        };
        artifact.checked = true;
        let method = field(check, "method");
        for (name, anchor) in [("digest", "digest"), ("receipt", "receipt_ref")] {
            if is_str(method, name) {
                artifact.durably_checked = true;
                if !truthy(artifact.row.get(anchor)) {
                    stage.block(
                        CHECK_ANCHOR_MISSING,
                        format!(
                            "{}` is a `{name}` check of `{}`, but `$.artifact_refs[{}].{anchor}` is empty",
                            at(),
                            shown(artifact_id),
                            artifact.position
                        ),
                    );
                }
            }
        }
    }
}
