//! The web console on a long run (issue 38, acceptance 4): the timeline of a 100,000-record
//! run in the real `cairn serve` — the time of its first page, of its last page and of a step
//! page, and the server's memory — against the same run's `cairn ledger export` as the
//! same-run baseline (wall time and peak memory of the process, by GNU time), and against the
//! same pages of a 1,000-record run in the same service. An open run as long is there too:
//! the runs list, which reads what needs a person from open runs, must not read it whole.
//!
//! Targets: the console is paged — a page of the 100,000-record run costs what a page of the
//! 1,000-record run costs (within 1.5×, first and last page alike) and a small fraction of
//! exporting the run (≤ 0.05×); and the service does not load a run to show a page — its
//! memory grows, over every page asked for, by less than the export process needs.
//!
//! Run: `cargo bench -p cairn-cli --bench console_timeline` (`CAIRN_BENCH_RECORDS` changes the
//! 100,000, `CAIRN_BENCH_ROUNDS` the 30 requests of each page).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    reason = "benchmark code"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_ledger::record::{Label, TerminationReason, ToolRef};
use cairn_runtime::keyring::Keyring;
use cairn_runtime::{Admitted, Durability, Executor, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};
use cairn_test_support::gates::AllowAll;
use cairn_test_support::http::request;

#[path = "support/served.rs"]
mod served;

use served::{Served, cairn, env_number};

/// Writes a run `run` of `records` records (calls of three tools) into the service folder's
/// store, closed with a checkpoint signed with its key when `close`.
fn write_run(data: &Path, run: &str, records: u64, close: bool) {
    let store =
        Arc::new(SqliteStore::open(data.join("cairn.db"), OpenMode::CreateIfMissing).unwrap());
    let recorder = Recorder::open(
        store,
        Arc::new(cairn_core::SystemClock),
        (
            "acme".parse().unwrap(),
            "long-task".parse().unwrap(),
            run.parse().unwrap(),
        ),
        RecorderOptions {
            durability: Durability::DEFAULT_BATCH,
            content_retention: None,
        },
    )
    .unwrap();
    let mut executor = Executor::new(recorder, Arc::new(AllowAll("bench.allow")), "agent");
    let tools = ["files.read", "tickets.create", "kb.search"];
    for i in 0..records.saturating_sub(1) {
        let args = format!(r#"{{"path": "src/file-{i}.rs", "line": {i}}}"#);
        let call = ToolCall {
            tool: ToolRef {
                name: Label::new(tools[(i % 3) as usize]).unwrap(),
                version: Label::new("1").unwrap(),
            },
            args: args.as_bytes(),
            lane: None,
        };
        let Admitted::Permitted(_) = executor.admit(&call).unwrap() else {
            panic!("allowed")
        };
    }
    if close {
        let key = Keyring::open(data.join("keys"))
            .active_signing_key()
            .unwrap();
        executor
            .terminate(TerminationReason::Completed, None, &key)
            .unwrap();
    } else {
        executor.recorder().flush().unwrap();
    }
}

/// What the benchmark asks of the running service.
impl Served {
    fn host(&self) -> &str {
        self.url.strip_prefix("http://").unwrap()
    }

    /// A field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
    fn memory_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{field}:")))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Signs in with `token` as a browser does; the session cookie.
    fn sign_in(&self, token: &str) -> String {
        let form = request(self.host(), "GET", "/ui/login", None, None);
        let login = form.cookie("cairn_ui_login").unwrap();
        let csrf = form
            .body
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap()
            .to_owned();
        let form = format!(
            "token={}&csrf={csrf}",
            cairn_server::console::url_encode(token)
        );
        let signed = request(
            self.host(),
            "POST",
            "/ui/login",
            Some(&format!("cairn_ui_login={login}")),
            Some(&form),
        );
        assert_eq!(signed.status, 303, "signed in");
        format!("cairn_ui={}", signed.cookie("cairn_ui").unwrap())
    }

    /// The median and the slowest of `rounds` requests of `path` (each answered 200).
    fn timed(&self, path: &str, cookie: &str, rounds: u64) -> (Duration, Duration) {
        let mut took: Vec<Duration> = (0..rounds)
            .map(|_| {
                let started = Instant::now();
                let reply = request(self.host(), "GET", path, Some(cookie), None);
                let elapsed = started.elapsed();
                assert_eq!(reply.status, 200, "{path}: {}", reply.body);
                elapsed
            })
            .collect();
        took.sort();
        (took[took.len() / 2], took[took.len() - 1])
    }
}

/// `cairn ledger export` of `run`, by GNU time: its wall time and peak memory (KiB).
fn export(data: &Path, run: &str) -> (Duration, u64) {
    let out = data.with_extension("jsonl");
    let output = Command::new("/usr/bin/time")
        .args(["-f", "%e %M", env!("CARGO_BIN_EXE_cairn")])
        .arg("--store")
        .arg(data.join("cairn.db"))
        .arg("--keys")
        .arg(data.join("keys"))
        .args([
            "ledger", "export", "--run", run, "--tenant", "acme", "--format", "jsonl", "--out",
        ])
        .arg(&out)
        .env_remove("CAIRN_SERVER")
        .stdout(Stdio::null())
        .output()
        .expect("GNU time runs (Debian's `time` package)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stderr);
    let mut fields = text.lines().last().unwrap().split(' ');
    let seconds: f64 = fields.next().unwrap().parse().unwrap();
    let peak: u64 = fields.next().unwrap().parse().unwrap();
    (Duration::from_secs_f64(seconds), peak)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipped console_timeline: no /usr/bin/time (Debian's `time` package)");
        return;
    }
    let records = env_number("CAIRN_BENCH_RECORDS", 100_000);
    let rounds = env_number("CAIRN_BENCH_ROUNDS", 30);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("service");
    let made = cairn()
        .args(["serve", "--init-only", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let started = Instant::now();
    write_run(&data, "long-run", records, true);
    write_run(&data, "short-run", 1_000, true);
    // An open run as long: the runs list must not read it whole for what needs a person.
    write_run(&data, "long-open-run", records, false);
    eprintln!(
        "wrote a run of {records} records and one of 1,000 in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let token = {
        let made = cairn()
            .args([
                "--json",
                "tokens",
                "create",
                "--tenant",
                "acme",
                "--role",
                "investigator",
                "--data",
            ])
            .arg(&data)
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&made.stdout).unwrap();
        json["token"].as_str().unwrap().to_owned()
    };

    // The baseline: the same run exported, three times (the median).
    let mut exports: Vec<(Duration, u64)> = (0..3).map(|_| export(&data, "long-run")).collect();
    exports.sort();
    let (export_wall, export_peak) = exports[1];

    let mut command = cairn();
    command
        .arg("serve")
        .arg("--data")
        .arg(&data)
        .args(["--listen", "127.0.0.1:0"]);
    let served = Served::start(command, &data.with_extension("ready"));
    let cookie = served.sign_in(&token);
    let idle = served.memory_kib("VmRSS");
    let last = records - records % 100;
    let last = if last == records { last - 100 } else { last };
    let (cold, _) = served.timed("/ui/runs/long-run", &cookie, 1);
    let long_first = served.timed("/ui/runs/long-run", &cookie, rounds);
    let long_last = served.timed(&format!("/ui/runs/long-run?from={last}"), &cookie, rounds);
    let long_step = served.timed(
        &format!("/ui/runs/long-run/steps/{}", records / 2),
        &cookie,
        rounds,
    );
    let short_first = served.timed("/ui/runs/short-run", &cookie, rounds);
    let short_last = served.timed("/ui/runs/short-run?from=900", &cookie, rounds);
    let runs = served.timed("/ui/runs", &cookie, rounds);
    let open_first = served.timed("/ui/runs/long-open-run", &cookie, rounds);
    let peak = served.memory_kib("VmHWM");
    let growth = peak.saturating_sub(idle);

    println!("\nconsole timeline, {records}-record run ({rounds} requests each; median / slowest)");
    println!("| what | measured | baseline | ratio |");
    println!("|---|---|---|---|");
    let row =
        |what: &str, (median, slowest): (Duration, Duration), base: Duration, base_name: &str| {
            println!(
                "| {what} | {:.2} / {:.2} ms | {base_name} {:.2} ms | {:.4}× |",
                ms(median),
                ms(slowest),
                ms(base),
                ms(median) / ms(base)
            );
        };
    println!(
        "| first request of the long run's page (cold) | {:.2} ms | export {:.0} ms | {:.4}× |",
        ms(cold),
        ms(export_wall),
        ms(cold) / ms(export_wall)
    );
    row("first page, long run", long_first, export_wall, "export");
    row(
        "first page, long run",
        long_first,
        short_first.0,
        "first page, 1,000 records",
    );
    row(
        "last page, long run",
        long_last,
        short_last.0,
        "last page, 1,000 records",
    );
    row("a step page, long run", long_step, export_wall, "export");
    row(
        "runs list (with an open run as long)",
        runs,
        export_wall,
        "export",
    );
    row(
        "first page, the open long run",
        open_first,
        export_wall,
        "export",
    );
    println!(
        "| server memory: idle {idle} KiB, peak {peak} KiB after every page | grew {growth} KiB | export's peak {export_peak} KiB | {:.3}× |",
        growth as f64 / export_peak as f64
    );
    let paged = ms(long_first.0) <= 1.5 * ms(short_first.0).max(1.0)
        && ms(long_last.0) <= 1.5 * ms(short_last.0).max(1.0);
    let cheap = [long_first, open_first, runs]
        .iter()
        .all(|(median, _)| ms(*median) <= 0.05 * ms(export_wall));
    let lean = growth < export_peak;
    println!(
        "\ntargets: a page costs the same in a 100× longer run (≤ 1.5×): {}; the first pages and the runs list ≤ 0.05× the export: {}; the server grows less than the export's peak: {}",
        if paged { "yes" } else { "NO" },
        if cheap { "yes" } else { "NO" },
        if lean { "yes" } else { "NO" }
    );
}
