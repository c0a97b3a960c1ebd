//! Shared helpers of the integration tests: a test HMAC key, timestamps relative to one
//! boundary, and a book of three decisions.

#![allow(dead_code, reason = "test code")]

use cairn_core::{HmacKey, Timestamp};
use cairn_decisions::{
    ApprovedChange, Comparison, DecisionBook, DecisionKind, Observation, RevisionRef, Snapshot,
    compare, digest_value,
};
use serde_json::{Value, json};

/// The boundary instant all tests use, as Unix seconds.
pub const BOUNDARY: i64 = 1_772_445_600; // 2026-03-02T10:00:00Z

/// The test key.
pub fn key() -> HmacKey {
    HmacKey::new("test-1", b"decisions test key".to_vec()).unwrap()
}

/// Another key.
pub fn other_key() -> HmacKey {
    HmacKey::new("test-2", b"another key".to_vec()).unwrap()
}

/// The boundary plus `secs` seconds.
pub fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_micros((BOUNDARY + secs) * 1_000_000).unwrap()
}

/// The boundary plus `micros` microseconds.
pub fn t_micros(micros: i64) -> Timestamp {
    Timestamp::from_unix_micros(BOUNDARY * 1_000_000 + micros).unwrap()
}

/// The boundary instant.
pub fn boundary() -> Timestamp {
    t(0)
}

/// Ten minutes.
pub fn window() -> jiff::SignedDuration {
    jiff::SignedDuration::from_mins(10)
}

pub fn scope() -> DecisionKind {
    DecisionKind::Scope
}

pub fn approval_boundary() -> DecisionKind {
    DecisionKind::ApprovalBoundary
}

pub fn acceptance_test() -> DecisionKind {
    DecisionKind::AcceptanceTest
}

pub fn target() -> DecisionKind {
    DecisionKind::Target
}

/// The values of the standard book.
pub fn value(kind: &DecisionKind) -> Value {
    match kind {
        DecisionKind::Scope => json!({"repository": "acme/api", "paths": ["src/"]}),
        DecisionKind::ApprovalBoundary => json!({"requires_human": ["deploy"]}),
        DecisionKind::AcceptanceTest => json!({"command": "cargo test"}),
        DecisionKind::Target => json!({"branch": "feature/x"}),
        other => json!({"custom": other.as_str()}),
    }
}

/// A book with scope, approval_boundary and acceptance_test set 30 minutes before the boundary.
pub fn book3() -> DecisionBook {
    let mut book = DecisionBook::new();
    for kind in [scope(), approval_boundary(), acceptance_test()] {
        let v = value(&kind);
        book.set(
            kind,
            &v,
            Some("ticket:T-1"),
            Some("cli:set"),
            t(-1800),
            &key(),
        )
        .unwrap();
    }
    book
}

/// The standard snapshot, taken 2 s before the boundary.
pub fn snapshot3() -> Snapshot {
    book3().snapshot(t(-2)).unwrap()
}

/// A fresh observation (30 s after the boundary) of `kind` at `revision` with `value`.
pub fn seen(kind: DecisionKind, value: &Value, revision: u32) -> Observation {
    Observation::of_value(
        kind,
        value,
        revision,
        t(30),
        Some("hook:session-start"),
        &key(),
    )
    .unwrap()
}

/// Fresh observations of the standard values, except the kinds listed.
pub fn fresh_except(skip: &[DecisionKind]) -> Vec<Observation> {
    [scope(), approval_boundary(), acceptance_test()]
        .into_iter()
        .filter(|k| !skip.contains(k))
        .map(|k| {
            let v = value(&k);
            seen(k, &v, 1)
        })
        .collect()
}

/// The revision ref of `value` at `revision` under the test key.
pub fn rev(kind: &DecisionKind, value: &Value, revision: u32) -> RevisionRef {
    RevisionRef {
        revision,
        value_digest: digest_value(kind, value, &key()).unwrap(),
    }
}

/// An approval of `kind` from (`from`, `from_value`) to (`to`, `to_value`), recorded 20 s after
/// the boundary.
pub fn approval(
    kind: &DecisionKind,
    from: (u32, &Value),
    to: (u32, &Value),
    approval_ref: &str,
) -> ApprovedChange {
    ApprovedChange::new(
        kind.clone(),
        rev(kind, from.1, from.0),
        rev(kind, to.1, to.0),
        approval_ref,
        t(20),
    )
    .unwrap()
}

/// `compare` at 5 minutes after the boundary with a 10-minute window.
pub fn judge(
    snapshot: &Snapshot,
    after: &[Observation],
    approvals: &[ApprovedChange],
) -> Comparison {
    compare(
        Some(snapshot),
        after,
        approvals,
        boundary(),
        t(300),
        window(),
    )
}
