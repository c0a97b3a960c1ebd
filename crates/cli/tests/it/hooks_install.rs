//! `cairn hooks install|uninstall`: merging into the hosts' settings without clobbering,
//! idempotence, refusing malformed settings, scaffolding `.cairn/` in observe-first mode,
//! and removing exactly what was added.

use crate::common;

use std::path::Path;

use common::{Output, command_in};
use serde_json::{Value, json};

fn cairn(dir: &Path, args: &[&str]) -> Output {
    Output::of(command_in(dir).args(args))
}

/// What `hooks install` has Claude Code run (exec form: the program and its arguments, which
/// [`commands`] joins with spaces).
const CLAUDE: &str = "cairn-hook claude-code --project ${CLAUDE_PROJECT_DIR}";

/// The command `hooks install` writes for Codex in the project at `dir`.
fn codex_command(dir: &Path) -> String {
    format!("exec cairn-hook codex --project '{}'", dir.display())
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every handler under `hooks.<event>`.
fn handlers(settings: &Value, event: &str) -> Vec<Value> {
    settings["hooks"][event]
        .as_array()
        .map(|groups| {
            groups
                .iter()
                .flat_map(|g| g["hooks"].as_array().unwrap().iter().cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// What every handler under `hooks.<event>` runs: its `command`, then its `args` (exec form).
fn commands(settings: &Value, event: &str) -> Vec<String> {
    handlers(settings, event)
        .iter()
        .map(|h| {
            std::iter::once(h["command"].as_str().unwrap())
                .chain(
                    h["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| a.as_str().unwrap()),
                )
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn install_into_a_fresh_folder_scaffolds_observe_first_and_uninstall_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = cairn(d, &["hooks", "install", "--claude-code"]);
    out.expect(0);
    assert!(out.stdout.contains("observe-first"), "{out:?}");
    assert!(d.join(".cairn/policies/starter.cedar").is_file());
    // The key lives in the project's state folder, outside the working tree.
    assert!(common::state(d).join("keys/active").exists());
    assert!(!d.join(".cairn/keys").exists());
    let gitignore = std::fs::read_to_string(d.join(".cairn/.gitignore")).unwrap();
    assert!(gitignore.contains("keys/") && gitignore.contains("cairn.db"));
    let settings = read(&d.join(".claude/settings.json"));
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "PostCompact",
        "Stop",
        "SessionEnd",
    ] {
        assert_eq!(commands(&settings, event), [CLAUDE], "{event}");
    }
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["hooks"][0],
        json!({"type": "command", "command": "cairn-hook",
               "args": ["claude-code", "--project", "${CLAUDE_PROJECT_DIR}"],
               "onFailure": "block", "timeout": 60}),
        "exec form, no shell; the host refuses a call whose gate fails to answer"
    );
    for event in [
        "SessionStart",
        "PostToolUse",
        "PreCompact",
        "Stop",
        "SessionEnd",
    ] {
        assert!(
            handlers(&settings, event)[0].get("onFailure").is_none(),
            "{event}: only the gate's failure refuses anything"
        );
    }
    // The installed project is usable at once: a call is allowed (no decision) and recorded.
    let mut child = command_in(d)
        .args(["hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let call = json!({"session_id": "s", "cwd": d, "hook_event_name": "PreToolUse",
                      "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t"});
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        call.to_string().as_bytes(),
    )
    .unwrap();
    let answer = child.wait_with_output().unwrap();
    assert_eq!(answer.status.code(), Some(0));
    assert!(answer.stdout.is_empty());
    let runs = Output::of(command_in(d).args(["--json", "runs", "list"]));
    assert_eq!(runs.json()[0]["run_id"], "cc-s");
    let out = cairn(d, &["hooks", "uninstall", "--claude-code"]);
    out.expect(0);
    assert!(!d.join(".claude/settings.json").exists());
    assert!(!d.join(".claude").exists());
    assert!(d.join(".cairn").is_dir(), "the project and its ledger stay");
}

#[test]
fn install_keeps_existing_settings_and_hooks_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    let before = json!({
        "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
        "env": {"FOO": "bar"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/check-bash.sh", "timeout": 5}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}]
        }
    });
    std::fs::write(
        d.join(".claude/settings.json"),
        serde_json::to_string_pretty(&before).unwrap(),
    )
    .unwrap();
    cairn(d, &["hooks", "install", "--claude-code"]).expect(0);
    let once = std::fs::read(d.join(".claude/settings.json")).unwrap();
    let settings: Value = serde_json::from_slice(&once).unwrap();
    assert_eq!(settings["permissions"], before["permissions"]);
    assert_eq!(settings["env"], before["env"]);
    assert_eq!(
        settings["hooks"]["Notification"],
        before["hooks"]["Notification"]
    );
    assert_eq!(
        commands(&settings, "PreToolUse"),
        ["./scripts/check-bash.sh", CLAUDE]
    );
    // Twice: nothing added, the file byte for byte the same.
    let out = cairn(d, &["hooks", "install", "--claude-code"]);
    out.expect(0);
    assert!(out.stdout.contains("already installed"), "{out:?}");
    assert_eq!(
        std::fs::read(d.join(".claude/settings.json")).unwrap(),
        once
    );
    // Uninstall removes exactly what install added.
    cairn(d, &["hooks", "uninstall", "--claude-code"]).expect(0);
    assert_eq!(read(&d.join(".claude/settings.json")), before);
    // Uninstalling again changes nothing.
    cairn(d, &["hooks", "uninstall", "--claude-code"]).expect(0);
    assert_eq!(read(&d.join(".claude/settings.json")), before);
}

#[test]
fn malformed_settings_are_an_error_and_never_overwritten() {
    for bad in [
        "{\"hooks\": {\"PreToolUse\": [",
        "[1, 2]",
        "{\"hooks\": {\"Stop\": {\"command\": \"x\"}}}",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join(".claude")).unwrap();
        std::fs::write(d.join(".claude/settings.json"), bad).unwrap();
        let out = Output::of(command_in(d).args(["--json", "hooks", "install", "--claude-code"]));
        out.expect(2);
        assert_eq!(out.error_code(), "settings_malformed", "{bad}");
        assert_eq!(
            std::fs::read_to_string(d.join(".claude/settings.json")).unwrap(),
            bad
        );
        assert!(
            !d.join(".cairn").exists(),
            "nothing is scaffolded when the settings are refused"
        );
    }
}

#[test]
fn codex_gets_its_own_file_and_both_hosts_install_together() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".codex")).unwrap();
    let before = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "python3 .codex/hooks/stop.py", "timeout": 30}]}]}});
    std::fs::write(d.join(".codex/hooks.json"), before.to_string()).unwrap();
    let out = cairn(
        d,
        &[
            "hooks",
            "install",
            "--codex",
            "--claude-code",
            "--dir",
            d.to_str().unwrap(),
        ],
    );
    out.expect(0);
    // Codex runs no project hook until the project and the hooks are trusted (issue 16, B7).
    assert!(
        out.stdout.contains("codex exec --trust") && out.stdout.contains("Trust all and continue"),
        "{out:?}"
    );
    let codex = read(&d.join(".codex/hooks.json"));
    assert_eq!(
        commands(&codex, "Stop"),
        ["python3 .codex/hooks/stop.py".to_owned(), codex_command(d)]
    );
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "SessionEnd",
    ] {
        assert_eq!(commands(&codex, event), [codex_command(d)], "{event}");
    }
    // Codex clamps a `SessionEnd` hook's timeout to 3 s and warns above it (issue 16, B6).
    assert_eq!(codex["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 3);
    assert_eq!(codex["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 60);
    assert!(codex["hooks"].get("PostToolUseFailure").is_none());
    assert!(d.join(".claude/settings.json").is_file());
    let out = Output::of(command_in(d).args(["--json", "hooks", "uninstall", "--codex"]));
    out.expect(0);
    assert_eq!(read(&d.join(".codex/hooks.json")), before);
    assert!(
        d.join(".claude/settings.json").is_file(),
        "only --codex was removed"
    );
}

#[test]
fn an_existing_project_is_kept_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".cairn/policies")).unwrap();
    std::fs::write(
        d.join(".cairn/policies/strict.cedar"),
        "@id(\"only-read\")\npermit(principal, action == Action::\"Read\", resource);\n",
    )
    .unwrap();
    let out = cairn(d, &["hooks", "install", "--claude-code"]);
    out.expect(0);
    assert!(out.stdout.contains("kept the existing"), "{out:?}");
    assert!(
        !d.join(".cairn/policies/starter.cedar").exists(),
        "an observe-all policy is never added to a project that has its own"
    );
}

#[test]
fn a_host_is_required() {
    let dir = tempfile::tempdir().unwrap();
    cairn(dir.path(), &["hooks", "install"]).expect(2);
}

#[test]
fn issue_15_install_keeps_every_byte_it_does_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    let before = "{\n    \"big\": 123456789012345678901234567890,\n    \"zero\": -0,\n    \"float\": 1.50,\n    \"nested\": {\"b\": 1, \"a\": [1,2,  3]}\n}\n";
    std::fs::write(d.join(".claude/settings.json"), before).unwrap();
    cairn(d, &["hooks", "install", "--claude-code"]).expect(0);
    let after = std::fs::read_to_string(d.join(".claude/settings.json")).unwrap();
    for kept in [
        "\"big\": 123456789012345678901234567890,",
        "\"zero\": -0,",
        "\"float\": 1.50,",
        "\"nested\": {\"b\": 1, \"a\": [1,2,  3]}",
    ] {
        assert!(after.contains(kept), "lost `{kept}`:\n{after}");
    }
    assert_eq!(
        commands(&read(&d.join(".claude/settings.json")), "Stop"),
        [CLAUDE]
    );
    // Uninstalling gives back the very bytes.
    cairn(d, &["hooks", "uninstall", "--claude-code"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(d.join(".claude/settings.json")).unwrap(),
        before
    );
}

#[test]
fn issue_15_duplicate_keys_are_refused_not_collapsed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    let bad = r#"{"env": {"A": "1"}, "env": {"B": "2"}}"#;
    std::fs::write(d.join(".claude/settings.json"), bad).unwrap();
    let out = Output::of(command_in(d).args(["--json", "hooks", "install", "--claude-code"]));
    out.expect(2);
    assert_eq!(out.error_code(), "settings_malformed");
    assert!(out.stdout.contains("json_duplicate_key"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(d.join(".claude/settings.json")).unwrap(),
        bad
    );
}

#[cfg(unix)]
#[test]
fn issue_15_a_symlinked_settings_file_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    std::fs::create_dir_all(d.join("dotfiles")).unwrap();
    std::fs::write(d.join("dotfiles/claude.json"), "{\"env\": {}}\n").unwrap();
    std::os::unix::fs::symlink(
        d.join("dotfiles/claude.json"),
        d.join(".claude/settings.json"),
    )
    .unwrap();
    cairn(d, &["hooks", "install", "--claude-code"]).expect(0);
    let link = std::fs::symlink_metadata(d.join(".claude/settings.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link stays a link");
    assert_eq!(
        commands(&read(&d.join("dotfiles/claude.json")), "PreToolUse"),
        [CLAUDE]
    );
}

#[test]
fn issue_15_an_older_cairn_command_is_brought_up_to_date() {
    // As the first installs wrote it, as installs before the `exec` did, and as installs before
    // the exec form did (issue 16).
    for older in [
        "cairn hook claude-code",
        "cairn-hook claude-code --project \"$CLAUDE_PROJECT_DIR\"",
        "exec cairn-hook claude-code --project \"$CLAUDE_PROJECT_DIR\"",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join(".claude")).unwrap();
        let old = format!(
            "{{\"hooks\": {{\"PreToolUse\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": {}, \"timeout\": 30}}]}}]}}}}\n",
            Value::String(older.to_owned())
        );
        std::fs::write(d.join(".claude/settings.json"), &old).unwrap();
        cairn(d, &["hooks", "install", "--claude-code"]).expect(0);
        let text = std::fs::read_to_string(d.join(".claude/settings.json")).unwrap();
        let settings: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            commands(&settings, "PreToolUse"),
            [CLAUDE],
            "`{older}` updated, not doubled"
        );
        let handler = &handlers(&settings, "PreToolUse")[0];
        assert_eq!(handler["onFailure"], "block");
        assert_eq!(handler["timeout"], 30, "the user's timeout is kept");
        // The handler was edited where it stands (the first in the file), Cairn's fields
        // following its `command`, the user's `timeout` after them as before.
        let at = |key: &str| text.find(&format!("\"{key}\"")).unwrap();
        assert!(
            at("type") < at("command")
                && at("command") < at("args")
                && at("args") < at("onFailure")
                && at("onFailure") < at("timeout"),
            "{text}"
        );
        // Once up to date, another install changes nothing.
        cairn(d, &["hooks", "install", "--claude-code"]).expect(0);
        assert_eq!(
            std::fs::read_to_string(d.join(".claude/settings.json")).unwrap(),
            text
        );
        cairn(d, &["hooks", "uninstall", "--claude-code"]).expect(0);
        assert!(
            !d.join(".claude/settings.json").exists()
                || commands(&read(&d.join(".claude/settings.json")), "PreToolUse").is_empty()
        );
    }
}

/// Issue 16, B8: the scaffold's catalog declares the hosts' own tools, so the first policy a
/// user writes — forbid `Bash` — is valid, and every other tool still runs.
#[test]
fn issue_16_the_first_policy_a_user_writes_against_the_scaffold_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cairn(d, &["hooks", "install", "--claude-code", "--codex"]).expect(0);
    std::fs::write(
        d.join(".cairn/policies/no-bash.cedar"),
        "@id(\"team.no-bash\")\nforbid(principal, action == Action::\"Bash\", resource)\nwhen { context.args has command && context.args.command like \"*rm -rf*\" };\n",
    )
    .unwrap();
    cairn(d, &["policy", "check"]).expect(0);
    let explain = |tool: &str, args: &str| {
        let out = cairn(
            d,
            &[
                "--json", "policy", "explain", "--tool", tool, "--args", args,
            ],
        );
        out.expect(0);
        out.json()["decision"]["decision"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(explain("Bash", r#"{"command": "rm -rf /"}"#), "deny");
    assert_eq!(explain("Bash", r#"{"command": "ls"}"#), "allow");
    for (tool, args) in [
        ("Read", r#"{"file_path": "/x"}"#),
        ("Write", r#"{"file_path": "/x", "content": "y"}"#),
        (
            "Edit",
            r#"{"file_path": "/x", "old_string": "a", "new_string": "b"}"#,
        ),
        ("Glob", r#"{"pattern": "*.rs"}"#),
        ("Grep", r#"{"pattern": "fn"}"#),
        (
            "Agent",
            r#"{"description": "d", "prompt": "p", "subagent_type": "general-purpose"}"#,
        ),
        (
            "WebFetch",
            r#"{"url": "https://example.com", "prompt": "p"}"#,
        ),
    ] {
        assert_eq!(explain(tool, args), "allow", "{tool}");
    }
}

/// The hosts run `cairn-hook` for every event, and a hook command that cannot be run lets
/// the call through: `hooks install` says so when it is not on `PATH`.
#[test]
fn install_warns_when_the_hook_program_is_not_on_path() {
    let built = Path::new(env!("CARGO_BIN_EXE_cairn-hook"))
        .parent()
        .unwrap();
    for (path, found) in [(built.to_path_buf(), true), (std::env::temp_dir(), false)] {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::of(
            command_in(dir.path())
                .args(["--json", "hooks", "install", "--claude-code"])
                .env("PATH", &path),
        );
        out.expect(0);
        assert_eq!(out.json()["hook_program_on_path"], found, "{out:?}");
        let human = Output::of(
            command_in(dir.path())
                .args(["hooks", "install", "--claude-code"])
                .env("PATH", &path),
        );
        assert_eq!(
            human
                .stdout
                .contains("warning: `cairn-hook` is not on PATH"),
            !found,
            "{human:?}"
        );
    }
}

/// The person-only commands the hooks hand self-protection are commands `cairn` has: a
/// renamed command must not slip out of the guard unnoticed.
#[test]
fn every_person_only_command_the_guard_refuses_is_a_cairn_command() {
    let dir = tempfile::tempdir().unwrap();
    let protected = cairn_hooks::PROTECTED;
    assert_eq!(protected.program, "cairn");
    for words in protected.person_commands {
        let mut args: Vec<&str> = words.to_vec();
        args.push("--help");
        let out = cairn(dir.path(), &args);
        assert_eq!(out.code, 0, "`cairn {}`: {}", words.join(" "), out.stderr);
    }
    let out = cairn(dir.path(), &["no-such-command", "--help"]);
    assert_ne!(out.code, 0, "an unknown command is refused");
}
