//! How the CLI fails: a stable code, a message naming the offending input, and the exit code
//! of SPEC §9.1. Every error of every crate is mapped here, once.

use std::fmt;

use cairn_core::ErrorCode;

/// Exit codes of SPEC §9.1.
pub mod exit {
    /// Pass, validated, intact.
    pub const OK: u8 = 0;
    /// Internal failure.
    pub const INTERNAL: u8 = 1;
    /// Invalid input or usage.
    pub const INVALID: u8 = 2;
    /// REVIEW_REQUIRED (VCE 0.1, RLC 0.1).
    pub const REVIEW: u8 = 3;
    /// BLOCKED / `continuity_validation_failed`.
    pub const BLOCKED: u8 = 4;
    /// Tamper detected.
    pub const TAMPER: u8 = 5;
    /// `blocked_on_reconciliation`.
    pub const RECONCILE: u8 = 6;
}

/// A failed command.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The stable code.
    pub code: &'static str,
    /// The message for people.
    pub message: String,
    /// The process exit code.
    pub exit: u8,
}

impl Failure {
    /// Invalid input or usage (exit 2).
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            exit: exit::INVALID,
        }
    }

    /// An internal failure (exit 1).
    pub fn internal(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            exit: exit::INTERNAL,
        }
    }

    /// Maps any Cairn error by its stable code.
    pub fn from_error<E: ErrorCode + fmt::Display>(error: &E) -> Self {
        let code = error.code();
        Self {
            code,
            message: error.to_string(),
            exit: exit_for(code),
        }
    }
}

/// Codes that mean the user gave something wrong; everything else is internal (exit 1).
fn exit_for(code: &'static str) -> u8 {
    const INVALID: &[&str] = &[
        "invalid_digest",
        "invalid_id",
        "invalid_timestamp",
        "invalid_input",
        "run_not_found",
        "run_terminated",
        "run_exists",
        "store_schema_too_new",
        "no_signing_key",
        "no_trusted_keys",
        "invalid_key_name",
        "invalid_key_file",
        "key_file_permissions",
        "keys_writable_by_others",
        "key_file_too_large",
        "private_key_in_pub_file",
        "invalid_active_key",
        "active_key_missing",
        "key_file_mismatch",
        "malformed_key",
        "unsupported_key_algorithm",
        "key_id_mismatch",
        "step_not_covered",
        "proof_malformed",
        "unsupported_store",
        "store_not_found",
        "not_a_store",
        "ambiguous_run",
        "unreadable_input",
        "policy_parse",
        "policy_missing_id",
        "policy_invalid_id",
        "policy_duplicate_id",
        "policy_invalid",
        "policy_template",
        "policy_empty",
        "tool_catalog",
        "invalid_continuity_state",
        "invalid_continuity_envelope",
        // Decision invariants (`cairn-decisions`) and their files (`runtime::decision_files`).
        "invalid_decision_kind",
        "invalid_ref",
        "decision_value_not_normalizable",
        "unknown_decision",
        "unknown_revision",
        "approval_not_forward",
        "approval_without_change",
        "revision_overflow",
        "hmac_key_mismatch",
        "observed_at_regressed",
        "snapshot_refused",
        "invalid_decision_snapshot",
        "snapshot_digest_mismatch",
        "invalid_decision_observation",
        "invalid_decision_book",
        "invalid_approved_change",
        "unkeyed_decision_digest",
        "decision_document_too_large",
        "no_project",
        "corrupt_decision_file",
        "decision_file_too_large",
        "invalid_snapshot_name",
        "boundary_before_snapshot",
    ];
    const TAMPER: &[&str] = &[
        // A bundle or a store that does not even parse is evidence of tampering too.
        "bundle_empty",
        "bundle_unreadable",
        "bundle_duplicate_checkpoint",
        "bundle_invalid_checkpoint",
        "store_corrupt",
        "record_modified",
        "checkpoint_rejected",
        "proof_mismatch",
        "proof_inconsistent",
    ];
    if INVALID.contains(&code) {
        exit::INVALID
    } else if TAMPER.contains(&code) {
        exit::TAMPER
    } else {
        exit::INTERNAL
    }
}

impl<E: ErrorCode + fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Self::from_error(&error)
    }
}
