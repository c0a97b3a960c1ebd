//! VCE 0.1 interop (SPEC L-2, Appendix A): decides whether a Verifiable Continuation Envelope,
//! with the restore results observed after the boundary, lets an agent resume, exactly as the
//! published Python reference (`vce_reference.py`, `restore_decision`) decides.
//!
//! [`VceValidator::check`] runs five stages in order; the first stage with a finding decides,
//! and that stage reports every finding it sees, each with a stable code from [`codes`]:
//!
//! 1. **schema**: `continuation-envelope.schema.json` (draft 2020-12, `date-time` checked, no
//!    extra properties), with the reference's own meaning of `date-time` and `pattern` (see
//!    the `schema` module) → BLOCKED;
//! 2. **envelope digest**: SHA-256 (bare lowercase hex) of the envelope without its top-level
//!    `envelope_digest`, canonicalised with `json-sort-keys-utf8-v1` → BLOCKED on mismatch;
//! 3. **semantic rules**: authority model, operational tail, artifacts and their checks,
//!    execution evidence, an authoritative constraint, rejected and pending items → BLOCKED;
//! 4. **restore gate**: the restore results (`restore-results.schema.json`) must be for this
//!    envelope, complete every required read and pass every required check → BLOCKED; a
//!    `pending` check, with nothing blocking, → REVIEW_REQUIRED;
//! 5. **after the gate**: open `pending_verification` items or a non-empty
//!    `next_action.blocked_by` → REVIEW_REQUIRED.
//!
//! Within a stage the decision is BLOCKED when any finding blocks (see [`codes::REVIEW`] for
//! the three that do not), else REVIEW_REQUIRED. A RESUMABLE report has no findings.
//!
//! The validator is pure and never panics: any JSON value, of any shape, gets a report.

mod after_gate;
pub mod codes;
mod digest;
mod gate;
mod pyjson;
mod schema;
mod semantic;
mod top;

use std::fmt;

use crate::py_json::{PyJson, StandIn};
use cairn_core::{Code, CodedFinding, ErrorCode};
use serde::{Serialize, Serializer};
use serde_json::Value;
use thiserror::Error;

pub use schema::{ENVELOPE_SCHEMA_JSON, RESTORE_RESULTS_SCHEMA_JSON};

/// The decision of the VCE 0.1 restore protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VceDecision {
    /// Every check passed and nothing is open: the agent may resume.
    Resumable,
    /// Nothing is wrong, but something is not done yet (a pending check, pending verification,
    /// a blocked next action): a person or a later run must look again.
    ReviewRequired,
    /// The envelope or its restore results cannot be trusted: do not resume.
    Blocked,
}

impl VceDecision {
    /// The name the reference uses: `RESUMABLE`, `REVIEW_REQUIRED` or `BLOCKED`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Resumable => "RESUMABLE",
            Self::ReviewRequired => "REVIEW_REQUIRED",
            Self::Blocked => "BLOCKED",
        }
    }
}

impl fmt::Display for VceDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for VceDecision {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The decision and the findings of the stage that decided it; serialises as
/// `{"decision": "...", "findings": [{"code": "...", "message": "..."}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VceReport {
    /// The decision.
    pub decision: VceDecision,
    /// Every finding of the deciding stage, in the order the rules ran; empty when
    /// [`VceDecision::Resumable`].
    pub findings: Vec<CodedFinding>,
}

/// Errors of building a [`VceValidator`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum VceError {
    /// An embedded schema does not compile (a build defect, never caused by input).
    #[error("cannot compile the vce 0.1 `{schema}` schema: {reason}")]
    SchemaCompile {
        /// Which schema.
        schema: &'static str,
        /// Why it failed.
        reason: String,
    },
}

cairn_core::error_codes! {
    VceError {
        /// The bundled VCE schema does not compile.
        SCHEMA_COMPILE = Internal("vce_schema_compile_failed");
    }
}

impl ErrorCode for VceError {
    fn error_code(&self) -> Code {
        match self {
            Self::SchemaCompile { .. } => Self::SCHEMA_COMPILE,
        }
    }
}

/// The VCE 0.1 validator: the two published schemas, compiled once; [`VceValidator::check`]
/// is then a pure function of its two inputs, safe to call from many threads.
pub struct VceValidator {
    envelope_schema: crate::schema::Schema,
    restore_schema: crate::schema::Schema,
}

impl fmt::Debug for VceValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VceValidator").finish_non_exhaustive()
    }
}

impl VceValidator {
    /// Compiles the embedded envelope and restore-results schemas.
    ///
    /// # Errors
    /// [`VceError::SchemaCompile`] if an embedded schema does not compile.
    pub fn new() -> Result<Self, VceError> {
        Ok(Self {
            envelope_schema: schema::compile("continuation-envelope", ENVELOPE_SCHEMA_JSON)?,
            restore_schema: schema::compile("restore-results", RESTORE_RESULTS_SCHEMA_JSON)?,
        })
    }

    /// Decides `envelope` with the restore results `restore` (`None` when none were
    /// observed, which blocks), reporting the findings of the deciding stage.
    #[must_use]
    pub fn check(&self, envelope: &Value, restore: Option<&Value>) -> VceReport {
        self.check_with(envelope, restore, &[])
    }

    /// [`VceValidator::check`] of documents read as the reference reads them
    /// ([`crate::py_json`]). Where Python read in the envelope what a `Value` holds only
    /// as a stand-in (a lone surrogate, a number beyond a double), the reference cannot write
    /// the envelope's canonical form and raises: a schema-valid envelope with a stand-in is
    /// BLOCKED at the digest stage ([`codes::ENVELOPE_DIGEST_UNCOMPUTABLE`]). Stand-ins in the
    /// restore results, which nothing digests, are judged as read (a lone surrogate as U+FFFD).
    #[must_use]
    pub fn check_read(&self, envelope: &PyJson, restore: Option<&PyJson>) -> VceReport {
        self.check_with(
            &envelope.value,
            restore.map(|r| &r.value),
            &envelope.stand_ins,
        )
    }

    fn check_with(
        &self,
        envelope: &Value,
        restore: Option<&Value>,
        stand_ins: &[StandIn],
    ) -> VceReport {
        let mut stage = Stage::default();
        let subject = schema::Subject {
            schema: "envelope",
            root: "$",
            code: codes::SCHEMA_INVALID,
        };
        let digest = schema::check_digesting_sort_keys(
            &self.envelope_schema,
            envelope,
            subject,
            digest::DIGEST_FIELD,
            &mut stage,
        );
        if let Some(report) = stage.report() {
            return report;
        }
        for stand_in in stand_ins {
            stage.block(
                codes::ENVELOPE_DIGEST_UNCOMPUTABLE,
                format!(
                    "the envelope cannot be written as json-sort-keys-utf8-v1 (the reference \
                     raises): {stand_in}"
                ),
            );
        }
        if let Some(report) = stage.report() {
            return report;
        }
        digest::check(envelope, digest, &mut stage);
        if let Some(report) = stage.report() {
            return report;
        }
        let top = top::Top::of(envelope);
        let index = semantic::check(&top, &mut stage);
        if let Some(report) = stage.report() {
            return report;
        }
        gate::check(&top, restore, &self.restore_schema, &index, &mut stage);
        if let Some(report) = stage.report() {
            return report;
        }
        after_gate::check(&top, &mut stage);
        stage.report().unwrap_or(VceReport {
            decision: VceDecision::Resumable,
            findings: Vec::new(),
        })
    }
}

/// The findings of the stage being run and whether any of them blocks.
#[derive(Default)]
struct Stage {
    findings: Vec<CodedFinding>,
    blocks: bool,
}

impl Stage {
    /// Adds a finding that makes the stage BLOCKED.
    fn block(&mut self, code: &'static str, message: impl Into<String>) {
        self.blocks = true;
        self.findings.push(CodedFinding::new(code, message));
    }

    /// Adds a finding that makes the stage REVIEW_REQUIRED unless another one blocks.
    fn review(&mut self, code: &'static str, message: impl Into<String>) {
        self.findings.push(CodedFinding::new(code, message));
    }

    fn len(&self) -> usize {
        self.findings.len()
    }

    /// The report of the stage if it has findings (it then decides), else `None`.
    fn report(&mut self) -> Option<VceReport> {
        if self.findings.is_empty() {
            return None;
        }
        let Self { findings, blocks } = std::mem::take(self);
        let decision = if blocks {
            VceDecision::Blocked
        } else {
            VceDecision::ReviewRequired
        };
        Some(VceReport { decision, findings })
    }
}

#[cfg(test)]
mod tests;
