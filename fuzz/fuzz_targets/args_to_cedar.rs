//! Arguments → the Cedar context: the strict reader accepts only what `serde_json` reads the
//! same way, and the gate's decision for the declared `amount` is exactly the policy's, read
//! from the literal that was digested.

#![no_main]

#[path = "common.rs"]
mod common;

use cairn_policy::{Arguments, GateRequest};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// What the refund policy must decide for these bytes, worked out from the text alone.
fn expected_allow(raw: &[u8], value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(members) if !members.contains_key("amount") => true,
        Value::Object(_) => {
            let members: std::collections::BTreeMap<String, &serde_json::value::RawValue> =
                serde_json::from_slice(raw).expect("read once already");
            let literal = members["amount"].get();
            let digits = literal.strip_prefix('-').unwrap_or(literal);
            !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && literal.parse::<i64>().is_ok_and(|amount| amount <= 10_000)
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(args) = Arguments::read(data) else {
        return;
    };
    if !data.iter().all(u8::is_ascii_whitespace) {
        let lenient: Value = serde_json::from_slice(data).expect("strict JSON is JSON");
        assert_eq!(&lenient, args.value(), "strict and lenient readings differ");
    }
    let call = |tool| GateRequest {
        mcp: None,
        tenant: "t",
        principal: "p",
        run: "r",
        task: "k",
        lane: None,
        tool,
        tool_version: "1",
        args: &args,
    };
    let decision = common::GATE.decide(&call("mcp__pay__refund"));
    assert_eq!(decision, common::GATE.decide(&call("mcp__pay__refund")));
    assert_eq!(
        decision.is_allow(),
        expected_allow(data, args.value()),
        "decided {decision:?} for {}",
        String::from_utf8_lossy(data)
    );
    let _ = common::GATE.decide(&call("Bash"));
});
