//! What `cairn serve` logs (issue 20): one JSON object per line with `CAIRN_LOG_FORMAT=json`,
//! and never an argument, an observation, a summary or a token — even at the most verbose
//! level. Canaries are sent in each and looked for in everything the service wrote.

use std::path::Path;
use std::time::Duration;

use cairn_server::client::{Endpoint, send_blocking};
use serde_json::Value;

use crate::common::{self, Output, Serving, command_in};

const CANARY: &str = "CANARY7f3e";

fn send(endpoint: &Endpoint, method: &str, path: &str, token: &str, body: &str) -> Value {
    send_blocking(
        endpoint,
        method,
        path,
        Some(token),
        Some(body.as_bytes().to_vec()),
        Duration::from_secs(20),
    )
    .unwrap()
    .json()
}

fn run_service_and_collect_logs(dir: &Path, level: &str) -> (String, String) {
    let data = common::service_folder(dir);
    let made = Output::of(
        command_in(dir)
            .args([
                "--json", "tokens", "create", "--tenant", "acme", "--role", "agent", "--data",
            ])
            .arg(&data),
    );
    let token = made.expect(0).json()["token"].as_str().unwrap().to_owned();
    let socket = dir.join("cairn.sock");
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let mut command = command_in(dir);
    command
        .env("CAIRN_LOG", level)
        .env("CAIRN_LOG_FORMAT", "json")
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .stderr(log);
    let mut serving = Serving::start(command, &dir.join("ready"));
    let endpoint = Endpoint::Unix(socket);
    let opened = send(
        &endpoint,
        "POST",
        "/v1/runs",
        &token,
        r#"{"name": "logged"}"#,
    );
    let run = opened["run_id"].as_str().unwrap().to_owned();
    let steps = format!("/v1/runs/{run}/steps");
    send(
        &endpoint,
        "POST",
        &steps,
        &token,
        &format!(
            r#"{{"tool": "Read", "arguments": {{"file_path": "/{CANARY}/args"}}, "observation": {{"user": "{CANARY} observation"}}}}"#
        ),
    );
    // Refused inputs carry the canary too (a message may quote a value; it is not logged).
    send(
        &endpoint,
        "POST",
        &steps,
        &token,
        &format!(r#"{{"tool": "Read", "arguments": {{}}, "lane": "{CANARY} lane"}}"#),
    );
    send(
        &endpoint,
        "POST",
        &steps,
        &token,
        &format!(r#"{{"tool": ["{CANARY}"]}}"#),
    );
    send(
        &endpoint,
        "POST",
        "/v1/runs",
        &format!("cairn_{CANARY}_forged"),
        "{}",
    );
    // A hook session with a compaction summary.
    let event = |name: &str, extra: &str| {
        format!(
            r#"{{"session_id": "s-logs", "transcript_path": "/t", "cwd": "{}", "hook_event_name": "{name}"{extra}}}"#,
            dir.display()
        )
    };
    for body in [
        event(
            "PreToolUse",
            &format!(
                r#", "tool_name": "Bash", "tool_input": {{"command": "echo {CANARY}"}}, "tool_use_id": "t1""#
            ),
        ),
        event(
            "PreCompact",
            r#", "trigger": "manual", "custom_instructions": """#,
        ),
        event(
            "PostCompact",
            &format!(r#", "trigger": "manual", "compact_summary": "The {CANARY} summary.""#),
        ),
    ] {
        send(&endpoint, "POST", "/v1/hooks/claude-code", &token, &body);
    }
    serving.stop();
    (
        std::fs::read_to_string(dir.join("serve.log")).unwrap(),
        token,
    )
}

#[test]
fn the_service_logs_json_lines_without_arguments_observations_summaries_or_tokens() {
    for level in ["debug", "trace"] {
        let dir = tempfile::tempdir().unwrap();
        let (logs, token) = run_service_and_collect_logs(dir.path(), level);
        assert!(
            logs.lines().count() > 3,
            "{level}: the service logged:\n{logs}"
        );
        for line in logs.lines() {
            assert!(
                serde_json::from_str::<Value>(line).is_ok(),
                "{level}: not a JSON line: {line}"
            );
        }
        assert!(!logs.contains(CANARY), "{level}: a canary leaked:\n{logs}");
        let secret = token.rsplit('_').next().unwrap();
        assert!(!logs.contains(secret), "{level}: the token leaked");
    }
}

#[test]
fn metrics_are_served_on_their_own_listener_and_never_on_the_apis() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let data = common::service_folder(dir.path());
    let api = dir.path().join("api.sock");
    let metrics = dir.path().join("metrics.sock");
    let mut command = command_in(dir.path());
    command
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", api.display()))
        .arg("--metrics-listen")
        .arg(format!("unix:{}", metrics.display()));
    let mut serving = Serving::start(command, &dir.path().join("ready"));
    let mode = std::fs::metadata(&metrics).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the service's user reaches the metrics");
    let get = |socket: &Path, path: &str| {
        send_blocking(
            &Endpoint::Unix(socket.to_path_buf()),
            "GET",
            path,
            None,
            None,
            Duration::from_secs(20),
        )
        .unwrap()
    };
    let scraped = get(&metrics, "/metrics");
    assert_eq!(scraped.status, 200);
    assert!(
        String::from_utf8_lossy(&scraped.body).contains("cairn_"),
        "OpenMetrics text"
    );
    assert_eq!(get(&api, "/metrics").status, 404, "not on the API's socket");
    assert_eq!(get(&api, "/healthz").status, 200);
    serving.stop();

    let bad = Output::of(
        command_in(dir.path())
            .args(["serve", "--data"])
            .arg(&data)
            .args(["--metrics-listen", "nowhere"]),
    );
    bad.expect(2);
    assert!(bad.stderr.contains("--metrics-listen"), "{}", bad.stderr);
}

/// Issue 34, 13: logs written where no person reads them at a terminal — a file, a pipe, a
/// host showing a hook's stderr to the model — carry no colour codes.
#[test]
fn logs_to_anything_but_a_terminal_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::service_folder(d);
    let log = d.join("serve.log");
    let mut command = command_in(d);
    command
        .env("CAIRN_LOG", "info")
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", d.join("cairn.sock").display()))
        .stderr(std::fs::File::create(&log).unwrap());
    let mut serving = Serving::start(command, &d.join("ready"));
    serving.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("listening"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text:?}"
    );
}
