//! Cursor's hooks from its documented payloads (issue 39; `tests/hosts/cursor/`, whose
//! `SOURCES.md` names where each field comes from): a whole agent session played through
//! `cairn hook cursor` — a prompt, an allowed command, a forbidden one refused (exit 2 and
//! Cursor's `permission: deny`), a read, a command that timed out (`side_effect_unknown`) and
//! its retry refused, a compaction, the turn's stop and the session's end — answered as Cursor
//! reads answers and recorded, the chain intact.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Output, command_in, with_stdin};
use serde_json::Value;

fn session_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/hosts/cursor/session.jsonl")
}

fn cairn(project: &Path, args: &[&str]) -> Output {
    Output::of(command_in(project).args(args))
}

#[test]
fn a_documented_cursor_session_is_gated_answered_and_recorded() {
    let dir = common::init_project();
    let project = dir.path();
    std::fs::write(
        project.join(".cairn/policies/no-forbidden.cedar"),
        "@id(\"team.no-forbidden\")\nforbid(principal, action, resource)\n  when { context.args has command && context.args.command like \"*forbidden*\" };\n",
    )
    .unwrap();
    let session = "cursor-conv-7f3a";
    let text = std::fs::read_to_string(session_file()).unwrap();
    for (i, line) in text.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let payload = case["payload"]
            .to_string()
            .replace("${PROJECT}", project.to_str().unwrap())
            .replace("${SESSION}", session)
            .replace("${HOME}", project.join("home").to_str().unwrap());
        let event = case["payload"]["hook_event_name"].as_str().unwrap();
        let mut command = command_in(project);
        command.args(["hook", "cursor", "--project", project.to_str().unwrap()]);
        let out = with_stdin(&mut command, &payload);
        let at = format!("line {} ({event})", i + 1);
        let expect = &case["expect"];
        assert_eq!(
            i64::from(out.code),
            expect["exit"].as_i64().unwrap(),
            "{at}: {out:?}"
        );
        // Every answer is one JSON object, as Cursor reads it.
        let answer: Value = serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("{at}: stdout is not JSON ({e}): {out:?}"));
        assert!(answer.is_object(), "{at}: {answer}");
        for needle in expect["stdout_has"].as_array().into_iter().flatten() {
            let needle = needle.as_str().unwrap();
            assert!(out.stdout.contains(needle), "{at}: no {needle} in {out:?}");
        }
        if let Some(absent) = expect["stdout_lacks"].as_str() {
            assert!(!out.stdout.contains(absent), "{at}: {absent} in {out:?}");
        }
    }
    let run = format!("cursor-{session}");
    let export = cairn(project, &["ledger", "export", "--run", &run]);
    export.expect(0);
    let records: Vec<(String, String)> = export
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r.get("kind").is_some())
        .map(|r| {
            let what = match r["kind"].as_str().unwrap() {
                "step" => format!(
                    "{} {}",
                    r["tool"]["name"].as_str().unwrap(),
                    r["admission"]["decision"].as_str().unwrap()
                ),
                "boundary" => r["boundary"]["event"].as_str().unwrap().to_owned(),
                other => other.to_owned(),
            };
            (r["kind"].as_str().unwrap().to_owned(), what)
        })
        .collect();
    let steps: Vec<&str> = records.iter().map(|(_, what)| what.as_str()).collect();
    let expected = [
        "Shell allow",
        "Shell deny",
        "Read allow",
        "Shell allow",
        "side_effect_unknown",
        "Shell deny",
        // Its rehydration is blocked on the reconciliation, which writes no record.
        "context_compaction",
    ];
    let mut at = 0;
    for want in expected {
        at += steps[at..]
            .iter()
            .position(|got| *got == want)
            .unwrap_or_else(|| panic!("no {want} after record {at} in {steps:?}"))
            + 1;
    }
    // The run stays open: a side effect of unknown outcome awaits a person.
    assert!(!steps.contains(&"terminal"), "{steps:?}");
    cairn(project, &["ledger", "verify", "--all"]).expect(0);
    // `hooks install --cursor` writes Cursor's format, `failClosed` on the gate.
    cairn(project, &["hooks", "install", "--cursor"]).expect(0);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".cursor/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(settings["version"], 1);
    let gate = &settings["hooks"]["preToolUse"][0];
    assert_eq!(gate["failClosed"], true, "{settings}");
    assert!(
        gate["command"]
            .as_str()
            .unwrap()
            .starts_with("exec cairn-hook cursor --project "),
        "{settings}"
    );
}
