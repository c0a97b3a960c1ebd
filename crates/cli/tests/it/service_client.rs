//! The CLI as the service's client (issue 38): with `CAIRN_SERVER` and a person's token in
//! `CAIRN_TOKEN`, `runs list`, `ledger show|verify|export`, `status` and `cost` ask the
//! service — and say exactly what they say on the service's own store read locally; an agent's
//! token is refused as the API refuses it; `hooks install` writes only what a client needs.

use std::process::Command;
use std::time::Duration;

use cairn_server::client::{Endpoint, send_blocking};
use serde_json::{Value, json};

use crate::common::{self, Output, Project, command_in};
use crate::service_demo::{serve_demo_folder, token};

/// One request as the agent; its JSON answer.
fn agent_call(endpoint: &Endpoint, token: &str, path: &str, body: &Value) -> Value {
    let answer = send_blocking(
        endpoint,
        "POST",
        path,
        Some(token),
        Some(body.to_string().into_bytes()),
        Duration::from_secs(20),
    )
    .expect("the service answered");
    assert!(
        answer.status < 300,
        "{path}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

/// `cairn ARGS…` as the service's client, with `token`.
fn client(project: &Project, server: &str, token: &str) -> impl Fn(&[&str]) -> Output {
    let root = project.root().to_path_buf();
    let (server, token) = (server.to_owned(), token.to_owned());
    move |args: &[&str]| {
        let mut command = command_in(&root);
        command
            .env("CAIRN_SERVER", &server)
            .env("CAIRN_TOKEN", &token)
            .args(args);
        Output::of(&mut command)
    }
}

#[test]
fn read_and_review_commands_answer_from_the_service_as_from_its_store() {
    let project = Project::new();
    let (served, data, socket) = serve_demo_folder(&project);
    let endpoint = Endpoint::Unix(socket.clone());
    let agent = token(project.root(), &data, "agent");
    let investigator = token(project.root(), &data, "investigator");

    // An agent's session: a read, a refused refund, a closed run.
    let run = agent_call(&endpoint, &agent, "/v1/runs", &json!({"name": "client"}))["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = agent_call(
        &endpoint,
        &agent,
        &format!("/v1/runs/{run}/steps"),
        &json!({"tool": "tickets.read", "version": "1", "arguments": {"ticket_id": "T-1"}}),
    );
    assert_eq!(read["decision"], "allow");
    let refund = agent_call(
        &endpoint,
        &agent,
        &format!("/v1/runs/{run}/steps"),
        &json!({"tool": "payments.refund", "version": "2", "arguments": {"charge_id": "ch_2", "amount": 4900, "currency": "EUR"}}),
    );
    assert_eq!(refund["decision"], "deny");
    let refused_at = refund["step"].as_u64().unwrap().to_string();
    agent_call(
        &endpoint,
        &agent,
        &format!("/v1/runs/{run}/terminate"),
        &json!({"reason": "completed"}),
    );

    let server = format!("unix:{}", socket.display());
    let remote = client(&project, &server, &investigator);
    // The service's own store and keys, read locally: what the client must match.
    let local = |args: &[&str]| {
        let mut command = command_in(project.root());
        command
            .env_remove("CAIRN_SERVER")
            .arg("--store")
            .arg(data.join("cairn.db"))
            .arg("--keys")
            .arg(data.join("keys"))
            .args(args);
        Output::of(&mut command)
    };

    let listed = remote(&["runs", "list"]);
    listed.expect(0);
    assert!(listed.stdout.contains(&run), "{}", listed.stdout);
    assert_eq!(
        remote(&["--json", "runs", "list"]).expect(0).json(),
        local(&["--json", "runs", "list"]).expect(0).json()
    );

    let shown = remote(&["ledger", "show", "--run", &run, "--step", &refused_at]);
    shown.expect(0);
    assert!(
        shown.stdout.contains("support.no-refund-without-approval"),
        "{}",
        shown.stdout
    );
    assert_eq!(
        shown.stdout,
        local(&["ledger", "show", "--run", &run, "--step", &refused_at])
            .expect(0)
            .stdout
    );

    for args in [
        vec!["ledger", "verify", "--run", run.as_str()],
        vec!["ledger", "verify", "--all"],
        vec!["cost", "--by", "tool"],
    ] {
        let here = remote(&args);
        here.expect(0);
        assert_eq!(here.stdout, local(&args).expect(0).stdout, "{args:?}");
    }
    assert!(
        remote(&["ledger", "verify", "--all"])
            .stdout
            .contains("intact"),
        "the service verifies"
    );

    let exported = remote(&["ledger", "export", "--run", &run, "--format", "jsonl"]);
    exported.expect(0);
    assert_eq!(
        exported.stdout,
        local(&["ledger", "export", "--run", &run, "--format", "jsonl"])
            .expect(0)
            .stdout,
        "the same bundle, byte for byte"
    );
    assert!(
        exported
            .stdout
            .lines()
            .last()
            .unwrap()
            .contains("cairn.checkpoint/v1")
    );

    let status = remote(&["--json", "status"]);
    status.expect(0);
    assert_eq!(status.json()["schema_version"], "cairn.decision-status/v1");
    assert_eq!(status.json()["activity"], "working");

    // A step that does not exist, and an agent's token where a person's is needed: the
    // service's refusal, as the CLI's own error.
    let missing = remote(&["ledger", "show", "--run", &run, "--step", "99"]);
    assert_ne!(missing.code, 0);
    assert!(
        missing.stderr.contains("record_not_found"),
        "{}",
        missing.stderr
    );
    let as_agent = client(&project, &server, &agent)(&["ledger", "verify", "--run", &run]);
    assert_ne!(as_agent.code, 0);
    assert!(
        as_agent.stderr.contains("role_forbidden"),
        "{}",
        as_agent.stderr
    );
    // Without a token, the command says what it needs.
    let mut tokenless = command_in(project.root());
    tokenless
        .env("CAIRN_SERVER", &server)
        .env_remove("CAIRN_TOKEN")
        .args(["runs", "list"]);
    let tokenless = Output::of(&mut tokenless);
    assert_ne!(tokenless.code, 0);
    assert!(
        tokenless.stderr.contains("CAIRN_TOKEN"),
        "{}",
        tokenless.stderr
    );
    drop(served);
}

#[test]
fn hooks_install_for_a_service_writes_only_the_hosts_settings() {
    let project = Project::new();
    let dir = project.path("client");
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = Command::new(common::binary());
    command
        .current_dir(&dir)
        .env("CAIRN_SERVER", "http://127.0.0.1:8470")
        .args(["hooks", "install", "--claude-code"]);
    let out = Output::of(&mut command);
    out.expect(0);
    let made: Vec<String> = std::fs::read_dir(dir.join(".cairn"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        made,
        ["installed-hooks.json"],
        "a client of a service gets no local policies, key or store"
    );
    assert!(dir.join(".claude/settings.json").is_file());
    for said in [
        "CAIRN_SERVER is set",
        "client of http://127.0.0.1:8470",
        "agent's token in CAIRN_TOKEN",
    ] {
        assert!(out.stdout.contains(said), "{said}: {}", out.stdout);
    }
    // A malformed address is refused before anything is written.
    let other = project.path("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut command = Command::new(common::binary());
    command
        .current_dir(&other)
        .env("CAIRN_SERVER", "ftp://nowhere")
        .args(["hooks", "install", "--claude-code"]);
    let refused = Output::of(&mut command);
    assert_ne!(refused.code, 0);
    assert!(!other.join(".claude").exists());
}
