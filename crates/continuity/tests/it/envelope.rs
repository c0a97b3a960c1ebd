//! The envelope's round trip and output form: canonical status names, UTC times, the proof
//! type built only by validation, and the state document's own findings.

use cairn_continuity::{
    ContinuityState, FindingCode, SideEffectStatus, ValidatedEnvelope, parse_envelope,
    validate_envelope,
};
use cairn_core::ErrorCode;
use serde_json::{Value, json};

fn envelope_text(case: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/cases")
            .join(case)
            .join("envelope.json"),
    )
    .unwrap()
}

#[test]
fn wrapped_and_bare_validate_to_the_same_envelope() {
    let wrapped = parse_envelope(&envelope_text("ok-wrapped")).unwrap();
    let bare = parse_envelope(&envelope_text("ok-bare")).unwrap();
    assert_eq!(wrapped, bare);
}

#[test]
fn output_uses_canonical_names_and_utc() {
    let mut value: Value = serde_json::from_str(&envelope_text("ok-bare")).unwrap();
    value["side_effect_status"] = json!("not_started");
    value["approval_expires_at"] = json!("2026-07-21T23:30:00+05:30");
    let envelope = validate_envelope(&value).unwrap();
    assert_eq!(
        envelope.envelope().side_effect_status,
        SideEffectStatus::NotExecuted
    );
    let out = envelope.to_json();
    assert_eq!(out["side_effect_status"], "not_executed");
    assert_eq!(out["approval_expires_at"], "2026-07-21T18:00:00Z");
    assert_eq!(out["requires_reauthorization"], true);
    // The output form validates to the same envelope.
    assert_eq!(validate_envelope(&out).unwrap(), envelope);
    // And an envelope built in code goes through the same rules.
    let rebuilt = ValidatedEnvelope::new(envelope.clone().into_envelope()).unwrap();
    assert_eq!(rebuilt, envelope);
}

#[test]
fn code_built_envelopes_are_validated_too() {
    let mut envelope = parse_envelope(&envelope_text("ok-bare"))
        .unwrap()
        .into_envelope();
    envelope.delegated_scope = None;
    envelope.tenant_id = "tenant-acme".parse().unwrap();
    let findings = ValidatedEnvelope::new(envelope).unwrap_err();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].code, FindingCode::DelegationIncomplete);
    assert_eq!(findings[0].path, "$.delegated_scope");
    assert!(
        findings[0]
            .message
            .starts_with("`$.delegated_scope` is required")
    );
}

#[test]
fn an_effect_that_may_have_happened_needs_its_key() {
    let mut value: Value = serde_json::from_str(&envelope_text("ok-bare")).unwrap();
    value["side_effect_status"] = json!("side_effect_unknown");
    value["idempotency_key"] = Value::Null;
    let findings = validate_envelope(&value).unwrap_err();
    assert_eq!(findings[0].code, FindingCode::IdempotencyKeyRequired);
}

#[test]
fn errors_carry_stable_codes() {
    let err = parse_envelope("{").unwrap_err();
    assert_eq!(err.code(), "invalid_continuity_envelope");
    assert_eq!(err.findings()[0].code, FindingCode::InvalidJson);
    let err = ContinuityState::from_json("{}").unwrap_err();
    assert_eq!(err.code(), "invalid_continuity_state");
    assert!(
        err.findings()
            .iter()
            .all(|f| f.code == FindingCode::MissingField)
    );
    assert_eq!(err.findings().len(), 13);
    assert!(err.to_string().starts_with(
        "invalid continuity state: missing_field: `$.schema_version` is missing (and 12 more)"
    ));
}

#[test]
fn state_findings_name_nested_paths() {
    let state = json!({
        "schema_version": "continuity-state/v1",
        "tenant_id": "tenant acme",
        "principal_id": "user-42",
        "authorization_mode": "human_approved",
        "delegated_principal_id": null,
        "delegated_scope": null,
        "policy_version": "policy-v4",
        "capability_name": "create_ticket",
        "capability_version": "v3",
        "approval": {"id": "apr-1", "action_digest": "sha256:x", "status": "maybe", "expires_at": "tomorrow", "note": 1},
        "idempotency_key": null,
        "side_effect_status": "not_started",
        "checkpoint_ref": "cp-1"
    });
    let findings = ContinuityState::from_value(&state).unwrap_err();
    let got: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| (f.code.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("bad_identifier", "$.tenant_id"),
            ("bad_digest", "$.approval.action_digest"),
            ("bad_approval_status", "$.approval.status"),
            ("bad_timestamp", "$.approval.expires_at"),
            ("unknown_field", "$.approval.note"),
        ]
    );
}

/// Issue 17 item 7: the reference's flat state is read and mapped once; its own vocabulary
/// of approval statuses only, its four approval fields set together or all unused, and the
/// findings name the flat paths a user of the reference wrote.
#[test]
fn the_references_flat_state_is_read_with_findings_on_its_own_paths() {
    let flat = |approval_status: &str, expires: &str| {
        json!({
            "tenant_id": "tenant-acme",
            "principal_id": "user-42",
            "authorization_mode": "platform_owned",
            "delegated_principal_id": "",
            "delegated_scope": "",
            "policy_version": "policy-v4",
            "capability_name": "create_ticket",
            "capability_version": "v3",
            "approval_id": "apr-1",
            "action_digest": format!("sha256:{}", "ab".repeat(32)),
            "approval_status": approval_status,
            "approval_expires_at": expires,
            "idempotency_key": "",
            "side_effect_status": "not_executed",
            "checkpoint_ref": "cp-1"
        })
    };
    let state = ContinuityState::from_value(&flat("rejected", "2026-07-21T18:00:00Z")).unwrap();
    let approval = state.approval.unwrap();
    assert_eq!(approval.status.as_str(), "denied");
    assert_eq!(state.delegated_scope, None);
    assert_eq!(state.idempotency_key, None);
    let approved = ContinuityState::from_value(&flat("approved", "2026-07-21T18:00:00Z")).unwrap();
    assert_eq!(approved.approval.unwrap().status.as_str(), "active");

    let codes = |value: &serde_json::Value| -> Vec<(String, String)> {
        ContinuityState::from_value(value)
            .unwrap_err()
            .iter()
            .map(|f| (f.code.as_str().to_owned(), f.path.clone()))
            .collect()
    };
    assert_eq!(
        codes(&flat("consumed", "2026-07-21T18:00:00Z")),
        [(
            "bad_approval_status".to_owned(),
            "$.approval_status".to_owned()
        )]
    );
    assert_eq!(
        codes(&flat("approved", "")),
        [(
            "approval_incomplete".to_owned(),
            "$.approval_expires_at".to_owned()
        )]
    );
    assert_eq!(
        codes(&flat("approved", "2026-07-21T18:00:00+24:00")),
        [(
            "bad_timestamp".to_owned(),
            "$.approval_expires_at".to_owned()
        )]
    );
    let mut delegated = flat("approved", "2026-07-21T18:00:00Z");
    delegated["authorization_mode"] = json!("user_delegated");
    assert_eq!(
        codes(&delegated),
        [
            (
                "delegation_incomplete".to_owned(),
                "$.delegated_principal_id".to_owned()
            ),
            (
                "delegation_incomplete".to_owned(),
                "$.delegated_scope".to_owned()
            ),
        ]
    );
    let mut nested = flat("approved", "2026-07-21T18:00:00Z");
    nested["approval"] = json!(null);
    assert_eq!(
        codes(&nested),
        [("unknown_field".to_owned(), "$.approval".to_owned())]
    );
}
