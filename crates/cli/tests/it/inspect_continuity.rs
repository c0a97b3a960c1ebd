//! Issue 4, acceptance 1 (SPEC E-7): the continuity lab's canonical case under each variation
//! — the normal path, a tampered summary, a policy change, an unknown side effect, an approval
//! that is revoked or expired — and `authorized` is false in every run.

use std::process::Command;

use serde_json::{Value, json};

fn lab(flags: &[&str]) -> (Value, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["--json", "inspect-continuity"])
        .args(flags)
        .env_remove("CAIRN_STORE")
        .output()
        .expect("run cairn");
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(json["authorized"], false, "{flags:?}: {json}");
    assert_eq!(json["requires_reauthorization"], true, "{flags:?}: {json}");
    (json, out.status.code().unwrap())
}

#[test]
fn the_normal_path_requires_reauthorization_and_rehydrates() {
    let (json, code) = lab(&[]);
    assert_eq!(
        (json["status"].as_str(), json["reason"].as_str()),
        (
            Some("reauthorization_required"),
            Some("continuity_validated")
        )
    );
    assert_eq!(
        json["event_types"],
        json!(["context_compaction", "context_rehydration"])
    );
    assert_eq!(code, 0);
}

#[test]
fn a_tampered_summary_and_a_policy_change_fail_validation() {
    let (json, code) = lab(&["--tamper-summary"]);
    assert_eq!(
        (json["status"].as_str(), json["reason"].as_str()),
        (
            Some("continuity_validation_failed"),
            Some("summary_digest_mismatch")
        )
    );
    assert_eq!(code, 4);
    let (json, code) = lab(&["--current-policy-version", "policy-v5"]);
    assert_eq!(
        (json["status"].as_str(), json["reason"].as_str()),
        (
            Some("continuity_validation_failed"),
            Some("policy_version_changed")
        )
    );
    assert_eq!(
        json["event_types"],
        json!(["context_compaction", "continuity_validation_failed"])
    );
    assert_eq!(code, 4);
}

#[test]
fn an_unknown_side_effect_blocks_and_nothing_is_rehydrated() {
    for status in ["side_effect_unknown", "partial_side_effect"] {
        let (json, code) = lab(&["--side-effect-status", status]);
        assert_eq!(json["status"], "blocked_on_reconciliation", "{json}");
        assert_eq!(json["side_effect_status"], status);
        assert_eq!(
            json["event_types"],
            json!(["context_compaction"]),
            "no context_rehydration while blocked"
        );
        assert_eq!(code, 6);
    }
    // Aliases are accepted and reported canonically.
    let (json, code) = lab(&["--side-effect-status", "side_effect_committed"]);
    assert_eq!(
        (json["side_effect_status"].as_str(), code),
        (Some("applied"), 0)
    );
}

#[test]
fn an_approval_that_is_not_active_is_never_reused() {
    let (json, code) = lab(&["--approval-status", "revoked"]);
    assert_eq!(
        (json["reason"].as_str(), code),
        (Some("approval_revoked"), 4)
    );
    let (json, _) = lab(&["--approval-status", "pending"]);
    assert_eq!(json["reason"], "approval_not_active");
    let (json, _) = lab(&["--approval-status", "expired"]);
    assert_eq!(json["reason"], "approval_expired");
}

#[test]
fn bad_flags_are_usage_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args([
            "--json",
            "inspect-continuity",
            "--side-effect-status",
            "maybe",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "invalid_input");
}
