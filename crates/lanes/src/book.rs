//! The run-time state of a project's lanes (L-4…L-7), rebuilt from durable lane events and
//! consulted on every tool call.
//!
//! - **Scope** (L-4): a call's effect refs, from the tool capability binding, must lie inside
//!   the acting lane's allowed refs and outside its denied refs; a call by anyone but the
//!   lane's owner, in a closed lane, or with unknown effects is denied.
//! - **Latest ruling wins** (L-5): a ruling replaces a lane's definition; a restored view of
//!   the lanes (a summary, a restored document) that disagrees with the latest ruling loses and
//!   is reported, never applied.
//! - **Done is authority** (L-6): a lane is `complete` only when every evidence ref of its
//!   done condition has been recorded as passing; partial evidence never promotes it.
//! - **Beyond the reference** (L-7): ownership moves only by a verified handoff naming the
//!   current owner and the lane's current digest; a ruling that would push a nested lane out
//!   of its parent's scope is refused; a lane validated against a repository head, policy
//!   version and environment digest goes back to review when any of them changes, until it
//!   is revalidated.

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::CodedFinding;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::binding::UnknownEffects;
use crate::config::{Lane, LaneConfig, LaneSpec, LaneStatus, ScopeFit, Validity};

/// The rule that refuses a tool no lane binding covers: its effects are unknown, and only a
/// person adding a binding helps (a lane ruling does not).
pub const UNBOUND_TOOL_RULE: &str = "cairn.lane-unbound-tool";

/// A lane event, as recorded durably and replayed in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneEvent {
    /// A user ruling (`ruling_ref`, an authoritative event) replaces the lane's definition
    /// (and its owner, when the ruling names a different one).
    Ruling {
        /// The ruling event.
        ruling_ref: String,
        /// The lane as ruled (its `lane_id` names the lane).
        definition: LaneSpec,
    },
    /// Evidence for a done condition was observed.
    Evidence {
        /// The lane.
        lane_id: String,
        /// The evidence ref (one of the done condition's, or a partial check).
        evidence_ref: String,
        /// Whether it passed.
        passed: bool,
    },
    /// Ownership moved by a verified, signed handoff.
    Handoff(Handoff),
    /// The lane was revalidated against the current repository, policy and environment.
    Revalidated {
        /// The lane.
        lane_id: String,
        /// What it was validated against.
        against: Validity,
    },
}

/// A lane handoff (L-7): `from_owner` hands `lane_id`, as it stands at `lane_digest`, to
/// `to_owner`. Its canonical text is what gets signed; only a verified handoff may be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// Always `cairn.lane-handoff/v1`.
    pub schema_version: String,
    /// The lane.
    pub lane_id: String,
    /// The owner handing it over.
    pub from_owner: String,
    /// The new owner.
    pub to_owner: String,
    /// The lane's digest at the handoff.
    pub lane_digest: String,
    /// Why (free text, bounded by the caller).
    pub reason: String,
}

/// The schema tag of a handoff.
pub const HANDOFF_SCHEMA_VERSION: &str = "cairn.lane-handoff/v1";

impl Handoff {
    /// The text a signature covers: the handoff's json-sort-keys-utf8-v1 form and a newline.
    #[must_use]
    pub fn signed_text(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        let bytes = cairn_interop::sort_keys::sort_keys_utf8_v1(&value).unwrap_or_default();
        let mut text = String::from_utf8(bytes).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parses the text a signature covered.
    ///
    /// # Errors
    /// A message when it is not a handoff.
    pub fn from_signed_text(text: &str) -> Result<Self, String> {
        let handoff: Self = serde_json::from_str(text.trim_end_matches('\n'))
            .map_err(|e| format!("not a lane handoff: {e}"))?;
        if handoff.schema_version != HANDOFF_SCHEMA_VERSION {
            return Err(format!(
                "schema_version: `{}`, expected `{HANDOFF_SCHEMA_VERSION}`",
                handoff.schema_version
            ));
        }
        Ok(handoff)
    }
}

/// A lane's live state.
#[derive(Debug, Clone)]
struct LaneState {
    lane: Lane,
    ruling_ref: Option<String>,
    owner: String,
    passed: BTreeSet<String>,
    validated: Option<Validity>,
    /// Why the lane is held for review, when it is (its definition changed without a
    /// recorded ruling).
    suspended: Option<String>,
}

/// A call as the lane check sees it.
#[derive(Clone, Copy)]
pub struct LaneCall<'a> {
    /// Who makes it.
    pub principal: &'a str,
    /// The lane it is made in (`None`: the configured active lane).
    pub lane: Option<&'a str>,
    /// The tool.
    pub tool: &'a str,
    /// Its arguments, parsed.
    pub args: Option<&'a Value>,
    /// The current repository head, policy version and environment, when known.
    pub current: Option<&'a Validity>,
    /// How a file path in the arguments is resolved before it becomes a `file:` ref: the
    /// runtime resolves symbolic links (the nearest existing ancestor, canonicalised), so
    /// that `src/link/x` with `src/link → /outside` is judged as `/outside/x`. `None`
    /// judges paths lexically.
    pub resolve: Option<&'a dyn Fn(&str) -> String>,
}

impl std::fmt::Debug for LaneCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneCall")
            .field("principal", &self.principal)
            .field("lane", &self.lane)
            .field("tool", &self.tool)
            .field("args", &self.args)
            .field("current", &self.current)
            .field("resolves_paths", &self.resolve.is_some())
            .finish()
    }
}

/// What the lane check decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneVerdict {
    /// Inside the lane's scope.
    Inside {
        /// The lane.
        lane: String,
        /// The call's effect refs.
        effects: Vec<String>,
    },
    /// Refused.
    Denied {
        /// The lane the call was made in, when one is known.
        lane: Option<String>,
        /// The stable rule id recorded with the denial (`cairn.lane-*`).
        rule: &'static str,
        /// What is wrong, for the model and the user.
        reason: String,
    },
}

/// Why a lane event was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct LaneEventError {
    /// A stable code.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

fn refused(code: &'static str, message: String) -> LaneEventError {
    LaneEventError { code, message }
}

/// The lanes of a project, as they stand after the events applied so far.
#[derive(Debug, Clone)]
pub struct LaneBook {
    config: LaneConfig,
    lanes: BTreeMap<String, LaneState>,
}

impl LaneBook {
    /// The lanes as declared, before any event.
    #[must_use]
    pub fn new(config: LaneConfig) -> Self {
        let lanes = config
            .lanes()
            .map(|lane| {
                let spec = lane.spec();
                (
                    lane.id().to_owned(),
                    LaneState {
                        lane: lane.clone(),
                        ruling_ref: spec.latest_ruling_ref.clone(),
                        owner: spec.owner_ref.clone(),
                        passed: BTreeSet::new(),
                        validated: spec.validated_against.clone(),
                        suspended: None,
                    },
                )
            })
            .collect();
        Self { config, lanes }
    }

    /// Declares `tool` one that only reads, as the caller knows it (the hooks' read-only
    /// tools): without a binding of its own it has no effects, so every lane admits it.
    /// Unknown tools are still denied (`cairn.lane-unbound-tool`).
    pub fn bind_read_only(&mut self, tool: &str) {
        self.config.bind_read_only(tool);
    }

    fn state(&self, lane: &str) -> Result<&LaneState, LaneEventError> {
        self.lanes
            .get(lane)
            .ok_or_else(|| refused("unknown_lane", format!("`{lane}` is not a declared lane")))
    }

    /// Applies one event.
    ///
    /// # Errors
    /// [`LaneEventError`] (and no change) for an unknown lane, a ruling that makes an invalid
    /// lane or pushes a nested lane out of its parent, or a handoff that does not name the
    /// current owner and digest.
    pub fn apply(&mut self, event: &LaneEvent) -> Result<(), LaneEventError> {
        match event {
            LaneEvent::Ruling {
                ruling_ref,
                definition,
            } => self.rule(ruling_ref, definition),
            LaneEvent::Evidence {
                lane_id,
                evidence_ref,
                passed,
            } => {
                self.state(lane_id)?;
                if let Some(state) = self.lanes.get_mut(lane_id) {
                    if *passed {
                        state.passed.insert(evidence_ref.clone());
                    } else {
                        state.passed.remove(evidence_ref);
                    }
                }
                Ok(())
            }
            LaneEvent::Handoff(handoff) => {
                let state = self.state(&handoff.lane_id)?;
                if state.owner != handoff.from_owner {
                    return Err(refused(
                        "handoff_wrong_owner",
                        format!(
                            "`{}` is owned by `{}`, not `{}`",
                            handoff.lane_id, state.owner, handoff.from_owner
                        ),
                    ));
                }
                if state.lane.digest() != handoff.lane_digest {
                    return Err(refused(
                        "handoff_stale_lane",
                        format!(
                            "the handoff is for `{}` at {}, but the lane is now at {}",
                            handoff.lane_id,
                            handoff.lane_digest,
                            state.lane.digest()
                        ),
                    ));
                }
                if let Some(state) = self.lanes.get_mut(&handoff.lane_id) {
                    state.owner.clone_from(&handoff.to_owner);
                }
                Ok(())
            }
            LaneEvent::Revalidated { lane_id, against } => {
                self.state(lane_id)?;
                if let Some(state) = self.lanes.get_mut(lane_id) {
                    state.validated = Some(against.clone());
                }
                Ok(())
            }
        }
    }

    fn rule(&mut self, ruling_ref: &str, definition: &LaneSpec) -> Result<(), LaneEventError> {
        let id = definition.lane_id.clone();
        self.state(&id)?;
        let lane = Lane::new(definition.clone())
            .map(|lane| self.config.place(lane))
            .map_err(|f| {
                refused(
                    "ruling_invalid",
                    f.iter()
                        .map(|x| x.message.clone())
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            })?;
        // The ruled lane must still lie within its parent, and its children within it.
        let mut trial: BTreeMap<String, Lane> = self
            .lanes
            .iter()
            .map(|(k, s)| (k.clone(), s.lane.clone()))
            .collect();
        trial.insert(id.clone(), lane.clone());
        let nested: Vec<String> = crate::config::relation_findings(&trial)
            .into_iter()
            .filter(|f| f.code == "nested_scope_violation" || f.code == "unknown_parent")
            .map(|f| f.message)
            .collect();
        if !nested.is_empty() {
            return Err(refused("nested_scope_violation", nested.join("; ")));
        }
        if let Some(state) = self.lanes.get_mut(&id) {
            // A ruling that names a new owner moves the lane; one that keeps the declared
            // owner leaves a handoff in force.
            if state.lane.spec().owner_ref != definition.owner_ref {
                state.owner.clone_from(&definition.owner_ref);
            }
            state.lane = lane;
            state.ruling_ref = Some(ruling_ref.to_owned());
            state.suspended = None;
        }
        Ok(())
    }

    /// Holds a lane for review: every call in it is denied until a ruling is applied. For a
    /// lane whose definition no longer matches the one its latest recorded ruling bound.
    pub fn suspend(&mut self, lane: &str, reason: String) {
        if let Some(state) = self.lanes.get_mut(lane) {
            state.suspended = Some(reason);
        }
    }

    /// The lane calls are made in unless they name one.
    #[must_use]
    pub fn active_lane(&self) -> Option<&str> {
        self.config.active_lane()
    }

    /// The lane's status now: `complete` once every done-condition evidence ref has passed
    /// (a lane with no done condition is never promoted this way), otherwise as declared.
    #[must_use]
    pub fn status(&self, lane: &str) -> Option<LaneStatus> {
        let state = self.lanes.get(lane)?;
        let spec = state.lane.spec();
        let done = !spec.done_condition.is_empty()
            && spec.done_condition.iter().all(|e| state.passed.contains(e));
        Some(if done && spec.status == LaneStatus::Active {
            LaneStatus::Complete
        } else {
            spec.status
        })
    }

    /// The done-condition evidence refs not yet recorded as passing.
    #[must_use]
    pub fn missing_evidence(&self, lane: &str) -> Vec<String> {
        self.lanes.get(lane).map_or_else(Vec::new, |state| {
            state
                .lane
                .spec()
                .done_condition
                .iter()
                .filter(|e| !state.passed.contains(*e))
                .cloned()
                .collect()
        })
    }

    /// The lane's current owner.
    #[must_use]
    pub fn owner(&self, lane: &str) -> Option<&str> {
        self.lanes.get(lane).map(|s| s.owner.as_str())
    }

    /// Every lane's current definition, by id.
    pub fn lanes(&self) -> impl Iterator<Item = &Lane> {
        self.lanes.values().map(|s| &s.lane)
    }

    /// The lane's current definition.
    #[must_use]
    pub fn lane(&self, lane: &str) -> Option<&Lane> {
        self.lanes.get(lane).map(|s| &s.lane)
    }

    /// The ruling the lane's current definition comes from.
    #[must_use]
    pub fn ruling_ref(&self, lane: &str) -> Option<&str> {
        self.lanes.get(lane).and_then(|s| s.ruling_ref.as_deref())
    }

    /// Whether the lane must be revalidated against `current`, and what changed.
    #[must_use]
    pub fn revalidation_needed(&self, lane: &str, current: &Validity) -> Vec<&'static str> {
        self.lanes
            .get(lane)
            .and_then(|s| s.validated.as_ref())
            .map_or_else(Vec::new, |v| v.changes(current))
    }

    /// Decides whether a call lies within its lane (L-4, L-6, L-7).
    #[must_use]
    pub fn check(&self, call: &LaneCall<'_>) -> LaneVerdict {
        let denied = |lane: Option<&str>, rule: &'static str, reason: String| LaneVerdict::Denied {
            lane: lane.map(str::to_owned),
            rule,
            reason,
        };
        let Some(lane_id) = call.lane.or_else(|| self.config.active_lane()) else {
            return denied(
                None,
                "cairn.lane-required",
                "lanes are configured but the call names no lane and none is active".to_owned(),
            );
        };
        let Some(state) = self.lanes.get(lane_id) else {
            return denied(
                Some(lane_id),
                "cairn.lane-unknown",
                format!("`{lane_id}` is not a declared lane"),
            );
        };
        let lane = Some(lane_id);
        if state.owner != call.principal {
            return denied(
                lane,
                "cairn.lane-owner",
                // The owner is not named: on a service a lane may belong to another tenant's
                // agent (issue 34, 12); a person reads it from the lanes.
                format!("lane `{lane_id}` is not owned by `{}`", call.principal),
            );
        }
        if let Some(reason) = &state.suspended {
            return denied(lane, "cairn.lane-review-required", reason.clone());
        }
        let status = self.status(lane_id).unwrap_or_default();
        if matches!(status, LaneStatus::Complete | LaneStatus::Superseded) {
            return denied(
                lane,
                "cairn.lane-closed",
                format!("lane `{lane_id}` is {}", status.as_str()),
            );
        }
        if let Some(current) = call.current {
            let changed = self.revalidation_needed(lane_id, current);
            if !changed.is_empty() {
                return denied(
                    lane,
                    "cairn.lane-revalidation-required",
                    format!(
                        "lane `{lane_id}` was validated against another {}; it needs review",
                        changed.join(", ")
                    ),
                );
            }
        }
        let effects = match self.config.bindings().effects_resolved(
            call.tool,
            call.args,
            call.resolve,
        ) {
            Ok(effects) => effects,
            Err(UnknownEffects::UnboundTool) => {
                return denied(
                    lane,
                    UNBOUND_TOOL_RULE,
                    format!(
                        "`{tool}` has no capability binding, so its effects are unknown; a person adds one to `tool_bindings` in the lanes file, such as `\"{tool}\": {{\"effect_refs\": [\"capability:{tool}\"]}}` (or `[]` for a tool that changes nothing)",
                        tool = call.tool
                    ),
                );
            }
            Err(UnknownEffects::MissingArgument(arg)) => {
                return denied(
                    lane,
                    UNBOUND_TOOL_RULE,
                    format!(
                        "`{}` needs the argument `{arg}` to know its effects (its binding in the lanes file names it)",
                        call.tool
                    ),
                );
            }
        };
        for effect in &effects {
            match state.lane.fit(effect) {
                ScopeFit::Inside => {}
                ScopeFit::Outside => {
                    return denied(
                        lane,
                        "cairn.lane-scope",
                        format!("`{effect}` is outside the allowed refs of lane `{lane_id}`"),
                    );
                }
                ScopeFit::Denied(pattern) => {
                    return denied(
                        lane,
                        "cairn.lane-scope",
                        format!("`{effect}` is denied to lane `{lane_id}` by `{pattern}`"),
                    );
                }
            }
        }
        if status == LaneStatus::Blocked && !effects.is_empty() {
            return denied(
                lane,
                "cairn.lane-blocked",
                format!("lane `{lane_id}` is blocked"),
            );
        }
        LaneVerdict::Inside {
            lane: lane_id.to_owned(),
            effects,
        }
    }

    /// Whether some call of `tool` by `principal` could lie within the active lane — what a
    /// tool list shows (the MCP gateway's `tools/list`): `false` when no lane is active, the
    /// lane refuses every call of `principal` (another owner, suspended, closed), the tool has
    /// no binding, or its fixed effects lie outside the lane's scope; `true` when its effects
    /// depend on the arguments (some arguments may fit).
    #[must_use]
    pub fn could_admit(&self, principal: &str, tool: &str) -> bool {
        let verdict = self.check(&LaneCall {
            principal,
            lane: None,
            tool,
            args: None,
            current: None,
            resolve: None,
        });
        match verdict {
            LaneVerdict::Inside { .. } => true,
            LaneVerdict::Denied { rule, .. } => {
                rule == UNBOUND_TOOL_RULE
                    && matches!(
                        self.config.bindings().effects_resolved(tool, None, None),
                        Err(UnknownEffects::MissingArgument(_))
                    )
            }
        }
    }

    /// Compares a restored view of the lanes (the lanes as a summary or a restored document
    /// states them, `responsibility_lanes` rows in RLC 0.1 form) with the durable state. The
    /// durable state is never changed by it: every disagreement is a finding, and the gate
    /// goes on using the latest ruling.
    #[must_use]
    pub fn compare_restored(&self, restored: &[Value]) -> Vec<CodedFinding> {
        let mut findings = Vec::new();
        for row in restored {
            let id = row.get("lane_id").and_then(Value::as_str).unwrap_or("");
            let Some(state) = self.lanes.get(id) else {
                findings.push(CodedFinding::new(
                    "restored_lane_unknown",
                    format!("the restored view has a lane `{id}` the records do not"),
                ));
                continue;
            };
            let claimed_ruling = row.get("latest_ruling_ref").and_then(Value::as_str);
            if claimed_ruling != state.ruling_ref.as_deref() {
                findings.push(CodedFinding::new(
                    "superseded_by_latest_ruling",
                    format!(
                        "lane `{id}`: the restored view follows ruling `{}`, the latest ruling is `{}`",
                        claimed_ruling.unwrap_or("none"),
                        state.ruling_ref.as_deref().unwrap_or("none")
                    ),
                ));
            }
            let claimed_scope = row.get("mutation_scope");
            let durable_scope = serde_json::to_value(&state.lane.spec().mutation_scope).ok();
            if claimed_scope.is_some() && claimed_scope != durable_scope.as_ref() {
                findings.push(CodedFinding::new(
                    "restored_scope_differs",
                    format!("lane `{id}`: the restored mutation scope is not the ruled one"),
                ));
            }
            if row.get("owner_ref").and_then(Value::as_str) != Some(state.owner.as_str()) {
                findings.push(CodedFinding::new(
                    "restored_owner_differs",
                    format!("lane `{id}`: the restored owner is not `{}`", state.owner),
                ));
            }
            let status = self.status(id).unwrap_or_default();
            if row.get("status").and_then(Value::as_str) == Some("complete")
                && status != LaneStatus::Complete
            {
                findings.push(CodedFinding::new(
                    "completion_not_evidenced",
                    format!(
                        "lane `{id}` is restored as complete, but its done condition lacks {}",
                        self.missing_evidence(id).join(", ")
                    ),
                ));
            }
        }
        findings
    }
}
