//! The loaded gate: maps a tool call to a Cedar request and returns the decision with the
//! determining policy ids, failing closed on anything it cannot evaluate.
//!
//! Everything that does not depend on the call is prepared once at load: entity type names,
//! each declared tool's action and resource uids and argument list, the authorizer, and per
//! tool the subset of policies whose action scope can match it. A decision builds only the
//! call's context and request (plus the resource entity when a policy that can match reads
//! the resource) and evaluates only that subset.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use cairn_core::Digest;
use cedar_policy::{
    ActionConstraint, AuthorizationError, Authorizer, Context, Entities, Entity, EntityId,
    EntityTypeName, EntityUid, PolicySet, Request, RestrictedExpression,
};
use serde_json::Value;

use cairn_core::AllowDeny;

use crate::args::{ARGS_UNREADABLE_RULE, Arguments, UnreadableArguments, long_literal};
use crate::catalog::{ArgType, ToolCatalog, UNDECLARED_TOOL_ACTION};
use crate::decision::{
    DecisionReason, Effect, Explanation, GateDecision, GateRequest, PolicyFailure, PolicyInfo,
    PolicyWarning,
};
use crate::error::PolicyLoadError;
use crate::limits;
use crate::load::{self, LoadedPolicy};
use crate::source::PolicySource;

/// A declared tool, ready for requests.
struct ToolEntry {
    action: EntityUid,
    resource: EntityUid,
    args: Vec<(String, ArgType)>,
    /// The policies whose action scope can match this tool (see [`subset`]).
    policies: Subset,
}

/// The policies a request can match, and whether any of them reads the resource in a
/// condition (only then does a call need the `Tool` entity with its attributes).
struct Subset {
    set: PolicySet,
    reads_resource: bool,
}

/// The policy gate: a validated Cedar policy set, the tool catalog it was validated against,
/// and the set's version. Cheap to share between threads (`Send + Sync`); deciding is pure.
pub struct PolicyGate {
    /// The policies that can match a tool absent from the catalog.
    undeclared: Subset,
    schema_text: String,
    catalog: ToolCatalog,
    authorizer: Authorizer,
    version: Digest,
    /// In source order (file by file, then position).
    policies: Vec<PolicyInfo>,
    by_id: HashMap<String, usize>,
    /// Whether some permit carries `@approval` (only then is a permit's decision looked at
    /// again).
    asks_approval: bool,
    warnings: Vec<PolicyWarning>,
    /// Every policy, with the resource entity always built: the unoptimised gate the tests
    /// compare the per-tool subsets against.
    #[cfg(test)]
    reference: Subset,
    tools: HashMap<String, ToolEntry>,
    agent_type: EntityTypeName,
    tool_type: EntityTypeName,
    action_type: EntityTypeName,
}

/// What one evaluation found, before it is turned into a decision or an explanation.
struct Outcome {
    decision: GateDecision,
    /// Indexes (into `policies`) of the policies that failed, with Cedar's message when asked.
    failures: Vec<(usize, Option<String>)>,
}

impl PolicyGate {
    /// Loads a policy set from `sources` (one entry per file), validated against the schema
    /// generated from `catalog`.
    ///
    /// An empty set (no sources, or files with only comments) is legal: it permits nothing,
    /// so every call is a default deny.
    ///
    /// # Errors
    /// The first of the findings [`PolicyGate::load_with_all_errors`] reports.
    pub fn load(sources: &[PolicySource], catalog: &ToolCatalog) -> Result<Self, PolicyLoadError> {
        Self::load_with_all_errors(sources, catalog).map_err(|mut errors| {
            if errors.is_empty() {
                PolicyLoadError::Internal {
                    message: "loading failed without a finding".to_owned(),
                }
            } else {
                errors.swap_remove(0)
            }
        })
    }

    /// As [`PolicyGate::load`], reporting every finding rather than the first: parse, id and
    /// template findings file by file, then duplicate ids, then schema-validation findings
    /// ordered by file and position.
    ///
    /// # Errors
    /// A non-empty list of [`PolicyLoadError`]s; no gate is built when there is any.
    pub fn load_with_all_errors(
        sources: &[PolicySource],
        catalog: &ToolCatalog,
    ) -> Result<Self, Vec<PolicyLoadError>> {
        // Cedar's parser and the walks over a policy recurse: on a thread with less stack
        // than the deepest policy within the limits needs, loading runs on a stack grown for
        // it (`crate::limits`).
        stacker::maybe_grow(limits::STACK_BYTES / 2, limits::STACK_BYTES, || {
            Self::load_on_this_stack(sources, catalog)
        })
    }

    fn load_on_this_stack(
        sources: &[PolicySource],
        catalog: &ToolCatalog,
    ) -> Result<Self, Vec<PolicyLoadError>> {
        let loaded = load::load(sources, catalog)?;
        let type_name = |name: &str| {
            EntityTypeName::from_str(name).map_err(|err| {
                vec![PolicyLoadError::Internal {
                    message: format!("entity type `{name}`: {err}"),
                }]
            })
        };
        let agent_type = type_name("Agent")?;
        let tool_type = type_name("Tool")?;
        let action_type = type_name("Action")?;
        let mut tools = HashMap::with_capacity(catalog.tools().len());
        for (name, decl) in catalog.tools() {
            let action = uid(&action_type, name);
            let policies = subset(&loaded.policies, |targets| targets.contains(&action))?;
            let entry = ToolEntry {
                resource: uid(&tool_type, name),
                args: decl.args().map(|(arg, ty)| (arg.to_owned(), ty)).collect(),
                action,
                policies,
            };
            tools.insert(name.to_owned(), entry);
        }
        // An undeclared tool can only be matched by a policy naming an action that is not a
        // declared tool (strict validation leaves none, but the rule does not rely on it).
        let undeclared = subset(&loaded.policies, |targets| {
            targets.iter().any(|target| {
                target.type_name() != &action_type || !tools.contains_key(target.id().unescaped())
            })
        })?;
        #[cfg(test)]
        let reference = Subset {
            reads_resource: true,
            ..subset(&loaded.policies, |_| true)?
        };
        let policies: Vec<PolicyInfo> = loaded.policies.into_iter().map(|p| p.info).collect();
        let by_id = policies
            .iter()
            .enumerate()
            .map(|(index, info)| (info.id.clone(), index))
            .collect();
        Ok(Self {
            #[cfg(test)]
            reference,
            undeclared,
            schema_text: loaded.schema_text,
            catalog: catalog.clone(),
            authorizer: Authorizer::new(),
            version: loaded.version,
            asks_approval: policies.iter().any(|p| p.approval.is_some()),
            policies,
            by_id,
            warnings: loaded.warnings,
            tools,
            agent_type,
            tool_type,
            action_type,
        })
    }

    /// The policy-set version: a digest that changes when, and only when, the policies or the
    /// catalog change in meaning.
    ///
    /// It is SHA-256 over the RFC 8785 form of the policies' Cedar JSON form (EST), sorted by
    /// `@id`, together with the tool catalog. Whitespace, comments, line breaks, the order of
    /// policies and how they are split into files do not change it; an effect, a scope, a
    /// condition, an annotation or an id does. The catalog is included because it changes
    /// decisions too (which arguments reach policies and with which type, which calls are
    /// refused as `invalid_arguments`), and a recorded version must identify everything that
    /// decided.
    #[must_use]
    pub fn version(&self) -> Digest {
        self.version
    }

    /// The loaded policies, in source order (file by file, then position in the file).
    #[must_use]
    pub fn policies(&self) -> &[PolicyInfo] {
        &self.policies
    }

    /// The validator's warnings that did not refuse a policy (mixed-script or confusable
    /// identifiers), ordered by file and position.
    #[must_use]
    pub fn warnings(&self) -> &[PolicyWarning] {
        &self.warnings
    }

    /// The tool catalog the set was validated against.
    #[must_use]
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// The generated Cedar schema text the set was validated against.
    #[must_use]
    pub fn schema_text(&self) -> &str {
        &self.schema_text
    }

    /// Whether some call of `tool` by `principal` could be permitted, whatever its
    /// arguments, run or lane: a `permit` whose scope can match it exists, and no `forbid`
    /// without conditions matches it by scope. What a scope constrains beyond `==` (a
    /// group with `in`, a type with `is`) is taken as able to match, so the answer errs
    /// towards "could" — the MCP gateway hides from `tools/list` only the tools no call of
    /// which can ever be admitted; each call is still decided in full.
    #[must_use]
    pub fn could_permit(&self, tool: &str, principal: &str) -> bool {
        use cedar_policy::{PrincipalConstraint, ResourceConstraint};
        let subset = self
            .tools
            .get(tool)
            .map_or(&self.undeclared, |entry| &entry.policies);
        let agent = uid(&self.agent_type, principal);
        let resource = uid(&self.tool_type, tool);
        let mut permitted = false;
        for policy in subset.set.policies() {
            let principal_matches = match policy.principal_constraint() {
                PrincipalConstraint::Eq(uid) => uid == agent,
                _ => true,
            };
            let resource_matches = match policy.resource_constraint() {
                ResourceConstraint::Eq(uid) => uid == resource,
                _ => true,
            };
            if !(principal_matches && resource_matches) {
                continue;
            }
            match policy.effect() {
                cedar_policy::Effect::Permit => permitted = true,
                cedar_policy::Effect::Forbid => {
                    let unconditional = matches!(
                        policy.principal_constraint(),
                        PrincipalConstraint::Any | PrincipalConstraint::Eq(_)
                    ) && matches!(
                        policy.resource_constraint(),
                        ResourceConstraint::Any | ResourceConstraint::Eq(_)
                    ) && policy.to_json().ok().is_some_and(|est| {
                        est.get("conditions")
                            .and_then(Value::as_array)
                            .is_some_and(Vec::is_empty)
                    });
                    if unconditional {
                        return false;
                    }
                }
            }
        }
        permitted
    }

    /// Decides one call. Pure: the same gate and call always give the same decision.
    #[must_use]
    pub fn decide(&self, call: &GateRequest<'_>) -> GateDecision {
        self.evaluate(call, false).decision
    }

    /// Decides one call and says why: the determining policies with their locations and
    /// every policy that failed to evaluate.
    #[must_use]
    pub fn explain(&self, call: &GateRequest<'_>) -> Explanation {
        let outcome = self.evaluate(call, true);
        let determining = outcome
            .decision
            .rule_ids
            .iter()
            .filter_map(|id| self.info(id).cloned())
            .collect();
        let mut failed: Vec<PolicyFailure> = outcome
            .failures
            .into_iter()
            .filter_map(|(index, message)| {
                self.policies.get(index).map(|policy| PolicyFailure {
                    policy: policy.clone(),
                    message: message.unwrap_or_default(),
                })
            })
            .collect();
        failed.sort_by(|a, b| a.policy.id.cmp(&b.policy.id));
        Explanation {
            decision: outcome.decision,
            tool_declared: self.tools.contains_key(call.tool),
            determining,
            failed,
        }
    }

    /// The decision for a call whose arguments did not read ([`Arguments::read`]): a deny by
    /// the built-in rule [`ARGS_UNREADABLE_RULE`], under this set's version. Every path that
    /// admits calls (the executor, `cairn policy explain`) answers such a call with this, so
    /// it is denied and recorded the same way everywhere; no policy can override it.
    #[must_use]
    pub fn refuse_unreadable(&self, unreadable: &UnreadableArguments) -> GateDecision {
        GateDecision {
            decision: AllowDeny::Deny,
            rule_ids: vec![ARGS_UNREADABLE_RULE.to_owned()],
            policy_set_version: self.version,
            reason: DecisionReason::ArgsUnreadable {
                path: unreadable.path().to_owned(),
                code: unreadable.code(),
                message: unreadable.0.message.clone(),
            },
        }
    }

    /// [`PolicyGate::refuse_unreadable`] as an explanation of `tool`'s call.
    #[must_use]
    pub fn explain_unreadable(&self, tool: &str, unreadable: &UnreadableArguments) -> Explanation {
        Explanation {
            decision: self.refuse_unreadable(unreadable),
            tool_declared: self.tools.contains_key(tool),
            determining: Vec::new(),
            failed: Vec::new(),
        }
    }

    fn info(&self, id: &str) -> Option<&PolicyInfo> {
        self.by_id
            .get(id)
            .and_then(|index| self.policies.get(*index))
    }

    fn deny(&self, reason: DecisionReason) -> Outcome {
        Outcome {
            decision: GateDecision {
                decision: AllowDeny::Deny,
                rule_ids: Vec::new(),
                policy_set_version: self.version,
                reason,
            },
            failures: Vec::new(),
        }
    }

    fn evaluate(&self, call: &GateRequest<'_>, messages: bool) -> Outcome {
        self.evaluate_in(call, messages, None)
    }

    /// Evaluates `call` against `only` when given (tests), else against the subset of
    /// policies that can match the call's tool.
    fn evaluate_in(
        &self,
        call: &GateRequest<'_>,
        messages: bool,
        only: Option<&Subset>,
    ) -> Outcome {
        if call.tool == UNDECLARED_TOOL_ACTION {
            return self.deny(DecisionReason::InvalidRequest {
                reason: format!("tool name `{UNDECLARED_TOOL_ACTION}` is reserved"),
            });
        }
        let declared = self.tools.get(call.tool);
        let args = match declared.map_or(Ok(Vec::new()), |entry| declared_args(entry, call.args)) {
            Ok(args) => args,
            Err(field) => return self.deny(DecisionReason::InvalidArguments { field }),
        };
        let resource = match declared {
            Some(entry) => entry.resource.clone(),
            None => uid(&self.tool_type, call.tool),
        };
        let policies =
            only.unwrap_or_else(|| declared.map_or(&self.undeclared, |entry| &entry.policies));
        // Without a condition reading the resource, scope checks on `Tool::"<tool>"` need its
        // uid only: the entity (and its store, about a third of a decision's own cost) is
        // built only when some policy can read `resource.name` or `resource.version`.
        let built = if policies.reads_resource {
            self.request(call, declared, resource.clone(), args)
                .and_then(|request| entities(call, resource).map(|entities| (request, entities)))
        } else {
            self.request(call, declared, resource, args)
                .map(|request| (request, Entities::empty()))
        };
        let (request, entities) = match built {
            Ok(built) => built,
            Err(reason) => return self.deny(DecisionReason::InvalidRequest { reason }),
        };
        let response = self
            .authorizer
            .is_authorized(&request, &policies.set, &entities);
        let diagnostics = response.diagnostics();

        let mut failures = Vec::new();
        let mut failed_forbids = Vec::new();
        for AuthorizationError::PolicyEvaluationError(err) in diagnostics.errors() {
            let id: &str = err.policy_id().as_ref();
            let index = self.by_id.get(id).copied();
            // INVARIANT: a failure of a policy this gate cannot identify counts as a failed
            // forbid, so an inconsistency can only deny.
            let effect = index
                .and_then(|index| self.policies.get(index))
                .map(|p| p.effect);
            if effect != Some(Effect::Permit) {
                failed_forbids.push(id.to_owned());
            }
            if let Some(index) = index {
                failures.push((index, messages.then(|| err.inner().to_string())));
            }
        }
        let mut determining: Vec<String> = diagnostics
            .reason()
            .map(|id| AsRef::<str>::as_ref(id).to_owned())
            .collect();
        determining.sort_unstable();
        failed_forbids.sort_unstable();

        let (decision, rule_ids, reason) = match response.decision() {
            cedar_policy::Decision::Deny if !determining.is_empty() => {
                (AllowDeny::Deny, determining, DecisionReason::Forbidden)
            }
            // INVARIANT: a forbid that failed might have forbidden the call, so it denies
            // even when a permit is satisfied.
            _ if !failed_forbids.is_empty() => (
                AllowDeny::Deny,
                failed_forbids.clone(),
                DecisionReason::EvaluationError {
                    policy_ids: failed_forbids,
                },
            ),
            cedar_policy::Decision::Allow if self.asks_approval => {
                self.approval_or_permit(determining)
            }
            cedar_policy::Decision::Allow => {
                (AllowDeny::Allow, determining, DecisionReason::Permitted)
            }
            cedar_policy::Decision::Deny => {
                (AllowDeny::Deny, Vec::new(), DecisionReason::DefaultDeny)
            }
        };
        Outcome {
            decision: GateDecision {
                decision,
                rule_ids,
                policy_set_version: self.version,
                reason,
            },
            failures,
        }
    }

    /// A permitted call's decision when some policy of the set carries `@approval`: a deny
    /// for approval by the determining permits that ask, when any does; else the allow.
    fn approval_or_permit(
        &self,
        determining: Vec<String>,
    ) -> (AllowDeny, Vec<String>, DecisionReason) {
        let asking: Vec<(&String, &str)> = determining
            .iter()
            .filter_map(|id| {
                self.info(id)
                    .and_then(|policy| policy.approval.as_deref())
                    .map(|reason| (id, reason))
            })
            .collect();
        if asking.is_empty() {
            return (AllowDeny::Allow, determining, DecisionReason::Permitted);
        }
        let reason = asking
            .iter()
            .map(|(_, reason)| *reason)
            .collect::<Vec<_>>()
            .join("; ");
        let rule_ids = asking.into_iter().map(|(id, _)| id.clone()).collect();
        (
            AllowDeny::Deny,
            rule_ids,
            DecisionReason::ApprovalRequired { reason },
        )
    }

    /// The Cedar request: principal `Agent::"<principal>"`, action `Action::"<tool>"`,
    /// resource `Tool::"<tool>"`, context `{tenant, run, task, lane?, mcp?, args}`.
    ///
    /// The request is not validated against the schema on each call: that costs about a
    /// tenth of a decision and cannot fail, since the context is built from the same catalog
    /// the schema is generated from (declared fields only, each of its declared type).
    // INVARIANT: for a declared tool the request conforms to the generated schema; the unit
    // test `built_requests_conform_to_the_schema` checks it on arbitrary calls.
    fn request(
        &self,
        call: &GateRequest<'_>,
        declared: Option<&ToolEntry>,
        resource: EntityUid,
        args: Vec<(String, RestrictedExpression)>,
    ) -> Result<Request, String> {
        let args = RestrictedExpression::new_record(args).map_err(|err| err.to_string())?;
        let mut pairs = Vec::with_capacity(5);
        pairs.push(("tenant".to_owned(), string(call.tenant)));
        pairs.push(("run".to_owned(), string(call.run)));
        pairs.push(("task".to_owned(), string(call.task)));
        if let Some(lane) = call.lane {
            pairs.push(("lane".to_owned(), string(lane)));
        }
        if let Some(mcp) = call.mcp {
            let target = RestrictedExpression::new_record([
                ("server".to_owned(), string(mcp.server)),
                ("tool".to_owned(), string(mcp.tool)),
            ])
            .map_err(|err| err.to_string())?;
            pairs.push(("mcp".to_owned(), target));
        }
        pairs.push(("args".to_owned(), args));
        let context = Context::from_pairs(pairs).map_err(|err| err.to_string())?;
        let principal = uid(&self.agent_type, call.principal);
        let action = match declared {
            Some(entry) => entry.action.clone(),
            None => uid(&self.action_type, call.tool),
        };
        Request::new(principal, action, resource, context, None).map_err(|err| err.to_string())
    }
}

/// The one entity a call needs: the resource `Tool::"<tool>"` with `name` and `version`. The
/// principal carries no attributes, so it needs no entity (`principal == Agent::"x"` and
/// `principal in Agent::"x"` are decided from its uid alone).
fn entities(call: &GateRequest<'_>, resource: EntityUid) -> Result<Entities, String> {
    let attrs = HashMap::from([
        ("name".to_owned(), string(call.tool)),
        ("version".to_owned(), string(call.tool_version)),
    ]);
    let entity = Entity::new(resource, attrs, HashSet::new()).map_err(|err| err.to_string())?;
    Entities::from_entities([entity], None).map_err(|err| err.to_string())
}

/// The policies whose action scope can match a request: those unconstrained on action, and
/// those whose `action == …` or `action in [...]` names an action `names` accepts.
///
/// Cedar checks the scope before the conditions, and a scope check cannot fail, so leaving
/// out a policy whose scope cannot match changes neither the decision nor the determining or
/// failing policies — it only spares evaluating it on every call. Cairn's schema declares no
/// action groups, so `action in Action::"x"` matches `x` alone.
fn subset(
    policies: &[LoadedPolicy],
    names: impl Fn(&[EntityUid]) -> bool,
) -> Result<Subset, Vec<PolicyLoadError>> {
    let mut set = PolicySet::new();
    let mut reads_resource = false;
    for loaded in policies {
        let keep = match loaded.policy.action_constraint() {
            ActionConstraint::Any => true,
            ActionConstraint::Eq(action) => names(std::slice::from_ref(&action)),
            ActionConstraint::In(actions) => names(&actions),
        };
        if keep {
            reads_resource |= conditions_mention_resource(&loaded.est);
            set.add(loaded.policy.clone()).map_err(|err| {
                vec![PolicyLoadError::Internal {
                    message: format!("adding policy `{}`: {err}", loaded.info.id),
                }]
            })?;
        }
    }
    Ok(Subset {
        set,
        reads_resource,
    })
}

/// Whether a policy's conditions (in its EST) use the `resource` variable anywhere. The
/// answer errs towards "yes": any mention counts, whatever it does with it.
fn conditions_mention_resource(est: &Value) -> bool {
    fn walk(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.iter().any(|(key, item)| {
                (key == "Var" && item.as_str() == Some("resource")) || walk(item)
            }),
            Value::Array(items) => items.iter().any(walk),
            _ => false,
        }
    }
    // A policy whose EST lacks `conditions` is treated as reading the resource.
    est.get("conditions").is_none_or(walk)
}

impl fmt::Debug for PolicyGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyGate")
            .field("version", &self.version)
            .field("policies", &self.policies.len())
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

fn uid(type_name: &EntityTypeName, id: &str) -> EntityUid {
    EntityUid::from_type_name_and_id(type_name.clone(), EntityId::new(id))
}

fn string(text: &str) -> RestrictedExpression {
    RestrictedExpression::new_string(text.to_owned())
}

/// The declared fields present in `args`, each checked against its declared type; the name
/// of the first offending field (in name order) otherwise.
///
/// A `Long` is a JSON integer literal in the signed 64-bit range: `-0` (which `serde_json`
/// reads as a float) is 0, read back from its literal; `25000.0`, `2.5e4` and integers past
/// the range are refused, never rounded.
fn declared_args(
    entry: &ToolEntry,
    args: &Arguments<'_>,
) -> Result<Vec<(String, RestrictedExpression)>, String> {
    let object = match args.value() {
        Value::Null => return Ok(Vec::new()),
        Value::Object(object) => object,
        // A tool that declares nothing ignores its arguments entirely.
        _ if entry.args.is_empty() => return Ok(Vec::new()),
        _ => return Err("args".to_owned()),
    };
    let mut out = Vec::with_capacity(entry.args.len());
    for (name, ty) in &entry.args {
        let Some(value) = object.get(name) else {
            continue;
        };
        let expression = match (ty, value) {
            (ArgType::String, Value::String(text)) => string(text),
            (ArgType::Long, Value::Number(number)) => match number
                .as_i64()
                .or_else(|| args.member_literal(name).as_deref().and_then(long_literal))
            {
                Some(long) => RestrictedExpression::new_long(long),
                None => return Err(name.clone()),
            },
            (ArgType::Bool, Value::Bool(flag)) => RestrictedExpression::new_bool(*flag),
            _ => return Err(name.clone()),
        };
        out.push((name.clone(), expression));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;
    use cedar_policy::Schema;
    use proptest::prelude::*;
    use serde_json::json;
    use std::sync::LazyLock;

    fn call<'a>(tool: &'a str, lane: Option<&'a str>, args: &'a Arguments<'a>) -> GateRequest<'a> {
        GateRequest {
            mcp: None,
            tenant: "acme",
            principal: "bot",
            run: "r1",
            task: "t1",
            lane,
            tool,
            tool_version: "2",
            args,
        }
    }

    fn gate() -> PolicyGate {
        let catalog = ToolCatalog::from_json(
            "tools.json",
            r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String", "urgent": "Bool"}}}}"#,
        )
        .unwrap();
        PolicyGate::load(&[], &catalog).unwrap()
    }

    fn build(gate: &PolicyGate, call: &GateRequest<'_>) -> Result<Request, String> {
        let declared = gate.tools.get(call.tool);
        let args = declared.map_or(Ok(Vec::new()), |entry| declared_args(entry, call.args))?;
        let resource = uid(&gate.tool_type, call.tool);
        gate.request(call, declared, resource, args)
    }

    fn context(gate: &PolicyGate, call: &GateRequest<'_>) -> Value {
        let request = build(gate, call).unwrap();
        request.context().unwrap().to_json_value().unwrap()
    }

    fn arg_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            Just(json!([1])),
            Just(json!({"amount": 1})),
        ]
    }

    const MIXED: &str = r#"
        @id("all") permit(principal, action, resource) when { context.tenant != "frozen" };
        @id("reads") permit(principal, action in [Action::"payments.refund"], resource == Tool::"payments.refund");
        @id("cap") forbid(principal, action == Action::"payments.refund", resource)
            when { context.args has amount && context.args.amount * 3 > 30000 };
        @id("urgent") permit(principal, action == Action::"payments.refund", resource)
            when { context.args has urgent && context.args.urgent };
        @id("old") forbid(principal, action, resource) when { resource.version like "0.*" };
        @id("lane") forbid(principal, action, resource)
            when { context has lane && context.lane == resource.name };
        @id("bot") forbid(principal == Agent::"rogue", action, resource);
    "#;

    proptest! {
        #[test]
        fn per_tool_subsets_decide_as_the_whole_set_does(
            tool in prop_oneof![Just("payments.refund".to_owned()), Just("shell.exec".to_owned()),
                                "[a-z.]{1,12}"],
            amount in prop_oneof![any::<i64>(), -20000_i64..20000],
            urgent in any::<bool>(),
            version in prop_oneof![Just("0.9".to_owned()), Just("1.0".to_owned())],
            lane in prop::option::of(prop_oneof![Just("shell.exec".to_owned()), Just("support".to_owned())]),
            tenant in prop_oneof![Just("frozen"), Just("acme")],
            principal in prop_oneof![Just("rogue"), Just("bot")],
        ) {
            static GATE: LazyLock<PolicyGate> = LazyLock::new(|| {
                let catalog = ToolCatalog::from_json(
                    "tools.json",
                    r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "urgent": "Bool"}}, "kb.search": {}}}"#,
                )
                .unwrap();
                PolicyGate::load(&[PolicySource::new("p.cedar", MIXED)], &catalog).unwrap()
            });
            let gate = &*GATE;
            let args = json!({"amount": amount, "urgent": urgent});
            let raw = args.to_string();
            let args = Arguments::read(raw.as_bytes()).unwrap();
            let call = GateRequest {
                mcp: None,
                tenant,
                principal,
                tool_version: &version,
                ..call(&tool, lane.as_deref(), &args)
            };
            let mut fast = gate.evaluate(&call, true);
            let mut reference = gate.evaluate_in(&call, true, Some(&gate.reference));
            prop_assert_eq!(&fast.decision, &reference.decision);
            fast.failures.sort();
            reference.failures.sort();
            prop_assert_eq!(&fast.failures, &reference.failures);
        }

        #[test]
        fn built_requests_conform_to_the_schema(
            args in prop::collection::btree_map(
                prop_oneof![Just("amount".to_owned()), Just("currency".to_owned()),
                            Just("urgent".to_owned()), any::<String>()],
                arg_value(),
                0..5,
            ),
            lane in prop::option::of(any::<String>()),
            text in any::<String>(),
        ) {
            static GATE: LazyLock<(PolicyGate, Schema)> = LazyLock::new(|| {
                let gate = gate();
                let (schema, _) = Schema::from_cedarschema_str(gate.schema_text()).unwrap();
                (gate, schema)
            });
            let (gate, schema) = &*GATE;
            let args = Value::Object(args.into_iter().collect());
            let raw = args.to_string();
            let args = Arguments::read(raw.as_bytes()).unwrap();
            let call = GateRequest {
                mcp: None,
                tenant: &text,
                principal: &text,
                run: &text,
                task: &text,
                ..call("payments.refund", lane.as_deref(), &args)
            };
            // Calls refused for their arguments never reach Cedar; the rest must conform.
            if let Ok(request) = build(gate, &call) {
                let checked = Request::new(
                    request.principal().unwrap().clone(),
                    request.action().unwrap().clone(),
                    request.resource().unwrap().clone(),
                    request.context().unwrap().clone(),
                    Some(schema),
                );
                prop_assert!(checked.is_ok(), "{checked:?}");
            }
        }
    }

    #[test]
    fn only_declared_fields_with_their_declared_type_enter_the_context() {
        let gate = gate();
        let args = json!({"amount": 5, "currency": "EUR", "urgent": false, "card": "4111 1111", "nested": {"amount": 1}});
        let raw = args.to_string();
        let args = Arguments::read(raw.as_bytes()).unwrap();
        let context = context(&gate, &call("payments.refund", Some("support"), &args));
        assert_eq!(
            context,
            json!({"tenant": "acme", "run": "r1", "task": "t1", "lane": "support",
                   "args": {"amount": 5, "currency": "EUR", "urgent": false}})
        );
        assert!(!context.to_string().contains("4111"));
    }

    #[test]
    fn undeclared_tools_get_no_arguments_and_lane_is_omitted_when_absent() {
        let gate = gate();
        let args = json!({"amount": 5, "secret": "hunter2"});
        let raw = args.to_string();
        let args = Arguments::read(raw.as_bytes()).unwrap();
        let context = context(&gate, &call("shell.exec", None, &args));
        assert_eq!(
            context,
            json!({"tenant": "acme", "run": "r1", "task": "t1", "args": {}})
        );
    }
}
