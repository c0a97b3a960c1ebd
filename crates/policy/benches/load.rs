//! Policy load time against the number of policies (issue 15, item 3): 1k, 10k and 90k
//! trivial permits (`CAIRN_BENCH_POLICIES=1000,10000` to choose), loaded by
//! `PolicyGate::load` with a 20-tool catalog, next to a baseline measured in the same run:
//! Cedar parsing the same text into a `PolicySet` and nothing more.
//!
//! Each size is loaded `CAIRN_BENCH_ROUNDS` times (default 5, interleaved with the
//! baseline); the median and the fastest round are printed with the ratio of medians. A load
//! that is linear in the number of policies keeps the ratio flat across sizes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "bench code"
)]

use std::str::FromStr as _;
use std::time::{Duration, Instant};

use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};

fn text(count: usize) -> String {
    let mut out = String::with_capacity(count * 64);
    for i in 0..count {
        out.push_str(&format!(
            "@id(\"p{i}\")\npermit(principal, action == Action::\"tool{}.call\", resource);\n",
            i % 20
        ));
    }
    out
}

fn catalog() -> ToolCatalog {
    let tools: Vec<String> = (0..20)
        .map(|i| format!("\"tool{i}.call\": {{\"args\": {{\"amount\": \"Long\"}}}}"))
        .collect();
    ToolCatalog::from_json(
        "tools.json",
        &format!("{{\"tools\": {{{}}}}}", tools.join(",")),
    )
    .unwrap()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let sizes: Vec<usize> = std::env::var("CAIRN_BENCH_POLICIES")
        .unwrap_or_else(|_| "1000,10000,90000".to_owned())
        .split(',')
        .map(|n| n.trim().parse().expect("a number of policies"))
        .collect();
    let rounds: usize = std::env::var("CAIRN_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let catalog = catalog();
    println!(
        "| policies | bytes | PolicyGate::load median (best) | Cedar parse only median (best) | ratio |"
    );
    println!("|---|---|---|---|---|");
    for size in sizes {
        let text = text(size);
        let sources = [PolicySource::new("bench.cedar", text.clone())];
        let (mut load, mut parse) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let start = Instant::now();
            let gate = PolicyGate::load(&sources, &catalog).unwrap();
            load.push(start.elapsed());
            assert_eq!(gate.policies().len(), size);
            let start = Instant::now();
            let set = cedar_policy::PolicySet::from_str(&text).unwrap();
            parse.push(start.elapsed());
            std::hint::black_box(set);
        }
        let (best_load, best_parse) = (*load.iter().min().unwrap(), *parse.iter().min().unwrap());
        let (load, parse) = (median(&mut load), median(&mut parse));
        println!(
            "| {size} | {} | {:.1} ms ({:.1}) | {:.1} ms ({:.1}) | {:.2}× |",
            text.len(),
            load.as_secs_f64() * 1e3,
            best_load.as_secs_f64() * 1e3,
            parse.as_secs_f64() * 1e3,
            best_parse.as_secs_f64() * 1e3,
            load.as_secs_f64() / parse.as_secs_f64()
        );
    }
}
