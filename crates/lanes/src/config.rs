//! The project's lane declarations (`.cairn/lanes.json`, `cairn.lanes/v1`): the lanes, in the
//! field names of RLC 0.1 (L-1) plus `parent_lane_id` and `validated_against` (L-7), the
//! active lane, and the tool capability binding.
//!
//! ```json
//! {"schema_version": "cairn.lanes/v1",
//!  "active_lane_id": "authoring",
//!  "lanes": [{"lane_id": "authoring", "owner_ref": "agent:author", "objective": "…",
//!             "mutation_scope": {"allowed_refs": ["file:src/*"], "denied_refs": []},
//!             "done_condition": ["evidence:e2e-pass"], "status": "active",
//!             "latest_ruling_ref": "event:u-12", "source_refs": [], "depends_on": []}],
//!  "tool_bindings": {"fs.edit": {"effect_refs": ["file:{path}"]},
//!                    "tests.run": {"effect_refs": ["capability:verify"]}}}
//! ```
//!
//! Loading reports every finding at once, each with a stable code.

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::{CodedFinding, Digest, LaneId};
use serde::{Deserialize, Serialize};

use crate::binding::{Bindings, EffectTemplate};
use crate::refs::RefPattern;

/// The schema tag of a lane declaration file.
pub const LANES_SCHEMA_VERSION: &str = "cairn.lanes/v1";

/// A lane's lifecycle state (RLC 0.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneStatus {
    /// Working.
    #[default]
    Active,
    /// Waiting on something; may hold the next action but not act.
    Blocked,
    /// Its done condition was evidenced.
    Complete,
    /// Replaced by another lane.
    Superseded,
}

impl LaneStatus {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Blocked => "blocked",
            Self::Complete => "complete",
            Self::Superseded => "superseded",
        }
    }
}

/// Where a lane may and may not create effects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeSpec {
    /// Patterns of refs the lane may change.
    pub allowed_refs: Vec<String>,
    /// Patterns of refs it must not change (outrank `allowed_refs`).
    #[serde(default)]
    pub denied_refs: Vec<String>,
}

/// What a lane was last validated against (L-7): a change of any of them sends it back to
/// review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validity {
    /// The repository head (commit id).
    pub repo_head: String,
    /// The policy-set version.
    pub policy_version: String,
    /// A digest of the environment (toolchain, lockfile, image).
    pub environment_digest: String,
}

impl Validity {
    /// The names of the fields that differ from `other`.
    #[must_use]
    pub fn changes(&self, other: &Self) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.repo_head != other.repo_head {
            changed.push("repo_head");
        }
        if self.policy_version != other.policy_version {
            changed.push("policy_version");
        }
        if self.environment_digest != other.environment_digest {
            changed.push("environment_digest");
        }
        changed
    }

    /// The compact text a revalidation record carries:
    /// `head=<repo_head> policy=<policy_version> env=<environment_digest>`.
    #[must_use]
    pub fn to_ref(&self) -> String {
        format!(
            "head={} policy={} env={}",
            self.repo_head, self.policy_version, self.environment_digest
        )
    }

    /// Parses [`Validity::to_ref`]'s text.
    #[must_use]
    pub fn from_ref(text: &str) -> Option<Self> {
        let mut parts = text.split(' ');
        let repo_head = parts.next()?.strip_prefix("head=")?.to_owned();
        let policy_version = parts.next()?.strip_prefix("policy=")?.to_owned();
        let environment_digest = parts.next()?.strip_prefix("env=")?.to_owned();
        parts.next().is_none().then_some(Self {
            repo_head,
            policy_version,
            environment_digest,
        })
    }

    /// The digest of its RFC 8785 form (what a revalidation record binds).
    #[must_use]
    pub fn digest(&self) -> Digest {
        let value = serde_json::json!({
            "environment_digest": self.environment_digest,
            "policy_version": self.policy_version,
            "repo_head": self.repo_head,
        });
        Digest::of(value.to_string().as_bytes())
    }
}

/// One lane as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneSpec {
    /// The lane's id.
    pub lane_id: String,
    /// Who owns it (a principal ref).
    pub owner_ref: String,
    /// What it is for.
    pub objective: String,
    /// Where it may create effects.
    pub mutation_scope: ScopeSpec,
    /// The evidence refs that must be recorded, all passing, before it is complete.
    #[serde(default)]
    pub done_condition: Vec<String>,
    /// Its state as declared.
    #[serde(default)]
    pub status: LaneStatus,
    /// The authoritative user event that last ruled on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_ruling_ref: Option<String>,
    /// The durable sources that define it.
    #[serde(default)]
    pub source_refs: Vec<String>,
    /// Lanes it depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// The lane it is nested in; its scope must lie within the parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_lane_id: Option<String>,
    /// What it was validated against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validated_against: Option<Validity>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BindingSpec {
    effect_refs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigDoc {
    schema_version: String,
    lanes: Vec<LaneSpec>,
    #[serde(default)]
    active_lane_id: Option<String>,
    #[serde(default)]
    tool_bindings: BTreeMap<String, BindingSpec>,
}

/// A lane with its parsed scope and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    spec: LaneSpec,
    allowed: Vec<RefPattern>,
    denied: Vec<RefPattern>,
    digest: String,
}

/// How a single effect ref falls against a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeFit {
    /// Allowed and not denied.
    Inside,
    /// No allowed pattern matches it.
    Outside,
    /// A denied pattern matches it.
    Denied(String),
}

impl Lane {
    /// Parses a declared lane (its patterns) and computes its digest.
    ///
    /// # Errors
    /// Every finding about the lane on its own.
    pub fn new(spec: LaneSpec) -> Result<Self, Vec<CodedFinding>> {
        let mut findings = Vec::new();
        let id = spec.lane_id.clone();
        if id.parse::<LaneId>().is_err() {
            findings.push(CodedFinding::new(
                "bad_lane_id",
                format!("lanes[`{id}`].lane_id: not a valid id (letters, digits, `._:@-`)"),
            ));
        }
        let mut parse = |field: &str, list: &[String]| -> Vec<RefPattern> {
            list.iter()
                .filter_map(|text| match RefPattern::parse(text) {
                    Ok(p) => Some(p),
                    Err(reason) => {
                        findings.push(CodedFinding::new(
                            "bad_ref_pattern",
                            format!("lanes[`{id}`].mutation_scope.{field}: {reason}"),
                        ));
                        None
                    }
                })
                .collect()
        };
        let allowed = parse("allowed_refs", &spec.mutation_scope.allowed_refs);
        let denied = parse("denied_refs", &spec.mutation_scope.denied_refs);
        let both: BTreeSet<&str> = spec
            .mutation_scope
            .allowed_refs
            .iter()
            .filter(|r| spec.mutation_scope.denied_refs.contains(r))
            .map(String::as_str)
            .collect();
        if !both.is_empty() {
            findings.push(CodedFinding::new(
                "scope_overlap",
                format!(
                    "lanes[`{id}`].mutation_scope: allows and denies the same refs: {}",
                    both.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if let Some(v) = &spec.validated_against {
            for (field, value) in [
                ("repo_head", &v.repo_head),
                ("policy_version", &v.policy_version),
                ("environment_digest", &v.environment_digest),
            ] {
                if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    findings.push(CodedFinding::new(
                        "bad_validity",
                        format!(
                            "lanes[`{id}`].validated_against.{field}: must be non-empty, without spaces"
                        ),
                    ));
                }
            }
        }
        if !findings.is_empty() {
            return Err(findings);
        }
        let digest = lane_digest(&spec);
        Ok(Self {
            spec,
            allowed,
            denied,
            digest,
        })
    }

    /// This lane for the project at `root` (normalised, absolute): its `file:` patterns
    /// written with absolute paths below `root` become project-relative
    /// ([`RefPattern::within_project`]).
    #[must_use]
    pub fn within_project(mut self, root: &str) -> Self {
        for pattern in self.allowed.iter_mut().chain(self.denied.iter_mut()) {
            *pattern = pattern.within_project(root);
        }
        self
    }

    /// The declaration.
    #[must_use]
    pub const fn spec(&self) -> &LaneSpec {
        &self.spec
    }

    /// The lane's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.spec.lane_id
    }

    /// `sha256:<hex>` over its json-sort-keys-utf8-v1 form, as RLC 0.1 computes lane digests.
    #[must_use]
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Where `effect` falls.
    #[must_use]
    pub fn fit(&self, effect: &str) -> ScopeFit {
        if let Some(d) = self.denied.iter().find(|d| d.matches(effect)) {
            return ScopeFit::Denied(d.to_string());
        }
        if self.allowed.iter().any(|a| a.matches(effect)) {
            ScopeFit::Inside
        } else {
            ScopeFit::Outside
        }
    }

    /// Why this lane's scope does not lie within `parent`'s (empty when it does): every
    /// allowed pattern must be covered by one of the parent's, and any part of it the parent
    /// denies must be denied here too.
    #[must_use]
    pub fn escapes(&self, parent: &Self) -> Vec<String> {
        let mut out = Vec::new();
        for allowed in &self.allowed {
            if !parent.allowed.iter().any(|p| p.covers(allowed)) {
                out.push(format!(
                    "`{allowed}` is not within the allowed refs of `{}`",
                    parent.id()
                ));
            }
            for denied in parent.denied.iter().filter(|d| d.overlaps(allowed)) {
                if !self.denied.iter().any(|own| own.covers(denied)) {
                    out.push(format!(
                        "`{allowed}` reaches `{denied}`, which `{}` denies",
                        parent.id()
                    ));
                }
            }
        }
        out
    }
}

/// The RLC 0.1 lane digest of a declaration (`sha256:<hex>`; empty only if the declaration
/// could not be canonicalised, which a parsed declaration always can).
#[must_use]
pub fn lane_digest(spec: &LaneSpec) -> String {
    serde_json::to_value(spec)
        .ok()
        .and_then(|value| cairn_interop::rlc::lane_digest(&value).ok())
        .unwrap_or_default()
}

/// A validated lane declaration file.
#[derive(Debug, Clone)]
pub struct LaneConfig {
    lanes: BTreeMap<String, Lane>,
    active: Option<String>,
    bindings: Bindings,
}

/// Why a lane declaration file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .findings.iter().map(|f| format!("{}: {}", f.code, f.message)).collect::<Vec<_>>().join("; "))]
pub struct LaneConfigError {
    /// Every finding.
    pub findings: Vec<CodedFinding>,
}

impl LaneConfig {
    /// Parses and validates a declaration file.
    ///
    /// # Errors
    /// [`LaneConfigError`] with every finding.
    pub fn from_json(text: &str) -> Result<Self, LaneConfigError> {
        let doc: ConfigDoc = serde_json::from_str(text).map_err(|e| LaneConfigError {
            findings: vec![CodedFinding::new("lanes_malformed", e.to_string())],
        })?;
        let mut findings = Vec::new();
        if doc.schema_version != LANES_SCHEMA_VERSION {
            findings.push(CodedFinding::new(
                "bad_schema_version",
                format!(
                    "schema_version: `{}`, expected `{LANES_SCHEMA_VERSION}`",
                    doc.schema_version
                ),
            ));
        }
        let mut lanes = BTreeMap::new();
        for spec in doc.lanes {
            let id = spec.lane_id.clone();
            match Lane::new(spec) {
                Ok(lane) => {
                    // The first declaration stands; relations are checked against it.
                    match lanes.entry(id) {
                        std::collections::btree_map::Entry::Occupied(taken) => {
                            findings.push(CodedFinding::new(
                                "duplicate_lane_id",
                                format!("lanes: `{}` is declared twice", taken.key()),
                            ));
                        }
                        std::collections::btree_map::Entry::Vacant(free) => {
                            free.insert(lane);
                        }
                    }
                }
                Err(mut own) => findings.append(&mut own),
            }
        }
        findings.extend(relation_findings(&lanes));
        if let Some(active) = &doc.active_lane_id
            && !lanes.contains_key(active)
        {
            findings.push(CodedFinding::new(
                "unknown_active_lane",
                format!("active_lane_id: `{active}` is not a declared lane"),
            ));
        }
        let mut bindings = Bindings::default();
        for (tool, spec) in doc.tool_bindings {
            let templates: Result<Vec<_>, _> = spec
                .effect_refs
                .iter()
                .map(|t| EffectTemplate::parse(t))
                .collect();
            match templates {
                Ok(t) => bindings.insert(tool, t),
                Err(reason) => findings.push(CodedFinding::new(
                    "bad_binding",
                    format!("tool_bindings.`{tool}`.effect_refs: {reason}"),
                )),
            }
        }
        if !findings.is_empty() {
            return Err(LaneConfigError { findings });
        }
        Ok(Self {
            lanes,
            active: doc.active_lane_id,
            bindings,
        })
    }

    /// A lane by id.
    #[must_use]
    pub fn lane(&self, id: &str) -> Option<&Lane> {
        self.lanes.get(id)
    }

    /// Every lane, by id.
    pub fn lanes(&self) -> impl Iterator<Item = &Lane> {
        self.lanes.values()
    }

    /// The lane calls are made in unless they name one.
    #[must_use]
    pub fn active_lane(&self) -> Option<&str> {
        self.active.as_deref()
    }

    /// The tool capability binding.
    #[must_use]
    pub const fn bindings(&self) -> &Bindings {
        &self.bindings
    }

    /// Gives `tool` the binding of a tool that only reads — no effect refs — unless the
    /// declarations bind it otherwise.
    pub fn bind_read_only(&mut self, tool: &str) {
        if !self.bindings.is_bound(tool) {
            self.bindings.insert(tool.to_owned(), Vec::new());
        }
    }

    /// The configuration of the project at `root` (absolute): absolute file paths below it
    /// in tool arguments become project-relative `file:` refs
    /// ([`Bindings::with_project_root`]), and so do the lanes' `file:` patterns written with
    /// such paths ([`Lane::within_project`]), so that either way of writing a scope judges
    /// either way of naming a file alike.
    #[must_use]
    pub fn with_project_root(mut self, root: &str) -> Self {
        self.bindings = self.bindings.with_project_root(root);
        let lanes = std::mem::take(&mut self.lanes);
        self.lanes = lanes
            .into_iter()
            .map(|(id, lane)| (id, self.place(lane)))
            .collect();
        self
    }

    /// [`Lane::within_project`] for this configuration's project root, if it has one (lanes
    /// ruled at run time are declared afresh and go through here).
    #[must_use]
    pub fn place(&self, lane: Lane) -> Lane {
        match self.bindings.project_root() {
            Some(root) => lane.within_project(root),
            None => lane,
        }
    }
}

/// Findings about how lanes relate: dependencies, parents, nested scopes.
pub(crate) fn relation_findings(lanes: &BTreeMap<String, Lane>) -> Vec<CodedFinding> {
    let mut findings = Vec::new();
    for lane in lanes.values() {
        let id = lane.id();
        for dep in &lane.spec.depends_on {
            if dep == id {
                findings.push(CodedFinding::new(
                    "self_dependency",
                    format!("lanes[`{id}`].depends_on: a lane cannot depend on itself"),
                ));
            } else if !lanes.contains_key(dep) {
                findings.push(CodedFinding::new(
                    "unknown_dependency",
                    format!("lanes[`{id}`].depends_on: `{dep}` is not a declared lane"),
                ));
            }
        }
        let Some(parent_id) = &lane.spec.parent_lane_id else {
            continue;
        };
        let Some(parent) = lanes.get(parent_id) else {
            findings.push(CodedFinding::new(
                "unknown_parent",
                format!("lanes[`{id}`].parent_lane_id: `{parent_id}` is not a declared lane"),
            ));
            continue;
        };
        if has_parent_cycle(lanes, id) {
            findings.push(CodedFinding::new(
                "parent_cycle",
                format!("lanes[`{id}`].parent_lane_id: the parents of `{id}` form a cycle"),
            ));
            continue;
        }
        for reason in lane.escapes(parent) {
            findings.push(CodedFinding::new(
                "nested_scope_violation",
                format!("lanes[`{id}`].mutation_scope: {reason}"),
            ));
        }
    }
    findings
}

fn has_parent_cycle(lanes: &BTreeMap<String, Lane>, start: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut current = start;
    while let Some(parent) = lanes
        .get(current)
        .and_then(|l| l.spec.parent_lane_id.as_deref())
    {
        if !seen.insert(current) || parent == start {
            return true;
        }
        current = parent;
    }
    false
}
