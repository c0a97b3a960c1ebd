//! The data-driven folder of MCP sessions (`tests/mcp/sessions/<case>/case.json`): each case
//! names its upstreams and policies, the JSON-RPC messages a client sends through the gateway
//! (raw text included: malformed, oversized, batched, repeated ids), the answer each must get,
//! and the ledger the session must leave. Adding a case is adding a folder.
//!
//! Keys of a case: `about`, `upstreams` (`name: everything|filesystem|hostile`), `policies`,
//! `call_timeout_seconds`, `max_message_bytes`, `read_only_tools`, `exchange` (steps of
//! `send` or `raw`, with `expect`, `within_seconds`, and `after_ms` to wait before sending)
//! and `ledger`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_mcp::config::GatewayConfig;
use cairn_mcp::{Admission, Ended};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::{TestProject, peers};

/// The corpus folder.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/sessions")
}

/// Whether `actual` matches `expected`: every key of an expected object present and
/// matching, arrays element by element, `"*"` any value, `"~text"` a string containing
/// `text`, anything else equal.
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(any), _) if any == "*" => true,
        (Value::String(pattern), Value::String(text)) if pattern.starts_with('~') => {
            text.contains(&pattern[1..])
        }
        (Value::Object(expected), Value::Object(actual)) => {
            expected
                .iter()
                .all(|(key, value)| match (value, actual.get(key)) {
                    (Value::Null, None) => true,
                    (value, Some(found)) => matches(value, found),
                    (_, None) => false,
                })
        }
        (Value::Array(expected), Value::Array(actual)) => {
            expected.len() == actual.len()
                && expected.iter().zip(actual).all(|(e, a)| matches(e, a))
        }
        _ => expected == actual,
    }
}

/// The text a step sends: a JSON message, or `send_raw` as it is (one line), or
/// `send_repeat` (`{"text": …, "times": n}`, for oversized messages).
fn line_of(step: &Value) -> String {
    if let Some(raw) = step.get("send_raw").and_then(Value::as_str) {
        return raw.to_owned();
    }
    if let Some(repeat) = step.get("send_oversized") {
        let bytes = repeat["bytes"].as_u64().unwrap();
        let filler = "x".repeat(usize::try_from(bytes).unwrap());
        return json!({"jsonrpc": "2.0", "id": repeat["id"], "method": "tools/call",
            "params": {"name": "everything__echo", "arguments": {"message": filler}}})
        .to_string();
    }
    step["send"].to_string()
}

async fn run_case(dir: &Path, peers: &crate::common::Peers) {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let case: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap())
            .unwrap_or_else(|e| panic!("{name}: case.json: {e}"));
    let project = TestProject::new(
        case["policies"]
            .as_str()
            .unwrap_or("@id(\"all\") permit(principal, action, resource);"),
    );
    let files = project.dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let mut upstreams = Vec::new();
    for (server, kind) in case["upstreams"].as_object().unwrap() {
        upstreams.push(match kind.as_str().unwrap() {
            "everything" => peers.everything(server),
            "filesystem" => peers.filesystem(server, &files),
            "hostile" => peers.hostile(server),
            other => panic!("{name}: unknown upstream kind `{other}`"),
        });
    }
    let mut config = GatewayConfig {
        upstreams,
        ..GatewayConfig::default()
    };
    if let Some(secs) = case["call_timeout_seconds"].as_u64() {
        config.call_timeout = Duration::from_secs(secs);
    }
    if let Some(bytes) = case["max_message_bytes"].as_u64() {
        config.max_message_bytes = usize::try_from(bytes).unwrap();
    }
    let read_only: Vec<String> = case["read_only_tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let admission: Arc<dyn Admission> = Arc::new(
        project
            .sessions_with(Duration::ZERO, cairn_runtime::Durability::Sync, read_only)
            .open("case")
            .unwrap(),
    );
    let gateway = cairn_mcp::start(config, project.root(), Arc::clone(&admission))
        .await
        .unwrap();
    let (client, server) = tokio::io::duplex(1 << 22);
    let (read, write) = tokio::io::split(server);
    let served = tokio::spawn(cairn_mcp::serve(
        gateway,
        (read, write),
        std::future::pending(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();

    let mut exchange = vec![
        json!({"send": {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cairn-corpus", "version": "1"}}},
            "expect": {"result": {"serverInfo": {"name": "cairn-mcp-gateway"}}}}),
        json!({"send": {"jsonrpc": "2.0", "method": "notifications/initialized"}}),
    ];
    exchange.extend(case["exchange"].as_array().unwrap().iter().cloned());
    for (index, step) in exchange.iter().enumerate() {
        if let Some(ms) = step["after_ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let line = line_of(step);
        client_write.write_all(line.as_bytes()).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
        client_write.flush().await.unwrap();
        let Some(expected) = step.get("expect") else {
            continue;
        };
        let id = step["send"]
            .get("id")
            .cloned()
            .or_else(|| step.get("id").cloned())
            .unwrap_or(Value::Null);
        let wait = Duration::from_secs(step["within_seconds"].as_u64().unwrap_or(10));
        // Answers to this step (by id; `null` for a parse error), skipping notifications.
        let answer = tokio::time::timeout(wait, async {
            loop {
                let line = lines.next_line().await.unwrap()?;
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("{name}: the gateway wrote a line that is not JSON ({e}): {line}")
                });
                if message.get("id") == Some(&id)
                    && (message.get("result").is_some() || message.get("error").is_some())
                {
                    return Some(message);
                }
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!("{name}: step {index} ({line:.200}) got no answer within {wait:?}")
        });
        let answer = answer
            .unwrap_or_else(|| panic!("{name}: the gateway closed the session at step {index}"));
        assert!(
            matches(expected, &answer),
            "{name}: step {index} ({line:.200}):\nexpected {expected:#}\ngot {answer:#}"
        );
    }
    drop(client_write);
    drop(lines);
    let ended = tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(ended, Ended::Closed, "{name}");
    let closing = Arc::clone(&admission);
    tokio::task::spawn_blocking(move || closing.close(ended))
        .await
        .unwrap()
        .unwrap();

    let records = project.records(&admission.run());
    let expected = case["ledger"].as_array().unwrap();
    let actual: Vec<Value> = records
        .iter()
        .map(|r| json!({"kind": r["kind"], "tool": r["tool"]["name"], "decision": r["admission"]["decision"],
                        "rules": r["admission"]["rule_ids"], "event": r["boundary"]["event"]}))
        .collect();
    assert!(
        matches(
            &Value::Array(expected.clone()),
            &Value::Array(actual.clone())
        ),
        "{name}: the ledger\nexpected {expected:#?}\ngot {actual:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_of_the_corpus_gets_its_answers_and_leaves_its_ledger() {
    let Some(peers) = peers("every_session_of_the_corpus") else {
        return;
    };
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("case.json").is_file())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 5,
        "the corpus at {} holds {} cases",
        corpus().display(),
        cases.len()
    );
    for case in &cases {
        run_case(case, &peers).await;
    }
}
