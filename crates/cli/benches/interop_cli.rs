//! `cairn vce check` and `cairn rlc check` as processes (issue 17): what one document costs a
//! process against a bare `cairn --version`, and how many documents per second one process
//! decides in batch mode (`--jsonl`), against one SHA-256 of each document in the same run.
//!
//! - **One document per process**: the published VCE example with its restore results, the
//!   accepted RLC fixture with the VCE example, and `{}` (which fails its schema and so needs
//!   the full schema validator), each started `ROUNDS` times interleaved with
//!   `cairn --version`; the median wall time, and the peak resident memory read by GNU
//!   `time` when `/usr/bin/time` exists. Targets: at most 3× the wall time and 2× the peak
//!   memory of `cairn --version`.
//! - **Batch**: `LINES` JSON lines of the published examples through `--jsonl`, best of three,
//!   against the SHA-256 of every line's text in this process (the same-run baseline).
//!   Target: at least 50,000 documents per second.
//!
//! Run: `cargo bench -p cairn-cli --bench interop_cli` (`CAIRN_BENCH_ROUNDS`, 30 by default;
//! `CAIRN_BENCH_LINES`, 20,000 by default). The published examples are read from the
//! conformance cases that hold byte-for-byte copies of them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "benchmark code"
)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

fn cairn() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .env_remove("CAIRN_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One run of `args`, timed.
fn timed(args: &[&str]) -> Duration {
    let started = Instant::now();
    let status = cairn().args(args).status().unwrap();
    let took = started.elapsed();
    assert!(status.code().is_some(), "{args:?} was killed");
    took
}

/// The peak resident memory of one run of `args`, in KiB, from GNU time.
fn peak_kib(args: &[&str]) -> Option<u64> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    let out = Command::new(time)
        .args(["-f", "%M", env!("CARGO_BIN_EXE_cairn")])
        .args(args)
        .stdout(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let rounds = env_or("CAIRN_BENCH_ROUNDS", 30);
    let lines = env_or("CAIRN_BENCH_LINES", 20_000);
    let dir = tempfile::tempdir().unwrap();
    // Byte-for-byte copies of the published examples, kept with the conformance cases.
    let vce_dir = crates().join("interop/tests/vce_cases/ref-published-examples-are-schema-valid");
    let rlc_dir =
        crates().join("interop/tests/rlc_cases/suite-03-accepted-fixture-passes-lane-restore");
    let envelope = vce_dir.join("envelope.json");
    let restore = vce_dir.join("restore.json");
    let fixture = rlc_dir.join("fixture.json");
    for path in [&envelope, &restore, &fixture] {
        assert!(path.exists(), "{} is missing", path.display());
    }
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let (envelope_s, restore_s, fixture_s, empty_s) =
        (s(&envelope), s(&restore), s(&fixture), s(&empty));

    // --- one document per process ---------------------------------------------------------
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("`cairn --version` (baseline)", vec!["--version"]),
        (
            "`cairn vce check` the published example with its restore results",
            vec!["vce", "check", &envelope_s, "--restore", &restore_s],
        ),
        (
            "`cairn rlc check` the accepted fixture with `--vce` the example",
            vec!["rlc", "check", &fixture_s, "--vce", &envelope_s],
        ),
        (
            "`cairn vce check {}` (schema-invalid: every error reported)",
            vec!["vce", "check", &empty_s],
        ),
    ];
    for (_, args) in &cases {
        timed(args);
    }
    let mut times = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (k, (_, args)) in cases.iter().enumerate() {
            times[k].push(timed(args));
        }
    }
    let walls: Vec<Duration> = times.into_iter().map(median).collect();
    let peaks: Vec<Option<u64>> = cases.iter().map(|(_, args)| peak_kib(args)).collect();
    println!(
        "One document per process: median wall time of {rounds} interleaved rounds; peak memory by GNU time"
    );
    println!(
        "| process | wall | × `--version` | peak memory | × `--version` | target ≤ 3× wall, ≤ 2× memory |"
    );
    println!("|---|---|---|---|---|---|");
    for (k, (name, _)) in cases.iter().enumerate() {
        let wall_ratio = walls[k].as_secs_f64() / walls[0].as_secs_f64();
        let memory_ratio = match (peaks[k], peaks[0]) {
            (Some(p), Some(base)) => Some(p as f64 / base as f64),
            _ => None,
        };
        let reached = if k == 0 {
            "—".to_owned()
        } else {
            let memory_ok = memory_ratio.is_none_or(|r| r <= 2.0);
            if wall_ratio <= 3.0 && memory_ok {
                "reached".to_owned()
            } else {
                "missed".to_owned()
            }
        };
        println!(
            "| {name} | {:.2} ms | {wall_ratio:.2} | {} | {} | {reached} |",
            walls[k].as_secs_f64() * 1e3,
            peaks[k].map_or("—".to_owned(), |p| format!("{:.1} MB", p as f64 / 1024.0)),
            memory_ratio.map_or("—".to_owned(), |r| format!("{r:.2}")),
        );
    }

    // --- batch -----------------------------------------------------------------------------
    let example = read(&envelope);
    let fixture_value = read(&fixture);
    let batches: Vec<(&str, &str, String)> = vec![
        (
            "VCE 0.1: the published example with its restore results",
            "vce",
            json!({"envelope": example, "restore": read(&restore)}).to_string(),
        ),
        (
            "RLC 0.1: the accepted fixture (extension and restore results)",
            "rlc",
            fixture_value.to_string(),
        ),
        (
            "RLC 0.1: the accepted fixture, cross-checked against the VCE example",
            "rlc",
            json!({
                "extension": fixture_value["extension"],
                "restore_results": fixture_value["restore_results"],
                "vce": example,
            })
            .to_string(),
        ),
    ];
    println!();
    println!(
        "Batch: {lines} JSON lines through `--jsonl` in one process, best of 3; baseline: SHA-256 of each line, same run"
    );
    println!(
        "| documents | documents/s | per document | SHA-256 of the line | ratio | target ≥ 50,000/s |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, format, line) in &batches {
        let input = dir.path().join(format!("{format}.jsonl"));
        let mut file = std::fs::File::create(&input).unwrap();
        for _ in 0..lines {
            writeln!(file, "{line}").unwrap();
        }
        drop(file);
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let started = Instant::now();
            let status = cairn()
                .args([format, "check", "--jsonl"])
                .stdin(std::fs::File::open(&input).unwrap())
                .status()
                .unwrap();
            best = best.min(started.elapsed());
            assert!(matches!(status.code(), Some(0 | 3)), "{name}: {status}");
        }
        let started = Instant::now();
        let mut sink = 0_u8;
        for _ in 0..lines {
            sink ^= Sha256::digest(line.as_bytes())[0];
        }
        let sha = started.elapsed();
        std::hint::black_box(sink);
        let per_document = best.as_secs_f64() / lines as f64;
        let per_sha = sha.as_secs_f64() / lines as f64;
        let rate = 1.0 / per_document;
        println!(
            "| {name} ({} bytes) | {rate:.0} | {:.1} µs | {:.2} µs | {:.1} | {} |",
            line.len(),
            per_document * 1e6,
            per_sha * 1e6,
            per_document / per_sha,
            if rate >= 50_000.0 {
                "reached"
            } else {
                "missed"
            }
        );
    }
}
