//! Stage 1 (and the first rule of stage 4): the two published JSON Schemas, compiled once
//! with the reference's own meaning of `date-time` and `pattern` (see the `schema` module), and
//! their errors turned into findings.

use crate::schema::Schema;
use serde_json::Value;

use super::{Stage, VceError};

/// `continuation-envelope.schema.json` of VCE 0.1, byte for byte as published.
pub const ENVELOPE_SCHEMA_JSON: &str =
    include_str!("../../schemas/vce-0.1/continuation-envelope.schema.json");

/// `restore-results.schema.json` of VCE 0.1, byte for byte as published.
pub const RESTORE_RESULTS_SCHEMA_JSON: &str =
    include_str!("../../schemas/vce-0.1/restore-results.schema.json");

/// Compiles one of the embedded schemas with the reference's keyword semantics.
pub(super) fn compile(name: &'static str, text: &str) -> Result<Schema, VceError> {
    crate::schema::compile(name, text).map_err(|e| match e {
        crate::schema::PySchemaError::Compile { reason, .. } => VceError::SchemaCompile {
            schema: name,
            reason,
        },
    })
}

/// Which document a schema check is about: its name in messages and the root of its paths.
#[derive(Clone, Copy)]
pub(super) struct Subject {
    /// The schema's name in messages.
    pub(super) schema: &'static str,
    /// The root of paths into the document (`$` for the envelope).
    pub(super) root: &'static str,
    /// The code of a finding.
    pub(super) code: &'static str,
}

/// Adds one blocking finding per schema error of `document`; nothing when it is valid.
pub(super) fn check(schema: &Schema, document: &Value, subject: Subject, stage: &mut Stage) {
    report(schema.check(document, subject.root), subject, stage);
}

/// [`check`], also returning the SHA-256 of the `json-sort-keys-utf8-v1` form of `document`
/// without its top-level member `skip` when the schema walk hashed it on the way (see
/// [`Schema::check_digesting_sort_keys`]), so that the digest stage need not walk it again.
pub(super) fn check_digesting_sort_keys(
    schema: &Schema,
    document: &Value,
    subject: Subject,
    skip: &str,
    stage: &mut Stage,
) -> Option<[u8; 32]> {
    let (errors, digest) = schema.check_digesting_sort_keys(document, subject.root, Some(skip));
    report(errors, subject, stage);
    digest
}

fn report(errors: Vec<crate::schema::SchemaError>, subject: Subject, stage: &mut Stage) {
    for error in errors {
        stage.block(
            subject.code,
            format!(
                "`{}` breaks the vce 0.1 {} schema: {}",
                error.path, subject.schema, error.message
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn both_published_schemas_build_the_full_validator() {
        // It is built on first need; an embedded schema must build it too.
        for (name, text) in [
            ("continuation-envelope", ENVELOPE_SCHEMA_JSON),
            ("restore-results", RESTORE_RESULTS_SCHEMA_JSON),
        ] {
            compile(name, text).unwrap().full().unwrap();
        }
    }
}
