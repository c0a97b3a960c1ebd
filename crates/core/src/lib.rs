//! Cairn's pure foundation: identifiers, digests, canonical JSON, timestamps and error codes.
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
