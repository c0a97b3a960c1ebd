//! The published JSON Schema of `continuity-envelope/v1`, generated from the types and
//! completed with the cross-field rules the types cannot say (checked in as
//! `schemas/continuity-envelope.v1.schema.json`).

use serde_json::{Value, json};

use crate::envelope::ContinuityEnvelope;

/// The JSON Schema (draft 2020-12) of `continuity-envelope/v1`: a bare envelope or
/// `{"continuity_envelope": {...}}`, with every object's keys sorted so the text does not
/// depend on `serde_json`'s `preserve_order` feature.
#[must_use]
pub fn envelope_schema() -> Value {
    let generated = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<ContinuityEnvelope>();
    let Ok(Value::Object(mut envelope)) = serde_json::to_value(generated) else {
        return Value::Null;
    };
    let dialect = envelope.remove("$schema").unwrap_or(Value::Null);
    let mut defs = match envelope.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => serde_json::Map::new(),
    };
    envelope.remove("title");
    // Every field is required; nullable ones must be present as `null` (schemars would mark
    // `Option` fields optional, and its `required` attribute would also forbid `null`).
    let mut names: Vec<Value> = match envelope.get("properties") {
        Some(Value::Object(properties)) => properties.keys().cloned().map(Value::String).collect(),
        _ => Vec::new(),
    };
    names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    envelope.insert("required".into(), Value::Array(names));
    envelope.insert("allOf".into(), cross_field_rules());
    defs.insert("ContinuityEnvelope".into(), Value::Object(envelope));
    sorted(json!({
        "$schema": dialect,
        "$id": "https://cairn.invalid/schemas/continuity-envelope.v1.schema.json",
        "title": "continuity-envelope/v1",
        "description": "A Cairn continuity envelope, bare or wrapped as {\"continuity_envelope\": {...}}. Every field is required; nullable fields are written as null.",
        "oneOf": [
            { "$ref": "#/$defs/ContinuityEnvelope" },
            {
                "type": "object",
                "properties": { "continuity_envelope": { "$ref": "#/$defs/ContinuityEnvelope" } },
                "required": ["continuity_envelope"],
                "additionalProperties": false
            }
        ],
        "$defs": defs,
    }))
}

/// The rules between fields: delegation, the approval triple, `human_approved`, and the
/// idempotency key of an effect that may have happened.
fn cross_field_rules() -> Value {
    let non_empty = json!({ "type": "string", "minLength": 1 });
    json!([
        {
            "if": { "properties": { "authorization_mode": { "const": "user_delegated" } } },
            "then": { "properties": {
                "delegated_principal_id": non_empty,
                "delegated_scope": non_empty
            } }
        },
        {
            "anyOf": [
                { "properties": {
                    "approval_id": { "type": "null" },
                    "action_digest": { "type": "null" },
                    "approval_expires_at": { "type": "null" }
                } },
                { "properties": {
                    "approval_id": { "type": "string" },
                    "action_digest": { "type": "string" },
                    "approval_expires_at": { "type": "string" }
                } }
            ]
        },
        {
            "if": { "properties": { "authorization_mode": { "const": "human_approved" } } },
            "then": { "properties": { "approval_id": { "type": "string" } } }
        },
        {
            "if": { "properties": { "side_effect_status": { "enum": [
                "applied", "side_effect_committed", "side_effect_unknown", "partial_side_effect"
            ] } } },
            "then": { "properties": { "idempotency_key": { "type": "string" } } }
        }
    ])
}

/// Rebuilds every object with its keys in sorted order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
