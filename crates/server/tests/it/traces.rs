//! Traces over OTLP/HTTP to a receiver the test runs on loopback (protobuf, as a collector
//! receives them): a GenAI `execute_tool {tool}` span per admitted step with the record's
//! step and digest, boundary spans, and no argument anywhere in what is exported.

use cairn_server::tokens::Role;
use cairn_test_support::otlp::{Receiver, Span, attribute};

use crate::{DELETE_A, Harness};

const CANARY: &str = "CANARY-ARG-9d1c";

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
    let exported: Vec<u8> = receiver.bodies();
    assert!(
        !exported
            .windows(CANARY.len())
            .any(|w| w == CANARY.as_bytes()),
        "an argument reached the exporter"
    );
}
