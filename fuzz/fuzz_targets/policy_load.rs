//! Policy loading: no policy text aborts the process or hangs it, and a set that loads
//! decides every call, the same way twice, under a stable version.

#![no_main]

use cairn_policy::{Arguments, GateRequest, PolicyGate, PolicySource, ToolCatalog};
use libfuzzer_sys::fuzz_target;

const TOOLS: &str = r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String", "urgent": "Bool"}}, "kb.search": {}}}"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let catalog = ToolCatalog::from_json("tools.json", TOOLS).expect("catalog");
    let sources = [PolicySource::new("fuzz.cedar", text)];
    let Ok(gate) = PolicyGate::load(&sources, &catalog) else {
        return;
    };
    let again = PolicyGate::load(&sources, &catalog).expect("a set that loaded loads again");
    assert_eq!(gate.version(), again.version());
    let args = Arguments::read(br#"{"amount": 25000, "currency": "EUR", "urgent": true}"#)
        .expect("arguments");
    for tool in ["payments.refund", "kb.search", "shell.exec"] {
        let call = GateRequest {
            mcp: None,
            tenant: "acme",
            principal: "bot",
            run: "r",
            task: "t",
            lane: Some("support"),
            tool,
            tool_version: "1.0",
            args: &args,
        };
        assert_eq!(gate.decide(&call), again.decide(&call));
        let _ = gate.explain(&call);
    }
});
