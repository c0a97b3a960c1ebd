//! The web console (`/ui`) as a browser meets it, over plain HTTP: who may sign in, what the
//! session cookie and the forms demand, the headers every page carries, and a run's text
//! shown as text. (The browser tests in real Chromium come with the console's pages.)

use std::io::{Read as _, Write as _};
use std::time::Duration;

use cairn_server::client::Endpoint;
use cairn_server::console::url_encode;
use cairn_server::tokens::Role;

use crate::Harness;

/// One HTTP answer: status, headers (lower-cased names) and body.
struct Page {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn cookies(&self) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(key, _)| key == "set-cookie")
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// The value the page sets for cookie `name`.
    fn cookie(&self, name: &str) -> Option<String> {
        self.cookies().into_iter().find_map(|cookie| {
            cookie
                .split(';')
                .next()
                .and_then(|pair| pair.split_once('='))
                .filter(|(key, value)| *key == name && !value.is_empty())
                .map(|(_, value)| value.to_owned())
        })
    }

    /// The value of the hidden form field `csrf`.
    fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .expect("a csrf field")
            + 19;
        self.body[at..]
            .split('"')
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}

/// Sends one request to the harness's TCP listener (HTTP/1.1, `Connection: close`).
fn send(
    service: &Harness,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    form: Option<&str>,
) -> Page {
    let Endpoint::Tcp(address) = &service.tcp else {
        panic!("a TCP endpoint")
    };
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let Some(cookie) = cookie {
        request.push_str(&format!("Cookie: {cookie}\r\n"));
    }
    let body = form.unwrap_or("");
    if form.is_some() {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Page {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// The run `name` of `agent`: a read allowed (`read-ok`), a `p0` ticket refused (`no-p0`).
pub fn a_read_and_a_refusal(service: &Harness, agent: &str, name: &str) -> String {
    let run = service.open(agent, name);
    assert_eq!(service.step(agent, &run, crate::READ_A).status, 200);
    let refused = service.step(
        agent,
        &run,
        r#"{"tool": "tickets.create", "arguments": {"title": "t", "priority": "p0"}}"#,
    );
    assert_eq!(refused.json()["decision"], "deny");
    run
}

/// Signs in with `token` as a browser does (the form, its cookie, the post); the answer.
fn sign_in(service: &Harness, token: &str) -> Page {
    let form = send(service, "GET", "/ui/login", None, None);
    assert_eq!(form.status, 200);
    let login_cookie = form.cookie("cairn_ui_login").expect("the form's cookie");
    send(
        service,
        "POST",
        "/ui/login",
        Some(&format!("cairn_ui_login={login_cookie}")),
        Some(&format!("token={}&csrf={}", url_encode(token), form.csrf())),
    )
}

/// A signed-in session's cookie header.
fn session_of(service: &Harness, token: &str) -> String {
    let signed = sign_in(service, token);
    assert_eq!(signed.status, 303, "{}", signed.body);
    assert_eq!(signed.header("location"), Some("/ui/runs"));
    format!(
        "cairn_ui={}",
        signed.cookie("cairn_ui").expect("a session cookie")
    )
}

#[test]
fn a_person_signs_in_with_a_persons_token_and_an_agent_cannot() {
    let service = Harness::start();
    let cookie = session_of(&service, &service.token("acme", Role::Investigator));
    let runs = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    assert_eq!(runs.status, 200, "{}", runs.body);
    assert!(runs.body.contains("Runs"), "{}", runs.body);
    assert!(
        runs.body.contains("cairn runs list"),
        "the page names its CLI command"
    );
    // The session cookie is HttpOnly, SameSite=Strict and scoped to the console.
    let signed = sign_in(&service, &service.token("acme", Role::Approver));
    let set = signed
        .cookies()
        .into_iter()
        .find(|c| c.starts_with("cairn_ui="))
        .expect("a session cookie")
        .to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(set.contains(part), "{set}");
    }

    let agent = sign_in(&service, &service.token("acme", Role::Agent));
    assert_eq!(agent.status, 403);
    assert!(agent.body.contains("agent"), "{}", agent.body);
    assert!(agent.cookie("cairn_ui").is_none());
    let unknown = sign_in(&service, "cairn_nope_nope");
    assert_eq!(unknown.status, 401);
    assert!(unknown.cookie("cairn_ui").is_none());
}

#[test]
fn every_console_page_needs_a_live_session_and_revoking_its_token_ends_it() {
    let service = Harness::start();
    for (cookie, why) in [
        (None, "no session"),
        (Some("cairn_ui=0123456789abcdef"), "an unknown session"),
    ] {
        let page = send(&service, "GET", "/ui/runs", cookie, None);
        assert_eq!(page.status, 303, "{why}");
        assert_eq!(page.header("location"), Some("/ui/login"), "{why}");
        let logout = send(&service, "POST", "/ui/logout", cookie, Some("csrf=x"));
        assert_eq!(logout.status, 303, "{why}");
    }
    let admin = service.token("acme", Role::Admin);
    let investigator = service.token("acme", Role::Investigator);
    let cookie = session_of(&service, &investigator);
    assert_eq!(
        send(&service, "GET", "/ui/runs", Some(&cookie), None).status,
        200
    );
    let id = investigator.split('_').nth(1).unwrap_or_default();
    let revoked = service.call(
        "POST",
        &format!("/v1/tokens/{id}/revoke"),
        Some(&admin),
        None,
    );
    assert_eq!(
        revoked.status,
        200,
        "{}",
        String::from_utf8_lossy(&revoked.body)
    );
    service.tokens_reloaded();
    let after = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    assert_eq!(after.status, 303, "a revoked token's session ends");
}

#[test]
fn forms_demand_their_csrf_token() {
    let service = Harness::start();
    // Sign-in: a post without the form's cookie, or with another token, is refused.
    let form = send(&service, "GET", "/ui/login", None, None);
    let token = service.token("acme", Role::Admin);
    let forged = send(
        &service,
        "POST",
        "/ui/login",
        None,
        Some(&format!(
            "token={}&csrf={}",
            url_encode(&token),
            form.csrf()
        )),
    );
    assert_eq!(forged.status, 403);
    assert!(forged.cookie("cairn_ui").is_none());
    let mismatched = send(
        &service,
        "POST",
        "/ui/login",
        Some("cairn_ui_login=aaaa"),
        Some(&format!(
            "token={}&csrf={}",
            url_encode(&token),
            form.csrf()
        )),
    );
    assert_eq!(mismatched.status, 403);

    // Sign-out: the session's own token only.
    let cookie = session_of(&service, &token);
    let wrong = send(
        &service,
        "POST",
        "/ui/logout",
        Some(&cookie),
        Some("csrf=0000"),
    );
    assert_eq!(wrong.status, 403);
    assert_eq!(
        send(&service, "GET", "/ui/runs", Some(&cookie), None).status,
        200
    );
    let page = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    let out = send(
        &service,
        "POST",
        "/ui/logout",
        Some(&cookie),
        Some(&format!("csrf={}", page.csrf())),
    );
    assert_eq!(out.status, 303);
    assert_eq!(
        send(&service, "GET", "/ui/runs", Some(&cookie), None).status,
        303
    );
}

#[test]
fn every_page_carries_the_policy_and_what_a_request_echoes_is_shown_as_text() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    service.open(&agent, "session-1");
    let cookie = session_of(&service, &service.token("acme", Role::Investigator));
    // The task filter is echoed into the page: markup in it must stay text.
    let hostile = "/ui/runs?state=open&task=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E";
    for (path, cookie) in [
        ("/ui/login", None),
        ("/ui/runs", Some(cookie.as_str())),
        (hostile, Some(cookie.as_str())),
        ("/ui/static/console.css", None),
    ] {
        let page = send(&service, "GET", path, cookie, None);
        assert_eq!(page.status, 200, "{path}");
        let policy = page.header("content-security-policy").unwrap_or_default();
        assert!(policy.contains("default-src 'none'"), "{path}: {policy}");
        assert!(
            !policy.contains("script-src"),
            "{path}: no script is ever allowed"
        );
        assert_eq!(
            page.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert!(!page.body.contains("<script"), "{path}: {}", page.body);
    }
    let echoed = send(&service, "GET", hostile, Some(&cookie), None);
    assert!(
        echoed
            .body
            .contains("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the filter is shown escaped: {}",
        echoed.body
    );
    let runs = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    assert!(runs.body.contains(".session-1"), "{}", runs.body);
    assert!(runs.body.contains("open"), "{}", runs.body);
}

#[test]
fn a_runs_timeline_shows_each_record_with_its_rules_a_page_at_a_time() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = a_read_and_a_refusal(&service, &agent, "timeline");
    for _ in 0..120 {
        assert_eq!(service.step(&agent, &run, crate::READ_A).status, 200);
    }
    let cookie = session_of(&service, &service.token("acme", Role::Investigator));
    let runs = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    let link = format!("/ui/runs/{}", url_encode(&run));
    assert!(
        runs.body.contains(&link),
        "the runs page links the run: {}",
        runs.body
    );

    let first = send(&service, "GET", &link, Some(&cookie), None);
    assert_eq!(first.status, 200, "{}", first.body);
    for seen in [
        "files.read",
        "read-ok",
        "tickets.create",
        "deny",
        "no-p0",
        "cairn ledger export --run",
    ] {
        assert!(first.body.contains(seen), "{seen}: {}", first.body);
    }
    assert!(first.body.contains("122 records"), "{}", first.body);
    // A page holds 100 records; the next one starts where it ended.
    assert!(first.body.contains("?from=100"), "{}", first.body);
    assert!(
        !first.body.contains(">121<"),
        "step 121 is on the next page"
    );
    let second = send(
        &service,
        "GET",
        &format!("{link}?from=100"),
        Some(&cookie),
        None,
    );
    assert!(second.body.contains(">121<"), "{}", second.body);
    assert!(second.body.contains("?from=0"), "{}", second.body);

    // Another tenant's person finds no such run.
    let other = session_of(&service, &service.token("globex", Role::Admin));
    let hidden = send(&service, "GET", &link, Some(&other), None);
    assert_eq!(hidden.status, 404, "{}", hidden.body);
    assert!(hidden.body.contains("Not found"), "{}", hidden.body);
    assert!(!hidden.body.contains("files.read"));
}

#[test]
fn an_approver_decides_a_held_call_in_the_queue_and_an_investigator_only_reads_it() {
    let service = Harness::start_retaining();
    let agent = service.token("acme", Role::Agent);
    let run = crate::console::a_read_and_a_refusal(&service, &agent, "refunds");
    let refund =
        r#"{"tool": "payments.refund", "arguments": {"amount": 500}, "call_id": "toolu_1"}"#;
    let held = service.step(&agent, &run, refund).json();
    assert_eq!(held["reason"], "approval_pending", "{held}");
    let id = held["approval"]["id"].as_str().unwrap().to_owned();
    let page = format!("/ui/approvals/{id}");

    // An investigator sees the queue and the request, with the rule that asked, and no form.
    let investigator = session_of(&service, &service.token("acme", Role::Investigator));
    let queue = send(&service, "GET", "/ui/approvals", Some(&investigator), None);
    assert_eq!(queue.status, 200, "{}", queue.body);
    assert!(queue.body.contains(&id), "{}", queue.body);
    assert!(queue.body.contains("payments.refund"));
    let request = send(&service, "GET", &page, Some(&investigator), None);
    for seen in [
        "pending",
        "refunds-ask",
        "sha256:",
        "cairn approvals show",
        // The exact arguments, re-hashed, and what the run did just before.
        "The exact arguments",
        "Re-hashed now: matches",
        "{&quot;amount&quot;: 500}",
        "Before it in the run",
        "read-ok",
        "no-p0",
    ] {
        assert!(request.body.contains(seen), "{seen}: {}", request.body);
    }
    assert!(
        !request.body.contains("Approve"),
        "an investigator decides nothing"
    );
    let tried = send(
        &service,
        "POST",
        &format!("{page}/approve"),
        Some(&investigator),
        Some(&format!("csrf={}", request.csrf())),
    );
    assert_eq!(tried.status, 403, "{}", tried.body);

    // An approver approves it, with a note; the forged form (no CSRF token) is refused first.
    let approver = session_of(&service, &service.token("acme", Role::Approver));
    let request = send(&service, "GET", &page, Some(&approver), None);
    assert!(request.body.contains("Approve"), "{}", request.body);
    let forged = send(
        &service,
        "POST",
        &format!("{page}/approve"),
        Some(&approver),
        Some("expires_in=10m&uses=1"),
    );
    assert!(
        forged.status == 403 || forged.status == 422,
        "{}",
        forged.status
    );
    let approved = send(
        &service,
        "POST",
        &format!("{page}/approve"),
        Some(&approver),
        Some(&format!(
            "csrf={}&expires_in=10m&uses=1&note={}",
            request.csrf(),
            url_encode("checked <the> ticket")
        )),
    );
    assert_eq!(approved.status, 303, "{}", approved.body);
    let decided = send(&service, "GET", &page, Some(&approver), None);
    assert!(decided.body.contains("active"), "{}", decided.body);
    assert!(decided.body.contains("approved by"), "{}", decided.body);
    assert!(decided.body.contains("Revoke"), "{}", decided.body);
    // The identical call now runs, admitted by the approval.
    let admitted = service.step(&agent, &run, refund).json();
    assert_eq!(admitted["decision"], "allow", "{admitted}");
    // Nothing waits any more.
    let queue = send(&service, "GET", "/ui/approvals", Some(&approver), None);
    assert!(queue.body.contains("No request waits"), "{}", queue.body);
}

#[test]
fn a_run_is_verified_on_demand_and_a_rewritten_record_shows_where_it_breaks() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = a_read_and_a_refusal(&service, &agent, "audited");
    let investigator = session_of(&service, &service.token("acme", Role::Investigator));
    let page = format!("/ui/runs/{}/verify", url_encode(&run));
    let open = send(&service, "GET", &page, Some(&investigator), None);
    assert!(open.body.contains("no (still open)"), "{}", open.body);
    assert!(!open.body.contains("Merkle root"), "{}", open.body);
    let closed = service.on_run(
        "POST",
        &agent,
        &run,
        "terminate",
        Some(r#"{"reason": "completed"}"#),
    );
    assert_eq!(
        closed.status,
        200,
        "{}",
        String::from_utf8_lossy(&closed.body)
    );
    let intact = send(&service, "GET", &page, Some(&investigator), None);
    assert_eq!(intact.status, 200, "{}", intact.body);
    assert!(intact.body.contains("Intact"), "{}", intact.body);
    // The checkpoint's Merkle root and signer, as the signed note states them.
    let bundle = service.on_run(
        "GET",
        &service.token("acme", Role::Investigator),
        &run,
        "bundle",
        None,
    );
    let note: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&bundle.body)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    let root = note["note"]
        .as_str()
        .unwrap()
        .lines()
        .nth(2)
        .unwrap()
        .to_owned();
    for seen in [
        "Merkle root",
        root.as_str(),
        "cairn.test",
        "signed, covering",
    ] {
        assert!(intact.body.contains(seen), "{seen}: {}", intact.body);
    }
    assert!(
        intact.body.contains("cairn ledger verify --run"),
        "{}",
        intact.body
    );

    // Someone with the database rewrites the refusal into an allow.
    let db = rusqlite::Connection::open(service.dir.path().join("cairn.db")).unwrap();
    let changed = db
        .execute(
            "UPDATE records SET body = replace(body, '\"deny\"', '\"allow\"') WHERE step_index = 1",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let tampered = send(&service, "GET", &page, Some(&investigator), None);
    assert!(tampered.body.contains("TAMPERED"), "{}", tampered.body);
    assert!(
        tampered.body.contains("?from=0"),
        "the finding links its step: {}",
        tampered.body
    );

    // An approver reads runs but does not verify them (as in the API).
    let approver = session_of(&service, &service.token("acme", Role::Approver));
    let refused = send(&service, "GET", &page, Some(&approver), None);
    assert_eq!(refused.status, 403, "{}", refused.body);
}

#[test]
fn a_steps_retained_content_is_rehashed_as_it_is_shown_and_an_altered_store_shows_as_altered() {
    let service = Harness::start_retaining();
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "content");
    let hostile =
        r#"{"tool": "files.read", "arguments": {"path": "<img src=x onerror=alert(1)>"}}"#;
    assert_eq!(service.step(&agent, &run, hostile).status, 200);
    let observed = r#"{"tool": "files.read", "arguments": {"path": "b"}, "observation": {"said": "<script>alert(2)</script>"}}"#;
    assert_eq!(service.step(&agent, &run, observed).status, 200);
    let investigator = session_of(&service, &service.token("acme", Role::Investigator));
    let timeline = send(
        &service,
        "GET",
        &format!("/ui/runs/{}", url_encode(&run)),
        Some(&investigator),
        None,
    );
    let first = format!("/ui/runs/{}/steps/0", url_encode(&run));
    assert!(
        timeline.body.contains(&first),
        "the timeline links each step: {}",
        timeline.body
    );

    let page = send(&service, "GET", &first, Some(&investigator), None);
    assert_eq!(page.status, 200, "{}", page.body);
    for seen in [
        "read-ok",
        "Policy set",
        "matches the record",
        "&lt;img src=x onerror=alert(1)&gt;",
        "cairn ledger show --run",
    ] {
        assert!(page.body.contains(seen), "{seen}: {}", page.body);
    }
    assert!(!page.body.contains("<img"), "{}", page.body);
    let second = send(
        &service,
        "GET",
        &format!("/ui/runs/{}/steps/1", url_encode(&run)),
        Some(&investigator),
        None,
    );
    assert!(
        second
            .body
            .contains("&lt;script&gt;alert(2)&lt;/script&gt;"),
        "{}",
        second.body
    );
    assert!(!second.body.contains("<script"), "{}", second.body);

    // Someone rewrites the retained arguments of step 0: shown as altered, not as content.
    let db = rusqlite::Connection::open(service.dir.path().join("cairn.db")).unwrap();
    let changed = db
        .execute(
            "UPDATE content SET bytes = CAST('{\"path\":\"innocent\"}' AS BLOB) WHERE bytes LIKE '%onerror%'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let altered = send(&service, "GET", &first, Some(&investigator), None);
    assert!(altered.body.contains("ALTERED"), "{}", altered.body);
    assert!(!altered.body.contains("innocent"), "{}", altered.body);
    let missing = send(
        &service,
        "GET",
        &format!("/ui/runs/{}/steps/99", url_encode(&run)),
        Some(&investigator),
        None,
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
}

#[test]
fn the_runs_that_need_a_person_come_first_with_what_they_need() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let quiet = a_read_and_a_refusal(&service, &agent, "quiet");
    let held = service.open(&agent, "held");
    let refund = r#"{"tool": "payments.refund", "arguments": {"amount": 500}}"#;
    assert_eq!(
        service.step(&agent, &held, refund).json()["reason"],
        "approval_pending"
    );
    let blocked = service.open(&agent, "blocked");
    assert_eq!(
        service.step(&agent, &blocked, crate::TICKET_P2).json()["decision"],
        "allow"
    );
    let unknown = service.on_run(
        "POST",
        &agent,
        &blocked,
        "steps/0/outcome",
        Some(r#"{"status": "unknown", "error": "timed out after dispatch"}"#),
    );
    assert_eq!(
        unknown.status,
        200,
        "{}",
        String::from_utf8_lossy(&unknown.body)
    );
    // The quiet run was active last, yet the two that need a person come first.
    assert_eq!(service.step(&agent, &quiet, crate::READ_A).status, 200);

    let cookie = session_of(&service, &service.token("acme", Role::Investigator));
    let runs = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    let at = |text: &str| {
        runs.body
            .find(text)
            .unwrap_or_else(|| panic!("{text}: {}", runs.body))
    };
    assert!(at("waiting for approval") < at(&quiet), "{}", runs.body);
    assert!(
        at("blocked on reconciliation") < at(&quiet),
        "{}",
        runs.body
    );
    // The quiet run: two reads allowed, one refusal, nothing held, no boundary.
    assert!(runs.body.contains("1 · 0 · 0"), "{}", runs.body);
    let only = send(
        &service,
        "GET",
        "/ui/runs?state=attention",
        Some(&cookie),
        None,
    );
    assert!(only.body.contains("2 run(s)"), "{}", only.body);
    assert!(!only.body.contains(&quiet), "{}", only.body);
    // Each thing a person may be needed for, on its own.
    for (state, shown, hidden) in [("blocked", &blocked, &held), ("waiting", &held, &blocked)] {
        let page = send(
            &service,
            "GET",
            &format!("/ui/runs?state={state}"),
            Some(&cookie),
            None,
        );
        assert!(page.body.contains("1 run(s)"), "{state}: {}", page.body);
        assert!(page.body.contains(shown.as_str()), "{state}: {}", page.body);
        assert!(
            !page.body.contains(hidden.as_str()),
            "{state}: {}",
            page.body
        );
    }
}

#[test]
fn a_runs_activity_and_continuity_health_are_shown_side_by_side() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let investigator_token = service.token("acme", Role::Investigator);
    let run = service.open(&agent, "boundaries");
    let summary = r#"{"summary": "The ticket was created; retry it to be sure.", "trigger": "auto", "facts": {"objective": "triage"}}"#;
    let (key, compacted) = service.compact_after_a_lost_write(&agent, &run, summary);
    assert_eq!(compacted.status, 200);
    let cookie = session_of(&service, &investigator_token);
    let page = format!("/ui/runs/{}", url_encode(&run));

    // Busy and admitted, yet blocked across the compaction: both are said, apart.
    let blocked = send(&service, "GET", &page, Some(&cookie), None);
    for seen in [
        "Activity",
        "1 call(s) admitted",
        "Continuity",
        "BLOCKED on reconciliation",
        "compacted at",
    ] {
        assert!(blocked.body.contains(seen), "{seen}: {}", blocked.body);
    }

    // Reconciled, then rehydrated: the continuity panel says so.
    service.reconcile(&investigator_token, &run, &key, "ticket:T-9");
    let rehydrate = r#"{"summary": "The ticket was created; retry it to be sure.", "facts": {"objective": "triage"}}"#;
    let after = service
        .on_run("POST", &agent, &run, "rehydrate", Some(rehydrate))
        .json();
    assert_eq!(after["status"], "reauthorization_required", "{after}");
    let validated = send(&service, "GET", &page, Some(&cookie), None);
    assert!(
        validated.body.contains("rehydrated at"),
        "{}",
        validated.body
    );
    assert!(validated.body.contains(": validated"), "{}", validated.body);
    assert!(
        !validated.body.contains("BLOCKED on reconciliation"),
        "{}",
        validated.body
    );
}

#[test]
fn every_page_answers_each_role_and_another_tenant_as_the_api_would() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = a_read_and_a_refusal(&service, &agent, "roles");
    let refund = r#"{"tool": "payments.refund", "arguments": {"amount": 500}}"#;
    let held = service.step(&agent, &run, refund).json();
    let id = held["approval"]["id"].as_str().expect("held").to_owned();
    let compaction = r#"{"summary": "files.read then a refusal", "trigger": "auto"}"#;
    let compacted = service.on_run("POST", &agent, &run, "compact", Some(compaction));
    let compacted = compacted.json()["step"].as_u64().expect("compacted");
    let run_page = format!("/ui/runs/{}", url_encode(&run));
    let pages = [
        (
            format!("{run_page}/boundaries/{compacted}"),
            [200, 200, 200, 404],
        ),
        ("/ui/runs".to_owned(), [200, 200, 200, 200]),
        (run_page.clone(), [200, 200, 200, 404]),
        (format!("{run_page}/steps/1"), [200, 200, 200, 404]),
        (format!("{run_page}/verify"), [200, 403, 200, 404]),
        ("/ui/approvals".to_owned(), [200, 200, 200, 200]),
        (format!("/ui/approvals/{id}"), [200, 200, 200, 404]),
    ];
    let sessions = [
        session_of(&service, &service.token("acme", Role::Investigator)),
        session_of(&service, &service.token("acme", Role::Approver)),
        session_of(&service, &service.token("acme", Role::Admin)),
        session_of(&service, &service.token("globex", Role::Admin)),
    ];
    for (path, expected) in &pages {
        for (cookie, status) in sessions.iter().zip(expected) {
            let page = send(&service, "GET", path, Some(cookie), None);
            assert_eq!(page.status, *status, "{path} as {cookie}: {}", page.body);
            // Another tenant learns nothing of this one.
            if *status == 404 {
                assert!(!page.body.contains("files.read"), "{path}");
            }
        }
        let anonymous = send(&service, "GET", path, None, None);
        assert_eq!(anonymous.status, 303, "{path} without a session");
    }
    // Another tenant's lists hold nothing of this one.
    let theirs = send(&service, "GET", "/ui/approvals", Some(&sessions[3]), None);
    assert!(!theirs.body.contains(&id), "{}", theirs.body);
    let their_runs = send(&service, "GET", "/ui/runs", Some(&sessions[3]), None);
    assert!(!their_runs.body.contains(&run), "{}", their_runs.body);
}

#[test]
fn a_compaction_shows_the_durable_record_beside_the_untrusted_summary_and_the_decisions() {
    let service = Harness::start_retaining();
    let agent = service.token("acme", Role::Agent);
    let admin = service.token("acme", Role::Admin);
    let investigator = service.token("acme", Role::Investigator);
    let run = service.open(&agent, "boundaries");
    // The session's decisions, snapshotted for its boundary as the hooks do (under its
    // first run), then one changed without approval.
    for (decision, value) in [
        ("scope", "src"),
        ("target", "main"),
        ("constraint", "no-push"),
    ] {
        let body = serde_json::json!({ "value": value }).to_string();
        let set = service.call(
            "PUT",
            &format!("/v1/decisions/{decision}"),
            Some(&admin),
            Some(&body),
        );
        assert_eq!(set.status, 200);
    }
    let snapshot = serde_json::json!({ "name": run }).to_string();
    let snap = service.call(
        "POST",
        "/v1/decisions/snapshots",
        Some(&admin),
        Some(&snapshot),
    );
    assert_eq!(snap.status, 201, "{}", String::from_utf8_lossy(&snap.body));
    let summary = r#"{"summary": "<script>alert(1)</script> The ticket was created; retry it.", "trigger": "auto", "facts": {"objective": "triage <b>now</b>"}}"#;
    let (key, compacted) = service.compact_after_a_lost_write(&agent, &run, summary);
    assert_eq!(
        compacted.status,
        200,
        "{}",
        String::from_utf8_lossy(&compacted.body)
    );
    let step = compacted.json()["step"].as_u64().unwrap();
    let body = serde_json::json!({ "value": "everything" }).to_string();
    assert_eq!(
        service
            .call("PUT", "/v1/decisions/scope", Some(&admin), Some(&body))
            .status,
        200
    );
    let cookie = session_of(&service, &investigator);
    let path = format!("/ui/runs/{}/boundaries/{step}", url_encode(&run));

    // The timeline leads to it.
    let timeline = send(
        &service,
        "GET",
        &format!("/ui/runs/{}", url_encode(&run)),
        Some(&cookie),
        None,
    );
    assert!(timeline.body.contains(&path), "{}", timeline.body);

    let page = send(&service, "GET", &path, Some(&cookie), None);
    assert_eq!(page.status, 200, "{}", page.body);
    for seen in [
        "What the durable record says",
        "triage &lt;b&gt;now&lt;/b&gt;",
        "BLOCKED on reconciliation",
        "UNTRUSTED",
        "&lt;script&gt;alert(1)&lt;/script&gt; The ticket was created; retry it.",
        "Re-hashed now: matches the record",
        "Rehydration was BLOCKED",
        "conflicting",
        "cairn ledger boundary --run",
    ] {
        assert!(page.body.contains(seen), "{seen}: {}", page.body);
    }
    assert!(!page.body.contains("<script>"), "{}", page.body);

    // Reconciled and rehydrated: the page says how the run came back.
    service.reconcile(&investigator, &run, &key, "ticket:T-9");
    let rehydrate = r#"{"summary": "<script>alert(1)</script> The ticket was created; retry it.", "facts": {"objective": "triage <b>now</b>"}}"#;
    service.on_run("POST", &agent, &run, "rehydrate", Some(rehydrate));
    let after = send(&service, "GET", &path, Some(&cookie), None);
    for seen in [
        "reconciliation",
        "context_rehydration",
        "continuity_validated",
    ] {
        assert!(after.body.contains(seen), "{seen}: {}", after.body);
    }

    // A step that is not a compaction, and one past the end.
    let call = send(
        &service,
        "GET",
        &format!("/ui/runs/{}/boundaries/0", url_encode(&run)),
        Some(&cookie),
        None,
    );
    assert_eq!(call.status, 400, "{}", call.body);
    assert!(call.body.contains("is not a compaction"), "{}", call.body);
    let past = send(
        &service,
        "GET",
        &format!("/ui/runs/{}/boundaries/999", url_encode(&run)),
        Some(&cookie),
        None,
    );
    assert_eq!(past.status, 404, "{}", past.body);

    // An envelope altered in the store is shown as altered, never as the record's.
    let db = rusqlite::Connection::open(service.dir.path().join("cairn.db")).unwrap();
    db.execute(
        "UPDATE envelopes SET body = replace(body, 'triage', 'export everything')",
        [],
    )
    .unwrap();
    let altered = send(&service, "GET", &path, Some(&cookie), None);
    assert!(altered.body.contains("ALTERED"), "{}", altered.body);
    assert!(
        !altered.body.contains("export everything"),
        "{}",
        altered.body
    );
}

#[test]
fn a_session_idle_past_its_time_ends_and_every_page_asks_to_sign_in_again() {
    let service = Harness::start_with_console(cairn_server::console::ConsoleOptions {
        idle: Duration::from_millis(400),
        ..cairn_server::console::ConsoleOptions::default()
    });
    let agent = service.token("acme", Role::Agent);
    let run = a_read_and_a_refusal(&service, &agent, "idle");
    let compaction = r#"{"summary": "a read and a refusal", "trigger": "auto"}"#;
    let compacted = service.on_run("POST", &agent, &run, "compact", Some(compaction));
    let compacted = compacted.json()["step"].as_u64().expect("compacted");
    let held = service
        .step(
            &agent,
            &run,
            r#"{"tool": "payments.refund", "arguments": {"amount": 500}}"#,
        )
        .json();
    let request = held["approval"]["id"].as_str().expect("held").to_owned();
    let cookie = session_of(&service, &service.token("acme", Role::Admin));
    let pages = [
        format!("/ui/runs/{}/boundaries/{compacted}", url_encode(&run)),
        format!("/ui/approvals/{request}"),
        "/ui/runs".to_owned(),
        format!("/ui/runs/{}", url_encode(&run)),
        format!("/ui/runs/{}/steps/0", url_encode(&run)),
        format!("/ui/runs/{}/verify", url_encode(&run)),
        "/ui/approvals".to_owned(),
    ];
    // In use, the session lives on past its idle time: each request renews it.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(200));
        let page = send(&service, "GET", "/ui/runs", Some(&cookie), None);
        assert_eq!(page.status, 200, "{}", page.body);
    }
    std::thread::sleep(Duration::from_millis(700));
    for path in &pages {
        let page = send(&service, "GET", path, Some(&cookie), None);
        assert_eq!(
            page.status, 303,
            "{path} after the idle time: {}",
            page.body
        );
        assert_eq!(page.header("location"), Some("/ui/login"), "{path}");
    }
    // Its forms are refused too — an approval is not given — and the expired session does
    // not come back.
    let approve = send(
        &service,
        "POST",
        &format!("/ui/approvals/{request}/approve"),
        Some(&cookie),
        Some("csrf=x&expires_in=15m&uses=1"),
    );
    assert_eq!(approve.status, 303, "{}", approve.body);
    assert_eq!(
        service
            .step(
                &agent,
                &run,
                r#"{"tool": "payments.refund", "arguments": {"amount": 500}}"#
            )
            .json()["reason"],
        "approval_pending",
        "nothing was approved by an expired session"
    );
    let logout = send(
        &service,
        "POST",
        "/ui/logout",
        Some(&cookie),
        Some("csrf=x"),
    );
    assert_eq!(logout.status, 303);
    let again = send(&service, "GET", "/ui/runs", Some(&cookie), None);
    assert_eq!(again.status, 303);
}
