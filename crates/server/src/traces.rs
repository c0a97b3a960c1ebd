//! OpenTelemetry traces over OTLP/HTTP, when configured: one `execute_tool {tool}` span per
//! admitted step, from its admission to the outcome the agent reports, following the GenAI
//! semantic conventions (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`),
//! and a `cairn.boundary {event}` span per boundary the API records (an unknown outcome, a
//! reconciliation, a run's close). Cairn's own attributes carry the tenant, the run, the
//! record's step and digest, so that a trace leads to the evidence. Arguments, results and
//! observations are never exported.

use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, Span};

/// The tracer, or nothing when no endpoint is configured.
#[derive(Debug, Default)]
pub struct Traces {
    provider: Option<SdkTracerProvider>,
    tracer: Option<SdkTracer>,
}

/// An admitted step's span, ended when its outcome is reported (or the run closes).
#[derive(Debug)]
pub struct ToolSpan(Span);

/// Where a record landed, for its span's attributes.
#[derive(Debug, Clone, Copy)]
pub struct RecordRef<'a> {
    /// The tenant.
    pub tenant: &'a str,
    /// The run.
    pub run: &'a str,
    /// The record's step.
    pub step: u64,
    /// The record's digest.
    pub digest: &'a str,
}

impl RecordRef<'_> {
    fn attributes(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new("cairn.tenant", self.tenant.to_owned()),
            KeyValue::new("cairn.run.id", self.run.to_owned()),
            KeyValue::new(
                "cairn.record.step",
                i64::try_from(self.step).unwrap_or(i64::MAX),
            ),
            KeyValue::new("cairn.record.digest", self.digest.to_owned()),
        ]
    }
}

impl Traces {
    /// No traces.
    #[must_use]
    pub fn none() -> Self {
        Self::default()
    }

    /// Traces exported to the OTLP/HTTP endpoint `url` (`http://collector:4318/v1/traces`),
    /// in batches, from a thread of the exporter's own.
    ///
    /// # Errors
    /// The exporter's, as text.
    pub fn otlp(url: &str) -> Result<Self, String> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .build()
            .map_err(|e| e.to_string())?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name("cairn")
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("cairn-server");
        Ok(Self {
            provider: Some(provider),
            tracer: Some(tracer),
        })
    }

    /// Starts the span of an admitted call of `tool`, recorded at `record`.
    #[must_use]
    pub fn tool_span(
        &self,
        tool: &str,
        record: RecordRef<'_>,
        rules: &[String],
    ) -> Option<ToolSpan> {
        let tracer = self.tracer.as_ref()?;
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            KeyValue::new(
                "gen_ai.tool.call.id",
                format!("{}:{}", record.run, record.step),
            ),
            KeyValue::new(
                "cairn.decision.rule_ids",
                Value::Array(
                    rules
                        .iter()
                        .cloned()
                        .map(opentelemetry::StringValue::from)
                        .collect::<Vec<_>>()
                        .into(),
                ),
            ),
        ];
        attributes.extend(record.attributes());
        let span = tracer
            .span_builder(format!("execute_tool {tool}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start(tracer);
        Some(ToolSpan(span))
    }

    /// A span for a boundary the service recorded (`side_effect_unknown`, `reconciliation`,
    /// `run_terminated`), at `record`.
    pub fn boundary(&self, event: &str, record: RecordRef<'_>) {
        let Some(tracer) = self.tracer.as_ref() else {
            return;
        };
        let mut attributes = vec![KeyValue::new("cairn.boundary.event", event.to_owned())];
        attributes.extend(record.attributes());
        let mut span = tracer
            .span_builder(format!("cairn.boundary {event}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start(tracer);
        span.end();
    }

    /// Makes this the process's tracer provider, for code that reaches tracing only through
    /// the OpenTelemetry API (the MCP gateway).
    pub fn install_global(&self) {
        if let Some(provider) = &self.provider {
            opentelemetry::global::set_tracer_provider(provider.clone());
        }
    }

    /// Exports what waits and stops the exporter (at the service's exit).
    pub fn shutdown(&self) {
        if let Some(provider) = &self.provider {
            let _ = provider.shutdown();
        }
    }
}

impl ToolSpan {
    /// Ends the span with how the call ended (`applied`, `failed`, `not_executed`, `unknown`).
    pub fn end(mut self, outcome: &str) {
        self.0
            .set_attribute(KeyValue::new("cairn.outcome", outcome.to_owned()));
        if outcome != "applied" {
            self.0.set_status(Status::error(outcome.to_owned()));
        }
        self.0.end();
    }
}
