//! Schemathesis (from PyPI) against the OpenAPI document the service serves, once per role:
//! no answer is a 5xx, and every answer matches the document (`--checks all`). Skipped, and
//! said so, when `st` is not installed, unless `CAIRN_REQUIRE_SCHEMATHESIS` is set (`.ci/run`
//! installs it and sets it).

use std::process::Command;

use cairn_server::client::Endpoint;
use cairn_server::tokens::Role;

use crate::{Harness, READ_A};

/// The examples schemathesis generates per operation and phase.
const EXAMPLES: &str = "20";

#[test]
fn schemathesis_finds_no_server_error_and_no_answer_off_the_document() {
    if Command::new("st").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CAIRN_REQUIRE_SCHEMATHESIS").is_none(),
            "CAIRN_REQUIRE_SCHEMATHESIS is set but `st` (pip install schemathesis) is missing"
        );
        eprintln!("schemathesis: skipped: `st` is not installed (pip install schemathesis)");
        return;
    }
    let service = Harness::start();
    let Endpoint::Tcp(host) = &service.tcp else {
        panic!("a TCP endpoint")
    };
    let url = format!("http://{host}/v1/openapi.json");
    // A run with a step and its outcome, so that reads have something to find.
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "seeded");
    service.step(&agent, &run, READ_A);
    // A body can match the document and still hold a state that is not a continuity state
    // (its rules are the parser's, not a JSON Schema's): that request is refused with 400.
    // Likewise any text is a string, but only an exported bundle is a bundle: 422. And a
    // decision's kind, value and revisions are the decisions' rules, and what the book holds
    // then: an unknown kind, a revision the book lacks, too few decisions to snapshot — 400.
    // An approval request may not exist (404) or be decided already (409).
    std::fs::write(
        service.dir.path().join("schemathesis.toml"),
        r#"[[operations]]
include-path = "/v1/continuity/check"
checks.positive_data_acceptance.expected-statuses = ["2XX", 400, 401, 403]

[[operations]]
include-path = "/v1/bundles/verify"
checks.positive_data_acceptance.expected-statuses = ["2XX", 401, 403, 422]

[[operations]]
include-path-regex = "^/v1/decisions/"
checks.positive_data_acceptance.expected-statuses = ["2XX", 400, 401, 403]

[[operations]]
include-path-regex = "^/v1/approvals/"
checks.positive_data_acceptance.expected-statuses = ["2XX", 401, 403, 404, 409]
"#,
    )
    .expect("schemathesis.toml");
    let mut generated = 0_u64;
    for role in [Role::Agent, Role::Investigator, Role::Approver, Role::Admin] {
        let token = match role {
            Role::Agent => agent.clone(),
            other => service.token("acme", other),
        };
        let output = Command::new("st")
            .current_dir(service.dir.path())
            .args(["run", &url, "--checks", "all", "--max-examples", EXAMPLES])
            .args(["--workers", "1", "--seed", "20261203", "--no-color"])
            .arg("-H")
            .arg(format!("Authorization: Bearer {token}"))
            .output()
            .expect("st runs");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "schemathesis with a {role:?} token failed:\n{text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let count = text
            .lines()
            .filter_map(|line| line.trim().split_once(" generated"))
            .find_map(|(n, _)| n.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no count of generated cases in:\n{text}"));
        eprintln!("schemathesis, {role:?} token: {count} generated requests, no failure");
        generated += count;
    }
    assert!(generated > 0);
    eprintln!("schemathesis: {generated} generated requests in all");
}
