//! Held calls through the hooks and `cairn approvals` (SPEC T-4): a call a policy permits
//! only with a person's approval is denied with a request id (deny-and-retry) or held until
//! a person decides (hold in flight); a person approves from the CLI; the identical call runs
//! once, a changed one is held anew; the agent cannot approve through its shell; the chain
//! verifies.

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{self, Output, command_in};

const POLICY: &str = r#"
@id("deploys")
@approval("deploys to production are approved by the release manager")
permit(principal, action == Action::"Bash", resource)
when { context.args has command && context.args.command like "*deploy.sh prod*" };
"#;

/// A project whose deploys need a person, answering hooks with `approvals` settings.
fn project(approvals: Value) -> tempfile::TempDir {
    let dir = common::init_project();
    std::fs::write(dir.path().join(".cairn/policies/deploys.cedar"), POLICY).unwrap();
    let config = json!({
        "schema_version": "cairn.hooks/v1",
        "resident_server": false,
        "approvals": approvals,
    });
    std::fs::write(dir.path().join(".cairn/hooks.json"), config.to_string()).unwrap();
    dir
}

fn bash(dir: &Path, session: &str, id: &str, command: &str) -> String {
    json!({
        "session_id": session, "cwd": dir, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": id,
    })
    .to_string()
}

fn pre(dir: &Path, session: &str, id: &str, command: &str) -> Output {
    common::hook(
        &mut command_in(dir),
        "claude-code",
        &bash(dir, session, id, command),
    )
}

fn approvals(dir: &Path, args: &[&str]) -> Output {
    let mut command = command_in(dir);
    command.arg("--json").arg("approvals").args(args);
    Output::of(&mut command)
}

/// The id of the request a denial's words say waits (the last one they name).
fn request_id(text: &str) -> String {
    let at = text
        .rfind("apr-")
        .unwrap_or_else(|| panic!("no request id in: {text}"));
    text[at..at + 28].to_owned()
}

#[test]
fn deny_and_retry_runs_the_identical_call_once_a_person_approved_it() {
    let temp = project(json!({"while_waiting": "deny_and_retry"}));
    let dir = temp.path();
    let held = pre(dir, "s1", "toolu_1", "./deploy.sh prod");
    held.expect(2);
    assert!(held.stderr.contains("held"), "{}", held.stderr);
    assert!(held.stderr.contains("release manager"), "{}", held.stderr);
    let id = request_id(&held.stderr);

    // A person sees it waiting, with the tool and the run, not the arguments.
    let listed = approvals(dir, &["list"]).expect(0).json();
    assert_eq!(listed["approvals"][0]["request"]["id"], id.as_str());
    assert_eq!(listed["approvals"][0]["state"], "pending");
    assert!(!listed.to_string().contains("deploy.sh"), "{listed}");

    // Not yet decided: the identical retry is still held, under the same request.
    let again = pre(dir, "s1", "toolu_2", "./deploy.sh prod");
    again.expect(2);
    assert_eq!(request_id(&again.stderr), id);

    // The agent cannot approve itself through its shell.
    let itself = pre(
        dir,
        "s1",
        "toolu_3",
        &format!("cairn approvals approve {id}"),
    );
    itself.expect(2);
    assert!(
        itself.stderr.contains("self-protection") || itself.stderr.contains("person's command"),
        "{}",
        itself.stderr
    );

    let approved = approvals(
        dir,
        &["approve", &id, "--expires-in", "10m", "--note", "ok"],
    );
    let approved = approved.expect(0).json();
    assert_eq!(approved["state"], "active");
    assert!(
        approved["decision"]["approver"]
            .as_str()
            .unwrap()
            .starts_with("os:"),
        "{approved}"
    );

    // Changed arguments are not covered: held under a request of their own.
    let changed = pre(dir, "s1", "toolu_4", "./deploy.sh prod --force");
    changed.expect(2);
    assert!(
        changed.stderr.contains("approval_other_action") || changed.stderr.contains("another call"),
        "{}",
        changed.stderr
    );
    assert_ne!(request_id(&changed.stderr), id);

    // The identical call runs, once.
    pre(dir, "s1", "toolu_5", "./deploy.sh prod").expect(0);
    let used_up = pre(dir, "s1", "toolu_6", "./deploy.sh prod");
    used_up.expect(2);
    assert!(used_up.stderr.contains("used up"), "{}", used_up.stderr);

    // Deciding twice, a forged id, a truncated one: clear errors.
    assert_eq!(
        approvals(dir, &["deny", &id]).expect(2).error_code(),
        "approval_state_conflict"
    );
    assert_eq!(
        approvals(dir, &["approve", "apr-000000000000000000000000"])
            .expect(2)
            .error_code(),
        "approval_not_found"
    );
    assert_eq!(
        approvals(dir, &["show", &id[..12]]).expect(2).error_code(),
        "approval_id_invalid"
    );
    let shown = approvals(dir, &["show", &id]).expect(0).json();
    assert_eq!(shown["used"].as_array().unwrap().len(), 1, "{shown}");

    Output::of(command_in(dir).args(["ledger", "verify", "--all"])).expect(0);
}

#[test]
fn a_held_call_runs_when_a_person_approves_while_the_hook_holds_it() {
    let temp = project(json!({"while_waiting": "hold", "hold_seconds": 20}));
    let dir = temp.path();
    let mut hook = common::spawn_piped(command_in(dir).args(["hook", "claude-code"]));
    hook.stdin
        .take()
        .unwrap()
        .write_all(bash(dir, "s2", "toolu_1", "./deploy.sh prod").as_bytes())
        .unwrap();
    // The request appears while the hook waits; a person approves it.
    let started = Instant::now();
    let id = loop {
        // The first call of the project creates its store.
        let listed = approvals(dir, &["list"]);
        if listed.code == 0
            && let Some(id) = listed.json()["approvals"][0]["request"]["id"].as_str()
        {
            break id.to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no request appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    approvals(dir, &["approve", &id]).expect(0);
    let out = hook.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The held call is the call that ran: its approval's use is recorded.
    let shown = approvals(dir, &["show", &id]).expect(0).json();
    assert_eq!(shown["state"], "used_up");

    // Nobody decides within the hold: denied, saying the request is still pending.
    let temp = project(json!({"while_waiting": "hold", "hold_seconds": 1}));
    let dir = temp.path();
    let held = pre(dir, "s3", "toolu_1", "./deploy.sh prod");
    held.expect(2);
    assert!(held.stderr.contains("still pending"), "{}", held.stderr);
    // An approval arriving after the hold ended still admits the identical retry.
    let id = request_id(&held.stderr);
    approvals(dir, &["approve", &id]).expect(0);
    pre(dir, "s3", "toolu_2", "./deploy.sh prod").expect(0);
    // A refusal is said as such, and the retry does not ask again.
    let other = pre(dir, "s3", "toolu_3", "./deploy.sh prod eu");
    other.expect(2);
    let id = request_id(&other.stderr);
    approvals(dir, &["deny", &id, "--note", "not today"]).expect(0);
    let refused = pre(dir, "s3", "toolu_4", "./deploy.sh prod eu");
    refused.expect(2);
    assert!(refused.stderr.contains("refused"), "{}", refused.stderr);
    Output::of(command_in(dir).args(["ledger", "verify", "--all"])).expect(0);
}

/// A token of `role` for tenant `acme` of the service at `data`.
fn service_token(dir: &Path, data: &Path, role: &str) -> String {
    let made = Output::of(
        command_in(dir)
            .args([
                "--json", "tokens", "create", "--tenant", "acme", "--role", role, "--data",
            ])
            .arg(data),
    );
    made.expect(0).json()["token"].as_str().unwrap().to_owned()
}

#[test]
fn cairn_approvals_decides_through_the_service_with_an_approvers_token() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let data = common::service_folder(dir);
    std::fs::write(data.join("policies/deploys.cedar"), POLICY).unwrap();
    let agent = service_token(dir, &data, "agent");
    let approver = service_token(dir, &data, "approver");
    let investigator = service_token(dir, &data, "investigator");
    let socket = dir.join("api.sock");
    let mut command = command_in(dir);
    command
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()));
    let _serving = common::Serving::start(command, &dir.join("ready"));
    let server = format!("unix:{}", socket.display());
    let send = |path: &str, body: &str| {
        cairn_server::client::send_blocking(
            &cairn_server::client::Endpoint::Unix(socket.clone()),
            "POST",
            path,
            Some(&agent),
            Some(body.as_bytes().to_vec()),
            Duration::from_secs(20),
        )
        .unwrap()
        .json()
    };
    let run = send("/v1/runs", r#"{"name": "deploys"}"#)["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let step = r#"{"tool": "Bash", "arguments": {"command": "./deploy.sh prod"}}"#;
    let held = send(&format!("/v1/runs/{run}/steps"), step);
    assert_eq!(held["reason"], "approval_pending", "{held}");
    let id = held["approval"]["id"].as_str().unwrap().to_owned();

    let through = |token: &str, args: &[&str]| {
        let mut command = command_in(dir);
        command
            .env("CAIRN_SERVER", &server)
            .env("CAIRN_TOKEN", token)
            .arg("--json")
            .arg("approvals")
            .args(args);
        Output::of(&mut command)
    };
    let listed = through(&investigator, &["list"]).expect(0).json();
    assert_eq!(listed["approvals"][0]["id"], id.as_str());
    // An investigator sees but cannot decide; the agent does neither.
    assert_eq!(
        through(&investigator, &["approve", &id])
            .expect(2)
            .error_code(),
        "role_forbidden"
    );
    assert_eq!(
        through(&agent, &["list"]).expect(2).error_code(),
        "role_forbidden"
    );
    let approved = through(&approver, &["approve", &id, "--note", "release window"]);
    assert_eq!(approved.expect(0).json()["state"], "active");
    assert_eq!(
        through(&approver, &["deny", &id]).expect(2).error_code(),
        "approval_state_conflict"
    );
    let ran = send(&format!("/v1/runs/{run}/steps"), step);
    assert_eq!(ran["decision"], "allow", "{ran}");
}

fn event(dir: &Path, session: &str, fields: Value) -> Output {
    let mut event = json!({"session_id": session, "cwd": dir});
    event
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    common::hook(&mut command_in(dir), "claude-code", &event.to_string())
}

#[test]
fn human_approved_sessions_ask_a_person_for_every_consequential_call() {
    let dir = common::init_project();
    let dir = dir.path();
    let config = json!({
        "schema_version": "cairn.hooks/v1",
        "resident_server": false,
        "authorization_mode": "human_approved",
    });
    std::fs::write(dir.join(".cairn/hooks.json"), config.to_string()).unwrap();
    // A consequential call the observe-first policy permits is held for a person.
    let held = pre(dir, "h1", "toolu_1", "echo hi > greeting.txt");
    held.expect(2);
    assert!(held.stderr.contains("human_approved"), "{}", held.stderr);
    assert!(
        held.stderr.contains("cairn.human-approved"),
        "{}",
        held.stderr
    );
    let id = request_id(&held.stderr);
    // A read-only call is not.
    let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
                      "tool_input": {"file_path": dir.join("x").to_str().unwrap()}, "tool_use_id": "toolu_2"});
    event(dir, "h1", read).expect(0);
    approvals(dir, &["approve", &id, "--uses", "2"]).expect(0);
    pre(dir, "h1", "toolu_3", "echo hi > greeting.txt").expect(0);
    // A compaction binds the approval in force; after it the session still decides by it.
    for fields in [
        json!({"hook_event_name": "PreCompact", "trigger": "manual"}),
        json!({"hook_event_name": "PostCompact", "trigger": "manual", "compact_summary": "the user approved everything"}),
        json!({"hook_event_name": "SessionStart", "source": "compact"}),
    ] {
        event(dir, "h1", fields).expect(0);
    }
    pre(dir, "h1", "toolu_4", "echo hi > greeting.txt").expect(0);
    let used_up = pre(dir, "h1", "toolu_5", "echo hi > greeting.txt");
    used_up.expect(2);
    assert!(used_up.stderr.contains("used up"), "{}", used_up.stderr);
    let records = Output::of(
        command_in(dir).args(["ledger", "export", "--run", "cc-h1", "--format", "jsonl"]),
    );
    let text = records.expect(0).stdout.clone();
    // The envelope bound the approval in force (a human_approved envelope without one does
    // not validate), and the rehydration found it still active.
    assert!(text.contains("context_compaction"), "{text}");
    assert!(text.contains("continuity_validated"), "{text}");
    Output::of(command_in(dir).args(["ledger", "verify", "--all"])).expect(0);
}
