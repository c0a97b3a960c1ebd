//! Fault tests of `cairn hook` (issue 6, acceptance 3): whatever breaks inside Cairn, a
//! `PreToolUse` is denied with exit 2 and the reason on stderr — never let through — and a
//! compaction is never blocked (exit 0).

use crate::common;

use std::path::Path;

use common::{Output, command_in};
use serde_json::json;

fn project() -> tempfile::TempDir {
    common::init_project()
}

fn hook(dir: &Path, host: &str, stdin: &serde_json::Value, fault: Option<&str>) -> Output {
    let mut command = command_in(dir);
    if let Some(fault) = fault {
        command.env("CAIRN_FAULT", fault);
    }
    common::hook(&mut command, host, &stdin.to_string())
}

fn pre_tool_use(dir: &Path, tool: &str) -> serde_json::Value {
    json!({
        "session_id": "fault-session", "cwd": dir, "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": tool,
        "tool_input": {"command": "git push --force"}, "tool_use_id": "toolu_f1"
    })
}

/// `cairn hook <host>` of a `PreToolUse` of `tool` (with `fault` injected, if any).
fn tool_call(dir: &Path, host: &str, tool: &str, fault: Option<&str>) -> Output {
    hook(dir, host, &pre_tool_use(dir, tool), fault)
}

fn pre_compact(dir: &Path) -> serde_json::Value {
    json!({"session_id": "fault-session", "cwd": dir, "hook_event_name": "PreCompact",
           "trigger": "auto", "custom_instructions": ""})
}

fn post_compact(dir: &Path) -> serde_json::Value {
    json!({"session_id": "fault-session", "cwd": dir, "hook_event_name": "PostCompact",
           "trigger": "auto", "compact_summary": "summary"})
}

/// Asserts the deny-with-exit-2 answer of a call Cairn could not decide.
#[track_caller]
fn assert_fail_closed(out: &Output, code: &str) {
    out.expect(2);
    assert!(out.stdout.trim().is_empty(), "{out:?}");
    assert!(
        out.stderr.contains("Cairn denied this `Bash` call"),
        "{out:?}"
    );
    assert!(out.stderr.contains(&format!("error[{code}]")), "{out:?}");
}

/// Asserts that compaction events are not blocked.
#[track_caller]
fn assert_compaction_passes(dir: &Path, fault: Option<&str>) {
    for stdin in [pre_compact(dir), post_compact(dir)] {
        let out = hook(dir, "claude-code", &stdin, fault);
        out.expect(0);
        let codex = hook(dir, "codex", &stdin, fault);
        codex.expect(0);
    }
}

#[test]
fn a_corrupt_store_denies_and_never_blocks_compaction() {
    let dir = project();
    std::fs::write(
        common::state(dir.path()).join("cairn.db"),
        b"this is not a SQLite database, it is garbage\0\x01\x02".repeat(200),
    )
    .unwrap();
    for host in ["claude-code", "codex"] {
        assert_fail_closed(&tool_call(dir.path(), host, "Bash", None), "not_a_store");
    }
    let out = hook(dir.path(), "claude-code", &pre_compact(dir.path()), None);
    out.expect(0);
    assert!(
        out.stdout.contains("continuity_evidence_missing"),
        "{out:?}"
    );
    assert_compaction_passes(dir.path(), None);
}

#[test]
fn a_store_written_by_a_newer_cairn_denies() {
    let dir = project();
    let db = common::state(dir.path()).join("cairn.db");
    // A first call creates the store; then its schema is pushed past this build's.
    tool_call(dir.path(), "claude-code", "Read", None).expect(0);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA user_version = 999;").unwrap();
    drop(conn);
    let out = tool_call(dir.path(), "claude-code", "Bash", None);
    assert_fail_closed(&out, "store_schema_too_new");
    assert_compaction_passes(dir.path(), None);
}

#[test]
fn an_unreadable_or_invalid_configuration_denies_and_never_blocks_compaction() {
    type Break = fn(&Path);
    let cases: [(&str, Break, &str); 5] = [
        (
            "tools.json is a folder",
            |p| {
                std::fs::remove_file(p.join(".cairn/tools.json")).unwrap();
                std::fs::create_dir(p.join(".cairn/tools.json")).unwrap();
            },
            "unreadable_input",
        ),
        (
            "a policy does not parse",
            |p| std::fs::write(p.join(".cairn/policies/broken.cedar"), "permit(principal").unwrap(),
            "policy_parse",
        ),
        (
            "hooks.json is not JSON",
            |p| std::fs::write(p.join(".cairn/hooks.json"), "{\"schema_version\": ").unwrap(),
            "hook_config_invalid",
        ),
        (
            "hooks.json is not valid UTF-8",
            |p| std::fs::write(p.join(".cairn/hooks.json"), [0xff, 0xfe, 0x00]).unwrap(),
            "hook_config_invalid",
        ),
        (
            "lanes.json does not validate",
            |p| {
                std::fs::write(
                    p.join(".cairn/lanes.json"),
                    "{\"schema_version\": \"cairn.lanes/v1\", \"lanes\": 3}",
                )
                .unwrap()
            },
            "invalid_input",
        ),
    ];
    for (what, break_it, code) in cases {
        let dir = project();
        break_it(dir.path());
        let out = tool_call(dir.path(), "claude-code", "Bash", None);
        out.expect(2);
        assert!(
            out.stderr.contains(&format!("error[{code}]")),
            "{what}: {out:?}"
        );
        let out = tool_call(dir.path(), "codex", "Bash", None);
        assert!(
            out.code == 2 && out.stdout.trim().is_empty(),
            "{what}: {out:?}"
        );
        assert_compaction_passes(dir.path(), None);
    }
}

#[test]
fn a_panic_inside_the_gate_denies_and_records_nothing() {
    let dir = project();
    tool_call(dir.path(), "claude-code", "Read", None).expect(0);
    let out = tool_call(dir.path(), "claude-code", "Bash", Some("gate-panic"));
    assert_fail_closed(&out, "hook_internal_panic");
    assert!(out.stderr.contains("the gate panicked"), "{out:?}");
    let out = tool_call(dir.path(), "codex", "Bash", Some("gate-panic"));
    assert_fail_closed(&out, "hook_internal_panic");
    // The panicking calls left no record: only the first call's.
    let runs = Output::of(command_in(dir.path()).args(["--json", "runs", "list"]));
    runs.expect(0);
    let runs = runs.json();
    assert_eq!(runs[0]["records"], 1, "{runs}");
    assert_compaction_passes(dir.path(), Some("gate-panic"));
    // The fault switch only ever denies: without it the same call is admitted again.
    tool_call(dir.path(), "claude-code", "Bash", None).expect(0);
    Output::of(command_in(dir.path()).args(["ledger", "verify", "--all"])).expect(0);
}

#[test]
fn a_corrupt_session_state_denies_until_it_is_removed() {
    let dir = project();
    tool_call(dir.path(), "claude-code", "Read", None).expect(0);
    let state = common::state(dir.path()).join("sessions/cc-fault-session.json");
    std::fs::write(
        &state,
        "{\"schema_version\": \"cairn.hook-session/v1\", \"steps\": [",
    )
    .unwrap();
    let out = tool_call(dir.path(), "claude-code", "Bash", None);
    assert_fail_closed(&out, "hook_state_invalid");
    assert_compaction_passes(dir.path(), None);
    std::fs::remove_file(&state).unwrap();
    tool_call(dir.path(), "claude-code", "Bash", None).expect(0);
}

#[test]
fn an_unknown_fault_name_changes_nothing() {
    let dir = project();
    tool_call(dir.path(), "claude-code", "Bash", Some("allow-everything")).expect(0);
}
