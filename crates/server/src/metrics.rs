//! What the service counts, for Prometheus (`GET /metrics`, the OpenMetrics text format):
//! requests by route, method and status; decisions by tenant, outcome and rule; how long an
//! admission and a group commit take; how many runs are live and how many records wait.
//!
//! Labels name tenants, routes and rules — never a run, a token, an argument or an
//! observation.

use std::sync::atomic::AtomicI64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A request's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route's template (`/v1/runs/{run}/steps`), or `unmatched`.
    pub route: String,
    /// The method.
    pub method: String,
    /// The status code.
    pub status: u16,
}

/// A decision's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// The caller's tenant.
    pub tenant: String,
    /// `allow` or `deny`.
    pub decision: String,
    /// The deciding rule (the first, when several), or `none`.
    pub rule: String,
}

/// The service's metrics and their registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Requests answered.
    pub requests: Family<RequestLabels, Counter>,
    /// Request durations, seconds.
    pub request_seconds: Family<RequestLabels, Histogram>,
    /// Steps decided.
    pub decisions: Family<DecisionLabels, Counter>,
    /// How long deciding and recording one step took, seconds.
    pub admit_seconds: Histogram,
    /// How long one group commit took, seconds.
    pub commit_seconds: Histogram,
    /// Records made durable by group commits.
    pub committed_records: Counter,
    /// Runs this replica holds.
    pub live_runs: Gauge<i64, AtomicI64>,
    /// Records waiting for the group commit, as the last pass found them.
    pub waiting_records: Gauge<i64, AtomicI64>,
}

fn seconds_buckets() -> impl Iterator<Item = f64> {
    // 10 µs to about 2.6 s.
    exponential_buckets(0.000_01, 2.0, 19)
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("cairn");
        let requests = Family::<RequestLabels, Counter>::default();
        let request_seconds = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(seconds_buckets())
        });
        let decisions = Family::<DecisionLabels, Counter>::default();
        let admit_seconds = Histogram::new(seconds_buckets());
        let commit_seconds = Histogram::new(seconds_buckets());
        let committed_records = Counter::default();
        let live_runs = Gauge::<i64, AtomicI64>::default();
        let waiting_records = Gauge::<i64, AtomicI64>::default();
        registry.register("http_requests", "Requests answered", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time to answer a request",
            request_seconds.clone(),
        );
        registry.register("decisions", "Steps decided", decisions.clone());
        registry.register(
            "admit_duration_seconds",
            "Time to decide and record one step",
            admit_seconds.clone(),
        );
        registry.register(
            "store_commit_duration_seconds",
            "Time of one group commit to the store",
            commit_seconds.clone(),
        );
        registry.register(
            "committed_records",
            "Records made durable by group commits",
            committed_records.clone(),
        );
        registry.register("live_runs", "Runs this replica holds", live_runs.clone());
        registry.register(
            "waiting_records",
            "Records waiting for the group commit (queue depth)",
            waiting_records.clone(),
        );
        Self {
            registry,
            requests,
            request_seconds,
            decisions,
            admit_seconds,
            commit_seconds,
            committed_records,
            live_runs,
            waiting_records,
        }
    }
}

impl Metrics {
    /// Everything, in the OpenMetrics text format.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
