//! The task decisions of a tenant over the API (`/v1/decisions`): set, snapshot before a
//! boundary, compare after it, approve a change — each tenant in a book of its own, for people
//! only, and never a raw value in an answer.

use cairn_server::tokens::Role;
use serde_json::{Value, json};

use crate::{Harness, code, json_of};

/// Every decisions endpoint: method, path, body.
const ENDPOINTS: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/v1/decisions", None),
    ("PUT", "/v1/decisions/scope", Some(r#"{"value": "src"}"#)),
    (
        "POST",
        "/v1/decisions/scope/approve-change",
        Some(r#"{"from": 1, "to": 2, "approval": "TICKET-1"}"#),
    ),
    ("POST", "/v1/decisions/snapshots", Some(r#"{"name": "b1"}"#)),
    ("GET", "/v1/decisions/compare", None),
    ("GET", "/v1/decisions/status", None),
];

fn set(service: &Harness, token: &str, key: &str, value: &Value) -> Value {
    let answer = service.call(
        "PUT",
        &format!("/v1/decisions/{key}"),
        Some(token),
        Some(&json!({ "value": value }).to_string()),
    );
    json_of(&answer, 200)
}

/// Three decisions of `acme` set by `admin`, then snapshotted as boundary `b1`.
fn three_decisions_snapshotted(service: &Harness, admin: &str) {
    for key in ["scope", "target", "constraint"] {
        set(service, admin, key, &json!(format!("acme-{key}")));
    }
    let snap = service.call(
        "POST",
        "/v1/decisions/snapshots",
        Some(admin),
        Some(r#"{"name": "b1"}"#),
    );
    assert_eq!(snap.status, 201);
}

fn state_of(comparison: &Value, key: &str) -> String {
    comparison["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .find(|d| d["key"] == key)
        .and_then(|d| d["state"].as_str())
        .unwrap_or("absent")
        .to_owned()
}

#[test]
fn a_change_without_approval_conflicts_after_the_boundary_until_a_person_approves_it() {
    let service = Harness::start();
    let admin = service.token("acme", Role::Admin);
    let investigator = service.token("acme", Role::Investigator);
    let secret = "acme/api:src-only-SECRET";
    for (key, value) in [
        ("scope", json!(secret)),
        ("target", json!("main")),
        ("constraint", json!({"no": "force-push"})),
    ] {
        assert_eq!(set(&service, &admin, key, &value)["outcome"], "created");
    }
    let book = service.call("GET", "/v1/decisions", Some(&investigator), None);
    assert_eq!(book.status, 200);
    assert_eq!(book.json()["decisions"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        book.json()["decisions"][0]["source"],
        // A token reads `cairn_<id>_<secret>`: its id, never its secret, names the setter.
        json!(format!(
            "token:{}",
            admin.split('_').nth(1).unwrap_or_default()
        )),
        "the setter's token is the default source"
    );
    assert!(
        !String::from_utf8_lossy(&book.body).contains("SECRET"),
        "only keyed digests are answered"
    );

    let snap = service.call(
        "POST",
        "/v1/decisions/snapshots",
        Some(&admin),
        Some(r#"{"name": "b1"}"#),
    );
    assert_eq!(snap.status, 201, "{}", String::from_utf8_lossy(&snap.body));
    assert_eq!(
        snap.json()["decisions"],
        json!(["constraint", "scope", "target"])
    );

    // After the boundary: two decisions re-observed unchanged, `scope` changed unapproved.
    set(&service, &admin, "target", &json!("main"));
    set(&service, &admin, "constraint", &json!({"no": "force-push"}));
    let revised = set(&service, &admin, "scope", &json!("everything"));
    assert_eq!(revised["outcome"], "revised");
    let compared = service
        .call("GET", "/v1/decisions/compare", Some(&investigator), None)
        .json();
    assert_eq!(compared["snapshot"], "b1");
    assert_eq!(compared["state"], "conflicting");
    assert_eq!(state_of(&compared, "scope"), "conflicting");
    assert_eq!(state_of(&compared, "target"), "preserved");
    let status = service
        .call("GET", "/v1/decisions/status", Some(&admin), None)
        .json();
    assert_eq!(
        (
            status["continuity"].as_str(),
            status["outcome"].as_str(),
            status["determining_key"].as_str()
        ),
        (Some("conflicting"), Some("blocked"), Some("scope"))
    );

    // A person approves the change: the comparison says so.
    let approved = service.call(
        "POST",
        "/v1/decisions/scope/approve-change",
        Some(&investigator),
        Some(r#"{"from": 1, "to": 2, "approval": "TICKET-7"}"#),
    );
    assert_eq!(
        approved.status,
        200,
        "{}",
        String::from_utf8_lossy(&approved.body)
    );
    let compared = service
        .call("GET", "/v1/decisions/compare?name=b1", Some(&admin), None)
        .json();
    assert_eq!(state_of(&compared, "scope"), "approved_change");
    assert_eq!(compared["state"], "approved_change");
}

#[test]
fn decisions_are_for_people_of_their_own_tenant() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let admin = service.token("acme", Role::Admin);
    let other = service.token("globex", Role::Admin);
    three_decisions_snapshotted(&service, &admin);
    // An agent neither reads nor writes the decisions that bound it.
    for (method, path, body) in ENDPOINTS {
        let answer = service.call(method, path, Some(&agent), *body);
        assert_eq!(
            (answer.status, code(&answer).as_str()),
            (403, "role_forbidden"),
            "{method} {path}"
        );
    }
    // Another tenant's admin sees a book of its own: empty, no snapshot, nothing to approve.
    let book = service
        .call("GET", "/v1/decisions", Some(&other), None)
        .json();
    assert_eq!(book["decisions"], json!([]));
    assert_eq!(book["latest_snapshot"], Value::Null);
    let status = service
        .call("GET", "/v1/decisions/status", Some(&other), None)
        .json();
    // Nothing snapshotted yet: nothing to compare, nothing restricted (issue 34, 6).
    assert_eq!(status["continuity"], "unverified");
    assert_eq!(status["restricts_consequential"], false);
    // A named boundary without its snapshot: the evidence is missing.
    let compare = service.call("GET", "/v1/decisions/compare?name=b1", Some(&other), None);
    assert_eq!(compare.json()["state"], "continuity_evidence_missing");
    let approve = service.call(
        "POST",
        "/v1/decisions/scope/approve-change",
        Some(&other),
        Some(r#"{"from": 1, "to": 2, "approval": "T"}"#),
    );
    assert_eq!(
        (approve.status, code(&approve).as_str()),
        (400, "unknown_decision")
    );
    // … and what it sets stays its own.
    set(&service, &other, "scope", &json!("globex"));
    let acme = service
        .call("GET", "/v1/decisions", Some(&admin), None)
        .json();
    assert_eq!(acme["decisions"].as_array().map(Vec::len), Some(3));
    assert_eq!(acme["latest_snapshot"], "b1");
}

#[test]
fn bad_decision_requests_name_their_field() {
    let service = Harness::start();
    let admin = service.token("acme", Role::Admin);
    let kind = service.call(
        "PUT",
        "/v1/decisions/not%20a%20kind",
        Some(&admin),
        Some(r#"{"value": 1}"#),
    );
    assert_eq!(kind.status, 400);
    assert_eq!(kind.error("field").as_deref(), Some("path.key"));
    let name = service.call(
        "POST",
        "/v1/decisions/snapshots",
        Some(&admin),
        Some(r#"{"name": "../up"}"#),
    );
    assert_eq!(name.status, 400);
    assert_eq!(name.error("field").as_deref(), Some("body.name"));
    let at = service.call(
        "POST",
        "/v1/decisions/snapshots",
        Some(&admin),
        Some(r#"{"name": "b", "boundary_at": "yesterday"}"#),
    );
    assert_eq!(at.error("field").as_deref(), Some("body.boundary_at"));
    let unknown = service.call(
        "PUT",
        "/v1/decisions/scope",
        Some(&admin),
        Some(r#"{"value": 1, "approvl": "x"}"#),
    );
    assert_eq!(unknown.status, 400);
    assert_eq!(unknown.error("field").as_deref(), Some("body.approvl"));

    // Too few decisions: refused, and the boundary is recorded as one without evidence.
    set(&service, &admin, "scope", &json!("src"));
    let refused = service.call(
        "POST",
        "/v1/decisions/snapshots",
        Some(&admin),
        Some(r#"{"name": "thin"}"#),
    );
    assert_eq!(
        (refused.status, code(&refused).as_str()),
        (400, "snapshot_refused"),
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    let status = service
        .call("GET", "/v1/decisions/status", Some(&admin), None)
        .json();
    assert_eq!(
        (
            status["continuity"].as_str(),
            status["latest_snapshot"].as_str()
        ),
        (Some("continuity_evidence_missing"), Some("thin"))
    );
}

#[test]
fn a_call_through_the_mcp_gateway_waits_while_a_decision_conflicts_and_goes_once_approved() {
    let service = Harness::start();
    let admin = service.token("acme", Role::Admin);
    let agent = service.token("acme", Role::Agent);
    three_decisions_snapshotted(&service, &admin);
    assert_eq!(
        set(&service, &admin, "scope", &json!("everything"))["outcome"],
        "revised"
    );
    let run = service.open(&agent, "mcp-s1");
    let through_gateway = |read_only: bool| {
        json!({
            "tool": "tickets.create",
            "arguments": {"title": "t", "priority": "p2"},
            "mcp": {"server": "tix", "tool": "create", "read_only": read_only},
        })
        .to_string()
    };

    let refused = json_of(&service.step(&agent, &run, &through_gateway(false)), 200);
    assert_eq!(refused["decision"], "deny", "{refused}");
    assert_eq!(refused["reason"], "decision_conflicting");
    assert_eq!(
        refused["rule_ids"],
        json!(["cairn.hooks.decision-conflicting"])
    );
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("approve-change scope --from 1 --to 2")),
        "{refused}"
    );
    // A tool the gateway's configuration says only reads goes on; so does a step that does
    // not come through the gateway (the policies decide it, as before).
    let read_only = json_of(&service.step(&agent, &run, &through_gateway(true)), 200);
    assert_eq!(read_only["decision"], "allow", "{read_only}");
    let plain = json_of(&service.step(&agent, &run, crate::TICKET_P2), 200);
    assert_eq!(plain["decision"], "allow", "{plain}");

    let approved = service.call(
        "POST",
        "/v1/decisions/scope/approve-change",
        Some(&admin),
        Some(r#"{"from": 1, "to": 2, "approval": "TICKET-7"}"#),
    );
    assert_eq!(approved.status, 200);
    let after = json_of(&service.step(&agent, &run, &through_gateway(false)), 200);
    assert_eq!(after["decision"], "allow", "{after}");
}
