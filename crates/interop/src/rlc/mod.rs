//! The RLC 0.1 validator (Responsibility Lane Continuity, SPEC §7 L-2 and Appendix A): checks an
//! extension, optionally against the VCE 0.1 envelope it extends, and its lane restore results,
//! and reaches the same `PASSED | REVIEW_REQUIRED | BLOCKED` decision as the published Python
//! reference on every input, while reporting every finding with a stable code ([`codes`]).
//!
//! # Stages
//!
//! The first stage with a finding decides; within a stage every finding is reported.
//!
//! 1. **Schema**: the extension against `responsibility-lane-envelope.schema.json`
//!    ([`codes::SCHEMA_INVALID`]).
//! 2. **Extension digest**: `extension_digest` (`sha256` over `json-sort-keys-utf8-v1` of the
//!    extension without that field, bare hex).
//! 3. **Semantic rules**: every `lane_digest` (`"sha256:"` + hex over the lane without that
//!    field) of the first lane of each id — as in the reference, a later lane with the same id
//!    is reported as a duplicate and never digested — lane topology, scopes, bindings, the VCE
//!    cross-checks when an envelope is supplied, and the restore requirements.
//! 4. **Restore state**: the restore results against
//!    `responsibility-lane-restore-results.schema.json` and against each required check.
//!
//! # Decision precedence
//!
//! No finding → [`RlcDecision::Passed`]. Any finding whose code blocks (every code except
//! [`codes::LANE_CHECK_PENDING`]) → [`RlcDecision::Blocked`]. Otherwise (only pending checks)
//! → [`RlcDecision::ReviewRequired`]; its findings are reported too.
//!
//! # Matching the reference exactly
//!
//! - `pattern` follows Python's `re.search`, where `$` also matches before one final newline
//!   (see the `schema` module): `"sha256:<hex>\n"` is schema-valid for the reference, so a `pending`
//!   check carrying it is `REVIEW_REQUIRED`, not `BLOCKED`.
//! - The reference stops at the first restore problem; the restore stage here reports all of
//!   them. Its decision does not depend on the order, so it is the same.
//!
//! # Where Cairn goes beyond the reference
//!
//! The reference raises an exception (and so decides nothing) on a few inputs that its schemas
//! do not cover: a VCE envelope that is not an object (JSON `null` included), one whose tail
//! carries an `event_type` that is an array or object, or an extension or restore results
//! that are not objects but that Python's `dict()` accepts (a list of pairs). Cairn never
//! panics, and never gives the most permissive answer where the reference gives none: such
//! documents fail their schema, and a VCE envelope that is not an object, or whose
//! `operational_tail` is not an array of objects each with a string `event_id` and a string
//! `event_type`, is [`codes::VCE_ENVELOPE_INVALID`] (`BLOCKED`).
//!
//! That last rule is stricter than the reference where the reference does decide: it never
//! validates the VCE envelope, and skips tail rows that are not objects or have no string id
//! (and counts an event without a string type as not material) — so a malformed row could hide
//! a material event that then needs no lane binding. Cairn refuses the envelope instead; this
//! is a deliberate departure (cases `rule-vce-*` of `tests/rlc_cases`).

mod canonical;
pub mod codes;
mod digest;
mod refset;
mod restore;
mod schema;
mod semantic;
mod text;

use crate::lookup::field;
use crate::py_json::{PyJson, StandIn};
use crate::schema::Schema;
use cairn_core::{Code, CodedFinding, CoreError, ErrorCode};
use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

pub use schema::{ENVELOPE_SCHEMA_TEXT, RESTORE_RESULTS_SCHEMA_TEXT};

/// The outcome of an RLC 0.1 check, serialised as `"PASSED"`, `"REVIEW_REQUIRED"` or
/// `"BLOCKED"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RlcDecision {
    /// Every lane was revalidated against its sources; the lanes may be restored.
    Passed,
    /// Only pending lane checks stand between the lanes and a restore.
    ReviewRequired,
    /// The extension or its restore results must not be used.
    Blocked,
}

impl RlcDecision {
    /// The decision as the reference spells it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "PASSED",
            Self::ReviewRequired => "REVIEW_REQUIRED",
            Self::Blocked => "BLOCKED",
        }
    }
}

impl std::fmt::Display for RlcDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decision with every finding of the stage that decided it, serialised as
/// `{"decision": …, "findings": [{"code": …, "message": …}]}`. A `PASSED` report has no
/// findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RlcReport {
    /// The decision.
    pub decision: RlcDecision,
    /// Every finding, in the order the rules ran.
    pub findings: Vec<CodedFinding>,
}

impl RlcReport {
    fn from_findings(findings: Vec<CodedFinding>) -> Self {
        let decision = if findings.is_empty() {
            RlcDecision::Passed
        } else if findings.iter().all(|f| codes::is_review(f.code)) {
            RlcDecision::ReviewRequired
        } else {
            RlcDecision::Blocked
        };
        Self { decision, findings }
    }
}

/// Errors of the RLC module. A failed check is not an error but an [`RlcReport`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RlcError {
    /// An embedded schema failed to parse or compile (a build defect, not bad input).
    #[error("cannot compile the embedded schema `{name}`: {reason}")]
    Schema {
        /// Which schema.
        name: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// A digest was asked for a value that is not a JSON object.
    #[error("{what} must be a json object to be digested")]
    NotAnObject {
        /// `lane` or `extension`.
        what: &'static str,
    },
    /// The lane cannot be canonicalised (too deep, or a non-finite number).
    #[error(transparent)]
    Canonicalization(#[from] CoreError),
}

cairn_core::error_codes! {
    RlcError {
        /// The bundled RLC schema does not compile.
        SCHEMA_UNUSABLE = Internal("rlc_schema_unusable");
        /// A digest asked of something other than an object.
        NOT_AN_OBJECT = Invalid("digest_input_not_an_object");
    }
}

impl ErrorCode for RlcError {
    fn error_code(&self) -> Code {
        match self {
            Self::Schema { .. } => Self::SCHEMA_UNUSABLE,
            Self::NotAnObject { .. } => Self::NOT_AN_OBJECT,
            Self::Canonicalization(e) => e.error_code(),
        }
    }
}

/// The RLC 0.1 validator: both published schemas, compiled once. Cheap to share across
/// threads; [`RlcValidator::check`] takes `&self`.
pub struct RlcValidator {
    extension_schema: Schema,
    restore_schema: Schema,
}

impl std::fmt::Debug for RlcValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RlcValidator").finish_non_exhaustive()
    }
}

impl RlcValidator {
    /// Compiles the two embedded schemas.
    ///
    /// # Errors
    /// [`RlcError::Schema`] if an embedded schema does not compile (a build defect).
    pub fn new() -> Result<Self, RlcError> {
        Ok(Self {
            extension_schema: schema::compile(
                "responsibility-lane-envelope.schema.json",
                ENVELOPE_SCHEMA_TEXT,
            )?,
            restore_schema: schema::compile(
                "responsibility-lane-restore-results.schema.json",
                RESTORE_RESULTS_SCHEMA_TEXT,
            )?,
        })
    }

    /// Decides on `extension` with its lane restore results (`None` or JSON `null`: missing,
    /// which blocks) and, when given, the VCE 0.1 envelope it extends (enabling the
    /// `vce_envelope_id`, bound-event and material-event cross-checks). Never panics.
    #[must_use]
    pub fn check(
        &self,
        extension: &Value,
        restore: Option<&Value>,
        vce: Option<&Value>,
    ) -> RlcReport {
        self.check_with(extension, restore, vce, &[], &[])
    }

    /// [`RlcValidator::check`] of documents read as the reference reads them
    /// ([`crate::py_json`]): `document` is an extension or a fixture holding
    /// `extension` and `restore_results` ([`split_document`]); `restore`, when given, is used
    /// instead of embedded results. Where Python read what a `Value` holds only as a stand-in
    /// (a lone surrogate, a number beyond a double), the reference cannot write the
    /// extension's canonical form and raises: a schema-valid extension with a stand-in is
    /// BLOCKED ([`codes::EXTENSION_DIGEST_UNCOMPUTABLE`]); a VCE envelope with one is
    /// [`codes::VCE_ENVELOPE_INVALID`]. Stand-ins in restore results are judged as read.
    #[must_use]
    pub fn check_read(
        &self,
        document: &PyJson,
        restore: Option<&PyJson>,
        vce: Option<&PyJson>,
    ) -> RlcReport {
        let (extension, embedded) = split_document(&document.value);
        let split = !std::ptr::eq(extension, &document.value);
        let in_extension: Vec<StandIn> = document
            .stand_ins
            .iter()
            .filter(|s| !split || is_under(&s.path, "$.extension"))
            .cloned()
            .collect();
        self.check_with(
            extension,
            restore.map(|r| &r.value).or(embedded),
            vce.map(|v| &v.value),
            &in_extension,
            vce.map_or(&[][..], |v| &v.stand_ins),
        )
    }

    fn check_with(
        &self,
        extension: &Value,
        restore: Option<&Value>,
        vce: Option<&Value>,
        stand_ins: &[StandIn],
        vce_stand_ins: &[StandIn],
    ) -> RlcReport {
        let mut findings = Vec::new();
        let (valid, written) =
            schema::check_extension(&self.extension_schema, extension, &mut findings);
        if !valid {
            return RlcReport::from_findings(findings);
        }
        for stand_in in stand_ins {
            findings.push(CodedFinding::new(
                codes::EXTENSION_DIGEST_UNCOMPUTABLE,
                format!(
                    "the extension cannot be written as json-sort-keys-utf8-v1 (the reference \
                     raises): {stand_in}"
                ),
            ));
        }
        if !findings.is_empty() {
            return RlcReport::from_findings(findings);
        }
        let Value::Object(extension) = extension else {
            // The schema requires an object; this keeps the code total without a panic.
            findings.push(CodedFinding::new(
                codes::SCHEMA_INVALID,
                "`$`: the extension must be a json object",
            ));
            return RlcReport::from_findings(findings);
        };
        let written = digest::check(extension, written, &mut findings);
        if !findings.is_empty() {
            return RlcReport::from_findings(findings);
        }
        let vce = vce.map(|envelope| semantic::Vce {
            envelope,
            stand_ins: vce_stand_ins,
        });
        let lanes = semantic::check(extension, vce, written.as_ref(), &mut findings);
        if !findings.is_empty() {
            return RlcReport::from_findings(findings);
        }
        restore::check(
            &self.restore_schema,
            extension,
            &lanes,
            restore,
            &mut findings,
        );
        RlcReport::from_findings(findings)
    }
}

/// Splits the document given to `cairn rlc check FILE`: a fixture — an object with an
/// `extension` member and no other member than `restore_results` — gives both parts
/// (`restore_results` may be absent); anything else is taken as a bare extension.
///
/// The rule is strict on purpose: a bare extension that smuggles an `extension` member among
/// its own fields is judged as the extension it is (and fails its schema), instead of having
/// the smuggled inner document judged in its place.
#[must_use]
pub fn split_document(doc: &Value) -> (&Value, Option<&Value>) {
    let Value::Object(map) = doc else {
        return (doc, None);
    };
    let only_fixture_members = map
        .keys()
        .all(|key| key == "extension" || key == "restore_results");
    match field(map, "extension") {
        Some(extension) if only_fixture_members => (extension, field(map, "restore_results")),
        _ => (doc, None),
    }
}

/// Whether the JSON path `path` is `prefix` or lies under it.
fn is_under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// The lane digest of `lane` as RLC 0.1 and the reference compute it: `"sha256:"` + the
/// lowercase hex SHA-256 of the lane without its `lane_digest` member, canonicalised with
/// `json-sort-keys-utf8-v1`.
///
/// # Errors
/// [`RlcError::NotAnObject`] for a non-object, [`RlcError::Canonicalization`] for a lane
/// nested too deeply or holding a non-finite number.
pub fn lane_digest(lane: &Value) -> Result<String, RlcError> {
    let Value::Object(lane) = lane else {
        return Err(RlcError::NotAnObject { what: "lane" });
    };
    Ok(digest::lane_digest_text(lane)?)
}

/// The extension digest as RLC 0.1 and the reference compute it: the lowercase hex SHA-256 of
/// the extension without its `extension_digest` member, canonicalised with
/// `json-sort-keys-utf8-v1` (the value of `extension_digest.value`).
///
/// # Errors
/// As [`lane_digest`].
pub fn extension_digest(extension: &Value) -> Result<String, RlcError> {
    let Value::Object(extension) = extension else {
        return Err(RlcError::NotAnObject { what: "extension" });
    };
    Ok(hex::encode(canonical::digest_without(
        extension,
        "extension_digest",
    )?))
}
