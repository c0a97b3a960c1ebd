//! `cairn serve` under load (issue 20, acceptance 5): admitted steps per second and their
//! latency, measured with `wrk` (Debian's package) on loopback against the real `cairn serve`
//! process, beside a same-run baseline of the same generator against the same server's
//! trivial endpoint (`/healthz`), so both figures see the same machine.
//!
//! Each request is `POST /v1/runs/{run}/steps`: authenticate the agent token, read the body,
//! decide with the Cedar gate, seal the intent record (RFC 8785, SHA-256, chained) and append
//! it — in the service's default durability, `group`, where the answer waits for the group
//! commit that makes the record durable (`CAIRN_BENCH_DURABILITY=async` measures the mode that
//! answers before the commit, `sync` the one that commits each request alone). The
//! requests go round-robin over as many runs as connections, so runs are written side by side
//! as a fleet of agents would.
//!
//! Stores: the SQLite file of the service folder; PostgreSQL too when
//! `CAIRN_TEST_DATABASE_URL` names a server (a schema of its own, dropped after).
//! Targets with SQLite: at least 20,000 admitted steps/s and p99 at most 5 ms.
//!
//! Each store is loaded at 8, 16 and 32 connections in turn (a closed loop: more connections
//! than the server needs to stay busy only queue, raising latency at the same throughput), and
//! the `/healthz` baseline at the same concurrency. The SQLite target holds when one
//! concurrency gives both figures at once.
//!
//! Run: `cargo bench -p cairn-cli --bench serve_load` (`CAIRN_BENCH_SECONDS` changes the 10 s
//! of each measurement, `CAIRN_BENCH_CONNECTIONS` the concurrencies, e.g. `8,32`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "benchmark code"
)]

use std::path::Path;
use std::process::Command;

#[path = "support/served.rs"]
mod served;

use served::{Served, cairn, env_number};

fn serve(data: &Path, store: Option<&str>, init: bool) -> Served {
    let ready = data.with_extension("ready");
    let mut command = cairn();
    if init {
        command.arg("serve").arg("--init");
    } else {
        command.arg("serve");
    }
    command
        .arg("--data")
        .arg(data)
        .args(["--listen", "127.0.0.1:0"]);
    if let Some(store) = store {
        command.args(["--store", store]);
    }
    if let Some(mode) = std::env::var("CAIRN_BENCH_DURABILITY")
        .ok()
        .filter(|mode| !mode.is_empty())
    {
        command.args(["--durability", &mode]);
    }
    Served::start(command, &ready)
}

fn post(url: &str, path: &str, token: &str, body: &str) -> serde_json::Value {
    let output = Command::new("curl")
        .args(["-sS", "-X", "POST", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .args(["-d", body])
        .arg(format!("{url}{path}"))
        .output()
        .expect("curl runs");
    serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null)
}

/// One `wrk` measurement.
#[derive(Debug, Clone, Copy)]
struct Load {
    requests_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

const REPORT: &str = r#"
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format("CAIRN %f %f %f %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors))
end
"#;

fn wrk(script: &Path, url: &str, seconds: u64, connections: u64) -> Load {
    let output = Command::new("wrk")
        .args([
            "-t",
            "1",
            "-c",
            &connections.to_string(),
            "-d",
            &format!("{seconds}s"),
        ])
        .arg("-s")
        .arg(script)
        .arg(url)
        .output()
        .expect("wrk runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("CAIRN "))
        .unwrap_or_else(|| panic!("wrk said: {text}"));
    let fields: Vec<f64> = line.split(' ').map(|f| f.parse().unwrap()).collect();
    Load {
        requests_per_s: fields[0],
        p50_ms: fields[1],
        p99_ms: fields[2],
        errors: fields[3] as u64,
    }
}

/// What one concurrency gave: the admitted steps and the baseline, each over two halves.
struct Measured {
    connections: u64,
    rps: f64,
    p50: f64,
    p99: f64,
    base_rps: f64,
    base_p99: f64,
    errors: u64,
}

impl Measured {
    fn reaches_targets(&self) -> bool {
        self.rps >= 20_000.0 && self.p99 <= 5.0
    }
}

/// Serves one store and loads it at each of `concurrencies` (connections) in turn; prints a
/// line per concurrency and returns them.
fn measure(
    label: &str,
    data: &Path,
    store: Option<&str>,
    seconds: u64,
    concurrencies: &[u64],
) -> Vec<Measured> {
    let served = serve(data, store, label == "sqlite");
    let token = {
        let output = cairn()
            .args([
                "tokens", "create", "--json", "--tenant", "bench", "--role", "agent", "--data",
            ])
            .arg(data)
            .output()
            .expect("tokens create");
        let made: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        made["token"].as_str().expect("token").to_owned()
    };
    let most = concurrencies.iter().copied().max().unwrap_or(1);
    let runs: Vec<String> = (0..most)
        .map(|i| {
            let opened = post(
                &served.url,
                "/v1/runs",
                &token,
                &format!(r#"{{"name": "{label}-{i}-{}"}}"#, std::process::id()),
            );
            opened["run_id"].as_str().expect("a run").to_owned()
        })
        .collect();
    let runs_lua: Vec<String> = runs.iter().map(|r| format!("\"{r}\"")).collect();
    let steps = data.join(format!("steps-{label}.lua"));
    std::fs::write(
        &steps,
        format!(
            r#"
local runs = {{{}}}
local i = 0
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer {token}"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{{"tool": "Read", "arguments": {{"file_path": "/src/main.rs"}}}}'
request = function()
  i = i + 1
  return wrk.format(nil, "/v1/runs/" .. runs[(i % #runs) + 1] .. "/steps")
end
response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"decision":"allow"', 1, true) then
    io.stderr:write("unexpected answer " .. status .. ": " .. body .. "\n")
  end
end
{REPORT}"#,
            runs_lua.join(", ")
        ),
    )
    .unwrap();
    let health = data.join("health.lua");
    std::fs::write(&health, REPORT).unwrap();
    let healthz = format!("{}/healthz", served.url);
    // Warm up both paths.
    wrk(&health, &healthz, 1, most);
    wrk(&steps, &served.url, 1, most);
    let mut all = Vec::new();
    for &connections in concurrencies {
        // Measured alternately: baseline, steps, baseline, steps.
        let mut base = Vec::new();
        let mut load = Vec::new();
        for _ in 0..2 {
            base.push(wrk(&health, &healthz, seconds / 2, connections));
            load.push(wrk(&steps, &served.url, seconds / 2, connections));
        }
        let mean =
            |all: &[Load], f: fn(&Load) -> f64| all.iter().map(f).sum::<f64>() / all.len() as f64;
        let measured = Measured {
            connections,
            rps: mean(&load, |l| l.requests_per_s),
            p50: mean(&load, |l| l.p50_ms),
            p99: mean(&load, |l| l.p99_ms),
            base_rps: mean(&base, |l| l.requests_per_s),
            base_p99: mean(&base, |l| l.p99_ms),
            errors: load.iter().chain(&base).map(|l| l.errors).sum(),
        };
        println!(
            "{label:<10} {:>3} connections: admitted steps/s {:>7.0}   p50 {:>5.2} ms   p99 {:>6.2} ms   \
             baseline /healthz {:>6.0}/s (p99 {:.2} ms)   ratio {:.2}   errors {}{}",
            measured.connections,
            measured.rps,
            measured.p50,
            measured.p99,
            measured.base_rps,
            measured.base_p99,
            measured.rps / measured.base_rps,
            measured.errors,
            if label == "sqlite" && measured.reaches_targets() {
                "   both targets"
            } else {
                ""
            }
        );
        all.push(measured);
    }
    drop(served);
    // Every admitted step is in the store after the drain: count them.
    let output = cairn()
        .args(["runs", "list", "--json", "--tenant", "bench"])
        .args(
            store
                .map(|s| vec!["--store".to_owned(), s.to_owned()])
                .unwrap_or_else(|| {
                    vec![
                        "--store".to_owned(),
                        data.join("cairn.db").display().to_string(),
                    ]
                }),
        )
        .output()
        .expect("runs list");
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let recorded: u64 = listed
        .as_array()
        .map(|runs| runs.iter().filter_map(|r| r["records"].as_u64()).sum())
        .unwrap_or(0);
    println!("{label:<10} records stored after the drain: {recorded}");
    all
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if Command::new("wrk").arg("--version").output().is_err() {
        println!("serve_load: skipped: no `wrk` (apt-get install wrk)");
        return;
    }
    let seconds = env_number("CAIRN_BENCH_SECONDS", 10).max(2);
    let concurrencies: Vec<u64> = std::env::var("CAIRN_BENCH_CONNECTIONS")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|c| c.trim().parse().ok())
                .filter(|&c| c > 0)
                .collect()
        })
        .filter(|list: &Vec<u64>| !list.is_empty())
        .unwrap_or_else(|| vec![8, 16, 32]);
    println!(
        "cairn serve under wrk: {concurrencies:?} connections, {seconds} s per concurrency and store, {} durability",
        std::env::var("CAIRN_BENCH_DURABILITY")
            .unwrap_or_else(|_| "group (the default)".to_owned())
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("service");
    let sqlite = measure("sqlite", &data, None, seconds, &concurrencies);
    let best = sqlite
        .iter()
        .filter(|m| m.reaches_targets())
        .max_by(|a, b| a.rps.total_cmp(&b.rps));
    match best {
        Some(m) => println!(
            "target (SQLite): >= 20,000 admitted steps/s with p99 <= 5 ms: reached at {} connections ({:.0}/s, p99 {:.2} ms)",
            m.connections, m.rps, m.p99
        ),
        None => println!(
            "target (SQLite): >= 20,000 admitted steps/s with p99 <= 5 ms: missed at every concurrency"
        ),
    }
    if let Ok(url) = std::env::var("CAIRN_TEST_DATABASE_URL") {
        let schema = format!("cairn_bench_{}", std::process::id());
        let psql = |sql: &str| {
            Command::new("psql")
                .arg(&url)
                .args(["-q", "-c", sql])
                .status()
                .expect("psql")
        };
        psql(&format!("CREATE SCHEMA {schema}"));
        let separator = if url.contains('?') { '&' } else { '?' };
        let store = format!("{url}{separator}options=-csearch_path%3D{schema}");
        measure("postgres", &data, Some(&store), seconds, &concurrencies);
        psql(&format!("DROP SCHEMA {schema} CASCADE"));
    }
}
