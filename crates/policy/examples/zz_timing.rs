//! scratch timing (deleted)
#![allow(clippy::unwrap_used, missing_docs)]
use cairn_policy::*;
use std::time::Instant;
fn main() {
    let catalog = ToolCatalog::from_json("t", r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String"}}, "tickets.read": {"args": {"ticket_id": "String"}}, "kb.search": {}}}"#).unwrap();
    let mut text = String::from("@id(\"all\") permit(principal, action, resource);\n");
    for i in 0..19 {
        text.push_str(&format!("@id(\"cap{i}\") forbid(principal, action == Action::\"payments.refund\", resource) when {{ context.args has amount && context.args.amount > {} }};\n", 10000 + i));
    }
    let gate = PolicyGate::load(&[PolicySource::new("p", text)], &catalog).unwrap();
    let args = serde_json::json!({"amount": 500, "currency": "EUR", "note": "x"});
    for tool in ["payments.refund", "shell.exec"] {
        let call = GateRequest { tenant: "acme", principal: "bot", run: "r", task: "t", lane: Some("support"), tool, tool_version: "1", args: Some(&args) };
        let mut times = Vec::new();
        for _ in 0..20000 { let t = Instant::now(); let d = gate.decide(&call); std::hint::black_box(d); times.push(t.elapsed().as_nanos()); }
        times.sort();
        println!("{tool}: median {} ns p99 {} ns", times[times.len()/2], times[times.len()*99/100]);
    }
}
