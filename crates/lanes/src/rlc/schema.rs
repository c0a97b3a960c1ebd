//! The two published RLC 0.1 JSON Schemas, embedded byte-for-byte, compiled once with the
//! reference's keyword semantics (`cairn-pyschema`), and turned into findings when a document
//! fails them.

use cairn_core::CodedFinding;
use cairn_pyschema::Schema;
use serde_json::Value;

use super::RlcError;

/// `responsibility-lane-envelope.schema.json`, as published.
pub const ENVELOPE_SCHEMA_TEXT: &str =
    include_str!("../../schemas/rlc-0.1/responsibility-lane-envelope.schema.json");

/// `responsibility-lane-restore-results.schema.json`, as published.
pub const RESTORE_RESULTS_SCHEMA_TEXT: &str =
    include_str!("../../schemas/rlc-0.1/responsibility-lane-restore-results.schema.json");

/// Compiles one embedded schema.
pub(crate) fn compile(name: &'static str, text: &str) -> Result<Schema, RlcError> {
    cairn_pyschema::compile(name, text).map_err(|e| match e {
        cairn_pyschema::PySchemaError::Compile { reason, .. } => RlcError::Schema { name, reason },
    })
}

/// Appends one finding with `code` per schema error of `instance`, ordered by field path as
/// the reference orders them. Returns whether the instance was valid.
pub(crate) fn check(
    schema: &Schema,
    instance: &Value,
    code: &'static str,
    root: &str,
    findings: &mut Vec<CodedFinding>,
) -> bool {
    let mut errors = schema.check(instance, root);
    if errors.is_empty() {
        return true;
    }
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    for error in errors {
        findings.push(CodedFinding::new(
            code,
            format!("`{}`: {}", error.path, error.message),
        ));
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn both_published_schemas_compile() {
        compile("envelope", ENVELOPE_SCHEMA_TEXT).unwrap();
        compile("restore", RESTORE_RESULTS_SCHEMA_TEXT).unwrap();
    }
}
