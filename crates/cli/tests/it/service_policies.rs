//! `cairn serve` reloads its policy set on SIGHUP: a set that loads decides every later call,
//! in a run already open too, and a set that does not load changes nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use cairn_server::client::{Endpoint, send_blocking};
use serde_json::Value;

use crate::common::{self, OK, Output, Serving, command_in};

fn post(socket: &Path, path: &str, token: &str, body: &str) -> Value {
    let answer = send_blocking(
        &Endpoint::Unix(socket.to_path_buf()),
        "POST",
        path,
        Some(token),
        Some(body.as_bytes().to_vec()),
        Duration::from_secs(20),
    )
    .unwrap();
    assert!(
        (200..300).contains(&answer.status),
        "{}: {}",
        answer.status,
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

/// Sends SIGHUP to `pid`, then admits `Bash` steps until `done` holds of a decision (at most
/// 20 s); returns that decision.
fn after_hangup(pid: u32, admit: &dyn Fn() -> Value, done: &dyn Fn(&Value) -> bool) -> Value {
    Output::of(std::process::Command::new("kill").args(["-HUP", &pid.to_string()])).expect(OK);
    let started = Instant::now();
    loop {
        let decided = admit();
        if done(&decided) {
            return decided;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the decision never changed: {decided}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sighup_reloads_a_policy_set_that_loads_and_keeps_the_one_in_force_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::service_folder(dir.path());
    let made = Output::of(
        command_in(dir.path())
            .args([
                "--json", "tokens", "create", "--tenant", "acme", "--role", "agent", "--data",
            ])
            .arg(&data),
    );
    let token = made.expect(OK).json()["token"].as_str().unwrap().to_owned();
    let socket = dir.path().join("api.sock");
    let log = dir.path().join("serve.log");
    let mut command = command_in(dir.path());
    command
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .env("CAIRN_LOG", "info")
        .stderr(std::fs::File::create(&log).unwrap());
    let mut serving = Serving::start(command, &dir.path().join("ready"));
    let pid = serving.pid();
    let run = post(&socket, "/v1/runs", &token, r#"{"name": "reloaded"}"#)["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let admit = || {
        post(
            &socket,
            &format!("/v1/runs/{run}/steps"),
            &token,
            r#"{"tool": "Bash", "arguments": {"command": "git push"}}"#,
        )
    };
    let first = admit();
    assert_eq!(first["decision"], "allow", "observe-first: {first}");

    // A set that forbids pushing, in the run already open.
    std::fs::write(
        data.join("policies/team.cedar"),
        common::forbid_bash("team.no-git-push", "*git push*"),
    )
    .unwrap();
    let denied = after_hangup(pid, &admit, &|d| d["decision"] == "deny");
    assert_eq!(denied["rule_ids"], serde_json::json!(["team.no-git-push"]));
    assert_ne!(denied["policy_set_version"], first["policy_set_version"]);

    // A set that does not load (a tool the catalog does not declare): nothing changes.
    std::fs::write(
        data.join("policies/broken.cedar"),
        r#"@id("broken") forbid(principal, action == Action::"NoSuchTool", resource);"#,
    )
    .unwrap();
    Output::of(std::process::Command::new("kill").args(["-HUP", &pid.to_string()])).expect(OK);
    let started = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap()
        .contains("policy set not reloaded")
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no word of the refused reload: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let still = admit();
    assert_eq!(still["decision"], "deny");
    assert_eq!(still["policy_set_version"], denied["policy_set_version"]);
    serving.stop();
}
