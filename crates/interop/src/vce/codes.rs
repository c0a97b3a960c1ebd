//! The stable finding codes of the VCE 0.1 validator, one per rule, grouped by the stage that
//! reports them, each with the decision it leads to.
//!
//! Codes never change once published; new ones may be added. A code marked *pre-empted* guards
//! a rule of the published reference that the schema stage already enforces (for example
//! `fail_closed` is `"const": true` in the schema), so a report that reaches its stage can never
//! carry it; the rule is still checked so that the later stages never rely on the schema for
//! their own safety.

// --- Stage 1: schema -------------------------------------------------------------------------

/// The envelope does not satisfy `continuation-envelope.schema.json` (JSON Schema draft
/// 2020-12, `date-time` checked, no extra properties); one finding per schema error.
/// Decision: BLOCKED.
pub const SCHEMA_INVALID: &str = "schema_invalid";

// --- Stage 2: envelope digest ----------------------------------------------------------------

/// `envelope_digest` is not an object, or its `algorithm` is not `sha256`, or its
/// `canonicalization` is not `json-sort-keys-utf8-v1`. Decision: BLOCKED. Pre-empted.
pub const ENVELOPE_DIGEST_UNSUPPORTED: &str = "envelope_digest_unsupported";
/// `envelope_digest.value` differs from the SHA-256 (bare lowercase hex) of the envelope
/// without its top-level `envelope_digest`, canonicalised with `json-sort-keys-utf8-v1`.
/// Decision: BLOCKED.
pub const ENVELOPE_DIGEST_MISMATCH: &str = "envelope_digest_mismatch";
/// The envelope cannot be canonicalised, so its digest cannot be computed: it holds what
/// Python read but UTF-8 or `json.dumps(allow_nan=False)` cannot write (a lone surrogate, a
/// number beyond a double, read by `crate::py_json`), where the reference raises; or it
/// nests too deep. Decision: BLOCKED.
pub const ENVELOPE_DIGEST_UNCOMPUTABLE: &str = "envelope_digest_uncomputable";

// --- Stage 3: semantic rules (every one BLOCKED) ---------------------------------------------

/// A required top-level field is absent. Pre-empted.
pub const MISSING_TOP_LEVEL_FIELD: &str = "missing_top_level_field";
/// `authority_model` is not an object. Pre-empted.
pub const AUTHORITY_MODEL_INVALID: &str = "authority_model_invalid";
/// `authority_model.precedence` is not exactly
/// `[system, developer, user, project_policy, memory]`. Pre-empted.
pub const AUTHORITY_PRECEDENCE_INVALID: &str = "authority_precedence_invalid";
/// `authority_model.memory_default` is not `non_authoritative_memory`. Pre-empted.
pub const MEMORY_DEFAULT_INVALID: &str = "memory_default_invalid";
/// `authority_model.authoritative_sources` is not an array, is empty, or names a source
/// outside `{user_message, project_policy}`. Pre-empted.
pub const AUTHORITATIVE_SOURCES_INVALID: &str = "authoritative_sources_invalid";
/// `operational_tail` is not an array or has no event. Pre-empted.
pub const OPERATIONAL_TAIL_EMPTY: &str = "operational_tail_empty";
/// An `operational_tail` entry is not an object. Pre-empted.
pub const OPERATIONAL_EVENT_INVALID: &str = "operational_event_invalid";
/// `artifact_refs` is not an array, or an entry is not an object or has no non-empty
/// `artifact_id`. Pre-empted.
pub const ARTIFACT_REFS_INVALID: &str = "artifact_refs_invalid";
/// Two `artifact_refs` entries share an `artifact_id` (the first one is the one used).
pub const DUPLICATE_ARTIFACT_ID: &str = "duplicate_artifact_id";
/// `restore_requirements` is not an object, or one of its lists is not an array or holds a
/// non-object where a check is expected. Pre-empted.
pub const RESTORE_REQUIREMENTS_INVALID: &str = "restore_requirements_invalid";
/// `restore_requirements.fail_closed` is not `true`. Pre-empted.
pub const RESTORE_NOT_FAIL_CLOSED: &str = "restore_not_fail_closed";
/// A required evidence check has no non-empty `check_id`. Pre-empted.
pub const CHECK_ID_MISSING: &str = "check_id_missing";
/// Two required evidence checks share a `check_id`.
pub const DUPLICATE_CHECK_ID: &str = "duplicate_check_id";
/// A required evidence check names an `artifact_id` that `artifact_refs` does not declare.
pub const CHECK_UNKNOWN_ARTIFACT: &str = "check_unknown_artifact";
/// A `digest` check on an artifact without a `digest`, or a `receipt` check on an artifact
/// without a `receipt_ref`.
pub const CHECK_ANCHOR_MISSING: &str = "check_anchor_missing";
/// An event whose `authority_class` is `instruction` or `constraint` comes from a
/// `provenance.source_type` outside `authority_model.authoritative_sources` (memory, tools,
/// files, agent messages … cannot restore authority).
pub const NON_AUTHORITATIVE_INSTRUCTION: &str = "non_authoritative_instruction";
/// An execution event (`tool_call`, `tool_result`, `artifact_modified`,
/// `verification_result`) has no `evidence_refs`.
pub const EXECUTION_EVENT_WITHOUT_EVIDENCE: &str = "execution_event_without_evidence";
/// An execution event's evidence ref names an artifact `artifact_refs` does not declare.
pub const EVIDENCE_REF_UNKNOWN_ARTIFACT: &str = "evidence_ref_unknown_artifact";
/// An execution event's evidence artifact has neither a `digest` nor a `receipt_ref` (no
/// durable anchor). Pre-empted.
pub const EVIDENCE_ARTIFACT_WITHOUT_ANCHOR: &str = "evidence_artifact_without_anchor";
/// An execution event's evidence artifact has no required evidence check.
pub const EVIDENCE_ARTIFACT_UNCHECKED: &str = "evidence_artifact_unchecked";
/// An execution event's evidence artifact is only checked for existence: it needs a
/// `digest` or `receipt` check.
pub const EVIDENCE_ARTIFACT_EXISTENCE_ONLY: &str = "evidence_artifact_existence_only";
/// No `constraint` event from an authoritative source survives in the operational tail.
pub const NO_ACTIVE_CONSTRAINT: &str = "no_active_constraint";
/// `rejected_approaches` is not an array. Pre-empted.
pub const REJECTED_APPROACHES_INVALID: &str = "rejected_approaches_invalid";
/// A rejected approach is not an object with `status` `rejected`. Pre-empted.
pub const REJECTED_APPROACH_REOPENED: &str = "rejected_approach_reopened";
/// `pending_verification` is not an array. Pre-empted.
pub const PENDING_VERIFICATION_INVALID: &str = "pending_verification_invalid";
/// A `pending_verification` item claims `status` `passed`. Pre-empted.
pub const PENDING_VERIFICATION_PROMOTED: &str = "pending_verification_promoted";

// --- Stage 4: restore gate -------------------------------------------------------------------

/// No restore results were supplied. Decision: BLOCKED.
pub const RESTORE_RESULTS_MISSING: &str = "restore_results_missing";
/// The restore results do not satisfy `restore-results.schema.json`; one finding per schema
/// error, and no other gate rule is evaluated. Decision: BLOCKED.
pub const RESTORE_SCHEMA_INVALID: &str = "restore_schema_invalid";
/// The restore results are for another `envelope_id`. Decision: BLOCKED.
pub const RESTORE_ENVELOPE_MISMATCH: &str = "restore_envelope_mismatch";
/// A path of `restore_requirements.required_reads` is not among `completed_reads`.
/// Decision: BLOCKED.
pub const REQUIRED_READ_INCOMPLETE: &str = "required_read_incomplete";
/// Two restore results share a `check_id` (required or not). Decision: BLOCKED.
pub const DUPLICATE_CHECK_RESULT: &str = "duplicate_check_result";
/// A required evidence check has no result. Decision: BLOCKED.
pub const CHECK_RESULT_MISSING: &str = "check_result_missing";
/// A result's `artifact_id` or `method` differs from the check it answers. Decision: BLOCKED.
pub const CHECK_RESULT_MISMATCH: &str = "check_result_mismatch";
/// A required check's result is `failed`. Decision: BLOCKED.
pub const CHECK_FAILED: &str = "check_failed";
/// A passed `digest` check observed a digest other than the artifact's. Decision: BLOCKED.
pub const DIGEST_MISMATCH: &str = "digest_mismatch";
/// A passed `receipt` check observed a receipt other than the artifact's. Decision: BLOCKED.
pub const RECEIPT_MISMATCH: &str = "receipt_mismatch";
/// A passed `existence` check is the check of an artifact an execution event relies on;
/// existence proves nothing about what was executed. Decision: BLOCKED.
pub const EXISTENCE_CHECK_ON_EXECUTION_ARTIFACT: &str = "existence_check_on_execution_artifact";
/// A required check's method is none of `digest`, `receipt`, `existence`. Decision: BLOCKED.
/// Pre-empted.
pub const CHECK_METHOD_UNKNOWN: &str = "check_method_unknown";
/// A required check's result is still `pending`. Decision: REVIEW_REQUIRED (unless another
/// gate finding blocks).
pub const CHECK_PENDING: &str = "check_pending";

// --- Stage 5: after the gate -----------------------------------------------------------------

/// A `pending_verification` item is `pending`, `running`, `blocked` or `failed`: the task's
/// own verification is not done. Decision: REVIEW_REQUIRED.
pub const VERIFICATION_PENDING: &str = "verification_pending";
/// `next_action.blocked_by` is not empty. Decision: REVIEW_REQUIRED.
pub const NEXT_ACTION_BLOCKED: &str = "next_action_blocked";
/// `next_action` is not an object or its `blocked_by` is not an array. Decision: BLOCKED.
/// Pre-empted.
pub const NEXT_ACTION_INVALID: &str = "next_action_invalid";

/// Every code, in stage order.
pub const ALL: &[&str] = &[
    SCHEMA_INVALID,
    ENVELOPE_DIGEST_UNSUPPORTED,
    ENVELOPE_DIGEST_MISMATCH,
    ENVELOPE_DIGEST_UNCOMPUTABLE,
    MISSING_TOP_LEVEL_FIELD,
    AUTHORITY_MODEL_INVALID,
    AUTHORITY_PRECEDENCE_INVALID,
    MEMORY_DEFAULT_INVALID,
    AUTHORITATIVE_SOURCES_INVALID,
    OPERATIONAL_TAIL_EMPTY,
    OPERATIONAL_EVENT_INVALID,
    ARTIFACT_REFS_INVALID,
    DUPLICATE_ARTIFACT_ID,
    RESTORE_REQUIREMENTS_INVALID,
    RESTORE_NOT_FAIL_CLOSED,
    CHECK_ID_MISSING,
    DUPLICATE_CHECK_ID,
    CHECK_UNKNOWN_ARTIFACT,
    CHECK_ANCHOR_MISSING,
    NON_AUTHORITATIVE_INSTRUCTION,
    EXECUTION_EVENT_WITHOUT_EVIDENCE,
    EVIDENCE_REF_UNKNOWN_ARTIFACT,
    EVIDENCE_ARTIFACT_WITHOUT_ANCHOR,
    EVIDENCE_ARTIFACT_UNCHECKED,
    EVIDENCE_ARTIFACT_EXISTENCE_ONLY,
    NO_ACTIVE_CONSTRAINT,
    REJECTED_APPROACHES_INVALID,
    REJECTED_APPROACH_REOPENED,
    PENDING_VERIFICATION_INVALID,
    PENDING_VERIFICATION_PROMOTED,
    RESTORE_RESULTS_MISSING,
    RESTORE_SCHEMA_INVALID,
    RESTORE_ENVELOPE_MISMATCH,
    REQUIRED_READ_INCOMPLETE,
    DUPLICATE_CHECK_RESULT,
    CHECK_RESULT_MISSING,
    CHECK_RESULT_MISMATCH,
    CHECK_FAILED,
    DIGEST_MISMATCH,
    RECEIPT_MISMATCH,
    EXISTENCE_CHECK_ON_EXECUTION_ARTIFACT,
    CHECK_METHOD_UNKNOWN,
    CHECK_PENDING,
    VERIFICATION_PENDING,
    NEXT_ACTION_BLOCKED,
    NEXT_ACTION_INVALID,
];

/// The codes whose rule the schema stage already enforces, so no report past the schema stage
/// can carry them (see the module documentation).
pub const PRE_EMPTED: &[&str] = &[
    ENVELOPE_DIGEST_UNSUPPORTED,
    MISSING_TOP_LEVEL_FIELD,
    AUTHORITY_MODEL_INVALID,
    AUTHORITY_PRECEDENCE_INVALID,
    MEMORY_DEFAULT_INVALID,
    AUTHORITATIVE_SOURCES_INVALID,
    OPERATIONAL_TAIL_EMPTY,
    OPERATIONAL_EVENT_INVALID,
    ARTIFACT_REFS_INVALID,
    RESTORE_REQUIREMENTS_INVALID,
    RESTORE_NOT_FAIL_CLOSED,
    CHECK_ID_MISSING,
    EVIDENCE_ARTIFACT_WITHOUT_ANCHOR,
    REJECTED_APPROACHES_INVALID,
    REJECTED_APPROACH_REOPENED,
    PENDING_VERIFICATION_INVALID,
    PENDING_VERIFICATION_PROMOTED,
    CHECK_METHOD_UNKNOWN,
    NEXT_ACTION_INVALID,
];

/// The codes that, alone, lead to REVIEW_REQUIRED; every other code leads to BLOCKED.
pub const REVIEW: &[&str] = &[CHECK_PENDING, VERIFICATION_PENDING, NEXT_ACTION_BLOCKED];
