//! Helpers shared by the policy gate's integration tests: the sample catalog, loading from
//! inline text, and building requests.

#![allow(dead_code, reason = "test code")]

use cairn_policy::{
    Arguments, GateRequest, PolicyGate, PolicyLoadError, PolicySource, ToolCatalog,
};

/// The catalog of the examples in the brief.
pub const CATALOG: &str = r#"{"tools": {
  "payments.refund": {"args": {"amount": "Long", "currency": "String"}},
  "tickets.read": {"args": {"ticket_id": "String"}},
  "kb.search": {}
}}"#;

pub fn catalog() -> ToolCatalog {
    ToolCatalog::from_json("tools.json", CATALOG).unwrap()
}

pub fn sources(files: &[(&str, &str)]) -> Vec<PolicySource> {
    files
        .iter()
        .map(|(name, text)| PolicySource::new(*name, *text))
        .collect()
}

pub fn gate(text: &str) -> PolicyGate {
    PolicyGate::load(&sources(&[("policies/main.cedar", text)]), &catalog())
        .unwrap_or_else(|err| panic!("policy set should load: {err}"))
}

pub fn load_error(files: &[(&str, &str)]) -> PolicyLoadError {
    match PolicyGate::load(&sources(files), &catalog()) {
        Ok(_) => panic!("policy set should be refused"),
        Err(err) => err,
    }
}

/// A call of `tool` by agent `support-bot` in tenant `acme`, run `r1`, task `t1`, no lane.
///
/// The arguments are written out and read back with [`Arguments::read`], as the executor
/// reads the bytes it records (leaked: a test's few calls are worth the bytes).
pub fn call<'a>(tool: &'a str, args: Option<&serde_json::Value>) -> GateRequest<'a> {
    let text: &'static str = Box::leak(
        args.map(ToString::to_string)
            .unwrap_or_default()
            .into_boxed_str(),
    );
    let args: &'static Arguments<'static> = Box::leak(Box::new(
        Arguments::read(text.as_bytes()).unwrap_or_else(|err| panic!("{err}")),
    ));
    GateRequest {
        mcp: None,
        tenant: "acme",
        principal: "support-bot",
        run: "r1",
        task: "t1",
        lane: None,
        tool,
        tool_version: "1.0.0",
        args,
    }
}
