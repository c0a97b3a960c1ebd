//! OpenTelemetry spans of the gateway, after the MCP semantic conventions: one span per
//! request the client sends through the gateway, named `{mcp.method.name} {target}`
//! (`tools/call fs__write_file`), with `mcp.method.name`, `mcp.session.id`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, for a tool call `gen_ai.tool.name` and
//! `gen_ai.operation.name` (`execute_tool`), `error.type` (`tool_error` when the result is
//! `isError`), and Cairn's own attributes leading to the evidence: the run, the record's step
//! and digest, the decision and its rules. The trace context the client carries in the
//! request's `params._meta` (`traceparent`, `tracestate`) is the span's parent. Arguments and
//! results are never exported.
//!
//! The spans go to the process's tracer provider (the binary installs one when asked to
//! export, `--otlp-traces`); without one they cost nothing.

use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue, global};
use serde_json::{Map, Value};

/// The span of one request through the gateway.
pub struct RequestSpan(global::BoxedSpan);

impl std::fmt::Debug for RequestSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestSpan").finish_non_exhaustive()
    }
}

/// Where a request came from, for its span.
#[derive(Debug, Clone, Copy)]
pub struct RequestInfo<'a> {
    /// `tools/call`, `resources/read`, …
    pub method: &'a str,
    /// The tool, prompt or resource it is about.
    pub target: Option<&'a str>,
    /// The client's `_meta` of the request.
    pub meta: &'a Map<String, Value>,
    /// The JSON-RPC id.
    pub request_id: &'a str,
    /// The protocol revision the client speaks.
    pub protocol: Option<&'a str>,
    /// The gateway's session (its run).
    pub session: &'a str,
}

/// The remote parent the client's `traceparent` (W3C Trace Context) names, if it reads.
fn parent(meta: &Map<String, Value>) -> Context {
    let Some(header) = meta.get("traceparent").and_then(Value::as_str) else {
        return Context::new();
    };
    let parts: Vec<&str> = header.trim().split('-').collect();
    let [version, trace, span, flags] = parts.as_slice() else {
        return Context::new();
    };
    let (Ok(trace), Ok(span), Ok(flags)) = (
        TraceId::from_hex(trace),
        SpanId::from_hex(span),
        u8::from_str_radix(flags, 16),
    ) else {
        return Context::new();
    };
    if *version != "00" || trace == TraceId::INVALID || span == SpanId::INVALID {
        return Context::new();
    }
    let state = meta
        .get("tracestate")
        .and_then(Value::as_str)
        .and_then(|text| text.parse::<TraceState>().ok())
        .unwrap_or_default();
    let context = SpanContext::new(trace, span, TraceFlags::new(flags), true, state);
    Context::new().with_remote_span_context(context)
}

impl RequestSpan {
    /// Starts the span of the request `info` describes.
    #[must_use]
    pub fn start(info: &RequestInfo<'_>) -> Self {
        let tracer = global::tracer("cairn-mcp");
        let name = match info.target {
            Some(target) => format!("{} {target}", info.method),
            None => info.method.to_owned(),
        };
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", info.method.to_owned()),
            KeyValue::new("mcp.session.id", info.session.to_owned()),
            KeyValue::new("jsonrpc.request.id", info.request_id.to_owned()),
        ];
        if let Some(protocol) = info.protocol {
            attributes.push(KeyValue::new("mcp.protocol.version", protocol.to_owned()));
        }
        if info.method == "tools/call"
            && let Some(tool) = info.target
        {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        let builder = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes);
        Self(tracer.build_with_context(builder, &parent(info.meta)))
    }

    /// The span as a W3C `traceparent`, for the request the gateway sends on (none when
    /// nothing is traced).
    #[must_use]
    pub fn traceparent(&self) -> Option<String> {
        let context = self.0.span_context();
        context.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                context.trace_id(),
                context.span_id(),
                context.trace_flags().to_u8()
            )
        })
    }

    /// The record the request left: its run, step and digest, and the decision.
    pub fn record(&mut self, run: &str, step: u64, digest: &str, decision: &str, rules: &[String]) {
        self.0
            .set_attribute(KeyValue::new("cairn.run.id", run.to_owned()));
        self.0.set_attribute(KeyValue::new(
            "cairn.record.step",
            i64::try_from(step).unwrap_or(i64::MAX),
        ));
        self.0
            .set_attribute(KeyValue::new("cairn.record.digest", digest.to_owned()));
        self.0
            .set_attribute(KeyValue::new("cairn.decision", decision.to_owned()));
        self.0.set_attribute(KeyValue::new(
            "cairn.decision.rule_ids",
            opentelemetry::Value::Array(
                rules
                    .iter()
                    .cloned()
                    .map(opentelemetry::StringValue::from)
                    .collect::<Vec<_>>()
                    .into(),
            ),
        ));
    }

    /// Ends the span: `error` is the `error.type` when it failed (`tool_error` for a result
    /// with `isError`, a JSON-RPC error code, …).
    pub fn end(mut self, error: Option<&str>) {
        if let Some(error) = error {
            self.0
                .set_attribute(KeyValue::new("error.type", error.to_owned()));
            self.0.set_status(Status::error(error.to_owned()));
        }
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    //! The client's trace context is the span's parent, and anything malformed is ignored.
    use super::*;
    use serde_json::json;

    #[test]
    fn a_traceparent_in_meta_is_the_remote_parent() {
        let meta = json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "k=v"});
        let context = parent(meta.as_object().unwrap());
        let span = context.span();
        let remote = span.span_context();
        assert!(remote.is_remote());
        assert_eq!(
            remote.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(remote.span_id().to_string(), "b7ad6b7169203331");
        assert_eq!(remote.trace_state().get("k"), Some("v"));
        for bad in [
            "",
            "00-xyz-b7ad6b7169203331-01",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        ] {
            let meta = json!({"traceparent": bad});
            assert!(
                !parent(meta.as_object().unwrap())
                    .span()
                    .span_context()
                    .is_valid(),
                "{bad}"
            );
        }
    }
}
