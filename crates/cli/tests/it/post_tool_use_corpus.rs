//! The recorded `PostToolUse` payloads of the pinned Claude Code, Codex, Gemini CLI (its
//! `AfterTool`) and Copilot CLI
//! (`tests/hosts/post_tool_use/`, issue 34, acceptance 2), each with the outcome class Cairn
//! must read it as: `completed`, `failed`, `backgrounded` or `unknown`.
//!
//! Each case is checked twice: the library's reading (`cairn_hooks::outcome::classify`) has
//! the expected class; and through the built `cairn hook`, in a fresh observe-first project,
//! the call's `PreToolUse` then the payload leave a `side_effect_unknown` record — and the
//! next consequential call refused — exactly when the class is not known and the tool is
//! consequential, the payload is observed (the next record names an observation digest, even
//! for a response Cairn cannot read), and a case's `later` event (the host's report of a
//! background task's end) settles the call when `expect_later` is `resolved`.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairn_hooks::Host;
use cairn_hooks::input::Event;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use common::{Output, command_in, with_stdin};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/hosts/post_tool_use")
}

#[derive(serde::Deserialize)]
struct Case {
    host: String,
    expect: String,
    payload: Box<RawValue>,
    #[serde(default)]
    later: Option<Box<RawValue>>,
    #[serde(default)]
    expect_later: Option<String>,
}

fn cases() -> Vec<(String, Case)> {
    let mut cases: Vec<(String, Case)> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let case: Case = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, case)
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    cases
}

/// `raw` with `${PROJECT}` and `${HOME}` replaced, and a session id of its own.
fn substituted(raw: &RawValue, project: &Path, session: &str) -> String {
    let mut map: BTreeMap<String, Box<RawValue>> = serde_json::from_str(raw.get()).unwrap();
    map.insert(
        "session_id".to_owned(),
        RawValue::from_string(json!(session).to_string()).unwrap(),
    );
    serde_json::to_string(&map)
        .unwrap()
        .replace("${PROJECT}", project.to_str().unwrap())
        .replace("${HOME}", project.join("home").to_str().unwrap())
}

/// The `PreToolUse` of the call `post` reports (`BeforeTool` for Gemini CLI).
fn pre_tool_use(host: &str, post: &str) -> String {
    let mut map: BTreeMap<String, Box<RawValue>> = serde_json::from_str(post).unwrap();
    for field in [
        "tool_response",
        "tool_output",
        "error",
        "error_message",
        "failure_type",
        "is_interrupt",
        "duration_ms",
        "duration",
    ] {
        map.remove(field);
    }
    map.insert(
        "hook_event_name".to_owned(),
        RawValue::from_string(json!(pre_event(host)).to_string()).unwrap(),
    );
    serde_json::to_string(&map).unwrap()
}

/// Whether the hook refused the call: exit 2, or — Copilot CLI, which shows a refusal's reason
/// only so — exit 0 with its JSON deny.
fn refused(host: &str, out: &Output) -> bool {
    if host == "copilot-cli" && out.code == 0 {
        return out.stdout.contains("\"permissionDecision\":\"deny\"");
    }
    assert!(matches!(out.code, 0 | 2), "{out:?}");
    out.code == 2
}

fn pre_event(host: &str) -> &'static str {
    match host {
        "gemini-cli" => "BeforeTool",
        "cursor" => "preToolUse",
        _ => "PreToolUse",
    }
}

fn hook(project: &Path, host: &str, stdin: &str) -> Output {
    let mut command = command_in(project);
    command.args(["hook", host, "--project", project.to_str().unwrap()]);
    with_stdin(&mut command, stdin)
}

/// The run's records, in order.
fn records(project: &Path, run: &str) -> Vec<Value> {
    let out = Output::of(command_in(project).args(["ledger", "export", "--run", run]));
    out.expect(0);
    out.stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record.get("kind").is_some())
        .collect()
}

fn has_boundary(records: &[Value], event: &str) -> bool {
    records.iter().any(|r| r["boundary"]["event"] == event)
}

fn next_call(host: &str, session: &str, project: &Path, i: u32) -> String {
    json!({
        "session_id": session, "cwd": project, "hook_event_name": pre_event(host),
        "tool_name": match host {
            "gemini-cli" => "run_shell_command",
            "cursor" => "Shell",
            _ => "Bash",
        },
        "tool_input": {"command": "true"},
        "tool_use_id": format!("toolu_next_{i}"),
        "model": if host == "codex" { "gpt-5" } else { "claude" },
    })
    .to_string()
}

#[test]
fn each_recorded_post_tool_use_is_read_as_its_class() {
    let all = cases();
    assert!(all.len() >= 30, "the corpus has {} cases", all.len());
    for (name, case) in &all {
        let host: Host = case.host.parse().unwrap();
        let payload = substituted(&case.payload, Path::new("/p"), "s");
        let input = cairn_hooks::input::parse(host, payload.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let Event::PostToolUse { tool, outcome } = input.event else {
            panic!("{name}: not a PostToolUse")
        };
        let class = cairn_hooks::outcome::classify(host, &tool.name, &outcome);
        assert_eq!(class.name(), case.expect, "{name}: read as {class:?}");
    }
}

#[test]
fn each_recorded_post_tool_use_is_recorded_by_its_class() {
    let classes = cairn_hooks::config::default_tool_classes();
    for (name, case) in cases() {
        let dir = common::init_project();
        let d = dir.path();
        let session = format!("corpus-{name}");
        let host = case.host.as_str();
        let run = match host {
            "codex" => format!("codex-{session}"),
            "gemini-cli" => format!("gemini-{session}"),
            "copilot-cli" => format!("copilot-{session}"),
            "cursor" => format!("cursor-{session}"),
            _ => format!("cc-{session}"),
        };
        let post = substituted(&case.payload, d, &session);
        let tool: Value = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(&post)
            .unwrap()
            .get("tool_name")
            .map(|raw| serde_json::from_str(raw.get()).unwrap())
            .unwrap();
        let tool = tool.as_str().unwrap();
        let at = |what: &str| format!("{name}: {what}");
        let out = hook(d, host, &pre_tool_use(host, &post));
        assert_eq!(out.code, 0, "{}", at(&format!("the PreToolUse {out:?}")));
        let out = hook(d, host, &post);
        assert_eq!(out.code, 0, "{}", at(&format!("the payload {out:?}")));

        let unknown = classes.is_consequential(tool)
            && matches!(case.expect.as_str(), "unknown" | "backgrounded");
        let next = hook(d, host, &next_call(host, &session, d, 1));
        let recorded = records(d, &run);
        assert_eq!(
            has_boundary(&recorded, "side_effect_unknown"),
            unknown,
            "{}",
            at(&format!("records {recorded:?}"))
        );
        assert_eq!(
            refused(host, &next),
            unknown,
            "{}",
            at(&format!("{next:?}"))
        );
        let observed = recorded
            .iter()
            .rev()
            .find(|r| r["kind"] == "step")
            .map(|r| r["observation_digest"].clone());
        assert!(
            observed.as_ref().is_some_and(|d| d.is_string()),
            "{}",
            at("the next step names no observation: the payload was not observed")
        );

        if let Some(later) = &case.later {
            let out = hook(d, host, &substituted(later, d, &session));
            assert_eq!(out.code, 0, "{}", at(&format!("the later event {out:?}")));
            let resolved = case.expect_later.as_deref() == Some("resolved");
            assert_eq!(
                has_boundary(&records(d, &run), "reconciliation"),
                resolved,
                "{}",
                at("the reconciliation")
            );
            let next = hook(d, host, &next_call(host, &session, d, 2));
            assert_eq!(
                refused(host, &next),
                !resolved,
                "{}",
                at(&format!("{next:?}"))
            );
        }
    }
}
