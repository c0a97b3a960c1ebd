//! `cairn schema`: prints a published JSON Schema generated from the types.

use crate::args::{SchemaArgs, SchemaName};
use crate::output::Outcome;

/// Prints the schema (the same JSON with or without `--json`).
pub fn run(args: &SchemaArgs) -> Outcome {
    let schema = match args.name {
        SchemaName::Intent => cairn_ledger::record::intent_record_schema(),
    };
    let human = serde_json::to_string_pretty(&schema).unwrap_or_default();
    Outcome::ok(schema, human)
}
