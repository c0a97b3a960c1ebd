//! An OTLP/HTTP trace receiver on loopback, as a collector receives traces (protobuf on
//! `POST /v1/traces`): the suites that check what Cairn exports (the service, the MCP
//! gateway) read back the spans it was sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// An OTLP/HTTP receiver on a port of its own: keeps every body posted to `/v1/traces`.
pub struct Receiver {
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Where to export to: `http://127.0.0.1:PORT/v1/traces`.
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    /// Starts the receiver on a port of its own.
    #[must_use]
    pub fn start() -> Self {
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

    /// Every body received so far, concatenated (to search for what must never be sent).
    #[must_use]
    pub fn bodies(&self) -> Vec<u8> {
        self.bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .concat()
    }

    /// Every span received so far.
    #[must_use]
    pub fn spans(&self) -> Vec<Span> {
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

/// The attribute `key` of `span`, as text.
#[must_use]
pub fn attribute(span: &Span, key: &str) -> Option<String> {
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
