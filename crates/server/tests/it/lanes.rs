//! A run's lanes over the API: every run is put in the service's lanes, a call is judged by
//! its lane's scope, and people record rulings, evidence and handoffs in the run's chain; an
//! agent reads its run's lanes and records none of their events.

use cairn_server::tokens::Role;
use serde_json::{Value, json};

use crate::{Harness, code, json_of};

/// Two lanes: `authoring` may touch `src/`, `verification` (active) must not.
const LANES: &str = r#"{
  "schema_version": "cairn.lanes/v1",
  "active_lane_id": "verification",
  "lanes": [
    {"lane_id": "authoring", "owner_ref": "agent:dev", "objective": "fix the bug in src/",
     "mutation_scope": {"allowed_refs": ["file:src/*"], "denied_refs": []},
     "done_condition": ["evidence:tests-pass"], "latest_ruling_ref": "event:ruling-1"},
    {"lane_id": "verification", "owner_ref": "agent:dev", "objective": "verify the fix",
     "mutation_scope": {"allowed_refs": ["file:tests/*"], "denied_refs": ["file:src/*"]},
     "done_condition": ["evidence:suite-green"], "latest_ruling_ref": "event:ruling-2"}
  ],
  "tool_bindings": {"files.read": {"effect_refs": ["file:{path}"]}}
}"#;

fn lanes(service: &Harness, token: &str, run: &str) -> Value {
    let answer = service.on_run("GET", token, run, "lanes", None);
    json_of(&answer, 200)
}

fn lane<'a>(view: &'a Value, id: &str) -> &'a Value {
    view["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .find(|l| l["lane_id"] == id)
        .unwrap_or_else(|| panic!("no lane {id} in {view}"))
}

fn post(service: &Harness, token: &str, path: &str, body: &Value) -> crate::Answer {
    service.call("POST", path, Some(token), Some(&body.to_string()))
}

#[test]
fn calls_are_judged_by_their_lane_and_people_record_the_lanes_events() {
    let service = Harness::start_with_lanes(LANES);
    let agent = service.token("acme", Role::Agent);
    // A lane's owner is a principal: the agent token's (`agent:<token id>`). The file is read
    // when a run opens.
    let id = agent.split('_').nth(1).expect("a token id");
    std::fs::write(
        service.dir.path().join("lanes.json"),
        LANES.replace("agent:dev", &format!("agent:{id}")),
    )
    .expect("lanes.json");
    let investigator = service.token("acme", Role::Investigator);
    let admin = service.token("acme", Role::Admin);
    let run = service.open(&agent, "lanes");

    // Opened in the lanes, each bound to its declared ruling in the chain.
    let view = lanes(&service, &agent, &run);
    assert_eq!(view["active_lane"], "verification");
    assert_eq!(lane(&view, "authoring")["ruling_ref"], "event:ruling-1");
    assert_eq!(lane(&view, "verification")["status"], "active");
    assert_eq!(
        lane(&view, "authoring")["missing_evidence"],
        json!(["evidence:tests-pass"])
    );

    // The active lane refuses what its scope denies; the authoring lane admits it.
    let denied = service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "src/lib.rs"}}"#,
    );
    assert_eq!(denied.json()["decision"], "deny", "{}", denied.json());
    assert!(
        denied.json()["rule_ids"]
            .as_array()
            .is_some_and(|rules| rules
                .iter()
                .any(|r| r.as_str().is_some_and(|r| r.starts_with("cairn.lane")))),
        "{}",
        denied.json()
    );
    let admitted = service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "src/lib.rs"}, "lane": "authoring"}"#,
    );
    assert_eq!(admitted.json()["decision"], "allow", "{}", admitted.json());

    // An agent records no lane event.
    for (path, body) in [
        (
            format!("/v1/runs/{run}/lanes/authoring/evidence"),
            json!({"evidence_ref": "evidence:tests-pass", "passed": true}),
        ),
        (
            format!("/v1/runs/{run}/lanes/rulings"),
            json!({"ruling_ref": "event:mine", "definition": {}}),
        ),
        (
            format!("/v1/runs/{run}/lanes/authoring/handoff"),
            json!({"to_owner": "agent:me", "reason": "mine now"}),
        ),
    ] {
        let refused = post(&service, &agent, &path, &body);
        assert_eq!(
            (refused.status, code(&refused).as_str()),
            (403, "role_forbidden"),
            "{path}"
        );
    }

    // Evidence observed by a person completes the lane.
    let evidence = post(
        &service,
        &investigator,
        &format!("/v1/runs/{run}/lanes/authoring/evidence"),
        &json!({"evidence_ref": "evidence:tests-pass", "passed": true}),
    );
    assert_eq!(
        evidence.status,
        200,
        "{}",
        String::from_utf8_lossy(&evidence.body)
    );
    let view = lanes(&service, &investigator, &run);
    assert_eq!(lane(&view, "authoring")["status"], "complete");
    assert_eq!(lane(&view, "authoring")["missing_evidence"], json!([]));

    // A ruling widens the verification lane: the call it refused is admitted.
    let mut ruled = lane(&view, "verification")["definition"].clone();
    ruled["mutation_scope"] =
        json!({"allowed_refs": ["file:tests/*", "file:src/*"], "denied_refs": []});
    ruled["latest_ruling_ref"] = json!("event:ruling-3");
    let ruling = post(
        &service,
        &admin,
        &format!("/v1/runs/{run}/lanes/rulings"),
        &json!({"ruling_ref": "event:ruling-3", "definition": ruled}),
    );
    assert_eq!(
        ruling.status,
        200,
        "{}",
        String::from_utf8_lossy(&ruling.body)
    );
    assert_eq!(
        lane(&lanes(&service, &agent, &run), "verification")["ruling_ref"],
        "event:ruling-3"
    );
    let now_admitted = service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "src/lib.rs"}}"#,
    );
    assert_eq!(
        now_admitted.json()["decision"],
        "allow",
        "{}",
        now_admitted.json()
    );

    // A handoff signed by the service moves the lane's owner.
    let handoff = post(
        &service,
        &admin,
        &format!("/v1/runs/{run}/lanes/authoring/handoff"),
        &json!({"to_owner": "agent:reviewer", "reason": "review the fix"}),
    );
    assert_eq!(
        handoff.status,
        200,
        "{}",
        String::from_utf8_lossy(&handoff.body)
    );
    assert!(
        handoff.json()["note"]
            .as_str()
            .is_some_and(|note| note.contains("agent:reviewer") && note.contains("\n\n— ")),
        "a signed note: {}",
        handoff.json()
    );
    assert_eq!(
        lane(&lanes(&service, &investigator, &run), "authoring")["owner"],
        "agent:reviewer"
    );

    // Bad events are refused by field, and nothing of them is recorded.
    let before = service.records("acme", &run);
    let not_a_lane = post(
        &service,
        &admin,
        &format!("/v1/runs/{run}/lanes/rulings"),
        &json!({"ruling_ref": "event:x", "definition": {"lane_id": "authoring"}}),
    );
    assert_eq!(
        (not_a_lane.status, not_a_lane.error("field").as_deref()),
        (400, Some("body.definition"))
    );
    let unknown = post(
        &service,
        &admin,
        &format!("/v1/runs/{run}/lanes/nowhere/handoff"),
        &json!({"to_owner": "agent:x", "reason": "r"}),
    );
    assert_eq!(
        unknown.status,
        400,
        "{}",
        String::from_utf8_lossy(&unknown.body)
    );
    let unknown = post(
        &service,
        &admin,
        &format!("/v1/runs/{run}/lanes/nowhere/evidence"),
        &json!({"evidence_ref": "evidence:x", "passed": true}),
    );
    assert_eq!(
        unknown.status,
        400,
        "{}",
        String::from_utf8_lossy(&unknown.body)
    );
    assert_eq!(service.records("acme", &run), before);

    // Another tenant cannot tell the run exists; the chain holds every lane event.
    let other = service.token("globex", Role::Admin);
    let hidden = service.on_run("GET", &other, &run, "lanes", None);
    assert_eq!(code(&hidden), "run_not_found");
    let verified = service.on_run("GET", &investigator, &run, "verify", None);
    assert_eq!(verified.json()["intact"], true, "{}", verified.json());
}

#[test]
fn a_service_without_lanes_answers_no_lanes_and_records_no_lane_event() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let admin = service.token("acme", Role::Admin);
    let run = service.open(&agent, "plain");
    assert_eq!(
        lanes(&service, &agent, &run),
        json!({"active_lane": null, "lanes": []})
    );
    let refused = post(
        &service,
        &admin,
        &format!("/v1/runs/{run}/lanes/authoring/evidence"),
        &json!({"evidence_ref": "evidence:x", "passed": true}),
    );
    assert_eq!(
        (refused.status, refused.error("field").as_deref()),
        (400, Some("body.lanes"))
    );
}
