//! `cairn hooks install` and `uninstall` against every kind of settings file a user may
//! already have, for every host (issue 39, acceptance 2): nothing of the user's is lost — an
//! install either merges Cairn's hooks in, keeping every byte it does not own, or refuses
//! with a structured error and leaves the file (or folder) exactly as it was; installing
//! again changes nothing; uninstalling gives back what was there.

use crate::common;

use std::path::{Path, PathBuf};

use cairn_hooks::Host;
use cairn_hooks::install::{events, settings_path, settings_value};
use common::{Output, command_in};
use serde_json::{Value, json};

/// What a kind of settings file must come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Installed; uninstall gives back what the file meant, its exact spellings and comments.
    Merged,
    /// Installed; uninstall gives back what the file meant, less Cairn's older handler.
    MergedSameMeaning,
    /// Installed into a new file; uninstall removes it.
    Created,
    /// Refused with this error code; nothing changed.
    Refused(&'static str),
}

/// One kind of existing settings: its name, what is at the settings path before the install
/// (`None`: nothing), and what must happen.
struct Kind {
    name: &'static str,
    text: Option<String>,
    expect: Expect,
}

fn hook(command: &str) -> Value {
    json!({"type": "command", "command": command, "timeout": 5})
}

/// `handler` as `host` lists it under an event: in a group, or alone (Cursor).
fn group(host: Host, handler: &Value) -> Value {
    if cairn_hooks::install::flat(host) {
        handler.clone()
    } else {
        json!({"matcher": "Bash|run_shell_command|Shell", "hooks": [handler]})
    }
}

/// The kinds of settings file, for `host` (whose first event Cairn uses is `event`).
fn kinds(host: Host) -> Vec<Kind> {
    let event = events(host)[0];
    let tool_event = cairn_hooks::install::gate_event(host);
    let comments = host == Host::GeminiCli;
    let older = match host {
        Host::ClaudeCode => "cairn hook claude-code".to_owned(),
        Host::Codex => "exec cairn-hook codex --project '/old/place'".to_owned(),
        Host::GeminiCli => "exec cairn-hook gemini-cli --project '/old/place'".to_owned(),
        Host::CopilotCli => "cairn-hook copilot-cli".to_owned(),
        Host::Cursor => "exec cairn-hook cursor --project '/old/place'".to_owned(),
        Host::OpenCode => unreachable!("OpenCode's file is Cairn's plugin, not settings"),
    };
    let kind = |name, text: Option<String>, expect| Kind { name, text, expect };
    vec![
        kind("absent", None, Expect::Created),
        kind("empty", Some(String::new()), Expect::MergedSameMeaning),
        kind("white space only", Some("\n  \n".to_owned()), Expect::MergedSameMeaning),
        kind("an empty object", Some("{}\n".to_owned()), Expect::Merged),
        kind(
            "other settings, exact numbers and text",
            Some("{\n  \"model\": {\"name\": \"x\", \"limit\": 123456789012345678901234567890},\n  \"zero\": -0,\n  \"note\": \"caf\\u00e9 ☕\"\n}\n".to_owned()),
            Expect::Merged,
        ),
        kind(
            "another tool's hook on an event Cairn uses",
            Some(format!(
                "{{\"hooks\": {{\"{tool_event}\": [{}]}}}}\n",
                group(host, &hook("./guard.sh"))
            )),
            Expect::Merged,
        ),
        kind(
            "another tool's hook on an event Cairn does not use",
            Some(format!(
                "{{\"hooks\": {{\"Notification\": [{}]}}}}\n",
                group(host, &hook("notify-send hi"))
            )),
            Expect::Merged,
        ),
        kind(
            "comments",
            Some("// team settings\n{\n  /* the model */ \"model\": \"m\", // keep\n  \"hooks\": {} // ours go here\n}\n".to_owned()),
            if comments { Expect::Merged } else { Expect::Refused("settings_malformed") },
        ),
        kind(
            "CRLF line endings",
            Some("{\r\n  \"model\": \"m\"\r\n}\r\n".to_owned()),
            Expect::Merged,
        ),
        kind(
            "no final newline",
            Some("{\"model\": \"m\"}".to_owned()),
            Expect::Merged,
        ),
        kind(
            "an older Cairn handler",
            Some(format!(
                "{{\"hooks\": {{\"{event}\": [{}]}}}}\n",
                group(host, &hook(&older))
            )),
            Expect::MergedSameMeaning,
        ),
        kind("read-only", Some("{\"model\": \"m\"}\n".to_owned()), Expect::Refused("settings_malformed")),
        kind("a folder", None, Expect::Refused("hook_io")),
        kind("not JSON", Some("{\"model\": \n".to_owned()), Expect::Refused("settings_malformed")),
        kind(
            "a duplicate key",
            Some("{\"model\": \"a\", \"model\": \"b\"}\n".to_owned()),
            Expect::Refused("settings_malformed"),
        ),
        kind(
            "hooks that are not an object",
            Some("{\"hooks\": [\"x\"]}\n".to_owned()),
            Expect::Refused("settings_malformed"),
        ),
    ]
}

/// Spellings of the kinds' files that must survive an install and an uninstall as they are.
const KEPT: [&str; 9] = [
    "// team settings",
    "/* the model */",
    "// keep",
    "// ours go here",
    "123456789012345678901234567890",
    "\"zero\": -0",
    "caf\\u00e9 ☕",
    "{\r\n  \"model\": \"m\"",
    "./guard.sh",
];

/// `value` after an uninstall, less the format `version` an install added to a file of Cursor's
/// that had none (uninstall leaves it).
fn comparable(host: Host, mut value: Value, original_text: &str) -> Value {
    if cairn_hooks::install::flat(host)
        && !original_text.contains("\"version\"")
        && let Some(object) = value.as_object_mut()
    {
        object.remove("version");
    }
    value
}

fn cairn(dir: &Path, args: &[&str]) -> Output {
    Output::of(command_in(dir).args(args))
}

fn flag(host: Host) -> String {
    format!("--{host}")
}

/// What the settings at `path` mean.
fn meaning(host: Host, path: &Path) -> Value {
    settings_value(host, &std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every handler of every event, as JSON.
fn handlers(host: Host, value: &Value) -> Vec<(String, Value)> {
    let flat = cairn_hooks::install::flat(host);
    value["hooks"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(event, groups)| {
            groups
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(move |g| {
                    if flat {
                        vec![g.clone()]
                    } else {
                        g["hooks"].as_array().cloned().unwrap_or_default()
                    }
                })
                .map(move |h| (event.clone(), h))
        })
        .collect()
}

fn is_cairn(handler: &Value, host: Host) -> bool {
    let command = handler["command"].as_str().unwrap_or_default();
    let first = handler["args"][0].as_str();
    command.contains(&format!("cairn-hook {host}"))
        || command.contains(&format!("cairn hook {host}"))
        || (command == "cairn-hook" && first == Some(host.as_str()))
}

/// Sets up `kind` at `path`; returns the file whose bytes the user owns (the symlink's
/// target for the symlinked kind).
fn set_up(kind: &Kind, path: &Path) -> Option<PathBuf> {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if kind.name == "a folder" {
        std::fs::create_dir_all(path.join("inside")).unwrap();
        return None;
    }
    let text = kind.text.as_ref()?;
    std::fs::write(path, text).unwrap();
    if kind.name == "read-only" {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    Some(path.to_path_buf())
}

fn check_kind(host: Host, kind: &Kind, symlinked: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = settings_path(host, d);
    let at = format!(
        "{host}, {}{}",
        kind.name,
        if symlinked { ", symlinked" } else { "" }
    );
    let owned = if symlinked {
        let target = d.join("dotfiles/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = set_up(kind, &target);
        std::os::unix::fs::symlink(&target, &path).unwrap();
        file
    } else {
        set_up(kind, &path)
    };
    let before = owned.as_ref().map(|f| std::fs::read(f).unwrap());
    let out = cairn(d, &["--json", "hooks", "install", &flag(host)]);
    if let Expect::Refused(code) = kind.expect {
        assert_ne!(out.code, 0, "{at}: installed {out:?}");
        assert!(
            out.stderr.contains(code) || out.stdout.contains(code),
            "{at}: {out:?}"
        );
        match &owned {
            Some(file) => assert_eq!(Some(std::fs::read(file).unwrap()), before, "{at}"),
            None => assert!(path.join("inside").is_dir(), "{at}: the folder was touched"),
        }
        return;
    }
    out.expect(0);
    let installed = meaning(host, &path);
    let mine = handlers(host, &installed);
    for event in events(host) {
        let ours = mine
            .iter()
            .filter(|(e, h)| e == event && is_cairn(h, host))
            .count();
        assert_eq!(ours, 1, "{at}: Cairn's handlers on {event}");
    }
    if let Some(text) = &kind.text {
        let original = settings_value(host, text).unwrap();
        // Every setting and every handler of the user's is still there.
        for (key, value) in original.as_object().unwrap() {
            if key != "hooks" {
                assert_eq!(installed.get(key), Some(value), "{at}: `{key}`");
            }
        }
        for (event, handler) in handlers(host, &original) {
            if !is_cairn(&handler, host) {
                assert!(
                    mine.contains(&(event.clone(), handler.clone())),
                    "{at}: {event} {handler}"
                );
            }
        }
        // Comments and exact spellings are kept byte for byte.
        let now = std::fs::read_to_string(owned.as_ref().unwrap()).unwrap();
        for kept in KEPT {
            assert_eq!(text.contains(kept), now.contains(kept), "{at}: {kept}");
        }
        // A file with CRLF line endings keeps them, in the lines Cairn adds too.
        if text.contains("\r\n") {
            assert_eq!(
                now.matches('\n').count(),
                now.matches("\r\n").count(),
                "{at}: {now:?}"
            );
        }
    }
    if symlinked {
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{at}"
        );
    }
    // Installing again changes nothing.
    let once = std::fs::read(&path).unwrap();
    cairn(d, &["hooks", "install", &flag(host)]).expect(0);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        once,
        "{at}: a second install changed the file"
    );
    // Uninstalling gives back what was there.
    cairn(d, &["hooks", "uninstall", &flag(host)]).expect(0);
    match kind.expect {
        Expect::Created => assert!(!path.exists(), "{at}: the created file stays"),
        Expect::Merged => {
            let text = kind.text.as_deref().unwrap();
            assert_eq!(
                comparable(host, meaning(host, &path), text),
                settings_value(host, text).unwrap(),
                "{at}"
            );
            let now = std::fs::read_to_string(owned.as_ref().unwrap()).unwrap();
            for kept in KEPT {
                assert_eq!(
                    text.contains(kept),
                    now.contains(kept),
                    "{at}: uninstall, {kept}"
                );
            }
            // A file Cairn found without hooks, laid out on lines of its own, is given back byte
            // for byte (an object on one line is laid out on lines when hooks go into it).
            if !text.contains("hooks")
                && text.trim_end().contains('\n')
                && !cairn_hooks::install::flat(host)
            {
                assert_eq!(Some(now.into_bytes()), before, "{at}: uninstall");
            }
        }
        Expect::MergedSameMeaning => {
            let mut original = settings_value(host, kind.text.as_deref().unwrap()).unwrap();
            // An older Cairn handler is Cairn's: uninstall removes it as well, and keeps the
            // `hooks` object it found (whoever made it).
            if kind.name == "an older Cairn handler" {
                original = json!({"hooks": {}});
            }
            let text = kind.text.as_deref().unwrap();
            assert_eq!(
                comparable(host, meaning(host, &path), text),
                original,
                "{at}: uninstall"
            );
        }
        Expect::Refused(_) => unreachable!(),
    }
}

#[test]
fn every_kind_of_existing_settings_keeps_what_the_user_has() {
    let mut checked = 0;
    for host in Host::ALL.into_iter().filter(|host| *host != Host::OpenCode) {
        for kind in kinds(host) {
            check_kind(host, &kind, false);
            // The same through a symlink, where there is a file to link to.
            if kind.text.is_some() && kind.name != "read-only" {
                check_kind(host, &kind, true);
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 16 * (Host::ALL.len() - 1),
        "{checked} kinds checked"
    );
}

#[test]
fn opencodes_plugin_is_cairns_own_file_and_never_replaces_another() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = settings_path(Host::OpenCode, d);
    cairn(d, &["hooks", "install", "--opencode"]).expect(0);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("'tool.execute.before'"), "{written}");
    assert!(
        written.contains(&format!("{:?}", d.to_str().unwrap())),
        "names its project"
    );
    // Again: nothing changes.
    let out = cairn(d, &["--json", "hooks", "install", "--opencode"]);
    out.expect(0);
    assert_eq!(out.json()["hooks"][0]["events"], json!([]), "{out:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    cairn(d, &["hooks", "uninstall", "--opencode"]).expect(0);
    assert!(!path.exists());
    // A plugin of the user's under that name is never replaced nor removed.
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "export const Mine = async () => ({});\n").unwrap();
    for verb in ["install", "uninstall"] {
        let out = cairn(d, &["hooks", verb, "--opencode"]);
        assert_ne!(out.code, 0, "{verb}: {out:?}");
        assert!(out.stderr.contains("settings_malformed"), "{verb}: {out:?}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "export const Mine = async () => ({});\n"
        );
    }
}
