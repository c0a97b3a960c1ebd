//! Traces over OTLP/HTTP to a receiver the test runs on loopback (protobuf, as a collector
//! receives them): a GenAI `execute_tool {tool}` span per admitted step with the record's
//! step and digest, boundary spans, and no argument anywhere in what is exported.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_server::tokens::Role;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::{DELETE_A, Harness};

const CANARY: &str = "CANARY-ARG-9d1c";

/// An OTLP/HTTP receiver on a port of its own: keeps every body posted to `/v1/traces`.
struct Receiver {
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    fn start() -> Self {
        let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
        let kept = Arc::clone(&bodies);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let app = axum::Router::new().route(
                    "/v1/traces",
                    axum::routing::post(move |body: axum::body::Bytes| {
                        let kept = Arc::clone(&kept);
                        async move {
                            kept.lock().unwrap().push(body.to_vec());
                            (
                                [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                                Vec::<u8>::new(),
                            )
                        }
                    }),
                );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        Self {
            bodies,
            url: format!("http://{addr}/v1/traces"),
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    fn spans(&self) -> Vec<Span> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .flat_map(|body| {
                ExportTraceServiceRequest::decode(body.as_slice())
                    .unwrap()
                    .resource_spans
            })
            .flat_map(|resource| resource.scope_spans)
            .flat_map(|scope| scope.spans)
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
        .map(|value| match value {
            AnyValue::StringValue(s) => s.clone(),
            AnyValue::IntValue(i) => i.to_string(),
            other => format!("{other:?}"),
        })
}

#[test]
fn each_admitted_step_is_an_execute_tool_span_that_leads_to_its_record() {
    let receiver = Receiver::start();
    let traces = cairn_server::traces::Traces::otlp(&receiver.url).unwrap();
    let mut service = Harness::start_traced(cairn_server::Commit::Group, traces);
    let agent = service.token("acme", Role::Agent);
    let investigator = service.token("acme", Role::Investigator);
    let run = service.open(&agent, "traced");
    let read = service
        .step(
            &agent,
            &run,
            &format!(r#"{{"tool": "files.read", "arguments": {{"path": "/{CANARY}"}}}}"#),
        )
        .json();
    service.on_run(
        "POST",
        &agent,
        &run,
        "steps/0/outcome",
        Some(&format!(
            r#"{{"status": "applied", "result": {{"text": "{CANARY}"}}}}"#
        )),
    );
    let (write, key) = service.write_timing_out(&agent, &run, "timed out");
    service.reconcile(&investigator, &run, &key, "ticket:T-1");
    // A denied call is not an executed tool: no span.
    service.step(&agent, &run, DELETE_A);
    service.terminate(&agent, &run);
    service.stop();

    let spans = receiver.spans();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    assert_eq!(tools.len(), 2, "{names:?}");
    let first = tools
        .iter()
        .find(|s| s.name == "execute_tool files.read")
        .expect("the read");
    assert_eq!(
        attribute(first, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attribute(first, "gen_ai.tool.name").as_deref(),
        Some("files.read")
    );
    assert_eq!(
        attribute(first, "gen_ai.tool.call.id"),
        Some(format!("{run}:0"))
    );
    assert_eq!(attribute(first, "cairn.record.step").as_deref(), Some("0"));
    assert_eq!(
        attribute(first, "cairn.record.digest").as_deref(),
        read["digest"].as_str()
    );
    assert_eq!(
        attribute(first, "cairn.outcome").as_deref(),
        Some("applied")
    );
    let second = tools
        .iter()
        .find(|s| s.name == "execute_tool tickets.create")
        .expect("the write");
    assert_eq!(
        attribute(second, "cairn.outcome").as_deref(),
        Some("unknown")
    );
    assert_eq!(
        attribute(second, "cairn.record.digest").as_deref(),
        write["digest"].as_str()
    );
    for boundary in ["side_effect_unknown", "reconciliation", "run_terminated"] {
        assert!(
            names.contains(&format!("cairn.boundary {boundary}").as_str()),
            "{boundary}: {names:?}"
        );
    }
    // Nothing of the arguments or the result is exported.
    let exported: Vec<u8> = receiver.bodies.lock().unwrap().concat();
    assert!(
        !exported
            .windows(CANARY.len())
            .any(|w| w == CANARY.as_bytes()),
        "an argument reached the exporter"
    );
}
