//! The cost of Cairn on every tool call (issue 6, acceptance 4): the wall time of one
//! `cairn hook claude-code` `PreToolUse` round trip — process start, reading stdin, loading
//! the project (policies, tool catalog), opening the SQLite store, resuming the run, deciding,
//! committing the intent record in `sync` mode (fsync), answering — beside the bare process
//! start of `cairn --version`, measured alternately in the same run so both see the same
//! machine noise.
//!
//! The project comes from `cairn init` (observe-first: the call is allowed and recorded); the
//! 200 timed calls are consecutive calls of one session, so the run grows from 20 to 220
//! records as it would in a real session. Target: median ≤ 5 ms and ≤ 3× the bare start.
//!
//! Run: `cargo bench -p cairn-cli --bench hook` (set `CAIRN_BENCH_CALLS` to change the 200).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "benchmark code"
)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WARM_UP: usize = 20;

fn cairn() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .env_remove("CAIRN_LOG")
        .env_remove("CAIRN_FAULT");
    command
}

fn version() -> Duration {
    let started = Instant::now();
    let out = cairn()
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(out.status.success());
    elapsed
}

fn pre_tool_use(project: &Path, i: usize) -> Duration {
    let stdin = serde_json::json!({
        "session_id": "bench-session",
        "transcript_path": "/home/dev/.claude/projects/bench/bench-session.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": format!("cargo test --package parser -- case_{i}"), "description": "Run one test"},
        "tool_use_id": format!("toolu_bench_{i:04}"),
    })
    .to_string();
    let started = Instant::now();
    let mut child = cairn()
        .args(["hook", "claude-code"])
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "an allowed call answers nothing");
    elapsed
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let calls: usize = std::env::var("CAIRN_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    let init = cairn()
        .args(["init", "--dir", project.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(init.status.success());
    for i in 0..WARM_UP {
        version();
        pre_tool_use(project, i);
    }
    let mut bare = Vec::with_capacity(calls);
    let mut hook = Vec::with_capacity(calls);
    for i in 0..calls {
        bare.push(version());
        hook.push(pre_tool_use(project, WARM_UP + i));
    }
    let first: Vec<Duration> = hook.iter().take(calls / 4).copied().collect();
    let last: Vec<Duration> = hook.iter().rev().take(calls / 4).copied().collect();
    bare.sort();
    hook.sort();
    let (bare_median, hook_median) = (percentile(&bare, 50.0), percentile(&hook, 50.0));
    let (bare_p99, hook_p99) = (percentile(&bare, 99.0), percentile(&hook, 99.0));
    let mean = |v: &[Duration]| ms(v.iter().sum::<Duration>()) / v.len().max(1) as f64;
    println!(
        "cairn hook claude-code, PreToolUse round trip ({calls} calls, one session, sync store)"
    );
    println!("| what | median | p99 |");
    println!("|---|---|---|");
    println!(
        "| `cairn hook claude-code` PreToolUse (allowed, recorded) | {:.2} ms | {:.2} ms |",
        ms(hook_median),
        ms(hook_p99)
    );
    println!(
        "| `cairn --version` (bare process start) | {:.2} ms | {:.2} ms |",
        ms(bare_median),
        ms(bare_p99)
    );
    let ratio = hook_median.as_secs_f64() / bare_median.as_secs_f64();
    println!(
        "ratio of medians: {ratio:.2}x; target median <= 5 ms: {}; <= 3x bare start: {}",
        if ms(hook_median) <= 5.0 {
            "reached"
        } else {
            "missed"
        },
        if ratio <= 3.0 { "reached" } else { "missed" }
    );
    println!(
        "mean of the first quarter {:.2} ms, of the last quarter {:.2} ms (the run grows by one record per call)",
        mean(&first),
        mean(&last)
    );
}
