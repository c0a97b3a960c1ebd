//! Loading a policy set: parsing each file with Cedar, locating every policy in its file,
//! checking ids, validating against the catalog's schema, and computing the version.
//!
//! Every finding is collected (a user fixing a policy directory wants them all at once);
//! [`crate::PolicyGate::load`] reports the first, [`crate::PolicyGate::load_with_all_errors`]
//! all of them.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use cairn_core::Digest;
use cedar_policy::{
    Policy, PolicyId, PolicySet, Schema, ValidationMode, ValidationWarning, Validator,
};
use miette::Diagnostic;
use serde_json::{Value, json};

use crate::catalog::{ToolCatalog, UNDECLARED_TOOL_ACTION};
use crate::decision::{
    APPROVAL_ANNOTATION, DEFAULT_APPROVAL_REASON, Effect, PolicyInfo, PolicyWarning,
};
use crate::error::{Location, Locator, PolicyLoadError, excerpt};
use crate::source::PolicySource;

/// The name of the document the policy-set version is a digest of; bump it if the preimage's
/// shape ever changes.
const VERSION_FORMAT: &str = "cairn.policy-set/v1";

/// The longest policy id accepted, in bytes (ids are written into records as labels).
const MAX_ID_LEN: usize = 256;

/// A policy that parsed and carries a valid, unique id.
pub(crate) struct LoadedPolicy {
    pub info: PolicyInfo,
    /// The policy, re-identified with its `@id` so Cedar's answers name it.
    pub policy: Policy,
    /// Its Cedar JSON form (EST): what the version digests.
    pub est: Value,
    /// Which source it came from, and its byte offset there (to order findings).
    pub source: usize,
    pub offset: usize,
}

/// A loaded set: its policies in source order, the schema text, the version and the
/// validator's remaining warnings.
pub(crate) struct Loaded {
    pub policies: Vec<LoadedPolicy>,
    pub schema_text: String,
    pub version: Digest,
    pub warnings: Vec<PolicyWarning>,
}

/// Parses, checks and validates `sources` against `catalog`.
pub(crate) fn load(
    sources: &[PolicySource],
    catalog: &ToolCatalog,
) -> Result<Loaded, Vec<PolicyLoadError>> {
    let mut errors = Vec::new();
    let mut policies = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        parse_source(index, source, &mut policies, &mut errors);
    }
    check_duplicates(&mut policies, &mut errors);

    let schema_text = catalog.cedar_schema();
    let schema = match Schema::from_json_value(catalog.cedar_schema_json()) {
        Ok(schema) => schema,
        Err(err) => {
            errors.push(PolicyLoadError::ToolCatalog {
                file: "<generated schema>".to_owned(),
                path: String::new(),
                reason: format!("cedar refused the schema generated from the catalog: {err}"),
            });
            return Err(errors);
        }
    };
    let mut set = PolicySet::new();
    for loaded in &policies {
        if let Err(err) = set.add(loaded.policy.clone()) {
            errors.push(internal(format!(
                "adding policy `{}`: {err}",
                loaded.info.id
            )));
        }
    }
    let mut warnings = Vec::new();
    validate(
        &set,
        &schema,
        &policies,
        sources,
        &mut errors,
        &mut warnings,
    );
    if !errors.is_empty() {
        return Err(errors);
    }
    let version = version(&policies, catalog).map_err(|err| vec![err])?;
    Ok(Loaded {
        policies,
        schema_text,
        version,
        warnings,
    })
}

fn internal(message: String) -> PolicyLoadError {
    PolicyLoadError::Internal { message }
}

/// Parses one file, locates each of its policies and checks their ids.
fn parse_source(
    index: usize,
    source: &PolicySource,
    out: &mut Vec<LoadedPolicy>,
    errors: &mut Vec<PolicyLoadError>,
) {
    // INVARIANT: no text over the limits reaches Cedar, whose parser recurses.
    if let Err(err) = crate::limits::check(source) {
        errors.push(err);
        return;
    }
    let set = match PolicySet::from_str(&source.text) {
        Ok(set) => set,
        Err(parse_errors) => {
            for err in parse_errors.iter() {
                let offset = first_label_offset(err).unwrap_or(0);
                errors.push(PolicyLoadError::Parse {
                    at: Location::at_offset(&source.name, &source.text, offset),
                    message: with_help(err.to_string(), err),
                });
            }
            return;
        }
    };
    // Cedar names the statements of a file `policy0`, `policy1`, … in order, templates
    // included; each keeps its exact source text, which is found again in the file to learn
    // where it starts (the public API exposes no span for a whole policy).
    let count = set.num_of_policies() + set.num_of_templates();
    // The policies' JSON form (EST) from one parse of the whole file: `Policy::to_json`
    // parses each policy's text again on its own, which costs a lexer set-up per policy and
    // made loading 10,000 policies take most of a second.
    let ests = cedar_policy_core::parser::parse_policyset_to_ests_and_pset(&source.text)
        .map(|(ests, _)| ests)
        .ok();
    let mut cursor = 0;
    let mut locator = Locator::new(&source.name, &source.text);
    for number in 0..count {
        let generated = PolicyId::new(format!("policy{number}"));
        if let Some(policy) = set.policy(&generated) {
            let offset = locate(&source.text, policy.to_cedar().as_deref(), &mut cursor);
            let at = locator.at(offset);
            match policy_id(policy, &at)
                .and_then(|id| approval(policy, &id, &at).map(|approval| (id, approval)))
            {
                Ok((id, approval)) => match est_of(ests.as_ref(), &generated, policy) {
                    Ok(est) => out.push(LoadedPolicy {
                        policy: policy.new_id(PolicyId::new(&id)),
                        est,
                        info: PolicyInfo {
                            id,
                            at,
                            effect: effect(policy),
                            approval,
                        },
                        source: index,
                        offset,
                    }),
                    Err(err) => errors.push(internal(format!("policy `{id}` to json: {err}"))),
                },
                Err(err) => errors.push(err),
            }
        } else if let Some(template) = set.template(&generated) {
            let offset = locate(&source.text, Some(&template.to_cedar()), &mut cursor);
            errors.push(PolicyLoadError::Template {
                at: locator.at(offset),
            });
        } else {
            errors.push(internal(format!(
                "{}: cedar did not return statement {number} of {count}",
                source.name
            )));
        }
    }
}

/// Policy `id`'s EST as JSON: from the file's ESTs when they were parsed, else from the
/// policy itself.
fn est_of(
    ests: Option<&HashMap<cedar_policy_core::ast::PolicyID, cedar_policy_core::est::Policy>>,
    id: &PolicyId,
    policy: &Policy,
) -> Result<Value, String> {
    let core_id = cedar_policy_core::ast::PolicyID::from_string(id);
    match ests.and_then(|ests| ests.get(&core_id)) {
        Some(est) => serde_json::to_value(est).map_err(|err| err.to_string()),
        None => policy.to_json().map_err(|err| err.to_string()),
    }
}

/// The byte offset of `statement` in `text`, searching from `cursor` (statements come in
/// file order) and moving the cursor past it; 0 when it cannot be found.
fn locate(text: &str, statement: Option<&str>, cursor: &mut usize) -> usize {
    let Some(statement) = statement.filter(|s| !s.is_empty()) else {
        return *cursor;
    };
    let found = text
        .get(*cursor..)
        .and_then(|rest| rest.find(statement))
        .map(|position| *cursor + position)
        .or_else(|| text.find(statement));
    match found {
        Some(offset) => {
            *cursor = offset + statement.len();
            offset
        }
        None => 0,
    }
}

fn policy_id(policy: &Policy, at: &Location) -> Result<String, PolicyLoadError> {
    let Some(id) = policy.annotation("id") else {
        return Err(PolicyLoadError::MissingId { at: at.clone() });
    };
    let reason = if id.is_empty() {
        "must not be empty"
    } else if id.len() > MAX_ID_LEN {
        "must be at most 256 bytes"
    } else if id.chars().any(char::is_control) {
        "must not contain control characters"
    } else {
        return Ok(id.to_owned());
    };
    Err(PolicyLoadError::InvalidId {
        at: at.clone(),
        id: excerpt(id),
        reason,
    })
}

/// The `@approval("why")` annotation: a `permit` that asks for a person's approval of each
/// call it would admit, and the words the agent and the approver are shown (the default when
/// the annotation has no text). Only a `permit` can ask: a `forbid` is never lifted.
fn approval(policy: &Policy, id: &str, at: &Location) -> Result<Option<String>, PolicyLoadError> {
    let Some(text) = policy.annotation(APPROVAL_ANNOTATION) else {
        return Ok(None);
    };
    let reason = if policy.effect() == cedar_policy::Effect::Forbid {
        "is on a `forbid`; only a `permit` can ask for a person (a `forbid` is never lifted)"
    } else if text.len() > MAX_ID_LEN {
        "must be at most 256 bytes"
    } else if text.chars().any(char::is_control) {
        "must not contain control characters"
    } else if text.trim().is_empty() {
        return Ok(Some(DEFAULT_APPROVAL_REASON.to_owned()));
    } else {
        return Ok(Some(text.trim().to_owned()));
    };
    Err(PolicyLoadError::InvalidApproval {
        at: at.clone(),
        policy_id: id.to_owned(),
        reason,
    })
}

fn effect(policy: &Policy) -> Effect {
    match policy.effect() {
        cedar_policy::Effect::Permit => Effect::Permit,
        cedar_policy::Effect::Forbid => Effect::Forbid,
    }
}

/// Refuses every policy whose id was already used (the first one stays).
fn check_duplicates(policies: &mut Vec<LoadedPolicy>, errors: &mut Vec<PolicyLoadError>) {
    let mut seen: HashMap<String, Location> = HashMap::with_capacity(policies.len());
    policies.retain(|loaded| match seen.get(&loaded.info.id) {
        Some(first) => {
            errors.push(PolicyLoadError::DuplicateId {
                id: loaded.info.id.clone(),
                first: first.clone(),
                at: loaded.info.at.clone(),
            });
            false
        }
        None => {
            seen.insert(loaded.info.id.clone(), loaded.info.at.clone());
            true
        }
    });
}

/// Validates the set in strict mode and turns each finding into a located error (or, for
/// the harmless warnings, a located warning).
///
/// Besides Cedar's errors, four of its warnings refuse a policy, because each means the text
/// does not do what it appears to do: a policy that can never apply (an impossible condition,
/// such as `context.args has x` for an undeclared `x`, which would make a forbid silently
/// inert, or an action that cannot apply to the scope) and bidirectional control characters
/// (which can make the text read differently from how it evaluates). Mixed-script and
/// confusable identifiers stay warnings.
fn validate(
    set: &PolicySet,
    schema: &Schema,
    policies: &[LoadedPolicy],
    sources: &[PolicySource],
    errors: &mut Vec<PolicyLoadError>,
    warnings: &mut Vec<PolicyWarning>,
) {
    let by_id: HashMap<&str, &LoadedPolicy> = policies
        .iter()
        .map(|loaded| (loaded.info.id.as_str(), loaded))
        .collect();
    let result = Validator::new(schema.clone()).validate(set, ValidationMode::Strict);
    let mut found: Vec<Finding> = Vec::new();
    for err in result.validation_errors() {
        found.push(finding(err, err.policy_id(), &by_id, sources, true));
    }
    // A policy with type errors is often also "impossible"; that warning is a consequence.
    let with_errors: HashSet<String> = found.iter().map(|f| f.policy_id.clone()).collect();
    for warning in result.validation_warnings() {
        let consequence = matches!(
            warning,
            ValidationWarning::ImpossiblePolicy(_) | ValidationWarning::InvalidActionApplication(_)
        );
        if consequence && with_errors.contains(AsRef::<str>::as_ref(warning.policy_id())) {
            continue;
        }
        let refuse = matches!(
            warning,
            ValidationWarning::ImpossiblePolicy(_)
                | ValidationWarning::InvalidActionApplication(_)
                | ValidationWarning::BidiCharsInString(_)
                | ValidationWarning::BidiCharsInIdentifier(_)
        );
        found.push(finding(
            warning,
            warning.policy_id(),
            &by_id,
            sources,
            refuse,
        ));
    }
    // Cedar's order follows its internal maps: sort so the report is stable, mentioning the
    // reserved action last, and keep one finding per place and hint (strict validation
    // repeats a finding once per action an action-unconstrained policy applies to).
    found.sort_by(|a, b| {
        (a.source, a.offset, a.reserved, &a.message)
            .cmp(&(b.source, b.offset, b.reserved, &b.message))
    });
    let mut seen = HashSet::new();
    for finding in found {
        if !seen.insert((
            finding.policy_id.clone(),
            finding.offset,
            finding.dedup_key.clone(),
        )) {
            continue;
        }
        match (finding.refuse, finding.at) {
            (_, None) => errors.push(internal(format!(
                "validation named unknown policy `{}`",
                finding.policy_id
            ))),
            (true, Some(at)) => errors.push(PolicyLoadError::Invalid {
                at,
                policy_id: finding.policy_id,
                message: finding.message,
            }),
            (false, Some(at)) => warnings.push(PolicyWarning {
                at,
                policy_id: finding.policy_id,
                message: finding.message,
            }),
        }
    }
}

/// One validation error or warning, located.
struct Finding {
    source: usize,
    offset: usize,
    /// Whether the message is about the reserved action (shown only if nothing else is).
    reserved: bool,
    message: String,
    /// The hint when Cedar gives one, else the message: findings that differ only in the
    /// action they were found for share it.
    dedup_key: String,
    policy_id: String,
    /// `None` when Cedar named a policy this crate did not load (a bug).
    at: Option<Location>,
    refuse: bool,
}

fn finding(
    diagnostic: &dyn Diagnostic,
    policy_id: &PolicyId,
    by_id: &HashMap<&str, &LoadedPolicy>,
    sources: &[PolicySource],
    refuse: bool,
) -> Finding {
    let id: &str = policy_id.as_ref();
    let text = diagnostic.to_string();
    // Cedar starts its messages with "for policy `<id>`, "; the location already says it.
    let prefix = format!("for policy `{id}`, ");
    let text = text
        .strip_prefix(&prefix)
        .map_or_else(|| text.clone(), str::to_owned);
    let help = diagnostic.help().map(|help| help.to_string());
    let reserved = text.contains(&format!("Action::\"{UNDECLARED_TOOL_ACTION}\""));
    let message = match &help {
        Some(help) => format!("{text}; {help}"),
        None => text,
    };
    let dedup_key = help.unwrap_or_else(|| message.clone());
    let Some(loaded) = by_id.get(id) else {
        return Finding {
            source: usize::MAX,
            offset: 0,
            reserved,
            message,
            dedup_key,
            policy_id: id.to_owned(),
            at: None,
            refuse: true,
        };
    };
    let (offset, at) = match (first_label_offset(diagnostic), sources.get(loaded.source)) {
        (Some(offset), Some(source)) => (
            offset,
            Location::at_offset(&source.name, &source.text, offset),
        ),
        _ => (loaded.offset, loaded.info.at.clone()),
    };
    Finding {
        source: loaded.source,
        offset,
        reserved,
        message,
        dedup_key,
        policy_id: id.to_owned(),
        at: Some(at),
        refuse,
    }
}

fn first_label_offset(diagnostic: &dyn Diagnostic) -> Option<usize> {
    diagnostic
        .labels()
        .and_then(|mut labels| labels.next())
        .map(|label| label.offset())
}

fn with_help(message: String, diagnostic: &dyn Diagnostic) -> String {
    match diagnostic.help() {
        Some(help) => format!("{message}; {help}"),
        None => message,
    }
}

/// The policy-set version: SHA-256 over the RFC 8785 form of
/// `{"catalog": …, "format": "cairn.policy-set/v1", "policies": [{"id", "policy"}…]}`, the
/// policies in id order, each in Cedar's JSON form (EST) — which keeps effect, scope,
/// conditions and annotations but no whitespace, comments or positions.
fn version(policies: &[LoadedPolicy], catalog: &ToolCatalog) -> Result<Digest, PolicyLoadError> {
    let mut entries: Vec<(&str, &Value)> = policies
        .iter()
        .map(|loaded| (loaded.info.id.as_str(), &loaded.est))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let policies: Vec<Value> = entries
        .into_iter()
        .map(|(id, est)| json!({"id": id, "policy": est}))
        .collect();
    let catalog =
        serde_json::to_value(catalog).map_err(|err| internal(format!("catalog to json: {err}")))?;
    let document = json!({"catalog": catalog, "format": VERSION_FORMAT, "policies": policies});
    cairn_core::canonical::jcs_value(&document)
        .map(|bytes| Digest::of(&bytes))
        .map_err(|err| internal(format!("canonicalising the policy set: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_repeated_statements_in_order() {
        let text = "a;\na;\na;";
        let mut cursor = 0;
        assert_eq!(locate(text, Some("a;"), &mut cursor), 0);
        assert_eq!(locate(text, Some("a;"), &mut cursor), 3);
        assert_eq!(locate(text, Some("a;"), &mut cursor), 6);
        assert_eq!(locate(text, Some("zz"), &mut cursor), 0);
    }
}
