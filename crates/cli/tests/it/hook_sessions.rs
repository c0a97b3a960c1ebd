//! Recorded hook sessions, replayed against the built `cairn` binary (issue 6, acceptance 1).
//!
//! Each folder of `tests/hook_sessions/` is one session:
//!
//! - `events.jsonl` — one line per step, in order:
//!   - `{"host": "claude-code"|"codex", "stdin": {…}}` runs `cairn hook <host>` with the
//!     object as its stdin (as the host sends it), or `"stdin_raw": "text"` for bytes that are
//!     not JSON;
//!   - `{"cli": ["reconcile", …]}` runs a `cairn` command line in the project (a person's
//!     step: reconciling, approving a decision change);
//!   - optional `"env": {"NAME": "value"}` for that step;
//!   - `"expect": {"exit": N, "stdout": <partial JSON or null>, "stdout_contains": "…",
//!     "stderr_contains": "…"}` (each key optional; `exit` defaults to 0). A `null` stdout
//!     means nothing was printed. A partial match requires every key of an expected object,
//!     arrays element by element, and equal scalars — except strings starting with `~`,
//!     which must be contained in the actual string;
//!   - `"note"` is for the reader.
//! - `cairn/` (optional) — files copied into the project's `.cairn/` after `cairn init` made
//!   it (`cairn/lanes.json`, `cairn/policies/*.cedar`, `cairn/hooks.json`; the folder is not
//!   named `.cairn` because the repository ignores those); `project/` (optional) — files copied
//!   into the project root.
//! - `case.json` (optional) — `{"init": false}` for a folder without `.cairn/`.
//!
//! `${PROJECT}` in any of these files is replaced by the project's path. After the last step,
//! `cairn ledger verify --all` must pass (when the session wrote a store).

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use common::{Output, command_in, matches, strings};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/hook_sessions")
}

/// Replaces `${PROJECT}` with the project's path.
fn substitute(text: &str, project: &Path) -> String {
    text.replace("${PROJECT}", project.to_str().unwrap())
}

fn copy_tree(from: &Path, to: &Path, project: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target, project);
        } else {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            std::fs::write(&target, substitute(&text, project)).unwrap();
        }
    }
}

fn run_step(case: &str, line: usize, step: &Value, project: &Path) {
    let mut command = command_in(project);
    command.env_remove("CAIRN_FAULT");
    if let Some(env) = step.get("env").and_then(Value::as_object) {
        for (name, value) in env {
            command.env(name, value.as_str().unwrap());
        }
    }
    let out = if let Some(args) = step.get("cli") {
        let args: Vec<&str> = args
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        Output::of(command.args(&args))
    } else {
        let host = step["host"].as_str().unwrap();
        let stdin = match (step.get("stdin"), step.get("stdin_raw")) {
            (Some(json), None) => json.to_string(),
            (None, Some(Value::String(raw))) => raw.clone(),
            _ => panic!("{case}:{line}: a step needs `stdin`, `stdin_raw` or `cli`"),
        };
        common::hook(&mut command, host, &stdin)
    };
    let expect = step.get("expect").cloned().unwrap_or(Value::Null);
    let context = || {
        format!(
            "{case}:{line}: {}\n--- exit {}\n--- stdout\n{}\n--- stderr\n{}",
            out.args, out.code, out.stdout, out.stderr
        )
    };
    let exit = expect.get("exit").and_then(Value::as_i64).unwrap_or(0);
    assert_eq!(i64::from(out.code), exit, "{}", context());
    match expect.get("stdout") {
        None => {}
        Some(Value::Null) => assert!(out.stdout.trim().is_empty(), "{}", context()),
        Some(expected) => {
            let actual: Value = serde_json::from_str(out.stdout.trim())
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", context()));
            assert!(
                matches(expected, &actual),
                "stdout does not match {expected}: {}",
                context()
            );
        }
    }
    for needle in strings(expect.get("stdout_contains")) {
        assert!(
            out.stdout.contains(&needle),
            "stdout lacks `{needle}`: {}",
            context()
        );
    }
    for needle in strings(expect.get("stderr_contains")) {
        assert!(
            out.stderr.contains(&needle),
            "stderr lacks `{needle}`: {}",
            context()
        );
    }
    for needle in strings(expect.get("stdout_lacks")) {
        assert!(
            !out.stdout.contains(&needle),
            "stdout has `{needle}`: {}",
            context()
        );
    }
}

fn run_case(dir: &Path) {
    let case = dir.file_name().unwrap().to_string_lossy().into_owned();
    let temp = tempfile::Builder::new()
        .prefix("cairn-hook-session-")
        .tempdir()
        .unwrap();
    let project = temp.path().canonicalize().unwrap();
    let settings: Value = std::fs::read_to_string(dir.join("case.json"))
        .map_or(Value::Null, |text| serde_json::from_str(&text).unwrap());
    if settings.get("init").and_then(Value::as_bool) != Some(false) {
        Output::of(command_in(&project).args(["init", "--dir", project.to_str().unwrap()]))
            .expect(0);
    }
    if dir.join("cairn").is_dir() {
        std::fs::create_dir_all(project.join(".cairn")).unwrap();
        copy_tree(&dir.join("cairn"), &project.join(".cairn"), &project);
    }
    if dir.join("project").is_dir() {
        copy_tree(&dir.join("project"), &project, &project);
    }
    let events = substitute(
        &std::fs::read_to_string(dir.join("events.jsonl")).unwrap(),
        &project,
    );
    let mut steps = 0;
    for (i, line) in events.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let step: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{case}:{}: not JSON: {e}", i + 1));
        run_step(&case, i + 1, &step, &project);
        steps += 1;
    }
    assert!(steps > 0, "{case}: no steps");
    if project.join(".cairn/cairn.db").exists() {
        Output::of(command_in(&project).args(["ledger", "verify", "--all"])).expect(0);
    }
}

#[test]
fn recorded_hook_sessions_replay_with_their_expected_answers() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("events.jsonl").is_file())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 6,
        "expected the recorded sessions, found {cases:?}"
    );
    for case in &cases {
        run_case(case);
    }
}

#[test]
fn partial_matching_follows_its_rules() {
    let actual = serde_json::json!({"a": {"b": "hello world", "c": 1}, "d": [1, 2]});
    assert!(matches(&serde_json::json!({"a": {"b": "~world"}}), &actual));
    assert!(!matches(&serde_json::json!({"a": {"b": "world"}}), &actual));
    assert!(!matches(&serde_json::json!({"d": [1]}), &actual));
    assert!(!matches(&serde_json::json!({"e": null}), &actual));
}

#[test]
fn parallel_calls_of_one_session_are_each_recorded_once() {
    let temp = tempfile::tempdir().unwrap();
    let project = temp.path().canonicalize().unwrap();
    Output::of(command_in(&project).args(["init", "--dir", project.to_str().unwrap()])).expect(0);
    let children: Vec<_> = (0..8)
        .map(|i| {
            let stdin = serde_json::json!({
                "session_id": "parallel", "cwd": project, "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": format!("echo {i}")},
                "tool_use_id": format!("toolu_{i}"),
            });
            let mut child = command_in(&project)
                .args(["hook", "claude-code"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.to_string().as_bytes())
                .unwrap();
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runs = Output::of(command_in(&project).args(["--json", "runs", "list"]));
    assert_eq!(runs.expect(0).json()[0]["records"], 8);
    Output::of(command_in(&project).args(["ledger", "verify", "--all"])).expect(0);
}
