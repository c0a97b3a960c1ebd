//! The two published RLC 0.1 JSON Schemas, embedded byte-for-byte, compiled once with the
//! reference's keyword semantics (the `schema` module), and turned into findings when a document
//! fails them.

use crate::schema::{Schema, SchemaError};
use cairn_core::CodedFinding;
use serde_json::Value;

use super::canonical::{EXTENSION_DIGEST, ExtensionBytes, MARKS};
use super::{RlcError, codes};

/// `responsibility-lane-envelope.schema.json`, as published.
pub const ENVELOPE_SCHEMA_TEXT: &str =
    include_str!("../../schemas/rlc-0.1/responsibility-lane-envelope.schema.json");

/// `responsibility-lane-restore-results.schema.json`, as published.
pub const RESTORE_RESULTS_SCHEMA_TEXT: &str =
    include_str!("../../schemas/rlc-0.1/responsibility-lane-restore-results.schema.json");

/// Compiles one embedded schema.
pub(crate) fn compile(name: &'static str, text: &str) -> Result<Schema, RlcError> {
    crate::schema::compile(name, text).map_err(|e| match e {
        crate::schema::PySchemaError::Compile { reason, .. } => RlcError::Schema { name, reason },
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
    report(schema.check(instance, root), code, findings)
}

/// [`check`] for the extension, also returning its canonical form without `extension_digest`
/// with each lane's place in it, when the schema walk wrote them on the way, so that the digest
/// stage need not walk the extension again.
pub(crate) fn check_extension(
    schema: &Schema,
    extension: &Value,
    findings: &mut Vec<CodedFinding>,
) -> (bool, Option<ExtensionBytes>) {
    let (errors, form) =
        schema.check_writing_sort_keys_marked(extension, "$", Some(EXTENSION_DIGEST), MARKS);
    let valid = report(errors, codes::SCHEMA_INVALID, findings);
    (valid, form.map(ExtensionBytes::from_form))
}

/// Appends one finding per error, ordered by field path as the reference orders them; whether
/// there was none.
fn report(
    mut errors: Vec<SchemaError>,
    code: &'static str,
    findings: &mut Vec<CodedFinding>,
) -> bool {
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
        // The full validator is built on first need; an embedded schema must build it too.
        compile("envelope", ENVELOPE_SCHEMA_TEXT)
            .unwrap()
            .full()
            .unwrap();
        compile("restore", RESTORE_RESULTS_SCHEMA_TEXT)
            .unwrap()
            .full()
            .unwrap();
    }
}
