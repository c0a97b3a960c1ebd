//! The demo's scenario through `cairn serve` (issue 20, acceptance 1): the support-triage run
//! of `cairn demo` played again over HTTP — the same calls, the lost ticket write, the
//! compaction with the same deliberately wrong summary, the rehydration blocked on
//! reconciliation, the refused retry, a person's reconciliation, the second rehydration — on a
//! service holding the demo's policies. Every record's decision, rules and boundary, and both
//! continuity decisions, are the ones the demo (the library) recorded.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use cairn_server::client::{Answer, Endpoint, send_blocking};
use serde_json::{Value, json};

use crate::common::{self, Output, Project, arg, command_in};

const DEMO_POLICY: &str = include_str!("../../templates/demo.cedar");
const DEMO_TOOLS: &str = include_str!("../../templates/demo-tools.json");

/// The demo's summary at its compaction (wrong about the ticket write, on purpose).
const SUMMARY: &str = "Ticket T-4821: duplicate charge ch_2 on order A-1009 confirmed; refunds \
need billing approval. The ticket write failed, so create the ticket again, then comment and \
escalate to billing.";

struct Client {
    endpoint: Endpoint,
    token: String,
}

impl Client {
    fn call(&self, method: &str, path: &str, body: &Value) -> Answer {
        let body = (method == "POST").then(|| body.to_string().into_bytes());
        send_blocking(
            &self.endpoint,
            method,
            path,
            Some(&self.token),
            body,
            Duration::from_secs(20),
        )
        .expect("the service answered")
    }

    fn ok(&self, path: &str, body: &Value) -> Value {
        let answer = self.call("POST", path, body);
        assert!(
            answer.status < 300,
            "{path}: {} {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
        answer.json()
    }
}

/// One call of the scenario: admitted, then its outcome reported when it was allowed.
fn call(
    agent: &Client,
    run: &str,
    tool: &str,
    version: &str,
    args: Value,
    outcome: &Value,
) -> Value {
    let step = agent.ok(
        &format!("/v1/runs/{run}/steps"),
        &json!({"tool": tool, "version": version, "arguments": args}),
    );
    if step["decision"] == "allow" {
        let index = step["step"].as_u64().expect("a step");
        agent.ok(&format!("/v1/runs/{run}/steps/{index}/outcome"), outcome);
    }
    step
}

/// What a record decided or marked, without what depends on the run's name, time or keys.
fn shape(record: &Value) -> Value {
    json!({
        "kind": record["kind"],
        "tool": record["tool"]["name"],
        "version": record["tool"]["version"],
        "decision": record["admission"]["decision"],
        "rules": record["admission"]["rule_ids"],
        "reason": record["admission"]["reason"],
        "event": record["boundary"]["event"],
        "side_effect_status": record["boundary"]["side_effect_status"],
        "boundary_reason": record["boundary"]["reason"],
        "trigger": record["boundary"]["trigger"],
        "summary_digest": record["boundary"]["summary_digest"],
        "args_digest": record["args_digest"],
    })
}

/// The service folder of the demo: its policy and tool catalog in place of the scaffold's.
pub(crate) fn demo_service_folder(project: &Project) -> std::path::PathBuf {
    let data = project.path("service");
    Output::of(command_in(project.root()).args(["serve", "--init-only", "--data", arg(&data)]))
        .expect(0);
    let policies = data.join("policies");
    for entry in std::fs::read_dir(&policies).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    std::fs::write(policies.join("demo.cedar"), DEMO_POLICY).unwrap();
    std::fs::write(data.join("tools.json"), DEMO_TOOLS).unwrap();
    data
}

/// `cairn serve` on the demo's service folder, on a Unix socket: the service, its folder and
/// its socket.
pub(crate) fn serve_demo_folder(
    project: &Project,
) -> (common::Serving, std::path::PathBuf, std::path::PathBuf) {
    let data = demo_service_folder(project);
    let socket = project.path("cairn.sock");
    let mut command = command_in(project.root());
    command
        .args(["serve", "--data", arg(&data), "--listen"])
        .arg(format!("unix:{}", socket.display()))
        .stderr(Stdio::null());
    let served = common::Serving::start(command, &project.path("serve.ready"));
    (served, data, socket)
}

pub(crate) fn token(dir: &Path, data: &Path, role: &str) -> String {
    let made = Output::of(
        command_in(dir)
            .args([
                "--json", "tokens", "create", "--tenant", "demo", "--role", role, "--data",
            ])
            .arg(data),
    );
    made.expect(0).json()["token"].as_str().unwrap().to_owned()
}

#[test]
fn the_demo_scenario_through_the_service_decides_as_the_demo() {
    let project = Project::new();
    let demo = Output::of(command_in(project.root()).args([
        "--json",
        "demo",
        "--dir",
        arg(&project.path("d")),
    ]));
    let demo = demo.expect(0).json();
    let expected: Vec<Value> = demo["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(shape)
        .collect();

    let (_served, data, socket) = serve_demo_folder(&project);
    let endpoint = Endpoint::Unix(socket);
    let agent = Client {
        endpoint: endpoint.clone(),
        token: token(project.root(), &data, "agent"),
    };
    let person = Client {
        endpoint,
        token: token(project.root(), &data, "investigator"),
    };

    let opened = agent.ok("/v1/runs", &json!({"name": "support-T-4821"}));
    let run = opened["run_id"].as_str().unwrap().to_owned();
    let applied = |result: Value| json!({"status": "applied", "result": result});
    agent.ok(
        &format!("/v1/runs/{run}/observations"),
        &json!({"observation": {"role": "user", "content": "Customer C-0193 says order A-1009 was charged twice. Please sort it out."}}),
    );
    call(
        &agent,
        &run,
        "tickets.read",
        "1",
        json!({"ticket_id": "T-4821"}),
        &applied(
            json!({"ticket_id": "T-4821", "customer": "C-0193", "subject": "charged twice for order A-1009", "status": "open"}),
        ),
    );
    call(
        &agent,
        &run,
        "kb.search",
        "3",
        json!({"query": "duplicate charge refund policy", "limit": 3}),
        &applied(
            json!({"hits": [{"doc": "KB-112", "title": "Duplicate charges: refunds need billing approval"}]}),
        ),
    );
    call(
        &agent,
        &run,
        "billing.lookup",
        "2",
        json!({"order_id": "A-1009"}),
        &applied(
            json!({"order_id": "A-1009", "charges": [{"id": "ch_1", "amount": 4900, "currency": "EUR"}, {"id": "ch_2", "amount": 4900, "currency": "EUR"}]}),
        ),
    );
    let refund = call(
        &agent,
        &run,
        "payments.refund",
        "2",
        json!({"charge_id": "ch_2", "amount": 4900, "currency": "EUR"}),
        &Value::Null,
    );
    assert_eq!(
        refund["rule_ids"],
        json!(["support.no-refund-without-approval"])
    );
    let export = call(
        &agent,
        &run,
        "crm.export_customers",
        "1",
        json!({"format": "csv"}),
        &Value::Null,
    );
    assert_eq!(export["decision"], "deny");

    // The ticket write whose answer is lost.
    let create = json!({"customer": "C-0193", "subject": "Duplicate charge ch_2 on order A-1009"});
    let lost = call(
        &agent,
        &run,
        "tickets.create",
        "1",
        create.clone(),
        &json!({"status": "unknown", "error": "tickets.create: no answer within 30 s after the request was sent"}),
    );
    assert_eq!(lost["decision"], "allow");

    let facts = json!({
        "authorization": "user_delegated",
        "delegated_principal_id": "user:ops-17",
        "delegated_scope": "tickets:write billing:read",
        "capability_name": "tickets.create",
        "capability_version": "1",
        "objective": "Resolve customer C-0193's duplicate charge on order A-1009 without creating a duplicate ticket.",
        "pending_obligations": ["reconcile the tickets.create write", "escalate the refund to billing"],
        "budget_remaining": 20,
    });
    agent.ok(
        &format!("/v1/runs/{run}/compact"),
        &json!({"summary": SUMMARY, "trigger": "auto", "facts": facts}),
    );
    let blocked = agent.ok(
        &format!("/v1/runs/{run}/rehydrate"),
        &json!({"summary": SUMMARY, "facts": facts}),
    );
    // The retry the summary asks for is refused by the durable record.
    let retry = call(&agent, &run, "tickets.create", "1", create, &Value::Null);
    assert_eq!(retry["decision"], "deny");

    let key = format!("{run}:{}", lost["step"]);
    call(
        &agent,
        &run,
        "tickets.lookup",
        "1",
        json!({"idempotency_key": key}),
        &applied(json!({"idempotency_key": key, "found": true, "ticket": {"ticket_id": "T-4822"}})),
    );
    person.ok(
        &format!("/v1/runs/{run}/reconcile"),
        &json!({"key": key, "outcome": "applied", "evidence": "tickets.lookup:T-4822"}),
    );
    let validated = agent.ok(
        &format!("/v1/runs/{run}/rehydrate"),
        &json!({"summary": SUMMARY, "facts": facts}),
    );
    call(
        &agent,
        &run,
        "tickets.comment",
        "1",
        json!({"ticket_id": "T-4822", "body": "Duplicate charge ch_2 confirmed; refund needs billing approval."}),
        &applied(json!({"comment_id": "CM-77", "ticket_id": "T-4822"})),
    );
    call(
        &agent,
        &run,
        "tickets.escalate",
        "1",
        json!({"ticket_id": "T-4822", "queue": "billing", "reason": "refund approval"}),
        &applied(json!({"ticket_id": "T-4822", "queue": "billing", "status": "escalated"})),
    );
    agent.ok(
        &format!("/v1/runs/{run}/terminate"),
        &json!({"reason": "completed", "detail": "escalated to billing"}),
    );

    // Both continuity decisions are the demo's.
    let notes = demo["continuity"].as_array().unwrap();
    for (ours, theirs) in [&blocked, &validated].into_iter().zip(notes) {
        for field in ["status", "reason", "authorized", "requires_reauthorization"] {
            assert_eq!(
                ours[field], theirs["decision"][field],
                "{field}: {ours} vs {theirs}"
            );
        }
    }
    assert_eq!(blocked["status"], "blocked_on_reconciliation");

    // Every record: the same kind, tool, decision, rules, boundary and argument digest.
    let bundle = person.call("GET", &format!("/v1/runs/{run}/bundle"), &Value::Null);
    assert_eq!(bundle.status, 200);
    let text = String::from_utf8(bundle.body).unwrap();
    let parsed = cairn_ledger::bundle::parse_bundle(&text).expect("a bundle");
    let served: Vec<Value> = parsed
        .rows
        .iter()
        .map(|row| shape(&serde_json::to_value(row.as_ref().expect("a record")).unwrap()))
        .collect();
    assert_eq!(
        served.len(),
        expected.len(),
        "{served:#?}\nvs\n{expected:#?}"
    );
    for (k, (ours, theirs)) in served.iter().zip(&expected).enumerate() {
        // The idempotency key names the run, so the looked-up arguments differ in digest.
        let mut ours = ours.clone();
        let mut theirs = theirs.clone();
        if ours["tool"] == "tickets.lookup" {
            ours["args_digest"] = Value::Null;
            theirs["args_digest"] = Value::Null;
        }
        assert_eq!(ours, theirs, "record {k}");
    }
}
