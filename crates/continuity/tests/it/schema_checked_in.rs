//! The checked-in JSON Schema of `continuity-envelope/v1` is generated from the types; this
//! test fails when they drift apart. Regenerate with `CAIRN_UPDATE_SCHEMAS=1 cargo test -p
//! cairn-continuity --test it schema_checked_in`.

#[test]
fn the_checked_in_envelope_schema_matches_the_types() {
    cairn_test_support::assert_schema_checked_in(
        "continuity-envelope.v1.schema.json",
        &cairn_continuity::envelope_schema(),
        "cairn-continuity",
    );
}

#[test]
fn the_schema_requires_every_e1_field_and_refuses_others() {
    let schema = cairn_continuity::envelope_schema();
    let envelope = &schema["$defs"]["ContinuityEnvelope"];
    let required: Vec<&str> = envelope["required"]
        .as_array()
        .expect("required list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let e1 = [
        "schema_version",
        "envelope_id",
        "session_id",
        "source_trace_id",
        "reset_reason",
        "objective",
        "exact_constraint_refs",
        "pending_obligations",
        "tenant_id",
        "principal_id",
        "authorization_mode",
        "delegated_principal_id",
        "delegated_scope",
        "policy_version",
        "capability_name",
        "capability_version",
        "approval_id",
        "action_digest",
        "approval_expires_at",
        "idempotency_key",
        "side_effect_status",
        "checkpoint_ref",
        "sandbox_snapshot_ref",
        "budget_remaining",
        "source_event_range",
        "summary_sha256",
        "evidence_refs",
        "requires_reauthorization",
    ];
    let mut want: Vec<&str> = e1.to_vec();
    want.sort_unstable();
    let mut got = required.clone();
    got.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(
        envelope["additionalProperties"],
        serde_json::Value::Bool(false)
    );
    assert_eq!(schema["title"], "continuity-envelope/v1");
    assert_eq!(
        envelope["properties"]["requires_reauthorization"]["$ref"],
        "#/$defs/ReauthorizationRequired"
    );
    assert_eq!(schema["$defs"]["ReauthorizationRequired"]["const"], true);
}
