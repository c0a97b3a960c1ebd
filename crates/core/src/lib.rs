//! Cairn's pure foundation: identifiers, digests, canonical JSON, timestamps and error codes.
//!
//! A digest over canonical JSON, and an instant read strictly:
//!
//! ```
//! use cairn_core::canonical::jcs;
//! use cairn_core::{Digest, Timestamp};
//! use serde_json::json;
//!
//! // RFC 8785: keys sorted, no spaces — the bytes Cairn's digests are over.
//! let bytes = jcs(&json!({"b": 2, "a": [1, "x"]}))?;
//! assert_eq!(bytes, br#"{"a":[1,"x"],"b":2}"#);
//! assert!(Digest::of(&bytes).to_string().starts_with("sha256:"));
//!
//! // Instants compare across offsets.
//! let at: Timestamp = "2026-12-03T10:00:00+01:00".parse()?;
//! assert_eq!(at, "2026-12-03T09:00:00Z".parse::<Timestamp>()?);
//! # Ok::<(), cairn_core::CoreError>(())
//! ```
//!
//! Nothing in this crate performs I/O, reads the clock or draws randomness; callers pass
//! those in. Everything here is deterministic so that every crate above can rely on the same
//! bytes producing the same digest on every machine.

pub mod allow_deny;
pub mod canonical;
pub mod digest;
pub mod error;
pub mod fast_jcs;
pub mod ids;
pub mod normalize;
pub mod py_json;
pub mod report;
pub mod rfc3339;
pub mod strict_json;
pub mod time;

pub use allow_deny::AllowDeny;
pub use canonical::Canonicalization;
pub use digest::{Digest, HmacKey, KeyedDigest};
pub use error::{Code, CoreError, ErrorClass, ErrorCode};
pub use ids::{Id, LaneId, RunId, TaskId, TenantId};
pub use report::CodedFinding;
pub use time::{Clock, FixedClock, SystemClock, Timestamp};
