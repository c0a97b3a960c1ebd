//! Issue 34, 10: a hook obeys only an answer Cairn could have given. A service (anything
//! listening at `CAIRN_SERVER`) or a resident server that answers an inconsistent answer —
//! exit 0 with `"denies": true`, exit 0 with stdout that is not JSON, a `PreToolUse` "allowed"
//! with another decision on stdout, exit 2 for a `Stop` — makes `cairn hook` and `cairn-hook`
//! deny the tool call (exit 2), and never blocks an event that must not be blocked.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;

use common::{socket, with_stdin as run};
use serde_json::{Value, json};

/// Answers every HTTP request on a loopback port with `body` (status 200, JSON), for as many
/// requests as `answers` holds; returns the service's address and the thread.
fn fake_service(answers: Vec<Value>) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let thread = std::thread::spawn(move || {
        for body in answers {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            read_request(&mut stream);
            let body = body.to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(reply.as_bytes()).unwrap();
        }
    });
    (address, thread)
}

/// Reads one HTTP request (headers, then `content-length` bytes of body).
fn read_request(stream: &mut std::net::TcpStream) {
    let mut seen = Vec::new();
    let mut byte = [0_u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap() == 0 {
            return;
        }
        seen.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&seen).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |n| n.trim().parse().unwrap());
    let mut body = vec![0_u8; length];
    stream.read_exact(&mut body).unwrap();
}

fn pre_tool_use(dir: &Path) -> String {
    json!({
        "session_id": "s34", "cwd": dir, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "echo hi"}, "tool_use_id": "toolu_1",
    })
    .to_string()
}

fn stop(dir: &Path) -> String {
    json!({"session_id": "s34", "cwd": dir, "hook_event_name": "Stop", "stop_hook_active": false})
        .to_string()
}

/// The answers no Cairn gives to a `PreToolUse`.
fn inconsistent_for_a_call() -> Vec<Value> {
    vec![
        json!({"exit": 0, "denies": true, "stdout": null, "stderr": null}),
        json!({"exit": 0, "denies": false, "stdout": "not json", "stderr": null}),
        json!({"exit": 0, "denies": false, "stdout": "[1]", "stderr": null}),
        json!({"exit": 0, "denies": false, "stderr": null,
               "stdout": "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\"}}"}),
        json!({"exit": 0, "denies": false, "stderr": null,
               "stdout": "{\"continue\":false,\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}"}),
        json!({"exit": 1, "denies": false, "stdout": null, "stderr": null}),
    ]
}

/// Both hook commands, with `env` set.
fn hook_commands(dir: &Path, env: &[(&str, &str)]) -> Vec<Command> {
    let mut cairn = common::command_in(dir);
    cairn.args(["hook", "claude-code"]);
    let mut thin = common::program_in(env!("CARGO_BIN_EXE_cairn-hook"), dir);
    thin.arg("claude-code");
    let mut commands = vec![cairn, thin];
    for command in &mut commands {
        for (name, value) in env {
            command.env(name, value);
        }
    }
    commands
}

#[test]
fn an_inconsistent_answer_from_the_service_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for answer in inconsistent_for_a_call() {
        for mut command in hook_commands(d, &[]) {
            let (address, service) = fake_service(vec![answer.clone()]);
            command
                .env("CAIRN_SERVER", &address)
                .env("CAIRN_TOKEN", "cairn_agent_fake");
            let out = run(&mut command, &pre_tool_use(d));
            service.join().unwrap();
            assert_eq!(out.code, 2, "{answer} was obeyed: {out:?}");
            assert!(out.stderr.contains("hook_answer_invalid"), "{out:?}");
        }
    }
    // An explicit allow and a silent one pass; a deny denies.
    let allow = json!({"exit": 0, "denies": false, "stderr": null,
        "stdout": "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"permissionDecisionReason\":\"ok\"}}"});
    let silent = json!({"exit": 0, "denies": false, "stdout": null, "stderr": null});
    for answer in [allow, silent] {
        let (address, service) = fake_service(vec![answer.clone()]);
        let mut command =
            hook_commands(d, &[("CAIRN_SERVER", &address), ("CAIRN_TOKEN", "t")]).remove(0);
        let out = run(&mut command, &pre_tool_use(d));
        service.join().unwrap();
        assert_eq!(out.code, 0, "{answer}: {out:?}");
    }
}

#[test]
fn an_inconsistent_answer_to_a_stop_never_blocks_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let answers = [
        json!({"exit": 2, "denies": true, "stdout": null, "stderr": "keep going"}),
        json!({"exit": 0, "denies": false, "stdout": "not json", "stderr": null}),
    ];
    for answer in answers {
        let (address, service) = fake_service(vec![answer.clone()]);
        let mut command =
            hook_commands(d, &[("CAIRN_SERVER", &address), ("CAIRN_TOKEN", "t")]).remove(0);
        let out = run(&mut command, &stop(d));
        service.join().unwrap();
        assert_eq!(out.code, 0, "{answer}: {out:?}");
        assert!(out.stdout.is_empty(), "{answer}: {out:?}");
        assert!(out.stderr.contains("hook_answer_invalid"), "{out:?}");
    }
}

#[test]
fn an_inconsistent_answer_from_a_resident_server_denies_the_call() {
    let dir = common::init_project();
    let d = dir.path();
    let answers = inconsistent_for_a_call();
    let count = answers.len() * 2;
    let listener = UnixListener::bind(socket(d)).unwrap();
    let server = std::thread::spawn(move || {
        for answer in answers.iter().flat_map(|a| [a, a]) {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            stream.read_to_end(&mut request).unwrap();
            stream.write_all(answer.to_string().as_bytes()).unwrap();
        }
    });
    for i in 0..count {
        let mut command = hook_commands(d, &[]).remove(i % 2);
        let out = run(&mut command, &pre_tool_use(d));
        assert_eq!(out.code, 2, "answer {i} was obeyed: {out:?}");
        assert!(out.stderr.contains("hook_answer_invalid"), "{out:?}");
    }
    server.join().unwrap();
}

/// Issue 34, 7: without `--project`, a session id bound to one project (the session index)
/// does not carry a call of another checkout into it: the call is decided by the policy of the
/// project it says it runs in, and recorded there.
#[test]
fn a_reused_session_id_is_decided_where_its_call_runs() {
    let home = tempfile::tempdir().unwrap();
    let strict = common::init_project();
    std::fs::write(
        strict.path().join(".cairn/policies/starter.cedar"),
        "@id(\"t.deny-bash\")\nforbid(principal, action == Action::\"Bash\", resource);\n",
    )
    .unwrap();
    let open = common::init_project();
    let call = |dir: &Path| {
        let mut command = common::command_in(dir);
        command
            .env("CAIRN_HOME", home.path())
            .env("CAIRN_HOOK_RESIDENT", "off")
            .args(["hook", "claude-code"]);
        let stdin = json!({
            "session_id": "reused", "cwd": dir, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t",
        })
        .to_string();
        run(&mut command, &stdin)
    };
    // The session is first seen in the strict project, and bound to it.
    let first = call(strict.path());
    assert_eq!(first.code, 2, "{first:?}");
    // The same session id from the other checkout: its own (observe-first) policy decides.
    let second = call(open.path());
    assert_eq!(
        second.code, 0,
        "decided by its own project's policy: {second:?}"
    );
    let runs = |dir: &Path| {
        let mut command = common::command_in(dir);
        command
            .env("CAIRN_HOME", home.path())
            .args(["--json", "runs", "list"]);
        common::Output::of(&mut command).json()
    };
    assert_eq!(runs(open.path())[0]["records"], 1, "recorded where it ran");
    assert_eq!(
        runs(strict.path())[0]["records"],
        1,
        "nothing added to the strict one"
    );
}

/// Issue 34, 12: through `cairn serve` an agent acts as one principal, `agent:<token id>`, on
/// the steps API and in the hook events alike, and a lane-owner denial names nothing of
/// another tenant.
#[test]
fn one_principal_per_caller_and_no_denial_names_another_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::service_folder(d);
    let token = |tenant: &str| {
        let made = common::Output::of(
            common::command_in(d)
                .args([
                    "--json", "tokens", "create", "--role", "agent", "--tenant", tenant, "--data",
                ])
                .arg(&data),
        );
        let made = made.expect(0).json();
        (
            made["token"].as_str().unwrap().to_owned(),
            made["entry"]["id"].as_str().unwrap().to_owned(),
        )
    };
    let (acme, acme_id) = token("acme");
    let (beta, _) = token("beta");
    let lanes = json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": "build",
        "lanes": [{
            "lane_id": "build", "owner_ref": format!("agent:{acme_id}"), "objective": "build",
            "mutation_scope": {"allowed_refs": ["command:*"], "denied_refs": []},
            "done_condition": ["evidence:tests-pass"], "latest_ruling_ref": "event:r1",
        }],
        "tool_bindings": {"Bash": {"effect_refs": ["command:{command}"]}},
    });
    std::fs::write(data.join("lanes.json"), lanes.to_string()).unwrap();
    let socket = d.join("cairn.sock");
    let mut command = common::command_in(d);
    command
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()));
    let _served = common::Serving::start(command, &d.join("ready"));
    let endpoint = cairn_server::client::Endpoint::Unix(socket.clone());
    let send = |token: &str, path: &str, body: String| {
        cairn_server::client::send_blocking(
            &endpoint,
            "POST",
            path,
            Some(token),
            Some(body.into_bytes()),
            std::time::Duration::from_secs(10),
        )
        .unwrap()
        .json()
    };
    let hook = |token: &str, session: &str| {
        let event = json!({
            "session_id": session, "cwd": d, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_use_id": "t",
        });
        send(token, "/v1/hooks/claude-code", event.to_string())
    };
    let step = |token: &str, name: &str| {
        let run = send(token, "/v1/runs", json!({"name": name}).to_string());
        let run = run["run_id"].as_str().unwrap().to_owned();
        send(
            token,
            &format!("/v1/runs/{run}/steps"),
            r#"{"tool": "Bash", "arguments": {"command": "make"}}"#.to_owned(),
        )
    };
    // The owner is admitted on both paths: one principal.
    assert_eq!(step(&acme, "a")["decision"], "allow");
    assert_eq!(
        hook(&acme, "sa")["exit"],
        0,
        "the lane's owner through the hooks"
    );
    // Another tenant's agent is denied on both, and told nothing of the owner.
    let denied = step(&beta, "b");
    assert_eq!(denied["decision"], "deny");
    assert_eq!(denied["rule_ids"][0], "cairn.lane-owner");
    let answer = hook(&beta, "sb");
    assert_eq!(answer["exit"], 2);
    for text in [denied.to_string(), answer.to_string()] {
        assert!(text.contains("cairn.lane-owner"), "{text}");
        assert!(
            !text.contains(&acme_id),
            "another tenant's token id leaked: {text}"
        );
    }
}

/// Issue 34, 5: a subagent's call is recorded with the agent that made it, and a change of
/// the active lane mid-session (a person or a program edited the lanes) is a boundary record
/// of its own, before the first call made in the new lane.
#[test]
fn the_acting_agent_and_a_lane_change_are_recorded() {
    let dir = common::init_project();
    let d = dir.path();
    let lanes = |active: &str| {
        let lane = |id: &str| {
            json!({
                "lane_id": id, "owner_ref": "agent:claude-code", "objective": id,
                "mutation_scope": {"allowed_refs": ["command:*"], "denied_refs": []},
                "done_condition": ["evidence:tests-pass"], "latest_ruling_ref": "event:r1",
            })
        };
        json!({
            "schema_version": "cairn.lanes/v1",
            "active_lane_id": active,
            "lanes": [lane("build"), lane("verify")],
            "tool_bindings": {"Bash": {"effect_refs": ["command:{command}"]}},
        })
        .to_string()
    };
    std::fs::write(d.join(".cairn/lanes.json"), lanes("build")).unwrap();
    let call = |id: &str, agent: Option<(&str, &str)>| {
        let mut event = json!({
            "session_id": "acting", "cwd": d, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_use_id": id,
        });
        if let Some((agent_id, agent_type)) = agent {
            event["agent_id"] = json!(agent_id);
            event["agent_type"] = json!(agent_type);
        }
        let mut command = common::command_in(d);
        command.args(["hook", "claude-code"]);
        let out = run(&mut command, &event.to_string());
        assert_eq!(out.code, 0, "{out:?}");
    };
    call("t1", None);
    call("t2", Some(("a81f", "general-purpose")));
    // A person switches the active lane by editing the file.
    std::fs::write(d.join(".cairn/lanes.json"), lanes("verify")).unwrap();
    call("t3", None);
    let out =
        common::Output::of(common::command_in(d).args(["ledger", "export", "--run", "cc-acting"]));
    out.expect(0);
    let records: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record.get("kind").is_some())
        .collect();
    let short: Vec<(String, Value, Value, Value)> = records
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_owned(),
                r["lane_id"].clone(),
                r.get("agent").cloned().unwrap_or(Value::Null),
                r["boundary"]["evidence_ref"].clone(),
            )
        })
        .collect();
    let steps: Vec<_> = short.iter().filter(|r| r.0 == "step").collect();
    assert_eq!(steps.len(), 3, "{short:?}");
    assert_eq!(
        steps[0].2,
        Value::Null,
        "the main agent's call names no agent"
    );
    assert_eq!(steps[1].2, json!("general-purpose:a81f"), "{short:?}");
    let change = short
        .iter()
        .position(|r| r.0 == "boundary" && r.3 == json!("lane:build"))
        .unwrap_or_else(|| panic!("no lane_changed record: {short:?}"));
    assert_eq!(short[change].1, json!("verify"));
    assert_eq!(
        short[change + 1].0,
        "step",
        "the change is recorded right before the call"
    );
    assert_eq!(short[change + 1].1, json!("verify"));
    // Verification covers the new field.
    common::Output::of(common::command_in(d).args(["ledger", "verify", "--all"])).expect(0);
}
