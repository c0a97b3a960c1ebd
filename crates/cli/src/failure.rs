//! How the CLI fails: a stable code, a message naming the offending input, and the exit code
//! of SPEC §9.1. An error's class (declared with its code, see [`cairn_core::error_codes!`])
//! decides the exit code, here, once.

use std::fmt;

use cairn_core::{Code, ErrorClass, ErrorCode};

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

/// The exit code of every error of `class`: the one place the CLI decides it.
#[must_use]
pub const fn exit_code(class: ErrorClass) -> u8 {
    match class {
        ErrorClass::Invalid
        | ErrorClass::NotFound
        | ErrorClass::Conflict
        | ErrorClass::Unauthenticated
        | ErrorClass::Forbidden
        | ErrorClass::TooLarge => exit::INVALID,
        ErrorClass::Tamper => exit::TAMPER,
        ErrorClass::Internal | ErrorClass::Unavailable => exit::INTERNAL,
    }
}

/// The codes the CLI answers with itself; the libraries' errors declare their own.
#[derive(Debug)]
pub struct CliCode;

cairn_core::error_codes! {
    CliCode {
        /// The command line does not parse.
        USAGE = Invalid("usage");
        /// An input file over the size limit.
        INPUT_TOO_LARGE = Invalid("input_too_large");
        /// An input document that is not JSON.
        MALFORMED_JSON = Invalid("malformed_json");
        /// An output file that cannot be written where the caller asked.
        UNWRITABLE_OUTPUT = Invalid("unwritable_output");
        /// A command this platform cannot run.
        UNSUPPORTED = Invalid("unsupported");
        /// A run id prefix that names more than one run.
        AMBIGUOUS_RUN = Invalid("ambiguous_run");
        /// A step index the run does not have.
        STEP_NOT_FOUND = NotFound("step_not_found");
        /// A run without its checkpoint, where one is needed.
        NO_CHECKPOINT = Invalid("no_checkpoint");
        /// A folder with no scenario files.
        NO_SCENARIOS = Invalid("no_scenarios");
        /// A stored record that no longer reads.
        RECORD_UNREADABLE = Tamper("record_unreadable");
        /// Retained content that does not hash to its digest.
        CONTENT_DIGEST_MISMATCH = Tamper("content_digest_mismatch");
        /// A bundled schema that does not compile.
        SCHEMA_COMPILE = Internal("schema_compile");
        /// A file or folder of Cairn's own that cannot be read or written.
        IO = Internal("io");
        /// A fault in Cairn itself.
        INTERNAL = Internal("internal");
        /// The service refused a request with a code this CLI does not know.
        SERVICE_REFUSED = Invalid("service_refused");
    }
}

impl Failure {
    /// A failure with `code`; the exit code follows from the code's class.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code: code.name(),
            message: message.into(),
            exit: exit_code(code.class()),
        }
    }

    /// Maps any Cairn error by its declared code and class.
    pub fn from_error<E: ErrorCode + fmt::Display>(error: &E) -> Self {
        Self::new(error.error_code(), error.to_string())
    }

    /// An error about a file the caller named on the command line: whatever went wrong with
    /// it (even reading it), the caller's input is at fault, so the exit code is 2.
    pub fn about_named_file<E: ErrorCode>(error: &E, message: impl Into<String>) -> Self {
        Self {
            code: error.code(),
            message: message.into(),
            exit: exit::INVALID,
        }
    }
}

impl<E: ErrorCode + fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Self::from_error(&error)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use cairn_core::{Code, ErrorClass};

    use super::{CliCode, exit, exit_code};

    /// Every code table of the workspace. A new error type adds its `CODES` here.
    fn every_table() -> Vec<(&'static str, &'static [Code])> {
        vec![
            ("CoreError", cairn_core::CoreError::CODES),
            (
                "StrictJsonError",
                cairn_core::strict_json::StrictJsonError::CODES,
            ),
            ("StoreError", cairn_ledger::StoreError::CODES),
            ("GatewayError", cairn_mcp::GatewayError::CODES),
            ("BundleError", cairn_ledger::bundle::BundleError::CODES),
            (
                "CheckpointError",
                cairn_ledger::checkpoint::CheckpointError::CODES,
            ),
            ("KeyError", cairn_ledger::keys::KeyError::CODES),
            ("MerkleError", cairn_ledger::merkle::MerkleError::CODES),
            ("ProofError", cairn_ledger::proof::ProofError::CODES),
            ("CopyError", cairn_ledger::copy::CopyError::CODES),
            ("PolicyLoadError", cairn_policy::PolicyLoadError::CODES),
            ("ContinuityError", cairn_continuity::ContinuityError::CODES),
            (
                "ScenarioError",
                cairn_continuity::eval::ScenarioError::CODES,
            ),
            ("VceError", cairn_interop::vce::VceError::CODES),
            ("RlcError", cairn_interop::rlc::RlcError::CODES),
            ("DecisionError", cairn_decisions::DecisionError::CODES),
            ("RuntimeError", cairn_runtime::RuntimeError::CODES),
            ("KeyringError", cairn_runtime::keyring::KeyringError::CODES),
            (
                "ApprovalError",
                cairn_runtime::approvals::ApprovalError::CODES,
            ),
            (
                "DecisionFilesError",
                cairn_runtime::decision_files::DecisionFilesError::CODES,
            ),
            ("HookError", cairn_hooks::HookError::CODES),
            ("ServerCode", cairn_server::ServerCode::CODES),
            ("TokenError", cairn_server::tokens::TokenError::CODES),
            ("ClientError", cairn_server::client::ClientError::CODES),
            ("CliCode", CliCode::CODES),
        ]
    }

    #[test]
    fn every_code_is_declared_once_in_snake_case() {
        let mut seen: HashMap<&str, &str> = HashMap::new();
        for (table, codes) in every_table() {
            for code in codes {
                let name = code.name();
                assert!(
                    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{table}: `{name}` is not snake_case"
                );
                if let Some(first) = seen.insert(name, table) {
                    panic!("`{name}` is declared by {first} and again by {table}");
                }
            }
        }
        assert!(seen.len() > 100, "the tables were read: {}", seen.len());
    }

    #[test]
    fn each_class_has_its_exit_code() {
        assert_eq!(exit_code(ErrorClass::Invalid), exit::INVALID);
        assert_eq!(exit_code(ErrorClass::NotFound), exit::INVALID);
        assert_eq!(exit_code(ErrorClass::Conflict), exit::INVALID);
        assert_eq!(exit_code(ErrorClass::Tamper), exit::TAMPER);
        assert_eq!(exit_code(ErrorClass::Internal), exit::INTERNAL);
        assert_eq!(exit_code(ErrorClass::Unavailable), exit::INTERNAL);
    }

    /// The exit codes scripts already rely on, code by code (SPEC §9.1).
    #[test]
    fn published_codes_keep_their_exit() {
        let by_name: HashMap<&str, Code> = every_table()
            .into_iter()
            .flat_map(|(_, codes)| codes.iter().map(|c| (c.name(), *c)))
            .collect();
        for (name, want) in [
            ("run_not_found", exit::INVALID),
            ("run_exists", exit::INVALID),
            ("policy_parse", exit::INVALID),
            ("no_signing_key", exit::INVALID),
            ("unknown_decision", exit::INVALID),
            ("store_corrupt", exit::TAMPER),
            ("record_modified", exit::TAMPER),
            ("bundle_unreadable", exit::TAMPER),
            ("record_unreadable", exit::TAMPER),
            ("store_backend", exit::INTERNAL),
            ("internal", exit::INTERNAL),
        ] {
            assert_eq!(exit_code(by_name[name].class()), want, "`{name}`");
        }
    }
}
