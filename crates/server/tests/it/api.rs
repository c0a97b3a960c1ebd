//! A run through the API: decisions as the library gives them, outcomes, an unknown side
//! effect blocking its capability until a person reconciles it, a closed run that verifies,
//! exports and proves; and the error shape for bad input.

use cairn_server::tokens::Role;

use crate::{DELETE_A, Harness, READ_A, TICKET_P2, code};

#[test]
fn a_run_is_decided_recorded_closed_and_verified_through_the_api() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let investigator = service.token("acme", Role::Investigator);
    let run = service.open(&agent, "session-1");
    assert!(run.ends_with(".session-1"), "{run}");

    let read = service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "a.txt"}}"#,
    );
    assert_eq!(read.status, 200);
    let read = read.json();
    assert_eq!(read["decision"], "allow");
    assert_eq!(read["step"], 0);
    assert_eq!(read["rule_ids"], serde_json::json!(["read-ok"]));
    assert!(
        read["policy_set_version"]
            .as_str()
            .is_some_and(|v| v.starts_with("sha256:"))
    );
    let outcome = service.on_run(
        "POST",
        &agent,
        &run,
        "steps/0/outcome",
        Some(r#"{"status": "applied", "result": {"bytes": 12}}"#),
    );
    assert_eq!(outcome.status, 200);

    let p0 = service.step(
        &agent,
        &run,
        r#"{"tool": "tickets.create", "arguments": {"title": "t", "priority": "p0"}}"#,
    );
    let p0 = p0.json();
    assert_eq!(p0["decision"], "deny");
    assert_eq!(p0["rule_ids"], serde_json::json!(["no-p0"]));
    assert_eq!(p0["step"], 1);
    // A denied call has no permit: reporting an outcome for it is refused.
    let late = service.on_run(
        "POST",
        &agent,
        &run,
        "steps/1/outcome",
        Some(r#"{"status": "applied", "result": null}"#),
    );
    assert_eq!(
        (late.status, code(&late).as_str()),
        (404, "outcome_not_awaited")
    );

    // A ticket write times out: its outcome is unknown, and the retry is denied until a
    // person reconciles it.
    let (_, key) = service.write_timing_out(&agent, &run, "timed out after 30 s");
    let retry = service.step(&agent, &run, TICKET_P2);
    let retry = retry.json();
    assert_eq!(retry["decision"], "deny");
    assert_eq!(retry["reason"], "unresolved_side_effect");
    // The agent cannot reconcile its own unknown effect; a person can.
    let by_agent = service.reconcile(&agent, &run, &key, "ticket:T-1");
    assert_eq!(
        (by_agent.status, code(&by_agent).as_str()),
        (403, "role_forbidden")
    );
    let by_person = service.reconcile(&investigator, &run, &key, "ticket:T-1");
    assert_eq!(
        by_person.status,
        200,
        "{}",
        String::from_utf8_lossy(&by_person.body)
    );
    let after = service.step(
        &agent,
        &run,
        r#"{"tool": "tickets.create", "arguments": {"title": "t2", "priority": "p2"}}"#,
    );
    assert_eq!(after.json()["decision"], "allow");

    let closed = service.terminate(&agent, &run);
    assert_eq!(closed.status, 200);
    assert!(
        closed.json()["checkpoint"]
            .as_str()
            .is_some_and(|n| n.contains("cairn.test"))
    );
    let again = service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "b"}}"#,
    );
    assert_eq!(
        (again.status, code(&again).as_str()),
        (409, "run_terminated")
    );

    let verified = service.on_run("GET", &investigator, &run, "verify", None);
    assert_eq!(verified.json()["intact"], true, "{:?}", verified.json());
    let bundle = service.on_run("GET", &investigator, &run, "bundle", None);
    let text = String::from_utf8(bundle.body).expect("utf-8");
    let parsed = cairn_ledger::bundle::parse_bundle(&text).expect("a bundle");
    assert!(parsed.checkpoint_note.is_some());
    let report = cairn_ledger::verify::verify_run(
        &parsed.tenant_id,
        &parsed.run_id,
        &parsed.rows,
        parsed.checkpoint_note.as_deref(),
        &cairn_ledger::keys::TrustedKeys::new(vec![service.key.verifier_key()]),
        cairn_ledger::verify::CheckpointPolicy::Required,
    );
    assert!(report.is_intact(), "{report:?}");
    // Posted back, the bundle verifies against the service's keys; a record changed by one
    // byte is found at its step; text that is no bundle is refused, naming the body.
    let posted = service.call(
        "POST",
        "/v1/bundles/verify",
        Some(&investigator),
        Some(&text),
    );
    assert_eq!(posted.status, 200, "{:?}", posted.json());
    assert_eq!(posted.json()["intact"], true, "{:?}", posted.json());
    assert_eq!(posted.json()["report"]["run_id"], run.as_str());
    let tampered = text.replacen("\"files.read\"", "\"files.reaD\"", 1);
    assert_ne!(tampered, text);
    let found = service
        .call(
            "POST",
            "/v1/bundles/verify",
            Some(&investigator),
            Some(&tampered),
        )
        .json();
    assert_eq!(found["intact"], false, "{found}");
    assert!(
        found["report"]["findings"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["step"] == 0)),
        "{found}"
    );
    for (body, expected) in [
        ("", "bundle_empty"),
        ("not a bundle\n", "bundle_unreadable"),
    ] {
        let refused = service.call(
            "POST",
            "/v1/bundles/verify",
            Some(&investigator),
            Some(body),
        );
        assert_eq!((refused.status, code(&refused).as_str()), (422, expected));
        assert_eq!(refused.json()["error"]["field"], "body");
    }
    // An agent verifies nothing; another tenant's investigator cannot use the service as an
    // oracle for acme's bundles.
    let by_agent = service.call("POST", "/v1/bundles/verify", Some(&agent), Some(&text));
    assert_eq!(code(&by_agent), "role_forbidden");
    let stranger = service.token("umbrella", Role::Investigator);
    service.tokens_reloaded();
    let across = service.call("POST", "/v1/bundles/verify", Some(&stranger), Some(&text));
    assert_eq!(
        (across.status, code(&across).as_str()),
        (403, "bundle_other_tenant")
    );
    let proof = service.on_run("GET", &investigator, &run, "steps/1/proof", None);
    let proof: cairn_ledger::proof::InclusionProof =
        serde_json::from_slice(&proof.body).expect("a proof");
    cairn_ledger::proof::verify_proof(
        &proof,
        None,
        &cairn_ledger::keys::TrustedKeys::new(vec![service.key.verifier_key()]),
    )
    .expect("the proof verifies");
}

#[test]
fn the_unix_socket_answers_as_the_tcp_listener_does() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let answer = cairn_server::client::send_blocking(
        &service.unix,
        "POST",
        "/v1/runs",
        Some(&agent),
        Some(br#"{"name": "over-the-socket"}"#.to_vec()),
        std::time::Duration::from_secs(20),
    )
    .expect("answered");
    assert_eq!(answer.status, 201);
    let run = answer.json()["run_id"].as_str().expect("run").to_owned();
    assert_eq!(
        service
            .call("GET", &format!("/v1/runs/{run}"), Some(&agent), None)
            .status,
        200
    );
}

#[test]
fn bad_input_gets_one_error_shape_naming_the_field() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "s");

    let missing = service.call("POST", "/v1/runs", None, Some(r#"{"name": "x"}"#));
    assert_eq!(
        (missing.status, code(&missing).as_str()),
        (401, "token_missing")
    );
    let forged = service.call(
        "POST",
        "/v1/runs",
        Some("cairn_0_0"),
        Some(r#"{"name": "x"}"#),
    );
    assert_eq!(
        (forged.status, code(&forged).as_str()),
        (401, "token_invalid")
    );

    let wrong_type = service.step(&agent, &run, r#"{"tool": 7, "arguments": {}}"#);
    assert_eq!(wrong_type.status, 400);
    assert_eq!(wrong_type.json()["error"]["field"], "body.tool");
    let bad_label = service.step(&agent, &run, r#"{"tool": "", "arguments": {}}"#);
    assert_eq!(bad_label.json()["error"]["field"], "body.tool");
    // Issue 34, 13: arguments that are not an object are invalid input, not a recorded deny.
    for arguments in ["[]", r#""ls""#, "7", "null"] {
        let odd = service.step(
            &agent,
            &run,
            &format!(r#"{{"tool": "files.read", "arguments": {arguments}}}"#),
        );
        assert_eq!(
            (odd.status, code(&odd).as_str()),
            (400, "body_invalid"),
            "{arguments}"
        );
        assert_eq!(odd.json()["error"]["field"], "body.arguments");
    }
    let not_json = service.step(&agent, &run, "{");
    assert_eq!(
        (not_json.status, code(&not_json).as_str()),
        (400, "body_invalid")
    );
    let bad_step = service.on_run(
        "POST",
        &agent,
        &run,
        "steps/x/outcome",
        Some(r#"{"status": "applied", "result": 1}"#),
    );
    assert_eq!(bad_step.json()["error"]["field"], "path.step");
    let bad_query = service.call("GET", "/v1/runs?older_than=soon", Some(&agent), None);
    assert_eq!(bad_query.json()["error"]["field"], "query.older_than");

    let big = format!(
        r#"{{"tool": "files.read", "arguments": {{"path": "{}"}}}}"#,
        "a".repeat(70 << 10)
    );
    let too_large = service.step(&agent, &run, &big);
    assert_eq!(
        (too_large.status, code(&too_large).as_str()),
        (413, "body_too_large")
    );
    // A hook event over the limit too, in the API's one error shape (issue 34, 13).
    let hook = service.call("POST", "/v1/hooks/claude-code", Some(&agent), Some(&big));
    assert_eq!((hook.status, code(&hook).as_str()), (413, "body_too_large"));
    // Nothing of the refused requests was recorded.
    assert_eq!(service.records("acme", &run), 0);
}

#[test]
fn arguments_that_are_not_strict_json_are_denied_and_recorded_as_sent() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "s");
    // A duplicate key: the gate never judges a different reading of the bytes.
    let answer = service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "a", "path": "b"}, "durability": "sync"}"#,
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["decision"], "deny");
    assert_eq!(answer.json()["reason"], "args_unreadable");
    assert_eq!(service.records("acme", &run), 1);
}

#[test]
fn metrics_count_requests_and_decisions_and_name_no_run_or_token() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "counted");
    service.step(&agent, &run, READ_A);
    service.step(&agent, &run, DELETE_A);
    // The API's listeners never serve the metrics (they name every tenant), whoever asks.
    let admin = service.token("acme", Role::Admin);
    service.tokens_reloaded();
    for token in [None, Some(agent.as_str()), Some(admin.as_str())] {
        let refused = service.call("GET", "/metrics", token, None);
        assert_eq!(
            (refused.status, code(&refused).as_str()),
            (404, "route_not_found")
        );
    }
    let scrape = |path: &str| {
        cairn_server::client::send_blocking(
            &service.metrics,
            "GET",
            path,
            None,
            None,
            std::time::Duration::from_secs(20),
        )
        .expect("the metrics listener answered")
    };
    // Its own listener serves nothing else.
    assert_eq!(scrape("/v1/runs").status, 404);
    let scraped = scrape("/metrics");
    assert_eq!(scraped.status, 200);
    let text = String::from_utf8(scraped.body).expect("utf-8");
    assert!(
        text.contains(r#"cairn_decisions_total{tenant="acme",decision="allow",rule="read-ok"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"cairn_decisions_total{tenant="acme",decision="deny",rule="none"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"cairn_http_requests_total{route="/v1/runs/{run}/steps",method="POST",status="200"} 2"#),
        "{text}"
    );
    assert!(
        text.contains("cairn_admit_duration_seconds_count 2"),
        "{text}"
    );
    assert!(!text.contains(&run), "no run id in the metrics");
    assert!(!text.contains(&agent[..20]), "no token in the metrics");
}

#[test]
fn a_compaction_and_its_rehydration_are_recorded_and_never_authorise() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let investigator = service.token("acme", Role::Investigator);
    let run = service.open(&agent, "boundaries");
    let summary = r#"{"summary": "The ticket was created; retry it to be sure.", "trigger": "auto", "facts": {"objective": "triage"}}"#;
    let (key, compacted) = service.compact_after_a_lost_write(&agent, &run, summary);
    assert_eq!(
        compacted.status,
        200,
        "{}",
        String::from_utf8_lossy(&compacted.body)
    );
    let compacted = compacted.json();
    assert!(compacted["envelope_id"].as_str().is_some());
    assert!(
        compacted["summary_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let rehydrate = r#"{"summary": "The ticket was created; retry it to be sure.", "facts": {"objective": "triage"}}"#;
    let blocked = service
        .on_run("POST", &agent, &run, "rehydrate", Some(rehydrate))
        .json();
    assert_eq!(blocked["status"], "blocked_on_reconciliation", "{blocked}");
    // The summary's claim changes nothing: the retry is still denied.
    let retry = service.step(&agent, &run, TICKET_P2);
    assert_eq!(retry.json()["reason"], "unresolved_side_effect");
    service.reconcile(&investigator, &run, &key, "ticket:T-9");
    let after = service
        .on_run("POST", &agent, &run, "rehydrate", Some(rehydrate))
        .json();
    assert_ne!(after["status"], "blocked_on_reconciliation", "{after}");
    assert_eq!(after["authorized"], false, "{after}");
    // Another summary than the one bound: refused.
    let other = service
        .on_run(
            "POST",
            &agent,
            &run,
            "rehydrate",
            Some(r#"{"summary": "Nothing happened."}"#),
        )
        .json();
    assert_eq!(other["reason"], "summary_digest_mismatch", "{other}");
    // Every boundary is in the run's records.
    let bundle = service.on_run("GET", &investigator, &run, "bundle", None);
    let text = String::from_utf8(bundle.body).unwrap();
    for event in ["context_compaction", "reconciliation"] {
        assert!(text.contains(event), "{event} not recorded");
    }
}
