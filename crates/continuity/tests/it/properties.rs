//! Property tests: hostile input never panics, and no input makes a decision authorise.

use cairn_continuity::{
    ContinuityReason, ContinuityState, FindingCode, MAX_INPUT_BYTES, decide, decide_text,
    summary_sha256, validate_envelope,
};
use cairn_core::Timestamp;
use proptest::prelude::*;
use serde_json::{Value, json};

fn case_file(case: &str, file: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/cases")
            .join(case)
            .join(file),
    )
    .unwrap()
}

fn base() -> (Value, ContinuityState, String) {
    let envelope: Value = serde_json::from_str(&case_file("ok-bare", "envelope.json")).unwrap();
    let state = ContinuityState::from_json(&case_file("ok-bare", "state.json")).unwrap();
    (envelope, state, case_file("ok-bare", "summary.txt"))
}

fn now() -> Timestamp {
    "2026-07-21T12:00:00Z".parse().unwrap()
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::String),
        prop_oneof![
            Just("sha256:"),
            Just("user_delegated"),
            Just("side_effect_unknown"),
            Just("continuity-envelope/v1"),
            Just("2026-07-21T18:00:00+05:30"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{0,12}", inner), 0..8)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

use cairn_continuity::ENVELOPE_FIELDS as FIELDS;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_json_never_panics_and_never_authorises(input in arb_json()) {
        let (_, state, summary) = base();
        let _ = validate_envelope(&input);
        let wrapped = json!({ "continuity_envelope": input });
        for envelope in [&input, &wrapped] {
            let decision = decide(envelope, &state, &summary, now());
            let out = decision.to_json();
            prop_assert_eq!(&out["authorized"], &Value::Bool(false));
            prop_assert_eq!(&out["requires_reauthorization"], &Value::Bool(true));
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let (_, state, summary) = base();
        let decision = decide_text(&text, &state, &summary, now());
        prop_assert_eq!(&decision.to_json()["authorized"], &Value::Bool(false));
    }

    #[test]
    fn one_field_replaced_by_anything_never_panics(field in 0..FIELDS.len(), value in arb_json(), summary in ".{0,40}") {
        let (mut envelope, state, _) = base();
        envelope[FIELDS[field]] = value;
        let decision = decide(&envelope, &state, &summary, now());
        let out = decision.to_json();
        prop_assert_eq!(&out["authorized"], &Value::Bool(false));
        prop_assert_eq!(&out["requires_reauthorization"], &Value::Bool(true));
    }

    #[test]
    fn outer_whitespace_never_changes_the_summary_digest(
        core in "[a-zA-Z0-9][a-zA-Z0-9 .,\n]{0,60}[a-zA-Z0-9]",
        lead in prop::collection::vec(prop::sample::select(vec![' ', '\n', '\t', '\r', '\u{3000}', '\u{a0}', '\u{1f}']), 0..6),
        trail in prop::collection::vec(prop::sample::select(vec![' ', '\n', '\t', '\r', '\u{2029}', '\u{85}', '\u{1c}']), 0..6),
    ) {
        let padded: String = lead.iter().collect::<String>() + &core + &trail.iter().collect::<String>();
        prop_assert_eq!(summary_sha256(&padded), summary_sha256(&core));
    }
}

#[test]
fn the_base_case_is_validated_and_every_reason_stays_unauthorised() {
    let (envelope, state, summary) = base();
    let decision = decide(&envelope, &state, &summary, now());
    assert_eq!(decision.reason(), ContinuityReason::ContinuityValidated);
    for reason in ContinuityReason::ALL {
        let status = reason.status().as_str();
        assert_ne!(status, "authorized");
        assert!(!status.contains("authorized_by"));
    }
}

#[test]
fn oversized_input_is_refused_with_a_clear_finding() {
    let (_, state, summary) = base();
    let text = format!("\"{}\"", "a".repeat(MAX_INPUT_BYTES));
    let decision = decide_text(&text, &state, &summary, now());
    assert_eq!(decision.reason(), ContinuityReason::SchemaInvalid);
    assert_eq!(decision.findings()[0].code, FindingCode::InputTooLarge);
    assert!(decision.findings()[0].message.contains("1048576"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let (_, state, summary) = base();
    let text = "[".repeat(100_000);
    let decision = decide_text(&text, &state, &summary, now());
    assert_eq!(decision.findings()[0].code, FindingCode::InvalidJson);
}

#[test]
fn a_non_object_document_is_wrong_type_at_the_root() {
    let findings = validate_envelope(&json!([1, 2])).unwrap_err();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].code, FindingCode::WrongType);
    assert_eq!(findings[0].path, "$");
    let wrapped = validate_envelope(&json!({"continuity_envelope": "x", "extra": 1})).unwrap_err();
    let got: Vec<(&str, &str)> = wrapped
        .iter()
        .map(|f| (f.code.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("unknown_field", "$.extra"),
            ("wrong_type", "$.continuity_envelope")
        ]
    );
}
