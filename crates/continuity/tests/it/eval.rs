//! The E-6 evaluation over the shipped corpus (`eval/` at the repository root): every
//! scenario holds, every property has a case that must pass and a deliberately lossy case
//! that is caught, each lossy case passes once its lossy edits are removed (so the edit is
//! what the harness caught), and malformed scenarios are refused with the path of the
//! offending field.

use std::fs;
use std::path::{Path, PathBuf};

use cairn_continuity::eval::{
    EvalSummary, Expectation, Fidelity, Property, Scenario, ScenarioErrorCode, Strictness, evaluate,
};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../eval")
}

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            scenario_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn corpus() -> Vec<(PathBuf, Scenario)> {
    let mut files = Vec::new();
    scenario_files(&corpus_dir(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).unwrap();
            let scenario =
                Scenario::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, scenario)
        })
        .collect()
}

#[test]
fn the_shipped_corpus_holds_and_covers_every_property() {
    let corpus = corpus();
    assert!(corpus.len() >= 16, "the corpus is missing or nearly empty");
    let rows: Vec<_> = corpus.iter().map(|(_, s)| evaluate(s)).collect();
    for ((path, _), row) in corpus.iter().zip(&rows) {
        assert!(row.holds, "{}: {:?}", path.display(), row.problems);
        // The folder names the property.
        let folder = path.parent().unwrap().file_name().unwrap();
        assert_eq!(folder.to_str().unwrap(), row.property.as_str());
    }
    let summary = EvalSummary::of(&rows);
    assert!(summary.all_hold());
    assert_eq!(summary.properties_covered, Property::ALL.to_vec());
    assert!(summary.properties_missing.is_empty());
    assert_eq!(summary.passed + summary.caught, summary.scenarios);
}

#[test]
fn scenario_names_are_unique() {
    let mut names: Vec<String> = corpus().into_iter().map(|(_, s)| s.name).collect();
    let total = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), total);
}

/// The property's lossy cases are flagged; without their lossy edits the same scenarios pass.
fn lossy_variant_is_flagged(property: Property) {
    let caught: Vec<Scenario> = corpus()
        .into_iter()
        .map(|(_, s)| s)
        .filter(|s| s.property == property && s.expect == Expectation::Caught)
        .collect();
    assert!(!caught.is_empty(), "{property}: no lossy case");
    for scenario in caught {
        let row = evaluate(&scenario);
        assert_eq!(row.verdict, Fidelity::Lossy, "{}", scenario.name);
        assert!(row.compacted.decision < row.full.decision);
        assert!(row.holds, "{}: {:?}", scenario.name, row.problems);

        let mut lossless = scenario.clone();
        lossless.compaction.lossy_edits.clear();
        lossless.expect = Expectation::Pass;
        lossless.expect_compacted = None;
        let row = evaluate(&lossless);
        assert_eq!(
            row.verdict,
            Fidelity::Pass,
            "{} without its lossy edits: full {}, compacted {}",
            scenario.name,
            row.full.decision,
            row.compacted.decision
        );

        // Expected to pass, the lossy compaction makes the case fail.
        let mut wrongly_expected = scenario.clone();
        wrongly_expected.expect = Expectation::Pass;
        let row = evaluate(&wrongly_expected);
        assert!(!row.holds && row.verdict == Fidelity::Lossy);
    }
}

#[test]
fn negative_constraint_loss_is_flagged() {
    lossy_variant_is_flagged(Property::NegativeConstraint);
}

#[test]
fn approval_reuse_loss_is_flagged() {
    lossy_variant_is_flagged(Property::ApprovalReuse);
}

#[test]
fn version_change_loss_is_flagged() {
    lossy_variant_is_flagged(Property::VersionChange);
}

#[test]
fn unknown_side_effect_loss_is_flagged() {
    lossy_variant_is_flagged(Property::UnknownSideEffect);
}

#[test]
fn identity_loss_is_flagged() {
    lossy_variant_is_flagged(Property::Identity);
}

#[test]
fn summary_injection_loss_is_flagged() {
    lossy_variant_is_flagged(Property::SummaryInjection);
}

#[test]
fn pending_obligation_loss_is_flagged() {
    lossy_variant_is_flagged(Property::PendingObligation);
}

#[test]
fn evidence_link_loss_is_flagged() {
    lossy_variant_is_flagged(Property::EvidenceLink);
}

#[test]
fn an_undetected_lossy_case_does_not_hold() {
    let (_, scenario) = corpus()
        .into_iter()
        .find(|(_, s)| s.name == "constraint-ref-kept")
        .unwrap();
    let mut claimed = scenario;
    claimed.expect = Expectation::Caught;
    claimed.expect_compacted = None;
    let row = evaluate(&claimed);
    assert_eq!(row.verdict, Fidelity::Pass);
    assert!(!row.holds);
    assert!(row.problems[0].contains("undetected"));
}

#[test]
fn the_summary_text_is_never_obeyed() {
    // Two summaries, each bound by the envelope's digest, give the same compacted decision.
    let (_, scenario) = corpus()
        .into_iter()
        .find(|(_, s)| s.name == "injected-instruction-stays-data")
        .unwrap();
    let mut plain = scenario.clone();
    plain.compaction.lossy_edits.clear();
    let a = evaluate(&scenario);
    let b = evaluate(&plain);
    assert_eq!(a.compacted.decision, b.compacted.decision);
    assert_eq!(a.compacted.decision, Strictness::AskHuman);
}

fn error_of(text: &str) -> (ScenarioErrorCode, String) {
    let e = Scenario::from_json(text).unwrap_err();
    (e.code, e.path)
}

fn sample() -> serde_json::Value {
    let path = corpus_dir().join("negative_constraint/constraint-ref-kept.json");
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn malformed_scenarios_name_the_offending_field() {
    let mut doc = sample();
    doc["next_action"].as_object_mut().unwrap().remove("tool");
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::MissingField, "$.next_action.tool".into())
    );

    let mut doc = sample();
    doc["history"][1]["type"] = "policy_changed".into();
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::BadValue, "$.history[1].type".into())
    );

    let mut doc = sample();
    doc["compaction"]["selected_events"][1] = "ev-99".into();
    assert_eq!(
        error_of(&doc.to_string()),
        (
            ScenarioErrorCode::BadReference,
            "$.compaction.selected_events[1]".into()
        )
    );

    let mut doc = sample();
    doc["compaction"]["envelope"] = serde_json::json!({"policy_versoin": "policy-v4"});
    assert_eq!(
        error_of(&doc.to_string()),
        (
            ScenarioErrorCode::UnknownField,
            "$.compaction.envelope.policy_versoin".into()
        )
    );

    let mut doc = sample();
    doc["current"]["side_effect_status"] = "maybe".into();
    assert_eq!(
        error_of(&doc.to_string()),
        (
            ScenarioErrorCode::InvalidState,
            "$.current.side_effect_status".into()
        )
    );

    let mut doc = sample();
    doc["history"][4]["forbid"]["tool"] = 7.into();
    assert_eq!(
        error_of(&doc.to_string()),
        (
            ScenarioErrorCode::WrongType,
            "$.history[4].forbid.tool".into()
        )
    );

    let mut doc = sample();
    doc["expect"] = "maybe".into();
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::BadValue, "$.expect".into())
    );

    let mut doc = sample();
    doc["extra"] = 1.into();
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::UnknownField, "$.extra".into())
    );

    let mut doc = sample();
    doc["history"][0]["id"] = "ev-02".into();
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::BadReference, "$.history[1].id".into())
    );

    let mut doc = sample();
    doc["history"][2]["id"] = "ev\u{7}".into();
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::BadValue, "$.history[2].id".into())
    );

    let mut doc = sample();
    doc["now"] = serde_json::Value::Null;
    assert_eq!(
        error_of(&doc.to_string()),
        (ScenarioErrorCode::MissingField, "$.now".into())
    );

    assert_eq!(
        error_of("{not json"),
        (ScenarioErrorCode::InvalidJson, "$".into())
    );
}
