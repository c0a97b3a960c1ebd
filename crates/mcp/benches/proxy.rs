//! What the MCP gateway adds to a `tools/call` (issue 37), side by side in one run with the
//! same client (an `rmcp` client) and the same upstream (`server-everything`'s `echo` over
//! stdio, from `tests/mcp`):
//!
//! - **latency**: `CALLS` sequential calls straight to the server, and through the gateway
//!   (in process, on an in-memory stream) with the project's store in `sync` (each intent
//!   record committed before the call is forwarded) and in `batch` durability; p50 and p99
//!   of each, the p50 added, and — the `sync` target's yardstick — the p50 of one
//!   record-sized append + `fdatasync` on the same disk (as the runtime's `append`
//!   benchmark measures "one fsync"), in the same run;
//! - **throughput**: calls per second with 1, 8 and 32 concurrent client sessions, each with
//!   its own upstream, straight and through the gateway (`sync`, one project store shared by
//!   every session), for `SECONDS` each.
//!
//! Configurations are interleaved (direct, sync, batch, then again), so that a noisy minute of
//! the shared machine weighs on all. Targets: p50 added ≤ 0.5 ms in `batch`; in `sync`, no more
//! than `batch`'s added plus one fsync.
//!
//! Run: `cargo bench -p cairn-mcp --bench proxy` (needs `npm ci --prefix tests/mcp`;
//! `CAIRN_BENCH_CALLS`, 2,000 by default; `CAIRN_BENCH_SECONDS`, 5 by default).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs,
    dead_code,
    reason = "benchmark code"
)]

#[path = "../tests/it/common.rs"]
mod common;

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cairn_runtime::Durability;
use common::{Session, TestClient, TestProject, config, direct, peers};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn echo() -> CallToolRequestParams {
    CallToolRequestParams::new("echo").with_arguments(
        serde_json::json!({"message": "bench"})
            .as_object()
            .cloned()
            .unwrap(),
    )
}

fn echo_through() -> CallToolRequestParams {
    CallToolRequestParams::new("everything__echo").with_arguments(
        serde_json::json!({"message": "bench"})
            .as_object()
            .cloned()
            .unwrap(),
    )
}

/// One call's latency, in microseconds.
async fn timed(
    client: &RunningService<RoleClient, TestClient>,
    params: CallToolRequestParams,
) -> u64 {
    let start = Instant::now();
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    u64::try_from(start.elapsed().as_micros()).unwrap()
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

/// The size of the probe's writes: about one intent record, as the runtime's `append`
/// benchmark writes for its `sync` yardstick.
const RECORD_BYTES: usize = 767;

/// The p50 of one record-sized `write` appended to a file beside the store plus its
/// `fdatasync` — the runtime's yardstick for "one fsync" — in milliseconds.
fn fsync_p50(dir: &std::path::Path, rounds: usize) -> f64 {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).unwrap();
    let record = [b'x'; RECORD_BYTES];
    let mut times: Vec<u64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            file.write_all(&record).unwrap();
            file.sync_data().unwrap();
            u64::try_from(start.elapsed().as_micros()).unwrap()
        })
        .collect();
    times.sort_unstable();
    percentile(&times, 0.5)
}

fn main() {
    let Some(peers) = peers("the MCP gateway benchmark") else {
        return;
    };
    let calls = env("CAIRN_BENCH_CALLS", 2000);
    let seconds = env("CAIRN_BENCH_SECONDS", 5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(cairn_runtime::limits::STACK_BYTES)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let policies = r#"@id("all") permit(principal, action, resource);"#;
        let sync_project = TestProject::new(policies);
        let batch_project = TestProject::new(policies);
        let straight = direct(&peers.everything("everything")).await;
        let through_sync = Session::start(&sync_project, config(vec![peers.everything("everything")])).await;
        let through_batch = Session::start_durable(
            &batch_project,
            config(vec![peers.everything("everything")]),
            Duration::ZERO,
            Durability::DEFAULT_BATCH,
            "batch",
        )
        .await;
        // Warm up each path.
        for _ in 0..50 {
            timed(&straight, echo()).await;
            timed(&through_sync.client, echo_through()).await;
            timed(&through_batch.client, echo_through()).await;
        }
        let (mut d, mut s, mut b) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..calls {
            d.push(timed(&straight, echo()).await);
            s.push(timed(&through_sync.client, echo_through()).await);
            b.push(timed(&through_batch.client, echo_through()).await);
        }
        let fsync = fsync_p50(sync_project.dir.path(), 500);
        for times in [&mut d, &mut s, &mut b] {
            times.sort_unstable();
        }
        let (d50, d99) = (percentile(&d, 0.5), percentile(&d, 0.99));
        println!("tools/call latency over {calls} calls each (ms), interleaved:");
        println!("  direct           p50 {d50:7.3}  p99 {d99:7.3}");
        let batch_added = percentile(&b, 0.5) - d50;
        for (name, times, target) in [("through, sync ", &s, batch_added + fsync), ("through, batch", &b, 0.5)] {
            let (p50, p99) = (percentile(times, 0.5), percentile(times, 0.99));
            let added = p50 - d50;
            println!(
                "  {name}   p50 {p50:7.3}  p99 {p99:7.3}  p50 added {added:6.3} ms ({:.2}x direct)  target added <= {target:.3} ms: {}",
                p50 / d50,
                if added <= target { "yes" } else { "no" }
            );
        }
        let sync_over_batch = percentile(&s, 0.5) - percentile(&b, 0.5);
        println!(
            "  one {RECORD_BYTES}-byte append + fdatasync on this disk: p50 {fsync:.3} ms; sync over batch: {sync_over_batch:.3} ms ({:.2}x one fsync; the sync target is batch's added + one fsync)",
            sync_over_batch / fsync
        );
        straight.cancel().await.unwrap();
        through_sync.end().await;
        through_batch.end().await;

        println!("throughput, {seconds} s each (calls/s):");
        for clients in [1_usize, 8, 32] {
            let direct_rate = throughput(clients, seconds, |_| {
                let upstream = peers.everything("everything");
                async move { Client::Direct(direct(&upstream).await) }
            })
            .await;
            let project = Arc::new(TestProject::new(policies));
            let through_rate = throughput(clients, seconds, |i| {
                let project = Arc::clone(&project);
                let upstream = peers.everything("everything");
                async move {
                    Client::Through(
                        Session::start_with(&project, config(vec![upstream]), Duration::ZERO, &format!("t{i}")).await,
                    )
                }
            })
            .await;
            println!(
                "  {clients:2} clients: direct {direct_rate:8.0}  through (sync) {through_rate:8.0}  ratio {:.2}",
                through_rate / direct_rate
            );
        }
    });
}

enum Client {
    Direct(RunningService<RoleClient, TestClient>),
    Through(Session),
}

impl Client {
    fn service(&self) -> &RunningService<RoleClient, TestClient> {
        match self {
            Self::Direct(client) => client,
            Self::Through(session) => &session.client,
        }
    }

    fn params(&self) -> CallToolRequestParams {
        match self {
            Self::Direct(_) => echo(),
            Self::Through(_) => echo_through(),
        }
    }

    async fn close(self) {
        match self {
            Self::Direct(client) => {
                client.cancel().await.unwrap();
            }
            Self::Through(session) => {
                session.end().await;
            }
        }
    }
}

/// Calls per second of `clients` sessions calling in a loop for `seconds`.
async fn throughput<F, Fut>(clients: usize, seconds: u64, connect: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Client>,
{
    let mut sessions = Vec::with_capacity(clients);
    for i in 0..clients {
        sessions.push(Arc::new(connect(i).await));
    }
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for session in &sessions {
        let session = Arc::clone(session);
        let done = Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                session.service().call_tool(session.params()).await.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let started = Instant::now();
    for task in tasks {
        task.await.unwrap();
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    for session in sessions {
        if let Ok(session) = Arc::try_unwrap(session) {
            session.close().await;
        }
    }
    rate
}
