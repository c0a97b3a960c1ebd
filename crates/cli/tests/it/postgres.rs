//! The CLI on a PostgreSQL store (issue 19): every command takes `--store postgres://…` or
//! `CAIRN_STORE`, the hooks gate and record into it and deny when it does not answer, and
//! `cairn store copy` moves a laptop ledger into it, verified. Needs the test server
//! (`CAIRN_TEST_DATABASE_URL`); without it each test says it is skipped.

use crate::common;

use std::path::Path;

use cairn_test_support::postgres::Schemas;
use common::{OK, Output, TAMPER, command_in};
use serde_json::json;

fn cairn(dir: &Path, store: &str, args: &[&str]) -> Output {
    Output::of(command_in(dir).env("CAIRN_STORE", store).args(args))
}

#[test]
fn every_command_works_on_a_postgres_store() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let demo = cairn(dir, &url, &["--json", "demo"]);
    let demo = demo.expect(OK).json();
    assert_eq!(demo["verification"]["findings"], json!([]));
    assert_eq!(demo["verification"]["checkpoint"]["state"], "verified");
    assert!(!demo["store"].as_str().unwrap().is_empty());
    let run = demo["run_id"].as_str().unwrap();
    let runs = cairn(dir, &url, &["--json", "runs", "list"])
        .expect(OK)
        .json();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["records"], 15);
    let verify = cairn(dir, &url, &["--json", "ledger", "verify", "--all"]);
    assert_eq!(verify.expect(OK).json()["intact"], true);
    for args in [
        &["ledger", "show", "--run", run, "--step", "3"][..],
        &["ledger", "export", "--run", run, "--format", "jsonl"],
        &["ledger", "prove", "--run", run, "--step", "3"],
        &["cost", "--by", "tool"],
        &["gc"],
    ] {
        cairn(dir, &url, args).expect(OK);
    }
    let export = cairn(
        dir,
        &url,
        &["ledger", "export", "--run", run, "--format", "jsonl"],
    );
    assert_eq!(
        export.stdout.lines().count(),
        16,
        "15 records and the checkpoint"
    );
    let idle = cairn(
        dir,
        &url,
        &[
            "--json",
            "runs",
            "list",
            "--unterminated",
            "--older-than",
            "1s",
        ],
    );
    assert_eq!(idle.expect(OK).json(), json!([]));
}

fn pre_tool_use(dir: &Path, session: &str) -> String {
    json!({
        "session_id": session, "cwd": dir, "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_use_id": "toolu_pg1"
    })
    .to_string()
}

#[test]
fn hooks_gate_and_record_into_postgres_and_deny_when_it_does_not_answer() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let project = common::init_project();
    let dir = project.path();
    let mut command = command_in(dir);
    command.env("CAIRN_STORE", &url);
    common::hook(
        &mut command,
        "claude-code",
        &pre_tool_use(dir, "pg-session"),
    )
    .expect(OK);
    let runs = cairn(dir, &url, &["--json", "runs", "list"])
        .expect(OK)
        .json();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert!(runs[0]["records"].as_u64().unwrap() >= 1, "{runs}");
    // Nothing went to the project's own SQLite file.
    assert!(!common::state(dir).join("cairn.db").exists());

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = format!("postgres://cairn:s3cret@127.0.0.1:{port}/test?connect_timeout=1");
    let mut command = command_in(dir);
    command.env("CAIRN_STORE", &down);
    let out = common::hook(&mut command, "claude-code", &pre_tool_use(dir, "pg-down"));
    out.expect(2);
    assert!(out.stderr.contains("error[store_unavailable]"), "{out:?}");
    assert!(!out.stderr.contains("s3cret"), "{out:?}");
}

#[test]
fn store_copy_moves_a_laptop_ledger_into_postgres_verified() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let laptop = dir.join("lap/.cairn/cairn.db");
    let laptop = laptop.to_str().unwrap();
    for _ in 0..2 {
        Output::of(command_in(dir).args(["demo", "--dir", "lap"])).expect(OK);
    }
    let url = schemas.url();
    let copy = |to: &str| {
        Output::of(command_in(dir).args(["--json", "store", "copy", "--from", laptop, "--to", to]))
    };
    let first = copy(&url);
    let results = first.expect(OK).json()["runs"].clone();
    let results: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["copied", "copied"]);
    let keys = dir.join("lap/.cairn/keys");
    let verify = Output::of(command_in(dir).args([
        "--json",
        "--store",
        &url,
        "--keys",
        keys.to_str().unwrap(),
        "ledger",
        "verify",
        "--all",
    ]));
    assert_eq!(verify.expect(OK).json()["intact"], true);
    let again = copy(&url).expect(OK).json();
    assert_eq!(again["runs"][0]["result"], "already_there");

    // A tampered run is not copied, and says so with the tamper exit code.
    let db = rusqlite::Connection::open(laptop).unwrap();
    db.execute(
        "UPDATE records SET body = replace(body, 'tickets.read', 'tickets.rEad') WHERE step_index = 0
         AND run_id = (SELECT MIN(run_id) FROM runs)",
        [],
    )
    .unwrap();
    let elsewhere = schemas.url();
    let tampered = copy(&elsewhere);
    let report = tampered.expect(TAMPER).json();
    let results: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(
        results.iter().filter(|r| **r == "not_copied").count(),
        1,
        "{report}"
    );
    assert_eq!(
        results.iter().filter(|r| **r == "copied").count(),
        1,
        "{report}"
    );
}

/// `cairn serve` on a port of its own, over `data` and the store `url`; stopped when dropped.
struct Replica {
    /// Held for its lifetime: dropping it stops the replica.
    _serving: common::Serving,
    url: String,
}

impl Replica {
    fn start(dir: &Path, data: &Path, store: &str, name: &str, durability: &str) -> Self {
        let mut command = command_in(dir);
        command
            .env("CAIRN_STORE", store)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--durability",
                durability,
                "--data",
            ])
            .arg(data)
            .stderr(std::process::Stdio::null());
        let serving = common::Serving::start(command, &dir.join(format!("{name}.ready")));
        let url = serving.addresses[0].clone();
        Self {
            _serving: serving,
            url,
        }
    }

    fn call(&self, method: &str, path: &str, token: &str, body: Option<&str>) -> serde_json::Value {
        let endpoint: cairn_server::client::Endpoint = self.url.parse().unwrap();
        let answer = cairn_server::client::send_blocking(
            &endpoint,
            method,
            path,
            Some(token),
            body.map(|b| b.as_bytes().to_vec()),
            std::time::Duration::from_secs(30),
        )
        .unwrap();
        assert!(
            (200..300).contains(&answer.status),
            "{method} {path} on {}: {} {}",
            self.url,
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
        answer.json()
    }
}

/// Two `cairn serve` replicas in front of one PostgreSQL database (issue 20): one run written
/// through both, step after step — each replica resumes from what the other committed — and
/// closed through the second; both see the same ledger, and it verifies.
#[test]
fn two_service_replicas_share_one_postgres_database() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = common::service_folder(dir);
    let token = |role: &str| {
        let made = Output::of(
            command_in(dir)
                .args([
                    "--json", "tokens", "create", "--tenant", "acme", "--role", role, "--data",
                ])
                .arg(&data),
        );
        made.expect(OK).json()["token"].as_str().unwrap().to_owned()
    };
    let (agent, investigator) = (token("agent"), token("investigator"));
    // `sync`: every record is committed before its answer, so that a replica resuming the
    // run finds every step the other admitted.
    let a = Replica::start(dir, &data, &url, "a", "sync");
    let b = Replica::start(dir, &data, &url, "b", "sync");
    let run = a.call("POST", "/v1/runs", &agent, Some(r#"{"name": "shared"}"#))["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let steps = format!("/v1/runs/{run}/steps");
    for i in 0..10 {
        let replica = if i % 2 == 0 { &a } else { &b };
        let body = format!(r#"{{"tool": "Read", "arguments": {{"file_path": "/src/{i}.rs"}}}}"#);
        let decided = replica.call("POST", &steps, &agent, Some(&body));
        assert_eq!(decided["decision"], "allow", "{decided}");
    }
    let closed = b.call(
        "POST",
        &format!("/v1/runs/{run}/terminate"),
        &agent,
        Some(r#"{"reason": "completed"}"#),
    );
    assert!(closed["checkpoint"].as_str().is_some());
    for replica in [&a, &b] {
        let verified = replica.call(
            "GET",
            &format!("/v1/runs/{run}/verify"),
            &investigator,
            None,
        );
        assert_eq!(verified["intact"], true, "{verified}");
        assert_eq!(verified["report"]["records"], 11, "{verified}");
    }
    // The one database holds it, as the CLI reads it.
    let listed = cairn(dir, &url, &["--json", "runs", "list"])
        .expect(OK)
        .json();
    assert_eq!(listed[0]["records"], 11);
    assert_eq!(listed[0]["run_id"], run.as_str());
}
