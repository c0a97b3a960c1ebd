//! The published continuity formats Cairn interoperates with, decided exactly as their Python
//! references decide (SPEC §5 and §7, Appendix A):
//!
//! - [`vce`]: VCE 0.1, a Verifiable Continuation Envelope with the restore results observed
//!   after a boundary → `RESUMABLE | REVIEW_REQUIRED | BLOCKED`;
//! - [`rlc`]: RLC 0.1, the Responsibility Lane extension with its lane restore results →
//!   `PASSED | REVIEW_REQUIRED | BLOCKED`;
//! - [`sort_keys`]: `json-sort-keys-utf8-v1`, the canonical form both formats digest;
//! - [`py_json`]: JSON text read as Python's `json.loads` reads it, so that documents the
//!   references accept or refuse are accepted or refused here too;
//! - [`request`]: one check as a single document (a `--jsonl` line, a service request).
//!
//! Every report lists every finding of the deciding stage, each with a stable code. The JSON
//! Schema checks run with the semantics of Python's `jsonschema` (a private module, with the
//! speed machinery that lets a decision cost a few microseconds); callers see only the
//! validators.
//!
//! ```
//! use cairn_interop::py_json;
//! use cairn_interop::vce::{VceDecision, VceValidator, codes};
//!
//! let validator = VceValidator::new()?;
//! // Read as Python reads it, then decided: an empty object fails the envelope schema.
//! let envelope = py_json::parse("{}")?;
//! let report = validator.check_read(&envelope, None);
//! assert_eq!(report.decision, VceDecision::Blocked);
//! assert!(report.findings.iter().all(|f| f.code == codes::SCHEMA_INVALID));
//!
//! // The canonical form both formats digest: sorted keys, no spaces, Python's floats.
//! let document = serde_json::json!({"b": 1e16, "a": 0.5});
//! let bytes = cairn_interop::sort_keys::sort_keys_utf8_v1(&document)?;
//! assert_eq!(bytes, br#"{"a":0.5,"b":1e+16}"#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The crate is pure: no I/O, no clock, and no panic on any document.

mod lookup;
pub mod request;
pub mod rlc;
mod schema;
pub mod sort_keys;
pub mod vce;

/// The reader of both formats' documents, shared with Cairn's own continuity documents.
pub use cairn_core::py_json;

pub use rlc::{RlcDecision, RlcError, RlcReport, RlcValidator};
pub use vce::{VceDecision, VceError, VceReport, VceValidator};
