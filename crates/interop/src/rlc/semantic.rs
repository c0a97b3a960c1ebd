//! Stage 3, the semantic rules of RLC 0.1 (SPEC Appendix A): lane digests, lane topology, scopes of the next
//! action and of event bindings, the optional VCE cross-checks and the restore requirements.
//! Every violation is reported; any one makes the decision `BLOCKED`.
//!
//! The rules run on a schema-valid extension, but they check every shape they rely on
//! themselves (reporting [`codes::SHAPE_INVALID`]) so that they never panic and never pass on
//! a shape the schema would have refused.

use crate::lookup::field;
use crate::py_json::StandIn;
use cairn_core::CodedFinding;
use serde_json::{Map, Value};

use super::canonical::ExtensionBytes;
use super::codes;
use super::digest;
use super::refset::RefSet;
use super::text::{tick, tick_list, tick_value};

/// The VCE event types that must be bound to a lane.
const MATERIAL_EVENT_TYPES: [&str; 5] = [
    "tool_call",
    "tool_result",
    "artifact_modified",
    "verification_started",
    "verification_result",
];

/// A lane as the rules see it: the first lane with its id, with its scope as sets.
pub(crate) struct Lane<'a> {
    /// Position in `responsibility_lanes`.
    pub(crate) index: usize,
    pub(crate) id: &'a str,
    pub(crate) body: &'a Map<String, Value>,
    /// `status`, read once: several rules need it.
    status: Option<&'a str>,
    /// Whether `mutation_scope` is an object.
    scope_is_object: bool,
    allowed: RefSet<'a>,
    denied: RefSet<'a>,
}

/// The lanes of an extension, in document order, keyed by their (unique) ids.
pub(crate) struct Lanes<'a>(Vec<Lane<'a>>);

impl<'a> Lanes<'a> {
    /// The lane with `id`, if `id` is a string naming one. Lanes are few (the schema allows
    /// 32), so a scan beats hashing.
    pub(crate) fn get(&self, id: Option<&Value>) -> Option<&Lane<'a>> {
        let id = id.and_then(Value::as_str)?;
        self.0.iter().find(|lane| lane.id == id)
    }

    fn contains(&self, id: &str) -> bool {
        self.0.iter().any(|lane| lane.id == id)
    }
}

/// Runs every semantic rule and returns the lane index for the restore stage.
/// A supplied VCE envelope, with where its reading holds stand-ins.
#[derive(Clone, Copy)]
pub(crate) struct Vce<'v> {
    pub(crate) envelope: &'v Value,
    pub(crate) stand_ins: &'v [StandIn],
}

pub(crate) fn check<'a>(
    extension: &'a Map<String, Value>,
    vce: Option<Vce<'_>>,
    written: Option<&ExtensionBytes>,
    findings: &mut Vec<CodedFinding>,
) -> Lanes<'a> {
    let lanes = index_lanes(extension, findings);
    digest::check_lanes(
        lanes.0.iter().map(|lane| (lane.index, lane.body)),
        written,
        findings,
    );
    for lane in &lanes.0 {
        check_lane(lane, &lanes, findings);
    }
    match field(extension, "active_lane_id") {
        Some(Value::String(id)) if lanes.contains(id) => {}
        other => findings.push(CodedFinding::new(
            codes::UNKNOWN_ACTIVE_LANE,
            format!(
                "`$.active_lane_id` names unknown lane {}",
                tick_value(other)
            ),
        )),
    }
    check_next_action(field(extension, "next_action"), &lanes, findings);
    let bound = check_bindings(field(extension, "event_bindings"), &lanes, findings);
    if let Some(vce) = vce {
        check_vce(extension, vce, &bound, findings);
    }
    check_requirements(field(extension, "restore_requirements"), &lanes, findings);
    lanes
}

/// Indexes the lanes by id: the first lane with an id wins, later ones are duplicates.
fn index_lanes<'a>(
    extension: &'a Map<String, Value>,
    findings: &mut Vec<CodedFinding>,
) -> Lanes<'a> {
    let Some(Value::Array(rows)) = field(extension, "responsibility_lanes") else {
        findings.push(shape("$.responsibility_lanes", "must be an array"));
        return Lanes(Vec::new());
    };
    let mut lanes: Vec<Lane<'a>> = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let Value::Object(body) = row else {
            findings.push(shape(
                format!("$.responsibility_lanes[{index}]"),
                "must be an object",
            ));
            continue;
        };
        let id = match field(body, "lane_id") {
            Some(Value::String(id)) if !id.is_empty() => id.as_str(),
            _ => {
                findings.push(shape(
                    format!("$.responsibility_lanes[{index}].lane_id"),
                    "must be a non-empty string",
                ));
                continue;
            }
        };
        if let Some(first) = lanes.iter().find(|lane| lane.id == id) {
            findings.push(CodedFinding::new(
                codes::DUPLICATE_LANE_ID,
                format!(
                    "`$.responsibility_lanes[{index}].lane_id`: lane id {} is already used by `$.responsibility_lanes[{}]`",
                    tick(id),
                    first.index
                ),
            ));
            continue;
        }
        let scope = field(body, "mutation_scope").and_then(Value::as_object);
        lanes.push(Lane {
            index,
            id,
            body,
            status: field(body, "status").and_then(Value::as_str),
            scope_is_object: scope.is_some(),
            allowed: RefSet::of(scope.and_then(|s| field(s, "allowed_refs"))),
            denied: RefSet::of(scope.and_then(|s| field(s, "denied_refs"))),
        });
    }
    Lanes(lanes)
}

/// A lane's own rules: its scope does not allow and deny the same ref; its dependencies are
/// other, known lanes.
fn check_lane(lane: &Lane<'_>, lanes: &Lanes<'_>, findings: &mut Vec<CodedFinding>) {
    let base = At("$.responsibility_lanes", lane.index);
    if !lane.scope_is_object {
        findings.push(shape(format!("{base}.mutation_scope"), "must be an object"));
    }
    let overlap: Vec<&str> = lane.allowed.shared_with(&lane.denied);
    if !overlap.is_empty() {
        findings.push(CodedFinding::new(
            codes::SCOPE_OVERLAP,
            format!(
                "`{}.mutation_scope`: lane {} both allows and denies {}",
                base,
                tick(lane.id),
                tick_list(overlap)
            ),
        ));
    }
    let Some(Value::Array(dependencies)) = field(lane.body, "depends_on") else {
        return;
    };
    for (position, dependency) in dependencies.iter().enumerate() {
        let path = DependencyAt(base, position);
        match dependency.as_str() {
            Some(id) if id == lane.id => findings.push(CodedFinding::new(
                codes::SELF_DEPENDENCY,
                format!("`{}`: lane {} depends on itself", path, tick(lane.id)),
            )),
            Some(id) if lanes.contains(id) => {}
            _ => findings.push(CodedFinding::new(
                codes::UNKNOWN_DEPENDENCY,
                format!(
                    "`{}`: lane {} depends on unknown lane {}",
                    path,
                    tick(lane.id),
                    tick_value(Some(dependency))
                ),
            )),
        }
    }
}

/// The codes a scope check reports, which differ between the next action and bindings.
struct ScopeCodes {
    outside: &'static str,
    denied: &'static str,
}

/// The effects at `path` must all be allowed and none denied by `lane`.
fn check_scope(
    path: &dyn std::fmt::Display,
    lane: &Lane<'_>,
    effect_refs: Option<&Value>,
    codes: &ScopeCodes,
    findings: &mut Vec<CodedFinding>,
) {
    if !matches!(effect_refs, Some(Value::Array(_))) {
        findings.push(shape(format!("{path}.effect_refs"), "must be an array"));
        return;
    }
    let effects = RefSet::of(effect_refs);
    let outside: Vec<&str> = effects.missing_from(&lane.allowed);
    if !outside.is_empty() {
        findings.push(CodedFinding::new(
            codes.outside,
            format!(
                "`{}.effect_refs`: {} outside the allowed refs of lane {}",
                path,
                tick_list(outside),
                tick(lane.id)
            ),
        ));
    }
    let denied: Vec<&str> = effects.shared_with(&lane.denied);
    if !denied.is_empty() {
        findings.push(CodedFinding::new(
            codes.denied,
            format!(
                "`{}.effect_refs`: {} denied by lane {}",
                path,
                tick_list(denied),
                tick(lane.id)
            ),
        ));
    }
}

fn check_next_action(
    next_action: Option<&Value>,
    lanes: &Lanes<'_>,
    findings: &mut Vec<CodedFinding>,
) {
    let Some(Value::Object(action)) = next_action else {
        findings.push(shape("$.next_action", "must be an object"));
        return;
    };
    let lane_id = field(action, "lane_id");
    let Some(lane) = lanes.get(lane_id) else {
        findings.push(CodedFinding::new(
            codes::NEXT_ACTION_UNKNOWN_LANE,
            format!(
                "`$.next_action.lane_id` names unknown lane {}",
                tick_value(lane_id)
            ),
        ));
        return;
    };
    let scope_codes = ScopeCodes {
        outside: codes::NEXT_ACTION_OUTSIDE_SCOPE,
        denied: codes::NEXT_ACTION_DENIED_REF,
    };
    check_scope(
        &"$.next_action",
        lane,
        field(action, "effect_refs"),
        &scope_codes,
        findings,
    );
    let status = lane.status;
    if let Some(status @ ("complete" | "superseded")) = status {
        findings.push(CodedFinding::new(
            codes::NEXT_ACTION_LANE_CLOSED,
            format!(
                "`$.next_action.lane_id`: lane {} is {} and cannot hold the next action",
                tick(lane.id),
                tick(status)
            ),
        ));
    }
}

/// Checks every event binding and returns the ids of the bound events (the first binding of
/// each id, whether or not its lane is known), in document order.
fn check_bindings<'a>(
    bindings: Option<&'a Value>,
    lanes: &Lanes<'_>,
    findings: &mut Vec<CodedFinding>,
) -> Vec<&'a str> {
    let Some(Value::Array(rows)) = bindings else {
        findings.push(shape("$.event_bindings", "must be an array"));
        return Vec::new();
    };
    let scope_codes = ScopeCodes {
        outside: codes::BINDING_OUTSIDE_SCOPE,
        denied: codes::BINDING_DENIED_REF,
    };
    let mut bound: Vec<&'a str> = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let path = At("$.event_bindings", index);
        let Value::Object(binding) = row else {
            findings.push(shape(path, "must be an object"));
            continue;
        };
        let event_id = match field(binding, "event_id") {
            Some(Value::String(id)) if !id.is_empty() => id.as_str(),
            _ => {
                findings.push(shape(
                    format!("{path}.event_id"),
                    "must be a non-empty string",
                ));
                continue;
            }
        };
        // The schema allows 100 bindings, so a scan is cheaper than a hash set.
        if bound.contains(&event_id) {
            findings.push(CodedFinding::new(
                codes::DUPLICATE_EVENT_BINDING,
                format!(
                    "`{path}.event_id`: event {} is already bound",
                    tick(event_id)
                ),
            ));
            continue;
        }
        bound.push(event_id);
        let lane_id = field(binding, "lane_id");
        match lanes.get(lane_id) {
            None => findings.push(CodedFinding::new(
                codes::BINDING_UNKNOWN_LANE,
                format!(
                    "`{}.lane_id`: event {} is bound to unknown lane {}",
                    path,
                    tick(event_id),
                    tick_value(lane_id)
                ),
            )),
            Some(lane) => {
                check_scope(
                    &path,
                    lane,
                    field(binding, "effect_refs"),
                    &scope_codes,
                    findings,
                );
            }
        }
    }
    bound
}

/// The cross-checks against a supplied VCE 0.1 envelope.
fn check_vce(
    extension: &Map<String, Value>,
    vce: Vce<'_>,
    bound: &[&str],
    findings: &mut Vec<CodedFinding>,
) {
    for stand_in in vce.stand_ins {
        // Python holds these; the reference never validates the envelope and may pass it.
        // Cairn does not judge an envelope it cannot hold exactly (a deliberate departure).
        findings.push(CodedFinding::new(
            codes::VCE_ENVELOPE_INVALID,
            format!("the supplied vce envelope cannot be held exactly: {stand_in}"),
        ));
    }
    if !vce.stand_ins.is_empty() {
        return;
    }
    let Value::Object(vce) = vce.envelope else {
        findings.push(CodedFinding::new(
            codes::VCE_ENVELOPE_INVALID,
            "the supplied vce envelope is not a json object",
        ));
        return;
    };
    let ours = field(extension, "vce_envelope_id");
    let theirs = field(vce, "envelope_id");
    if ours != theirs {
        findings.push(CodedFinding::new(
            codes::VCE_ENVELOPE_MISMATCH,
            format!(
                "`$.vce_envelope_id` is {} but the supplied vce envelope is {}",
                tick_value(ours),
                tick_value(theirs)
            ),
        ));
    }
    let Some(tail) = tail_events(vce, findings) else {
        return;
    };
    // Event id → event type of the *last* tail row with that id, as the reference's dict
    // keeps it: rows are read backwards, sorted stably by id, and the first of each id kept.
    // Sorted vectors instead of hash maps: tails are short, and sorting needs no hashing.
    let mut known: Vec<(&str, &str)> = tail.into_iter().rev().collect();
    known.sort_by(|a, b| a.0.cmp(b.0));
    known.dedup_by(|later, first| later.0 == first.0);
    let is_known = |id: &str| known.binary_search_by(|row| row.0.cmp(id)).is_ok();
    for event_id in bound {
        if !is_known(event_id) {
            findings.push(CodedFinding::new(
                codes::BINDING_UNKNOWN_EVENT,
                format!(
                    "`$.event_bindings`: event {} is not in the vce envelope's operational tail",
                    tick(event_id)
                ),
            ));
        }
    }
    let mut bound: Vec<&str> = bound.to_vec();
    bound.sort_unstable();
    // `known` is sorted by id, so the unbound material events come out sorted.
    let unbound: Vec<&str> = known
        .iter()
        .filter(|(id, kind)| {
            MATERIAL_EVENT_TYPES.contains(kind) && bound.binary_search(id).is_err()
        })
        .map(|(id, _)| *id)
        .collect();
    for event_id in unbound {
        findings.push(CodedFinding::new(
            codes::MATERIAL_EVENT_UNBOUND,
            format!(
                "`$.event_bindings`: material vce event {} is not bound to a lane",
                tick(event_id)
            ),
        ));
    }
}

/// The `(event_id, event_type)` of every row of the supplied VCE envelope's
/// `operational_tail`, in order — or `None`, with a [`codes::VCE_ENVELOPE_INVALID`] finding
/// per malformed part, when the tail does not have the shape VCE 0.1 gives it: an array of
/// objects, each with a string `event_id` and a string `event_type`.
///
/// The reference never validates this envelope: it raises on an `event_type` that is an
/// object or an array (so decides nothing), and skips rows that are not objects or have no
/// string id. Cairn refuses all of them alike — a material event that a malformed row hides
/// would otherwise need no lane binding — a deliberate departure where the reference decides.
fn tail_events<'a>(
    vce: &'a Map<String, Value>,
    findings: &mut Vec<CodedFinding>,
) -> Option<Vec<(&'a str, &'a str)>> {
    let mut invalid = |path: String, what: &str, value: Option<&Value>| {
        findings.push(CodedFinding::new(
            codes::VCE_ENVELOPE_INVALID,
            format!(
                "the supplied vce envelope's `{path}` must be {what}, not {}",
                tick_value(value)
            ),
        ));
    };
    let rows = match field(vce, "operational_tail") {
        Some(Value::Array(rows)) => rows,
        other => {
            invalid("$.operational_tail".to_owned(), "an array of events", other);
            return None;
        }
    };
    let mut events = Vec::with_capacity(rows.len());
    let mut malformed = false;
    for (i, row) in rows.iter().enumerate() {
        let Value::Object(row) = row else {
            invalid(format!("$.operational_tail[{i}]"), "an object", Some(row));
            malformed = true;
            continue;
        };
        let id = field(row, "event_id");
        let kind = field(row, "event_type");
        match (id, kind) {
            (Some(Value::String(id)), Some(Value::String(kind))) => {
                events.push((id.as_str(), kind.as_str()));
            }
            _ => {
                malformed = true;
                if !matches!(id, Some(Value::String(_))) {
                    invalid(format!("$.operational_tail[{i}].event_id"), "a string", id);
                }
                if !matches!(kind, Some(Value::String(_))) {
                    invalid(
                        format!("$.operational_tail[{i}].event_type"),
                        "a string",
                        kind,
                    );
                }
            }
        }
    }
    (!malformed).then_some(events)
}

/// `fail_closed`, the required checks, and a check for every lane that is not superseded.
fn check_requirements(
    requirements: Option<&Value>,
    lanes: &Lanes<'_>,
    findings: &mut Vec<CodedFinding>,
) {
    let mut revalidated: Vec<&str> = Vec::new();
    match requirements {
        Some(Value::Object(requirements)) => {
            if field(requirements, "fail_closed") != Some(&Value::Bool(true)) {
                findings.push(CodedFinding::new(
                    codes::RESTORE_NOT_FAIL_CLOSED,
                    format!(
                        "`$.restore_requirements.fail_closed` is {}, must be `true`",
                        tick_value(field(requirements, "fail_closed"))
                    ),
                ));
            }
            check_required_checks(
                field(requirements, "required_lane_checks"),
                lanes,
                &mut revalidated,
                findings,
            );
        }
        _ => findings.push(shape("$.restore_requirements", "must be an object")),
    }
    for lane in &lanes.0 {
        let superseded = lane.status == Some("superseded");
        if !superseded && !revalidated.contains(&lane.id) {
            findings.push(CodedFinding::new(
                codes::LANE_NOT_REVALIDATED,
                format!(
                    "`$.restore_requirements.required_lane_checks`: lane {} is not superseded and has no source revalidation check",
                    tick(lane.id)
                ),
            ));
        }
    }
}

fn check_required_checks<'a>(
    checks: Option<&Value>,
    lanes: &Lanes<'a>,
    revalidated: &mut Vec<&'a str>,
    findings: &mut Vec<CodedFinding>,
) {
    let Some(Value::Array(checks)) = checks else {
        findings.push(shape(
            "$.restore_requirements.required_lane_checks",
            "must be an array",
        ));
        return;
    };
    let mut seen: Vec<&str> = Vec::with_capacity(checks.len());
    for (index, check) in checks.iter().enumerate() {
        let path = At("$.restore_requirements.required_lane_checks", index);
        let Value::Object(check) = check else {
            findings.push(shape(path, "must be an object"));
            continue;
        };
        let check_id = match field(check, "check_id") {
            Some(Value::String(id)) if !id.is_empty() => id.as_str(),
            _ => {
                findings.push(shape(
                    format!("{path}.check_id"),
                    "must be a non-empty string",
                ));
                continue;
            }
        };
        if seen.contains(&check_id) {
            findings.push(CodedFinding::new(
                codes::DUPLICATE_LANE_CHECK,
                format!(
                    "`{path}.check_id`: check {} is already required",
                    tick(check_id)
                ),
            ));
        } else {
            seen.push(check_id);
        }
        let lane_id = field(check, "lane_id");
        match lanes.get(lane_id) {
            Some(lane) => revalidated.push(lane.id),
            None => findings.push(CodedFinding::new(
                codes::CHECK_UNKNOWN_LANE,
                format!(
                    "`{}.lane_id`: check {} names unknown lane {}",
                    path,
                    tick(check_id),
                    tick_value(lane_id)
                ),
            )),
        }
    }
}

/// The path of an array item, formatted only when a finding needs it.
#[derive(Clone, Copy)]
pub(crate) struct At(pub(crate) &'static str, pub(crate) usize);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// The path of one `depends_on` entry of a lane.
#[derive(Clone, Copy)]
struct DependencyAt(At, usize);

impl std::fmt::Display for DependencyAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.depends_on[{}]", self.0, self.1)
    }
}

/// A [`codes::SHAPE_INVALID`] finding at `path`.
pub(crate) fn shape(path: impl std::fmt::Display, what: &str) -> CodedFinding {
    CodedFinding::new(codes::SHAPE_INVALID, format!("`{path}` {what}"))
}
