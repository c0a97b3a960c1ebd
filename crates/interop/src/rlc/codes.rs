//! The stable finding codes of the RLC 0.1 validator, one per rule, grouped by the stage that
//! reports them (SPEC Appendix A). A code never changes meaning once published; scripts and
//! the CLI match on it.
//!
//! Every code is *blocking* (its finding makes the decision `BLOCKED`) except
//! [`LANE_CHECK_PENDING`], which asks for review (`REVIEW_REQUIRED`).

// ---------------------------------------------------------------------------------------------
// Stage 1: schema.
// ---------------------------------------------------------------------------------------------

/// The extension does not satisfy `responsibility-lane-envelope.schema.json` (draft 2020-12,
/// formats checked). One finding per schema error, at the offending field.
pub const SCHEMA_INVALID: &str = "schema_invalid";

// ---------------------------------------------------------------------------------------------
// Stage 2: digests.
// ---------------------------------------------------------------------------------------------

/// `extension_digest` is not an object naming `algorithm: "sha256"` and
/// `canonicalization: "json-sort-keys-utf8-v1"`. The schema already requires this, so the
/// code only shows up if the two ever disagree; it is checked because the reference checks it.
pub const EXTENSION_DIGEST_UNSUPPORTED: &str = "extension_digest_unsupported";

/// `extension_digest.value` differs from the SHA-256 (bare hex) of the extension without its
/// `extension_digest` field, canonicalised with `json-sort-keys-utf8-v1`.
pub const EXTENSION_DIGEST_MISMATCH: &str = "extension_digest_mismatch";

/// The extension cannot be written as `json-sort-keys-utf8-v1`, so its digest cannot be
/// computed: it holds what Python read but UTF-8 or `json.dumps(allow_nan=False)` cannot
/// write (a lone surrogate, a number beyond a double, read by `crate::py_json`), where
/// the reference raises.
pub const EXTENSION_DIGEST_UNCOMPUTABLE: &str = "extension_digest_uncomputable";

/// A lane's `lane_digest` differs from `"sha256:"` + the hex SHA-256 of the lane without its
/// `lane_digest` field, canonicalised with `json-sort-keys-utf8-v1`.
pub const LANE_DIGEST_MISMATCH: &str = "lane_digest_mismatch";

// ---------------------------------------------------------------------------------------------
// Stage 3: semantic rules.
// ---------------------------------------------------------------------------------------------

/// A field that the schema guarantees has another shape (for example a lane that is not an
/// object). Unreachable after a passing schema stage; the semantic and restore rules still
/// check shapes themselves so that they never depend on the schema for their own safety.
pub const SHAPE_INVALID: &str = "shape_invalid";

/// Two lanes share a `lane_id`; the later one is ignored by the other rules.
pub const DUPLICATE_LANE_ID: &str = "duplicate_lane_id";

/// A lane's `mutation_scope` both allows and denies the same ref.
pub const SCOPE_OVERLAP: &str = "scope_overlap";

/// A lane lists itself in `depends_on`.
pub const SELF_DEPENDENCY: &str = "self_dependency";

/// A lane's `depends_on` names a lane the extension does not have.
pub const UNKNOWN_DEPENDENCY: &str = "unknown_dependency";

/// `active_lane_id` names a lane the extension does not have.
pub const UNKNOWN_ACTIVE_LANE: &str = "unknown_active_lane";

/// `next_action.lane_id` names a lane the extension does not have.
pub const NEXT_ACTION_UNKNOWN_LANE: &str = "next_action_unknown_lane";

/// An effect ref of `next_action` is not among its lane's `allowed_refs`.
pub const NEXT_ACTION_OUTSIDE_SCOPE: &str = "next_action_outside_scope";

/// An effect ref of `next_action` is among its lane's `denied_refs`.
pub const NEXT_ACTION_DENIED_REF: &str = "next_action_denied_ref";

/// `next_action` sits on a `complete` or `superseded` lane (a `blocked` lane may hold it).
pub const NEXT_ACTION_LANE_CLOSED: &str = "next_action_lane_closed";

/// Two event bindings name the same `event_id`; the later one is not checked further.
pub const DUPLICATE_EVENT_BINDING: &str = "duplicate_event_binding";

/// An event binding names a lane the extension does not have.
pub const BINDING_UNKNOWN_LANE: &str = "binding_unknown_lane";

/// An effect ref of an event binding is not among its lane's `allowed_refs`.
pub const BINDING_OUTSIDE_SCOPE: &str = "binding_outside_scope";

/// An effect ref of an event binding is among its lane's `denied_refs`.
pub const BINDING_DENIED_REF: &str = "binding_denied_ref";

/// The supplied VCE envelope is not a JSON object, its `operational_tail` is not an array of
/// objects with a string `event_id` and `event_type`, or it holds what Python read but a
/// `Value` holds only as a stand-in (a lone surrogate, a number beyond a double), so the
/// cross-checks cannot be trusted. The reference raises on some of these and decides the
/// others without looking; Cairn fails closed.
pub const VCE_ENVELOPE_INVALID: &str = "vce_envelope_invalid";

/// `vce_envelope_id` differs from the supplied VCE envelope's `envelope_id`.
pub const VCE_ENVELOPE_MISMATCH: &str = "vce_envelope_mismatch";

/// An event binding names an event that the supplied VCE envelope's `operational_tail` does
/// not have (checked only when an envelope is supplied).
pub const BINDING_UNKNOWN_EVENT: &str = "binding_unknown_event";

/// A material event of the supplied VCE envelope (`tool_call`, `tool_result`,
/// `artifact_modified`, `verification_started`, `verification_result`) has no event binding
/// (checked only when an envelope is supplied).
pub const MATERIAL_EVENT_UNBOUND: &str = "material_event_unbound";

/// `restore_requirements.fail_closed` is not `true` (the schema already requires it).
pub const RESTORE_NOT_FAIL_CLOSED: &str = "restore_not_fail_closed";

/// Two required lane checks share a `check_id`.
pub const DUPLICATE_LANE_CHECK: &str = "duplicate_lane_check";

/// A required lane check names a lane the extension does not have.
pub const CHECK_UNKNOWN_LANE: &str = "check_unknown_lane";

/// A lane that is not `superseded` has no required `source_revalidation` check.
pub const LANE_NOT_REVALIDATED: &str = "lane_not_revalidated";

// ---------------------------------------------------------------------------------------------
// Stage 4: restore state.
// ---------------------------------------------------------------------------------------------

/// No restore results were supplied (absent or `null`).
pub const RESTORE_RESULTS_MISSING: &str = "restore_results_missing";

/// The restore results are not an object or do not satisfy
/// `responsibility-lane-restore-results.schema.json`; one finding per schema error.
pub const RESTORE_RESULTS_INVALID: &str = "restore_results_invalid";

/// The restore results' `extension_id` differs from the extension's.
pub const RESTORE_EXTENSION_MISMATCH: &str = "restore_extension_mismatch";

/// Two rows of `lane_checks` share a `check_id` (even rows that no check required).
pub const DUPLICATE_RESULT_CHECK: &str = "duplicate_result_check";

/// A required lane check has no row in `lane_checks`.
pub const LANE_CHECK_MISSING: &str = "lane_check_missing";

/// The row answering a required check names another lane than the check does.
pub const LANE_CHECK_WRONG_LANE: &str = "lane_check_wrong_lane";

/// A required check is still `pending`: the only *review* code. Nothing else is checked for
/// that lane; the decision is `REVIEW_REQUIRED` unless another finding blocks.
pub const LANE_CHECK_PENDING: &str = "lane_check_pending";

/// A required check reports `failed`.
pub const LANE_CHECK_FAILED: &str = "lane_check_failed";

/// A required check reports `conflict` (conflicting ownership).
pub const LANE_CHECK_CONFLICT: &str = "lane_check_conflict";

/// A `passed` check still lists `conflict_refs`.
pub const CONFLICT_REFS_PRESENT: &str = "conflict_refs_present";

/// A `passed` check observed another lane digest than the lane's `lane_digest`.
pub const LANE_DIGEST_STALE: &str = "lane_digest_stale";

/// A `passed` check did not revalidate every `source_ref` of its lane.
pub const SOURCE_REFS_UNCHECKED: &str = "source_refs_unchecked";

/// Every code, in stage order.
pub const ALL: &[&str] = &[
    SCHEMA_INVALID,
    EXTENSION_DIGEST_UNSUPPORTED,
    EXTENSION_DIGEST_MISMATCH,
    EXTENSION_DIGEST_UNCOMPUTABLE,
    LANE_DIGEST_MISMATCH,
    SHAPE_INVALID,
    DUPLICATE_LANE_ID,
    SCOPE_OVERLAP,
    SELF_DEPENDENCY,
    UNKNOWN_DEPENDENCY,
    UNKNOWN_ACTIVE_LANE,
    NEXT_ACTION_UNKNOWN_LANE,
    NEXT_ACTION_OUTSIDE_SCOPE,
    NEXT_ACTION_DENIED_REF,
    NEXT_ACTION_LANE_CLOSED,
    DUPLICATE_EVENT_BINDING,
    BINDING_UNKNOWN_LANE,
    BINDING_OUTSIDE_SCOPE,
    BINDING_DENIED_REF,
    VCE_ENVELOPE_INVALID,
    VCE_ENVELOPE_MISMATCH,
    BINDING_UNKNOWN_EVENT,
    MATERIAL_EVENT_UNBOUND,
    RESTORE_NOT_FAIL_CLOSED,
    DUPLICATE_LANE_CHECK,
    CHECK_UNKNOWN_LANE,
    LANE_NOT_REVALIDATED,
    RESTORE_RESULTS_MISSING,
    RESTORE_RESULTS_INVALID,
    RESTORE_EXTENSION_MISMATCH,
    DUPLICATE_RESULT_CHECK,
    LANE_CHECK_MISSING,
    LANE_CHECK_WRONG_LANE,
    LANE_CHECK_PENDING,
    LANE_CHECK_FAILED,
    LANE_CHECK_CONFLICT,
    CONFLICT_REFS_PRESENT,
    LANE_DIGEST_STALE,
    SOURCE_REFS_UNCHECKED,
];

/// Whether a finding with `code` only asks for review instead of blocking.
#[must_use]
pub fn is_review(code: &str) -> bool {
    code == LANE_CHECK_PENDING
}
