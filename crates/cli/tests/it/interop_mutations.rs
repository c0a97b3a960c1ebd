//! Issue 17, acceptance 2: structure-aware mutations of the published VCE 0.1 and RLC 0.1
//! documents — members deleted, renamed, added or given other values (of the same member
//! elsewhere, of the values the schema allows, of another type), array items dropped,
//! repeated or swapped, restore results edited — most re-digested so they reach the semantic
//! and restore stages, each decided by the library, asserting the decision rules of SPEC
//! Appendix A that hold whatever the mutation:
//!
//! 1. the decision is total and its report well formed: no finding exactly when the document
//!    passes, BLOCKED exactly when a finding blocks;
//! 2. the first stage that fails decides: every finding of a report comes from one stage;
//! 3. a digested document changed without a new digest fails at the digest stage (unless its
//!    schema fails first);
//! 4. JSON objects are unordered: the same document with every object's members reversed gets
//!    the same decision and the same findings;
//! 5. the restore stage fails closed: a document that reached it is BLOCKED without restore
//!    results, and BLOCKED when a required check's result is `failed`.
//!
//! The mutations are drawn from a fixed seed (`CAIRN_MUTATION_SEED` picks another), so a
//! failure names a reproducible mutation. The differential run against the references
//! themselves is `tests/interop/differential.py` (see CONTRIBUTING).

use std::collections::BTreeSet;
use std::path::Path;

use cairn_interop::rlc::{self, RlcDecision, RlcValidator, codes as rlc_codes};
use cairn_interop::vce::{VceDecision, VceValidator, codes as vce_codes};
use serde_json::{Map, Value, json};

/// Mutations per format.
const MUTATIONS: usize = 1200;

/// A small deterministic generator (xorshift64*), so the test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap()
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn seed() -> u64 {
    std::env::var("CAIRN_MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(17)
        | 1
}

fn case_file(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One step into a document.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every position in `value` (the path to it), root excluded.
fn positions(value: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                prefix.push(Step::Key(key.clone()));
                out.push(prefix.clone());
                positions(item, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                prefix.push(Step::Index(index));
                out.push(prefix.clone());
                positions(item, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at<'v>(value: &'v mut Value, path: &[Step]) -> &'v mut Value {
    path.iter().fold(value, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// Every value the member `name` has anywhere in `value`.
fn values_named(value: &Value, name: &str, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if key == name {
                    out.push(item.clone());
                }
                values_named(item, name, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| values_named(item, name, out)),
        _ => {}
    }
}

/// Values the published schemas allow for members that decide rules.
fn allowed(name: &str) -> &'static [&'static str] {
    match name {
        "authority_class" => &["instruction", "constraint", "observation", "evidence"],
        "source_type" => &[
            "user_message",
            "project_policy",
            "memory",
            "tool_result",
            "file",
        ],
        "event_type" => &[
            "user_instruction",
            "agent_intent",
            "tool_call",
            "artifact_modified",
        ],
        "status" => &[
            "pending", "running", "blocked", "failed", "passed", "active", "complete",
        ],
        "method" => &["digest", "receipt", "existence"],
        _ => &[],
    }
}

/// Applies one structure-aware mutation to `doc` in place.
fn mutate(rng: &mut Rng, doc: &mut Value) {
    let mut all = Vec::new();
    positions(doc, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    let path = rng.pick(&all).clone();
    let (parent_path, last) = path.split_at(path.len() - 1);
    let name = match &last[0] {
        Step::Key(k) => Some(k.clone()),
        Step::Index(_) => None,
    };
    let mut same = Vec::new();
    if let Some(name) = &name {
        values_named(doc, name, &mut same);
    }
    let target = match &last[0] {
        Step::Key(k) => k.clone(),
        Step::Index(_) => String::new(),
    };
    match rng.below(9) {
        0 => match at(doc, parent_path) {
            Value::Object(map) => {
                map.remove(&target);
            }
            Value::Array(items) if !items.is_empty() => {
                let i = rng.below(items.len());
                items.remove(i);
            }
            _ => {}
        },
        1 | 2 if !same.is_empty() => *at(doc, &path) = rng.pick(&same).clone(),
        3 | 4 if name.as_deref().is_some_and(|n| !allowed(n).is_empty()) => {
            let options = allowed(name.as_deref().unwrap_or_default());
            *at(doc, &path) = json!(rng.pick(options));
        }
        5 => {
            let other = [
                json!(null),
                json!(true),
                json!(0),
                json!(""),
                json!([]),
                json!({}),
            ];
            *at(doc, &path) = rng.pick(&other).clone();
        }
        6 => {
            if let Value::Array(items) = at(doc, &path)
                && !items.is_empty()
            {
                let copy = rng.pick(items).clone();
                items.push(copy);
            } else if let Value::Object(map) = at(doc, parent_path) {
                map.insert(format!("{target}_extra"), json!("x"));
            }
        }
        7 => match at(doc, parent_path) {
            Value::Array(items) if items.len() > 1 => {
                let (i, j) = (rng.below(items.len()), rng.below(items.len()));
                items.swap(i, j);
            }
            Value::Object(map) => {
                if let Some(value) = map.remove(&target) {
                    map.insert(format!("{target}X"), value);
                }
            }
            _ => {}
        },
        _ => {
            if let Value::String(text) = at(doc, &path) {
                text.push('\n');
            }
        }
    }
}

/// `value` with every object's members in reverse order (a no-op where maps are sorted,
/// which is what the property must survive).
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map.iter().rev() {
                out.insert(key.clone(), reversed(item));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

fn vce_resign(envelope: &mut Value) {
    let Some(map) = envelope.as_object() else {
        return;
    };
    let Ok(bytes) = cairn_interop::sort_keys::sort_keys_utf8_v1_without(map, "envelope_digest")
    else {
        return;
    };
    let hex = cairn_core::Digest::of(&bytes).hex();
    if let Some(Value::Object(meta)) = envelope.get_mut("envelope_digest") {
        meta.insert("value".to_owned(), json!(hex));
    }
}

fn rlc_resign(extension: &mut Value) {
    if let Some(Value::Array(lanes)) = extension.get_mut("responsibility_lanes") {
        for lane in lanes.iter_mut() {
            if let Ok(digest) = rlc::lane_digest(lane) {
                lane["lane_digest"] = json!(digest);
            }
        }
    }
    if let Ok(digest) = rlc::extension_digest(extension)
        && let Some(Value::Object(meta)) = extension.get_mut("extension_digest")
    {
        meta.insert("value".to_owned(), json!(digest));
    }
}

/// The stage a code belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Schema,
    Digest,
    Semantic,
    Restore,
}

fn vce_stage(code: &str) -> Stage {
    match code {
        "schema_invalid" => Stage::Schema,
        c if c.starts_with("envelope_digest_") => Stage::Digest,
        c if c.starts_with("restore_")
            && c != "restore_not_fail_closed"
            && c != "restore_requirements_invalid" =>
        {
            Stage::Restore
        }
        "required_read_incomplete"
        | "duplicate_check_result"
        | "check_result_missing"
        | "check_result_mismatch"
        | "check_failed"
        | "digest_mismatch"
        | "receipt_mismatch"
        | "existence_check_on_execution_artifact"
        | "check_method_unknown"
        | "check_pending"
        | "verification_pending"
        | "next_action_blocked"
        | "next_action_invalid" => Stage::Restore,
        _ => Stage::Semantic,
    }
}

fn rlc_stage(code: &str) -> Stage {
    match code {
        "schema_invalid" => Stage::Schema,
        c if c.starts_with("extension_digest_") => Stage::Digest,
        "restore_results_missing"
        | "restore_results_invalid"
        | "restore_extension_mismatch"
        | "duplicate_result_check"
        | "lane_check_missing"
        | "lane_check_wrong_lane"
        | "lane_check_pending"
        | "lane_check_failed"
        | "lane_check_conflict"
        | "conflict_refs_present"
        | "lane_digest_stale"
        | "source_refs_unchecked" => Stage::Restore,
        _ => Stage::Semantic,
    }
}

/// A report's decision and codes, format-neutral.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    decision: &'static str,
    codes: Vec<&'static str>,
}

fn check_report(what: &str, seen: &Seen, passed: &str, blocks: impl Fn(&str) -> bool) {
    assert_eq!(
        seen.decision == passed,
        seen.codes.is_empty(),
        "{what}: no finding exactly when {passed}: {seen:?}"
    );
    if !seen.codes.is_empty() {
        assert_eq!(
            seen.decision == "BLOCKED",
            seen.codes.iter().any(|c| blocks(c)),
            "{what}: BLOCKED exactly when a finding blocks: {seen:?}"
        );
    }
}

fn one_stage(what: &str, seen: &Seen, stage: fn(&str) -> Stage) -> Option<Stage> {
    let stages: BTreeSet<Stage> = seen.codes.iter().map(|c| stage(c)).collect();
    assert!(
        stages.len() <= 1,
        "{what}: findings of several stages: {seen:?}"
    );
    stages.into_iter().next()
}

/// Rule 5 on a document that reached the restore stage: BLOCKED without restore results, and
/// BLOCKED once the first result row of `rows` says `failed`.
fn fails_closed(
    what: &str,
    restore: &mut Value,
    rows: &str,
    decide: impl Fn(Option<&Value>) -> Seen,
) {
    let without = decide(None);
    assert_eq!(
        without.decision, "BLOCKED",
        "{what}: without restore results"
    );
    if let Some(Value::Array(rows)) = restore.get_mut(rows)
        && let Some(row) = rows.first_mut()
        && row.is_object()
    {
        row["status"] = json!("failed");
        let failed = decide(Some(restore));
        assert_eq!(
            failed.decision, "BLOCKED",
            "{what}: a failed check: {failed:?}"
        );
    }
}

#[test]
fn vce_decisions_keep_the_rules_of_appendix_a_under_mutation() {
    let validator = VceValidator::new().unwrap();
    let dir = "interop/tests/vce_cases/ref-published-examples-are-schema-valid";
    let envelope0 = case_file(&format!("{dir}/envelope.json"));
    let restore0 = case_file(&format!("{dir}/restore.json"));
    let decide = |envelope: &Value, restore: Option<&Value>| {
        let report = validator.check(envelope, restore);
        Seen {
            decision: report.decision.as_str(),
            codes: report.findings.iter().map(|f| f.code).collect(),
        }
    };
    let blocks = |code: &str| !vce_codes::REVIEW.contains(&code);
    let mut rng = Rng(seed());
    let mut reached = [0_usize; 4];
    for n in 0..MUTATIONS {
        let (mut envelope, mut restore) = (envelope0.clone(), restore0.clone());
        if rng.chance(30) {
            envelope["pending_verification"] = json!([]);
            envelope["next_action"]["blocked_by"] = json!([]);
            vce_resign(&mut envelope);
        }
        let on_envelope = rng.chance(75);
        for _ in 0..=rng.below(2) {
            mutate(
                &mut rng,
                if on_envelope {
                    &mut envelope
                } else {
                    &mut restore
                },
            );
        }
        let resigned = on_envelope && rng.chance(80);
        if resigned {
            vce_resign(&mut envelope);
        }
        let what = format!("vce mutation {n} (seed {})", seed());
        let seen = decide(&envelope, Some(&restore));
        check_report(&what, &seen, VceDecision::Resumable.as_str(), blocks);
        let stage = one_stage(&what, &seen, vce_stage);
        reached[stage.map_or(3, |s| s as usize)] += 1;
        // 3. a changed envelope keeps its old digest: the digest stage decides.
        if on_envelope && !resigned && envelope != envelope0 && stage != Some(Stage::Schema) {
            let mut fresh = envelope.clone();
            vce_resign(&mut fresh);
            if fresh != envelope {
                assert_eq!(stage, Some(Stage::Digest), "{what}: {seen:?}");
            }
        }
        // 4. member order does not count.
        let mirrored = decide(&reversed(&envelope), Some(&reversed(&restore)));
        assert_eq!(mirrored, seen, "{what}: reversed member order");
        // 5. the restore gate fails closed.
        if matches!(stage, None | Some(Stage::Restore)) {
            fails_closed(&what, &mut restore, "evidence_checks", |restore| {
                decide(&envelope, restore)
            });
        }
    }
    // The mutations reach every stage, the restore gate most of all.
    assert!(
        reached.iter().all(|&n| n > 0),
        "stages reached: {reached:?}"
    );
}

#[test]
fn rlc_decisions_keep_the_rules_of_appendix_a_under_mutation() {
    let validator = RlcValidator::new().unwrap();
    let fixture = case_file(
        "interop/tests/rlc_cases/suite-03-accepted-fixture-passes-lane-restore/fixture.json",
    );
    let vce0 =
        case_file("interop/tests/vce_cases/ref-published-examples-are-schema-valid/envelope.json");
    let decide = |extension: &Value, restore: Option<&Value>, vce: Option<&Value>| {
        let report = validator.check(extension, restore, vce);
        Seen {
            decision: report.decision.as_str(),
            codes: report.findings.iter().map(|f| f.code).collect(),
        }
    };
    let blocks = |code: &str| !rlc_codes::is_review(code);
    let mut rng = Rng(seed());
    let mut reached = [0_usize; 4];
    for n in 0..MUTATIONS {
        let mut extension = fixture["extension"].clone();
        let mut restore = fixture["restore_results"].clone();
        let mut vce = rng.chance(50).then(|| vce0.clone());
        let target = rng.below(if vce.is_some() { 5 } else { 4 });
        for _ in 0..=rng.below(2) {
            match target {
                0..=2 => mutate(&mut rng, &mut extension),
                3 => mutate(&mut rng, &mut restore),
                _ => mutate(&mut rng, vce.as_mut().unwrap()),
            }
        }
        let resigned = target <= 2 && rng.chance(80);
        if resigned {
            rlc_resign(&mut extension);
        }
        let what = format!("rlc mutation {n} (seed {})", seed());
        let seen = decide(&extension, Some(&restore), vce.as_ref());
        check_report(&what, &seen, RlcDecision::Passed.as_str(), blocks);
        let stage = one_stage(&what, &seen, rlc_stage);
        reached[stage.map_or(3, |s| s as usize)] += 1;
        if target <= 2 && !resigned && stage != Some(Stage::Schema) {
            let mut fresh = extension.clone();
            rlc_resign(&mut fresh);
            if fresh != extension {
                assert!(
                    matches!(stage, Some(Stage::Digest | Stage::Semantic)),
                    "{what}: an extension changed without new digests: {seen:?}"
                );
                assert!(
                    stage == Some(Stage::Digest) || seen.codes.contains(&"lane_digest_mismatch"),
                    "{what}: a stale digest is reported: {seen:?}"
                );
            }
        }
        let mirrored = decide(
            &reversed(&extension),
            Some(&reversed(&restore)),
            vce.as_ref().map(reversed).as_ref(),
        );
        assert_eq!(mirrored, seen, "{what}: reversed member order");
        if matches!(stage, None | Some(Stage::Restore)) {
            fails_closed(&what, &mut restore, "lane_checks", |restore| {
                decide(&extension, restore, vce.as_ref())
            });
        }
    }
    assert!(
        reached.iter().all(|&n| n > 0),
        "stages reached: {reached:?}"
    );
}
