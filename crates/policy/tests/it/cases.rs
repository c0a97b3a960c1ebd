//! Data-driven conformance: every folder in `tests/cases/` holds `policies/*.cedar`, an
//! optional `tools.json` catalog and an `expect.json` with either the load error
//! (`{"load_error": {"code", "file", "line", "column"}}`) or a list of calls and their
//! decisions (`{"calls": [{"call": {"tool", "args"?, "lane"?, "principal"?}, "decision",
//! "rule_ids", "reason"}]}`). Adding a case is adding files; `check` is the one helper, to be
//! reused by the CLI's tests.

use std::fs;
use std::path::Path;

use cairn_core::ErrorCode;
use cairn_policy::{Arguments, GateRequest, PolicyGate, PolicySource, ToolCatalog};
use serde_json::Value;

fn check(case: &Path) {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let mut files: Vec<_> = fs::read_dir(case.join("policies"))
        .map(|dir| dir.map(|entry| entry.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    let sources: Vec<PolicySource> = files
        .iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "cedar"))
        .map(|path| {
            let file = format!("policies/{}", path.file_name().unwrap().to_string_lossy());
            PolicySource::new(file, fs::read_to_string(path).unwrap())
        })
        .collect();
    let catalog = match fs::read_to_string(case.join("tools.json")) {
        Ok(text) => ToolCatalog::from_json("tools.json", &text).unwrap(),
        Err(_) => ToolCatalog::default(),
    };
    let expect: Value =
        serde_json::from_str(&fs::read_to_string(case.join("expect.json")).unwrap()).unwrap();

    let loaded = PolicyGate::load(&sources, &catalog);
    if let Some(want) = expect.get("load_error") {
        let err = match loaded {
            Ok(_) => panic!("{name}: expected a load error"),
            Err(err) => err,
        };
        let at = err
            .location()
            .unwrap_or_else(|| panic!("{name}: {err} has no location"));
        let got = serde_json::json!({
            "code": err.code(), "file": at.file, "line": at.line, "column": at.column,
        });
        assert_eq!(&got, want, "{name}: {err}");
        return;
    }
    let gate = loaded.unwrap_or_else(|err| panic!("{name}: {err}"));
    for (index, expected) in expect["calls"].as_array().unwrap().iter().enumerate() {
        let call = &expected["call"];
        let text = |key: &str, default: &'static str| -> String {
            call.get(key)
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_owned()
        };
        let (tool, principal) = (text("tool", ""), text("principal", "agent"));
        let lane = call.get("lane").and_then(Value::as_str);
        let text = call
            .get("args")
            .map(ToString::to_string)
            .unwrap_or_default();
        let args = Arguments::read(text.as_bytes()).unwrap();
        let request = GateRequest {
            mcp: None,
            tenant: "acme",
            principal: &principal,
            run: "r1",
            task: "t1",
            lane,
            tool: &tool,
            tool_version: "1.0.0",
            args: &args,
        };
        let decision = gate.decide(&request);
        let got = serde_json::json!({
            "decision": decision.decision.as_str(),
            "rule_ids": decision.rule_ids,
            "reason": decision.reason.code(),
        });
        let want = serde_json::json!({
            "decision": expected["decision"],
            "rule_ids": expected["rule_ids"],
            "reason": expected["reason"],
        });
        assert_eq!(got, want, "{name}: call {index} ({tool})");
    }
}

#[test]
fn every_case_folder_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut cases: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 8,
        "expected the case folders in {}",
        root.display()
    );
    for case in &cases {
        check(case);
    }
}
