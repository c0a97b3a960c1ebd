//! Every endpoint tried with a token of another tenant, of another agent and of a lower role:
//! nothing is read or written across, and a hidden run answers exactly as a missing one.

use cairn_server::tokens::Role;

use crate::{Harness, READ_A, TICKET_P2, code, json_of};

/// Every endpoint that names a run: method, path (with `{run}`), body.
const RUN_ENDPOINTS: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/v1/runs/{run}", None),
    ("POST", "/v1/runs/{run}/steps", Some(READ_A)),
    (
        "POST",
        "/v1/runs/{run}/steps/0/outcome",
        Some(r#"{"status": "applied", "result": 1}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/observations",
        Some(r#"{"observation": {"user": "hi"}}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/terminate",
        Some(r#"{"reason": "cancelled"}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/reconcile",
        Some(r#"{"key": "x:0", "outcome": "applied", "evidence": "e"}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/compact",
        Some(r#"{"summary": "s", "trigger": "auto"}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/rehydrate",
        Some(r#"{"summary": "s"}"#),
    ),
    ("GET", "/v1/runs/{run}/lanes", None),
    (
        "POST",
        "/v1/runs/{run}/lanes/rulings",
        Some(r#"{"ruling_ref": "event:r", "definition": {}}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/lanes/a/evidence",
        Some(r#"{"evidence_ref": "evidence:e", "passed": true}"#),
    ),
    (
        "POST",
        "/v1/runs/{run}/lanes/a/handoff",
        Some(r#"{"to_owner": "agent:x", "reason": "r"}"#),
    ),
    ("GET", "/v1/runs/{run}/verify", None),
    ("GET", "/v1/runs/{run}/bundle", None),
    ("GET", "/v1/runs/{run}/steps/0/proof", None),
];

/// Which roles an endpoint admits at all (whatever the run).
fn admits(method: &str, path: &str, role: Role) -> bool {
    let people = matches!(role, Role::Investigator | Role::Admin);
    match (method, path) {
        ("GET", "/v1/runs/{run}" | "/v1/runs/{run}/lanes") => true,
        (
            "POST",
            "/v1/runs/{run}/reconcile"
            | "/v1/runs/{run}/lanes/rulings"
            | "/v1/runs/{run}/lanes/a/evidence"
            | "/v1/runs/{run}/lanes/a/handoff",
        )
        | (
            "GET",
            "/v1/runs/{run}/verify" | "/v1/runs/{run}/bundle" | "/v1/runs/{run}/steps/0/proof",
        ) => people,
        _ => role == Role::Agent,
    }
}

#[test]
fn no_token_reads_or_writes_another_tenants_or_agents_runs() {
    let service = Harness::start();
    let owner = service.token("acme", Role::Agent);
    let run = service.open(&owner, "private");
    let admitted = service.step(
        &owner,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "a"}, "durability": "sync"}"#,
    );
    assert_eq!(admitted.json()["decision"], "allow");
    let before = service.records("acme", &run);

    let strangers = [
        ("another agent of the tenant", "acme", Role::Agent),
        ("an agent of another tenant", "umbrella", Role::Agent),
        (
            "an investigator of another tenant",
            "umbrella",
            Role::Investigator,
        ),
        ("an admin of another tenant", "umbrella", Role::Admin),
    ]
    .map(|(who, tenant, role)| (who, service.token(tenant, role), role));
    service.tokens_reloaded();
    let mut tried = 0;
    for (who, token, role) in &strangers {
        for (method, template, body) in RUN_ENDPOINTS {
            let real = service.call(method, &template.replace("{run}", &run), Some(token), *body);
            let missing = service.call(
                method,
                &template.replace("{run}", "0123456789ab.never-opened"),
                Some(token),
                *body,
            );
            tried += 1;
            assert!(
                !(200..300).contains(&real.status),
                "{who}: {method} {template} got {} {}",
                real.status,
                String::from_utf8_lossy(&real.body)
            );
            let expected = if admits(method, template, *role) {
                (404, "run_not_found")
            } else {
                (403, "role_forbidden")
            };
            assert_eq!(
                (real.status, code(&real).as_str()),
                expected,
                "{who}: {method} {template}"
            );
            // Indistinguishable from a run that does not exist.
            assert_eq!(
                (
                    real.status,
                    code(&real),
                    real.json()["error"]["field"].clone()
                ),
                (
                    missing.status,
                    code(&missing),
                    missing.json()["error"]["field"].clone()
                ),
                "{who}: {method} {template}"
            );
        }
        // Listing shows none of it.
        let listed = service.call("GET", "/v1/runs", Some(token), None);
        if listed.status == 200 {
            assert_eq!(
                listed.json(),
                serde_json::json!([]),
                "{who} lists nothing of acme's"
            );
        }
    }
    assert_eq!(tried, strangers.len() * RUN_ENDPOINTS.len());
    assert_eq!(
        service.records("acme", &run),
        before,
        "nothing was written across"
    );
    // The owner still sees its run; its tenant's investigator sees it too.
    assert_eq!(
        service
            .call("GET", &format!("/v1/runs/{run}"), Some(&owner), None)
            .status,
        200
    );
    let investigator = service.token("acme", Role::Investigator);
    service.tokens_reloaded();
    let listed = service.call("GET", "/v1/runs", Some(&investigator), None);
    assert_eq!(listed.json()[0]["run_id"], run.as_str());
}

#[test]
fn a_lower_role_is_refused_every_endpoint_above_it() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let investigator = service.token("acme", Role::Investigator);
    let approver = service.token("acme", Role::Approver);
    let admin = service.token("acme", Role::Admin);
    let run = service.open(&agent, "r");
    let before = service.records("acme", &run);
    for (method, template, body) in RUN_ENDPOINTS {
        let path = template.replace("{run}", &run);
        for (token, role) in [
            (&agent, Role::Agent),
            (&investigator, Role::Investigator),
            (&approver, Role::Approver),
            (&admin, Role::Admin),
        ] {
            if !admits(method, template, role) {
                let answer = service.call(method, &path, Some(token), *body);
                assert_eq!(
                    (answer.status, code(&answer).as_str()),
                    (403, "role_forbidden"),
                    "{role:?}: {method} {template}"
                );
            }
        }
    }
    // People neither open runs nor admit calls in them.
    for token in [&investigator, &approver, &admin] {
        let open = service.call("POST", "/v1/runs", Some(token), Some(r#"{"name": "x"}"#));
        assert_eq!(code(&open), "role_forbidden");
    }
    // Hook events are an agent's: a person's token sends none.
    for token in [&investigator, &approver, &admin] {
        let hook = service.call("POST", "/v1/hooks/claude-code", Some(token), Some("{}"));
        assert_eq!(code(&hook), "role_forbidden");
    }
    // Only an admin manages tokens.
    for token in [&agent, &investigator, &approver] {
        assert_eq!(
            code(&service.call("GET", "/v1/tokens", Some(token), None)),
            "role_forbidden"
        );
        let made = service.call(
            "POST",
            "/v1/tokens",
            Some(token),
            Some(r#"{"role": "admin"}"#),
        );
        assert_eq!(code(&made), "role_forbidden");
    }
    // Only an admin reads or changes the tenant's policies.
    for token in [&agent, &investigator, &approver] {
        for (method, path, body) in [
            ("GET", "/v1/policies", None),
            (
                "PUT",
                "/v1/policies/p.cedar",
                Some("permit(principal, action, resource);"),
            ),
            ("DELETE", "/v1/policies/p.cedar", None),
        ] {
            let answer = service.call(method, path, Some(token), body);
            assert_eq!(code(&answer), "role_forbidden", "{method} {path}");
        }
    }
    assert_eq!(service.records("acme", &run), before);
}

#[test]
fn an_admin_manages_only_its_own_tenants_tokens() {
    let service = Harness::start();
    let acme_admin = service.token("acme", Role::Admin);
    let umbrella_admin = service.token("umbrella", Role::Admin);
    service.tokens_reloaded();
    let made = service.call(
        "POST",
        "/v1/tokens",
        Some(&acme_admin),
        Some(r#"{"role": "agent", "label": "ci"}"#),
    );
    assert_eq!(made.status, 201);
    let made = made.json();
    let id = made["entry"]["id"].as_str().expect("id").to_owned();
    let token = made["token"].as_str().expect("token").to_owned();
    assert!(
        !std::fs::read_to_string(service.tokens_path())
            .expect("file")
            .contains(&token[20..])
    );

    let listed = service
        .call("GET", "/v1/tokens", Some(&umbrella_admin), None)
        .json();
    assert!(
        listed
            .as_array()
            .expect("list")
            .iter()
            .all(|t| t["tenant"] == "umbrella"),
        "{listed}"
    );
    assert!(
        !listed.to_string().contains("sha256:"),
        "digests are never listed"
    );
    let revoke = service.call(
        "POST",
        &format!("/v1/tokens/{id}/revoke"),
        Some(&umbrella_admin),
        None,
    );
    assert_eq!(
        (revoke.status, code(&revoke).as_str()),
        (404, "token_not_found")
    );

    service.tokens_reloaded();
    assert_eq!(
        service.call("GET", "/v1/runs", Some(&token), None).status,
        200
    );
    let revoked = service.call(
        "POST",
        &format!("/v1/tokens/{id}/revoke"),
        Some(&acme_admin),
        None,
    );
    assert_eq!(revoked.status, 200);
    service.tokens_reloaded();
    let refused = service.call("GET", "/v1/runs", Some(&token), None);
    assert_eq!(
        (refused.status, code(&refused).as_str()),
        (401, "token_invalid")
    );
}

#[test]
fn a_cost_rollup_counts_the_callers_tenant_only_and_is_for_people() {
    let service = Harness::start();
    let acme = service.token("acme", Role::Agent);
    let umbrella = service.token("umbrella", Role::Agent);
    let acme_investigator = service.token("acme", Role::Investigator);
    let umbrella_admin = service.token("umbrella", Role::Admin);
    service.tokens_reloaded();
    let run = service.open(&acme, "costed");
    for body in [
        READ_A,
        r#"{"tool": "tickets.create", "arguments": {"title": "t", "priority": "p0"}}"#,
        TICKET_P2,
    ] {
        assert_eq!(service.step(&acme, &run, body).status, 200);
    }
    let other = service.open(&umbrella, "theirs");
    let step = service.step(
        &umbrella,
        &other,
        r#"{"tool": "files.read", "arguments": {"path": "umbrella-secret"}}"#,
    );
    assert_eq!(step.status, 200);

    let rollup = |token: &str, by: &str| {
        let answer = service.call("GET", &format!("/v1/cost?by={by}"), Some(token), None);
        json_of(&answer, 200)
    };
    let rows = |view: &serde_json::Value| -> Vec<(String, u64, u64, u64)> {
        view["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                (
                    r["key"].as_str().expect("key").to_owned(),
                    r["runs"].as_u64().expect("runs"),
                    r["calls"].as_u64().expect("calls"),
                    r["denied"].as_u64().expect("denied"),
                )
            })
            .collect()
    };
    let by_tool = rollup(&acme_investigator, "tool");
    assert_eq!(
        (&by_tool["by"], &by_tool["tenant"]),
        (&"tool".into(), &"acme".into())
    );
    assert_eq!(
        rows(&by_tool),
        [
            ("files.read".to_owned(), 1, 1, 0),
            ("tickets.create".to_owned(), 1, 2, 1)
        ],
        "acme's calls only: umbrella's read is not counted"
    );
    assert_eq!(
        rows(&rollup(&acme_investigator, "tenant")),
        [("acme".to_owned(), 1, 3, 1)],
        "no other tenant's name, not even with its counts"
    );
    assert_eq!(
        rows(&rollup(&umbrella_admin, "tool")),
        [("files.read".to_owned(), 1, 1, 0)]
    );
    let by_end = rollup(&umbrella_admin, "termination");
    assert_eq!(rows(&by_end), [("unterminated".to_owned(), 1, 1, 0)]);
    // `task` by default.
    let default = service.call("GET", "/v1/cost", Some(&acme_investigator), None);
    assert_eq!(default.json()["by"], "task");

    // An agent reads nothing beyond its own runs.
    let refused = service.call("GET", "/v1/cost?by=tool", Some(&acme), None);
    assert_eq!(
        (refused.status, code(&refused).as_str()),
        (403, "role_forbidden")
    );
    // A bad dimension or an unknown parameter names the query.
    for query in ["by=cost", "by=tool&tenant=umbrella"] {
        let bad = service.call(
            "GET",
            &format!("/v1/cost?{query}"),
            Some(&acme_investigator),
            None,
        );
        assert_eq!(
            (bad.status, code(&bad).as_str()),
            (400, "parameter_invalid"),
            "{query}"
        );
        assert_eq!(bad.json()["error"]["field"], "query", "{query}");
    }
}
