//! Bench command (issue 3, point 4): the per-call overhead of `admit` + record in `batch`
//! mode, median and p99, beside bare Cedar evaluation of the same calls measured in the same
//! run, for a 20-policy set. Per-call latencies are timed one by one (criterion reports means
//! of batches, which hide the tail), after a warm-up, on a real SQLite file.
//!
//! Then a call a policy holds for a person (`@approval`), approved at once (issue 36): the
//! held admission (refused step + request, committed), the person's approval (a record of
//! its own), and the admission again (the approval's use + the allowed step, committed) —
//! beside a plain allowed call committed in `sync` mode, the same run.
//!
//! Run: `cargo bench -p cairn-runtime --bench gate`

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "bench code"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::{Clock, SystemClock};
use cairn_ledger::record::{Label, ToolRef};
use cairn_policy::{GateRequest, PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::{Admitted, Durability, Executor, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};

const CALLS: usize = 20_000;
const WARMUP: usize = 2_000;
const TOOLS: usize = 10;

/// Ten tools, each with a permit and a conditional forbid: 20 policies.
fn policy_set() -> (String, String) {
    let mut policies = String::new();
    let mut tools = Vec::new();
    for i in 0..TOOLS {
        policies.push_str(&format!(
            "@id(\"tool{i}.permit\")\npermit(principal, action == Action::\"tool{i}.call\", resource);\n\n\
             @id(\"tool{i}.limit\")\nforbid(principal, action == Action::\"tool{i}.call\", resource)\n\
             when {{ context.args has amount && context.args.amount > 10000 }};\n\n"
        ));
        tools.push(format!(
            "\"tool{i}.call\": {{\"args\": {{\"amount\": \"Long\", \"target\": \"String\"}}}}"
        ));
    }
    (policies, format!("{{\"tools\": {{{}}}}}", tools.join(",")))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn summarise(name: &str, mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    let (median, p99) = (percentile(&samples, 0.5), percentile(&samples, 0.99));
    println!(
        "{name:<34} median {:>8.2} µs   p99 {:>8.2} µs   max {:>9.2} µs",
        median.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6,
        samples[samples.len() - 1].as_secs_f64() * 1e6
    );
    (median, p99)
}

fn main() {
    // `cargo test --benches` runs bench targets with `--bench` absent; keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        println!("gate bench: run with `cargo bench -p cairn-runtime --bench gate`");
        return;
    }
    let (policy_text, tools_text) = policy_set();
    let catalog = ToolCatalog::from_json("bench-tools.json", &tools_text).unwrap();
    let gate = Arc::new(
        PolicyGate::load(&[PolicySource::new("bench.cedar", policy_text)], &catalog).unwrap(),
    );
    assert_eq!(gate.policies().len(), 20);
    let args: Vec<Vec<u8>> = (0..CALLS + WARMUP)
        .map(|i| {
            format!(
                "{{\"amount\":{},\"target\":\"acct-{i}\"}}",
                (i * 37) % 12_000
            )
            .into_bytes()
        })
        .collect();
    let tools: Vec<String> = (0..TOOLS).map(|i| format!("tool{i}.call")).collect();

    // Bare Cedar: the same 20 policies, requests built outside the timed region, one
    // `is_authorized` call timed per request.
    let cedar_set: cedar_policy::PolicySet = policy_set().0.parse().unwrap();
    let authorizer = cedar_policy::Authorizer::new();
    let entities = cedar_policy::Entities::empty();
    let requests: Vec<cedar_policy::Request> = args
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let parsed: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            let context = cedar_policy::Context::from_json_value(
                serde_json::json!({"tenant": "acme", "run": "run-bench", "task": "task-bench", "args": parsed}),
                None,
            )
            .unwrap();
            cedar_policy::Request::new(
                r#"Agent::"agent""#.parse().unwrap(),
                format!(r#"Action::"{}""#, tools[i % TOOLS]).parse().unwrap(),
                r#"Tool::"t""#.parse().unwrap(),
                context,
                None,
            )
            .unwrap()
        })
        .collect();
    let mut cedar = Vec::with_capacity(CALLS);
    for (i, request) in requests.iter().enumerate() {
        let start = Instant::now();
        let response = authorizer.is_authorized(request, &cedar_set, &entities);
        let elapsed = start.elapsed();
        std::hint::black_box(response);
        if i >= WARMUP {
            cedar.push(elapsed);
        }
    }

    // The gate's decision, arguments parsed as admit parses them.
    let mut bare = Vec::with_capacity(CALLS);
    for (i, bytes) in args.iter().enumerate() {
        let start = Instant::now();
        let parsed = cairn_policy::Arguments::read(bytes).unwrap();
        let decision = gate.decide(&GateRequest {
            mcp: None,
            tenant: "acme",
            principal: "agent",
            run: "run-bench",
            task: "task-bench",
            lane: None,
            tool: &tools[i % TOOLS],
            tool_version: "1",
            args: &parsed,
        });
        let elapsed = start.elapsed();
        std::hint::black_box(decision);
        if i >= WARMUP {
            bare.push(elapsed);
        }
    }

    // admit + record, batch durability, a real SQLite file, content retention off.
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(SqliteStore::open(dir.path().join("gate.db"), OpenMode::CreateIfMissing).unwrap());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let recorder = Recorder::open(
        store,
        clock,
        (
            "acme".parse().unwrap(),
            "task-bench".parse().unwrap(),
            "run-bench".parse().unwrap(),
        ),
        RecorderOptions {
            durability: Durability::DEFAULT_BATCH,
            content_retention: None,
        },
    )
    .unwrap();
    let mut executor = Executor::new(recorder, gate, "agent");
    let labels: Vec<ToolRef> = tools
        .iter()
        .map(|t| ToolRef {
            name: Label::new(t.as_str()).unwrap(),
            version: Label::new("1").unwrap(),
        })
        .collect();
    let mut admitted = Vec::with_capacity(CALLS);
    let mut denied = 0usize;
    for (i, bytes) in args.iter().enumerate() {
        let call = ToolCall {
            tool: labels[i % TOOLS].clone(),
            args: bytes,
            lane: None,
        };
        let start = Instant::now();
        let outcome = executor.admit(&call).unwrap();
        let elapsed = start.elapsed();
        if matches!(outcome, Admitted::Denied(_)) {
            denied += 1;
        }
        std::hint::black_box(outcome);
        if i >= WARMUP {
            admitted.push(elapsed);
        }
    }
    executor.recorder().flush().unwrap();

    println!(
        "gate bench: {CALLS} calls after {WARMUP} warm-up, 20 policies, {TOOLS} tools, {denied} denied; batch durability (512 records / 20 ms)"
    );
    let (cedar_median, cedar_p99) = summarise("bare Cedar is_authorized", cedar);
    summarise("gate decide (parse args + Cedar)", bare);
    let (median, p99) = summarise("admit + record (batch)", admitted);
    println!(
        "ratio admit+record / bare Cedar: median {:.2}x, p99 {:.2}x   targets: median <= 20 µs, p99 <= 100 µs",
        median.as_secs_f64() / cedar_median.as_secs_f64(),
        p99.as_secs_f64() / cedar_p99.as_secs_f64()
    );
    held_calls();
}

/// How many held calls are approved at once.
const HELD: usize = 300;

/// A held call approved at once, beside a plain allowed call, both committed in `sync` mode.
fn held_calls() {
    use cairn_runtime::approvals::{Approvals, PersonDecision};
    let catalog = ToolCatalog::from_json(
        "held.json",
        r#"{"tools": {"pay": {"args": {"amount": "Long"}}, "read": {}}}"#,
    )
    .unwrap();
    let policies = "@id(\"read\") permit(principal, action == Action::\"read\", resource);\n\
                    @id(\"pay\") @approval(\"a person approves payments\") permit(principal, action == Action::\"pay\", resource);";
    let gate =
        Arc::new(PolicyGate::load(&[PolicySource::new("held.cedar", policies)], &catalog).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn cairn_ledger::Store> =
        Arc::new(SqliteStore::open(dir.path().join("held.db"), OpenMode::CreateIfMissing).unwrap());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let recorder = Recorder::open(
        Arc::clone(&store),
        Arc::clone(&clock),
        (
            "acme".parse().unwrap(),
            "task-held".parse().unwrap(),
            "run-held".parse().unwrap(),
        ),
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
    .unwrap();
    let mut executor = Executor::new(recorder, gate.clone(), "agent");
    let approvals = Approvals::new(Arc::clone(&store), Arc::clone(&clock));
    let tool = |name: &str| ToolRef {
        name: Label::new(name).unwrap(),
        version: Label::new("1").unwrap(),
    };
    let approve = PersonDecision::Approve {
        expires_in: jiff::SignedDuration::from_mins(5),
        uses: 1,
    };
    let (mut plain, mut held, mut decided, mut used, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..HELD {
        let args = format!("{{\"amount\":{i}}}").into_bytes();
        let start = Instant::now();
        let outcome = executor
            .admit(&ToolCall {
                tool: tool("read"),
                args: b"{}",
                lane: None,
            })
            .unwrap();
        plain.push(start.elapsed());
        assert!(matches!(outcome, Admitted::Permitted(_)));
        let call = ToolCall {
            tool: tool("pay"),
            args: &args,
            lane: None,
        };
        let begun = Instant::now();
        let Admitted::Denied(denial) = executor.admit(&call).unwrap() else {
            panic!("held")
        };
        held.push(begun.elapsed());
        let cairn_runtime::DenyCause::Approval(request) = denial.cause else {
            panic!("held")
        };
        let id = cairn_runtime::approvals::ApprovalId::parse(&request.waiting.unwrap().id).unwrap();
        let start = Instant::now();
        approvals
            .decide_on(executor.recorder(), &id, &approve, "os:bench", None)
            .unwrap();
        decided.push(start.elapsed());
        let start = Instant::now();
        let outcome = executor.admit(&call).unwrap();
        used.push(start.elapsed());
        total.push(begun.elapsed());
        assert!(matches!(outcome, Admitted::Permitted(_)));
    }
    println!(
        "held calls: {HELD}, each approved at once, sync durability, one run ({} records at the end)",
        executor.recorder_ref().next_step()
    );
    let (plain_median, _) = summarise("plain allowed admit (sync)", plain);
    summarise("held admit (step + request)", held);
    summarise("approval recorded", decided);
    summarise("admit by the approval (use + step)", used);
    let (median, p99) = summarise("held, approved, admitted: in all", total);
    println!(
        "added latency of a held call approved at once: median {:.2} ms, p99 {:.2} ms ({:.1}x a plain sync admit)",
        median.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        median.as_secs_f64() / plain_median.as_secs_f64()
    );
}
