//! `continuity-envelope/v1`: parsing never panics; an envelope that validates survives a
//! round trip through JSON and decides the same way twice.

#![no_main]

use cairn_continuity::{ContinuityState, decide_validated, parse_envelope, validate_envelope};
use libfuzzer_sys::fuzz_target;

const STATE: &str = include_str!("../../crates/continuity/tests/cases/ok-bare/state.json");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(envelope) = parse_envelope(text) else {
        return;
    };
    let value = envelope.to_json();
    let again = validate_envelope(&value).expect("a valid envelope validates again");
    let state_value: serde_json::Value = serde_json::from_str(STATE).expect("state");
    let state = ContinuityState::from_value(&state_value).expect("state");
    let now: cairn_core::Timestamp = "2026-07-22T12:00:00Z".parse().expect("time");
    let digest = cairn_continuity::summary_sha256("summary");
    let first = decide_validated(&envelope, &state, &digest, now);
    let second = decide_validated(&again, &state, &digest, now);
    assert_eq!(first.status(), second.status());
    assert_eq!(first.reason(), second.reason());
});
