//! The checked-in JSON Schema of `cairn.intent/v1` is generated from the types; this test
//! fails when they drift apart. Regenerate with `CAIRN_UPDATE_SCHEMAS=1 cargo test -p
//! cairn-ledger --test schema_checked_in`.

#![allow(clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::PathBuf;

fn checked_in() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/cairn.intent.v1.schema.json")
}

#[test]
fn the_checked_in_intent_schema_matches_the_types() {
    let generated = serde_json::to_string_pretty(&cairn_ledger::record::intent_record_schema())
        .expect("schema serialises")
        + "\n";
    let path = checked_in();
    if std::env::var_os("CAIRN_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let on_disk = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        on_disk == generated,
        "{} is stale: regenerate it with CAIRN_UPDATE_SCHEMAS=1 cargo test -p cairn-ledger --test schema_checked_in",
        path.display()
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
