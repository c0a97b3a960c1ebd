//! Held calls through the service (SPEC T-4): an agent's call a policy holds for a person is
//! answered with its request; people of the tenant read requests, approvers decide them, an
//! agent or an investigator never decides and another tenant sees nothing; the identical
//! call then runs once; an admission may hold the call until a person decides; new requests
//! are pushed to a webhook whose signature the receiver can check.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::time::Duration;

use cairn_server::tokens::Role;

use crate::{Harness, code};

const REFUND: &str =
    r#"{"tool": "payments.refund", "arguments": {"amount": 500}, "call_id": "toolu_1"}"#;

fn approve(service: &Harness, token: &str, id: &str) -> cairn_server::client::Answer {
    service.call(
        "POST",
        &format!("/v1/approvals/{id}/approve"),
        Some(token),
        Some(r#"{"expires_in": "10m", "note": "checked the ticket"}"#),
    )
}

#[test]
fn people_read_requests_approvers_decide_them_and_the_identical_call_runs_once() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let investigator = service.token("acme", Role::Investigator);
    let approver = service.token("acme", Role::Approver);
    let admin = service.token("acme", Role::Admin);
    let stranger = service.token("umbrella", Role::Approver);
    let run = service.open(&agent, "refunds");

    let held = service.step(&agent, &run, REFUND).json();
    assert_eq!(held["decision"], "deny", "{held}");
    assert_eq!(held["reason"], "approval_pending");
    assert_eq!(held["rule_ids"][0], "refunds-ask");
    assert_eq!(held["approval"]["new"], true);
    let id = held["approval"]["id"].as_str().unwrap().to_owned();
    assert!(held["detail"].as_str().unwrap().contains(&id), "{held}");

    // Who reads the request: people of the tenant, never the agent or another tenant.
    assert_eq!(
        code(&service.call("GET", "/v1/approvals", Some(&agent), None)),
        "role_forbidden"
    );
    for person in [&investigator, &approver, &admin] {
        let listed = service.call("GET", "/v1/approvals", Some(person), None);
        assert_eq!(listed.status, 200);
        assert_eq!(listed.json()[0]["id"], id.as_str());
        assert_eq!(listed.json()[0]["tool"], "payments.refund");
        assert_eq!(listed.json()[0]["call_id"], "toolu_1");
        assert!(
            !listed.json().to_string().contains("500"),
            "no argument is shown"
        );
    }
    let theirs = service.call("GET", "/v1/approvals", Some(&stranger), None);
    assert_eq!(theirs.json(), serde_json::json!([]));
    let hidden = service.call("GET", &format!("/v1/approvals/{id}"), Some(&stranger), None);
    assert_eq!(
        (hidden.status, code(&hidden).as_str()),
        (404, "approval_not_found")
    );

    // Who decides: an approver or an admin of the tenant.
    for (who, token, expected) in [
        ("the agent", &agent, (403, "role_forbidden")),
        ("an investigator", &investigator, (403, "role_forbidden")),
        (
            "another tenant's approver",
            &stranger,
            (404, "approval_not_found"),
        ),
    ] {
        let answer = approve(&service, token, &id);
        assert_eq!((answer.status, code(&answer).as_str()), expected, "{who}");
    }
    let approved = approve(&service, &approver, &id);
    assert_eq!(
        approved.status,
        200,
        "{}",
        String::from_utf8_lossy(&approved.body)
    );
    assert_eq!(approved.json()["state"], "active");
    assert!(
        approved.json()["decided_by"]
            .as_str()
            .unwrap()
            .starts_with("token:")
    );
    // Deciding again is refused, naming who decided.
    let again = approve(&service, &admin, &id);
    assert_eq!(
        (again.status, code(&again).as_str()),
        (409, "approval_state_conflict")
    );

    // Other arguments are held under a request of their own; the identical call runs once.
    let other = service
        .step(
            &agent,
            &run,
            r#"{"tool": "payments.refund", "arguments": {"amount": 501}}"#,
        )
        .json();
    assert_eq!(other["reason"], "approval_other_action", "{other}");
    let ran = service.step(&agent, &run, REFUND).json();
    assert_eq!(ran["decision"], "allow", "{ran}");
    assert_eq!(
        ran["rule_ids"],
        serde_json::json!(["refunds-ask", "cairn.approval.granted"])
    );
    let twice = service.step(&agent, &run, REFUND).json();
    assert_eq!(twice["reason"], "approval_used_up", "{twice}");

    // Another run cannot cite this run's approval.
    let elsewhere = service.open(&agent, "elsewhere");
    let cited = service
        .step(
            &agent,
            &elsewhere,
            &format!(r#"{{"tool": "payments.refund", "arguments": {{"amount": 500}}, "approval_id": "{id}"}}"#),
        )
        .json();
    assert_eq!(cited["reason"], "approval_other_run", "{cited}");

    // Bad ids: clear errors, nothing recorded.
    let before = service.records("acme", &run);
    let forged = approve(&service, &approver, "apr-000000000000000000000000");
    assert_eq!(
        (forged.status, code(&forged).as_str()),
        (404, "approval_not_found")
    );
    let truncated = approve(&service, &approver, &id[..10]);
    assert_eq!(
        (truncated.status, code(&truncated).as_str()),
        (400, "approval_id_invalid")
    );
    assert_eq!(service.records("acme", &run), before);

    // Two approvers at once: one decision is recorded, the other is told.
    let second = service.step(&agent, &run, REFUND).json();
    let second_id = second["approval"]["id"].as_str().unwrap().to_owned();
    let answers: Vec<u16> = std::thread::scope(|scope| {
        let calls: Vec<_> = [&approver, &admin]
            .into_iter()
            .map(|token| {
                let (service, id) = (&service, second_id.as_str());
                scope.spawn(move || approve(service, token, id).status)
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut sorted = answers.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [200, 409], "{answers:?}");

    // The chain of the closed run verifies, approvals and all.
    let closed = service.terminate(&agent, &run);
    assert_eq!(
        closed.status,
        200,
        "{}",
        String::from_utf8_lossy(&closed.body)
    );
    let verified = service.on_run("GET", &investigator, &run, "verify", None);
    assert_eq!(verified.status, 200);
    assert_eq!(verified.json()["intact"], true, "{}", verified.json());
    // A request of a closed run cannot be decided.
    let late = approve(&service, &approver, &id);
    assert_eq!(code(&late), "approval_run_closed");
}

/// A receiver of one webhook call: its `X-Cairn-Signature` and body.
fn receive_one(listener: &TcpListener) -> (String, Vec<u8>) {
    listener.set_nonblocking(false).unwrap();
    let (stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut signature, mut length) = (String::new(), 0_usize);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        match name.to_ascii_lowercase().as_str() {
            "x-cairn-signature" => signature = value.trim().to_owned(),
            "content-length" => length = value.trim().parse().unwrap(),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let mut stream = stream;
    stream
        .write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    (signature, body)
}

#[test]
fn an_admission_holds_the_call_until_a_person_decides_and_the_webhook_is_told() {
    let receiver = TcpListener::bind("127.0.0.1:0").unwrap();
    let secret = b"a webhook secret of 32 bytes ...";
    let webhook = cairn_server::Webhook::new(
        &format!("http://{}/hooks/cairn", receiver.local_addr().unwrap()),
        secret,
    )
    .unwrap();
    let service = Harness::start_with_approvals(cairn_server::ApprovalSettings {
        max_hold: Duration::from_secs(20),
        request_ttl: None,
        webhook: Some(webhook),
    });
    let agent = service.token("acme", Role::Agent);
    let approver = service.token("acme", Role::Approver);
    service.tokens_reloaded();
    let run = service.open(&agent, "held");

    std::thread::scope(|scope| {
        let holding = scope.spawn(|| {
            service
                .step(
                    &agent,
                    &run,
                    r#"{"tool": "payments.refund", "arguments": {"amount": 70}, "hold_seconds": 15}"#,
                )
                .json()
        });
        // The receiver is told, with a signature it can check, and no argument.
        let (signature, body) = receive_one(&receiver);
        let expected = cairn_core::HmacKey::new("webhook", secret.to_vec())
            .unwrap()
            .digest(&body)
            .to_string();
        assert_eq!(signature, expected);
        let pushed: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(pushed["type"], "cairn.approval_requested");
        assert_eq!(pushed["tool"], "payments.refund");
        assert!(!String::from_utf8_lossy(&body).contains("\"amount\""));
        let id = pushed["approval_id"].as_str().unwrap().to_owned();
        // A person approves while the admission holds the call: it runs, no retry.
        assert_eq!(approve(&service, &approver, &id).status, 200);
        let answer = holding.join().unwrap();
        assert_eq!(answer["decision"], "allow", "{answer}");
        assert_eq!(answer["rule_ids"][1], "cairn.approval.granted");
    });

    // Nobody decides within the hold: denied, saying the request is still pending.
    let waited = service
        .step(
            &agent,
            &run,
            r#"{"tool": "payments.refund", "arguments": {"amount": 71}, "hold_seconds": 1}"#,
        )
        .json();
    assert_eq!(waited["decision"], "deny");
    assert_eq!(waited["reason"], "approval_pending");
    assert!(
        waited["detail"].as_str().unwrap().contains("still pending"),
        "{waited}"
    );
    let _ = receive_one(&receiver);
}

#[test]
fn a_run_opened_human_approved_holds_every_permitted_call_for_a_person() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let approver = service.token("acme", Role::Approver);
    let opened = service.call(
        "POST",
        "/v1/runs",
        Some(&agent),
        Some(r#"{"name": "careful", "authorization": "human_approved"}"#),
    );
    assert_eq!(
        opened.status,
        201,
        "{}",
        String::from_utf8_lossy(&opened.body)
    );
    let run = opened.json()["run_id"].as_str().unwrap().to_owned();

    // A read the policies permit waits for a person; a forbidden call stays forbidden.
    let held = service.step(&agent, &run, crate::READ_A).json();
    assert_eq!(held["reason"], "approval_pending", "{held}");
    assert_eq!(
        held["rule_ids"],
        serde_json::json!(["read-ok", "cairn.human-approved", "cairn.approval.pending"])
    );
    let forbidden = service
        .step(
            &agent,
            &run,
            r#"{"tool": "tickets.create", "arguments": {"title": "t", "priority": "p0"}}"#,
        )
        .json();
    assert_eq!(forbidden["reason"], "forbidden", "{forbidden}");

    let id = held["approval"]["id"].as_str().unwrap().to_owned();
    assert_eq!(approve(&service, &approver, &id).status, 200);
    let ran = service.step(&agent, &run, crate::READ_A).json();
    assert_eq!(ran["decision"], "allow", "{ran}");

    // The mode is the run's: the compaction binds its latest approval, and rehydration finds
    // it used up — the next read waits for a person again.
    let facts = r#"{"summary": "all approved", "facts": {"authorization": "human_approved"}}"#;
    let compacted = service.on_run("POST", &agent, &run, "compact", Some(facts));
    assert_eq!(
        compacted.status,
        200,
        "{}",
        String::from_utf8_lossy(&compacted.body)
    );
    let rehydrated = service
        .on_run("POST", &agent, &run, "rehydrate", Some(facts))
        .json();
    assert_eq!(rehydrated["reason"], "approval_not_active", "{rehydrated}");
    let again = service.step(&agent, &run, crate::READ_A).json();
    assert_eq!(again["reason"], "approval_used_up", "{again}");
}
