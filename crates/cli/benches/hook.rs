//! The cost of Cairn on every tool call (issue 6, acceptance 4): the wall time of one
//! `cairn hook claude-code` `PreToolUse` round trip — process start, reading stdin, loading
//! the project (policies, tool catalog), opening the SQLite store, resuming the run, deciding,
//! committing the intent record in `sync` mode (fsync), answering — beside the bare process
//! start of `cairn --version`, measured alternately in the same run so both see the same
//! machine noise.
//!
//! The project comes from `cairn init` (observe-first: the call is allowed and recorded); the
//! 200 timed calls are consecutive calls of one session, each followed (untimed) by its
//! `PostToolUse` as a host sends it, so the run grows as it would in a real session. Target: median ≤ 5 ms and ≤ 3× the bare start.
//!
//! Each call is measured three times, in three sessions: through `cairn-hook` (the command
//! `hooks install` writes) and the project's resident server (`cairn hooks serve`) — issue
//! 16's target is at most 1.5× the bare start —; through `cairn hook` and the server; and by
//! `cairn hook` without a server (`CAIRN_HOOK_RESIDENT=off`: it supervises a worker process
//! that decides), interleaved with the bare start.
//!
//! A second table (issue 16) times a call against the length of its run: sessions whose runs
//! already hold 0, 1,000, 10,000 and 50,000 records (written through the library first),
//! called round-robin. Target: every length within 1.1× of the fresh run's median.
//!
//! Run: `cargo bench -p cairn-cli --bench hook` (`CAIRN_BENCH_CALLS` changes the 200,
//! `CAIRN_BENCH_LENGTH_CALLS` the 60 per length; `CAIRN_BENCH_PHASE=calls|length` runs one).

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

/// The session index of the benchmark's hook calls, away from the user's own.
static HOME: std::sync::LazyLock<tempfile::TempDir> =
    std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());

fn cairn() -> Command {
    program(env!("CARGO_BIN_EXE_cairn"))
}

/// `path` (`cairn` or `cairn-hook`) with the benchmark's environment.
fn program(path: &str) -> Command {
    let mut command = Command::new(path);
    command
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .env_remove("CAIRN_LOG")
        .env_remove("CAIRN_FAULT")
        .env_remove("CAIRN_HOOK_DEADLINE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env("CAIRN_HOME", HOME.path());
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

fn pre_tool_use(project: &Path, mode: Mode, i: usize) -> Duration {
    call_in(project, mode, mode.session(), i)
}

/// One `PreToolUse` of `session`, answered as `mode` says.
fn call_in(project: &Path, mode: Mode, session: &str, i: usize) -> Duration {
    let stdin = serde_json::json!({
        "session_id": session,
        "transcript_path": "/home/dev/.claude/projects/bench/bench-session.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": format!("cargo test --package parser -- case_{i}"), "description": "Run one test"},
        "tool_use_id": format!("toolu_bench_{i:04}"),
    })
    .to_string();
    let (out, elapsed) = hook_call(project, mode, &stdin);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "an allowed call answers nothing");
    // Its outcome, untimed, as the host reports it: the session keeps no call in flight.
    let mut done: serde_json::Value = serde_json::from_str(&stdin).unwrap();
    done["hook_event_name"] = "PostToolUse".into();
    done["tool_response"] = serde_json::json!({"stdout": "ok", "stderr": "", "interrupted": false});
    let (out, _) = hook_call(project, mode, &done.to_string());
    assert!(out.status.success());
    elapsed
}

/// Runs `cairn hook claude-code` in `project` with `stdin`, answered as `mode` says; returns
/// what it printed and the wall time from its start to its exit.
fn hook_call(project: &Path, mode: Mode, stdin: &str) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let mut command = match mode {
        Mode::Thin => program(env!("CARGO_BIN_EXE_cairn-hook")),
        Mode::Cold | Mode::Resident => {
            let mut command = cairn();
            command.arg("hook");
            command
        }
    };
    if mode == Mode::Cold {
        command.env("CAIRN_HOOK_RESIDENT", "off");
    }
    let mut child = command
        .arg("claude-code")
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
    (out, started.elapsed())
}

/// How a hook call is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// By the `cairn hook` process itself (`CAIRN_HOOK_RESIDENT=off`).
    Cold,
    /// By the project's resident server (`cairn hooks serve`).
    Resident,
    /// By the resident server, through `cairn-hook` (the command `hooks install` writes).
    Thin,
}

impl Mode {
    const fn session(self) -> &'static str {
        match self {
            Self::Cold => "bench-cold",
            Self::Resident => "bench-resident",
            Self::Thin => "bench-thin",
        }
    }
}

/// Starts `cairn hooks serve` for `project` and waits for its socket.
fn serve(project: &Path) -> std::process::Child {
    let child = cairn()
        .args(["hooks", "serve", "--idle", "5m", "--dir"])
        .arg(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let socket = cairn_runtime::layout::state_dir_in(HOME.path(), project).join("hookd.sock");
    let started = Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A project from `cairn init` (observe-first: every call allowed and recorded).
fn init_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let init = cairn()
        .args(["init", "--dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(init.status.success());
    dir
}

/// Gives the session `session` of the project at `project` a run of `records` records
/// before its first hook call, written through the library (batch commits), as a long
/// session would have left it.
fn fill(project: &Path, session: &str, records: u64) {
    use cairn_ledger::record::{BoundaryEvent, Label};
    use std::sync::Arc;
    if records == 0 {
        return;
    }
    // The project's store, where the hooks will open it (outside the working tree).
    let layout = cairn_runtime::layout::Project::at_in(project, Some(HOME.path()));
    layout.prepare_state().unwrap();
    let store = cairn_store_sqlite::SqliteStore::open(
        layout.store_path(),
        cairn_store_sqlite::OpenMode::CreateIfMissing,
    )
    .unwrap();
    let run = format!("cc-{session}");
    let mut recorder = cairn_runtime::Recorder::open(
        Arc::new(store),
        Arc::new(cairn_core::SystemClock),
        (
            "local".parse().unwrap(),
            format!("task-{run}").parse().unwrap(),
            run.parse().unwrap(),
        ),
        cairn_runtime::RecorderOptions {
            durability: cairn_runtime::Durability::Batch {
                max_records: 4096,
                max_delay: std::time::Duration::from_secs(60),
            },
            content_retention: None,
        },
    )
    .unwrap();
    for _ in 0..records {
        recorder
            .record_boundary(BoundaryEvent::new(Label::new("bench_fill").unwrap()), None)
            .unwrap();
    }
    recorder.flush().unwrap();
}

/// The cost of a call against the length of its run (issue 16): sessions whose runs already
/// hold 0, 1,000, 10,000 and 50,000 records, called round-robin so that every length sees the
/// same machine noise, without a server and through the resident server.
fn run_length(calls: usize) {
    const LENGTHS: [u64; 4] = [0, 1_000, 10_000, 50_000];
    let dir = init_project();
    let project = dir.path();
    for prefix in ["len-cold", "len-resident"] {
        for n in LENGTHS {
            fill(project, &format!("{prefix}-{n}"), n);
        }
    }
    let mut server = serve(project);
    let mut times = vec![Vec::with_capacity(calls); LENGTHS.len() * 2];
    for i in 0..(calls + WARM_UP / 4) {
        for (m, (mode, prefix)) in [(Mode::Cold, "len-cold"), (Mode::Resident, "len-resident")]
            .into_iter()
            .enumerate()
        {
            for (k, n) in LENGTHS.iter().enumerate() {
                let took = call_in(project, mode, &format!("{prefix}-{n}"), i);
                if i >= WARM_UP / 4 {
                    times[m * LENGTHS.len() + k].push(took);
                }
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    println!();
    println!(
        "a PreToolUse against the length of its run ({calls} calls per length and mode, round-robin)"
    );
    println!(
        "| records already in the run | no server: median | ratio to a fresh run | resident server: median | ratio to a fresh run |"
    );
    println!("|---|---|---|---|---|");
    for v in &mut times {
        v.sort();
    }
    let fresh = |m: usize| percentile(&times[m * LENGTHS.len()], 50.0).as_secs_f64();
    for (k, n) in LENGTHS.iter().enumerate() {
        let cold = percentile(&times[k], 50.0);
        let resident = percentile(&times[LENGTHS.len() + k], 50.0);
        println!(
            "| {n} | {:.2} ms | {:.3}x | {:.2} ms | {:.3}x |",
            ms(cold),
            cold.as_secs_f64() / fresh(0),
            ms(resident),
            resident.as_secs_f64() / fresh(1)
        );
    }
    let worst = LENGTHS
        .iter()
        .enumerate()
        .flat_map(|(k, _)| {
            [
                percentile(&times[k], 50.0).as_secs_f64() / fresh(0),
                percentile(&times[LENGTHS.len() + k], 50.0).as_secs_f64() / fresh(1),
            ]
        })
        .fold(0.0_f64, f64::max);
    println!(
        "target: every length within 1.1x of the fresh run's: {} (worst {worst:.3}x)",
        if worst <= 1.1 { "reached" } else { "missed" }
    );
}

fn main() {
    let phase = std::env::var("CAIRN_BENCH_PHASE").unwrap_or_default();
    if phase.is_empty() || phase == "length" {
        let calls = std::env::var("CAIRN_BENCH_LENGTH_CALLS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60);
        run_length(calls);
    }
    if phase.is_empty() || phase == "calls" {
        per_call();
    }
}

fn per_call() {
    let calls: usize = std::env::var("CAIRN_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = init_project();
    let project = dir.path();
    let mut server = serve(project);
    for i in 0..WARM_UP {
        version();
        pre_tool_use(project, Mode::Cold, i);
        pre_tool_use(project, Mode::Resident, i);
        pre_tool_use(project, Mode::Thin, i);
    }
    let mut bare = Vec::with_capacity(calls);
    let mut cold = Vec::with_capacity(calls);
    let mut resident = Vec::with_capacity(calls);
    let mut thin = Vec::with_capacity(calls);
    for i in 0..calls {
        bare.push(version());
        thin.push(pre_tool_use(project, Mode::Thin, WARM_UP + i));
        resident.push(pre_tool_use(project, Mode::Resident, WARM_UP + i));
        cold.push(pre_tool_use(project, Mode::Cold, WARM_UP + i));
    }
    let _ = server.kill();
    let _ = server.wait();
    let quarter = |v: &[Duration], last: bool| -> f64 {
        let part: Vec<Duration> = if last {
            v.iter().rev().take(calls / 4).copied().collect()
        } else {
            v.iter().take(calls / 4).copied().collect()
        };
        ms(part.iter().sum::<Duration>()) / part.len().max(1) as f64
    };
    let growth = format!(
        "resident {:.2} -> {:.2} ms, no server {:.2} -> {:.2} ms",
        quarter(&resident, false),
        quarter(&resident, true),
        quarter(&cold, false),
        quarter(&cold, true)
    );
    for v in [&mut bare, &mut cold, &mut resident, &mut thin] {
        v.sort();
    }
    let bare_median = percentile(&bare, 50.0);
    println!(
        "a hook call's PreToolUse round trip ({calls} calls per mode, one session each, sync store)"
    );
    println!("| what | median | p99 | ratio of medians |");
    println!("|---|---|---|---|");
    for (what, v) in [
        (
            "`cairn-hook claude-code` PreToolUse (the installed command), resident server running",
            &thin,
        ),
        (
            "`cairn hook claude-code` PreToolUse, resident server running",
            &resident,
        ),
        (
            "`cairn hook claude-code` PreToolUse, no server (supervisor + worker process)",
            &cold,
        ),
        ("`cairn --version` (bare process start)", &bare),
    ] {
        let median = percentile(v, 50.0);
        println!(
            "| {what} | {:.2} ms | {:.2} ms | {:.2}x |",
            ms(median),
            ms(percentile(v, 99.0)),
            median.as_secs_f64() / bare_median.as_secs_f64()
        );
    }
    let installed = percentile(&thin, 50.0).as_secs_f64() / bare_median.as_secs_f64();
    println!(
        "installed command (issue 16): <= 1.5x bare start: {} ({installed:.2}x)",
        if installed <= 1.5 {
            "reached"
        } else {
            "missed"
        }
    );
    for (what, v) in [("resident", &resident), ("no server", &cold)] {
        let median = percentile(v, 50.0);
        let ratio = median.as_secs_f64() / bare_median.as_secs_f64();
        println!(
            "{what}: target median <= 5 ms: {}; <= 3x bare start: {}",
            if ms(median) <= 5.0 {
                "reached"
            } else {
                "missed"
            },
            if ratio <= 3.0 { "reached" } else { "missed" }
        );
    }
    println!(
        "mean of the first and the last quarter (the runs grow by one record per call): {growth}"
    );
}
