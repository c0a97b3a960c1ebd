//! The checked-in JSON Schema of `cairn.intent/v1` is generated from the types; this test
//! fails when they drift apart. Regenerate with `CAIRN_UPDATE_SCHEMAS=1 cargo test -p
//! cairn-ledger --test it schema_checked_in`.

#[test]
fn the_checked_in_intent_schema_matches_the_types() {
    cairn_test_support::assert_schema_checked_in(
        "cairn.intent.v1.schema.json",
        &cairn_ledger::record::intent_record_schema(),
        "cairn-ledger",
    );
}

#[test]
fn the_schema_describes_every_record_field() {
    let schema = cairn_ledger::record::intent_record_schema();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for field in [
        "schema",
        "canonicalization",
        "tenant_id",
        "run_id",
        "task_id",
        "step_index",
        "kind",
        "recorded_at",
        "prev_digest",
        "digest",
    ] {
        assert!(
            required.contains(&field),
            "`{field}` is not required by the schema"
        );
    }
    assert_eq!(
        schema["additionalProperties"],
        serde_json::Value::Bool(false)
    );
    assert_eq!(schema["title"], "cairn.intent/v1");
}

/// Records of every kind — with nulls where a field does not apply — validate against the
/// published schema, and broken ones do not.
#[test]
fn real_records_validate_against_the_published_schema() {
    use cairn_core::Digest;
    use cairn_ledger::record::{
        Admission, AllowDeny, ArgsRef, BoundaryEvent, DraftEvent, IntentRecord, Label, RecordDraft,
        Termination, TerminationReason, ToolRef,
    };
    let schema = cairn_ledger::record::intent_record_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let draft = |event| RecordDraft {
        tenant_id: "acme".parse().expect("tenant"),
        run_id: "run-1".parse().expect("run"),
        task_id: "task-1".parse().expect("task"),
        event,
        lane_id: None,
        observation_digest: None,
        recorded_at: "2026-11-30T06:00:00Z".parse().expect("time"),
    };
    let label = |s: &str| Label::new(s).expect("label");
    let step = IntentRecord::seal(
        draft(DraftEvent::Step {
            tool: ToolRef {
                name: label("t"),
                version: label("1"),
            },
            args: ArgsRef {
                digest: Digest::of(b"{}"),
                size: 2,
            },
            admission: Admission {
                decision: AllowDeny::Deny,
                policy_set_version: Digest::of(b"p"),
                rule_ids: Vec::new(),
            },
            agent: None,
        }),
        0,
        None,
    )
    .expect("seal");
    let boundary = IntentRecord::seal(
        draft(DraftEvent::Boundary(BoundaryEvent::new(label(
            "context_compaction",
        )))),
        1,
        Some(step.digest),
    )
    .expect("seal");
    let terminal = IntentRecord::seal(
        draft(DraftEvent::Terminal(Termination {
            detail: None,
            reason: TerminationReason::Completed,
        })),
        2,
        Some(boundary.digest),
    )
    .expect("seal");
    for record in [&step, &boundary, &terminal] {
        let value = serde_json::to_value(record).expect("json");
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{} does not validate: {errors:?}",
            record.kind
        );
    }
    let mut extra = serde_json::to_value(&step).expect("json");
    extra["authorized"] = serde_json::Value::Bool(true);
    assert!(
        !validator.is_valid(&extra),
        "unknown fields must be refused"
    );
    let mut missing = serde_json::to_value(&step).expect("json");
    missing.as_object_mut().expect("object").remove("lane_id");
    assert!(
        !validator.is_valid(&missing),
        "every field is always present"
    );
    let mut bad = serde_json::to_value(&step).expect("json");
    bad["digest"] = serde_json::Value::String("sha256:xyz".into());
    assert!(
        !validator.is_valid(&bad),
        "a malformed digest must be refused"
    );
}
