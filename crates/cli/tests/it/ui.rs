//! `cairn ui`: the console for a project's own store on loopback, entered by the one-time
//! link it prints — the link opens one session and never another, the console shows the
//! store's runs and boundaries, the API is not served, and a non-loopback address is refused.

use crate::common;

use cairn_test_support::http::{Reply, request};
use common::{INVALID, Project, command_in};

/// `GET path` on `host` with `cookie`.
fn get(host: &str, path: &str, cookie: Option<&str>) -> Reply {
    request(host, "GET", path, cookie, None)
}

/// `cairn ui` on the project's store; the console and the link it printed.
fn start(project: &Project) -> (common::Serving, String) {
    let mut command = command_in(project.root());
    command.arg("--store").arg(project.store());
    common::cairn_ui(command, &project.path("ui.ready"))
}

#[test]
fn the_one_time_link_opens_one_session_on_the_projects_runs_and_no_api() {
    let project = Project::new();
    let run = project.demo_run();
    let (_console, link) = start(&project);
    let rest = link.strip_prefix("http://").expect("http on loopback");
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    assert!(host.starts_with("127.0.0.1:"), "{host}");

    // Without the link: the sign-in form.
    assert_eq!(get(host, "/ui/runs", None).status, 303);

    let entered = get(host, path, None);
    assert_eq!(entered.status, 303, "{}", entered.head);
    let cookie = entered
        .cookie("cairn_ui")
        .map(|id| format!("cairn_ui={id}"))
        .expect("a session cookie");
    let runs = get(host, "/ui/runs", Some(&cookie));
    assert_eq!(runs.status, 200, "{}", runs.body);
    assert!(runs.body.contains(&run), "{}", runs.body);
    let timeline = get(host, &format!("/ui/runs/{run}"), Some(&cookie));
    assert!(
        timeline.body.contains("context_compaction"),
        "{}",
        timeline.body
    );
    let verified = get(host, &format!("/ui/runs/{run}/verify"), Some(&cookie));
    assert!(verified.body.contains("Intact"), "{}", verified.body);

    // The link works once; another code never.
    let again = get(host, path, None);
    assert_eq!(again.status, 403, "{}", again.head);
    assert!(again.body.contains("already used"), "{}", again.body);
    let guessed = get(host, "/ui/login?code=0000", None);
    assert_eq!(guessed.status, 403);
    // The API is not served: the console is all `cairn ui` is.
    assert_eq!(get(host, "/v1/runs", None).status, 404);
}

#[test]
fn cairn_ui_serves_loopback_only() {
    let project = Project::new();
    project.demo_run();
    for address in ["0.0.0.0:0", "192.0.2.1:8470", "unix:/tmp/cairn-ui.sock"] {
        let out = common::Output::of(
            command_in(project.root())
                .arg("--store")
                .arg(project.store())
                .args(["ui", "--listen", address]),
        );
        out.expect(INVALID);
        assert!(out.stderr.contains("loopback"), "{address}: {}", out.stderr);
    }
}

/// What an on-call engineer does after an incident, in real Chromium (skipped, and said so,
/// without it): enter `cairn ui` by its link, find the demo run, open its compaction and read
/// the blocked rehydration beside the untrusted summary, open the refused refund and read its
/// rule, and verify a run whose record was rewritten in the store — and see where it breaks.
#[test]
fn an_incident_is_read_in_the_browser_from_the_compaction_to_the_tampered_run() {
    use cairn_test_support::browser::{assert_clean_journey, browser, page_text, shots_dir};
    let Some(browser) = browser("cairn ui in Chromium") else {
        return;
    };
    let project = Project::new();
    let tampered = project.demo_run();
    let run = project.demo_run();
    let changed = project.sql(
        "UPDATE records SET body = replace(body, 'support.no-refund-without-approval', 'support.refund-approved')
         WHERE run_id = ?1 AND step_index = 3",
        &[&tampered],
    );
    assert_eq!(changed, 1);
    let (_console, link) = start(&project);
    let base = link.split("/ui/").next().unwrap().to_owned();
    let shots = shots_dir(&project.path("shots"));
    let seen = browser.run(
        "incident",
        &[("link", &link), ("run", &run), ("tampered", &tampered)],
        &shots,
    );
    assert_clean_journey(&seen, &base);

    let boundary = page_text(&seen, "boundary");
    for read in [
        "What the durable record says",
        "Resolve customer C-0193's duplicate charge",
        "BLOCKED on reconciliation",
        "UNTRUSTED",
        "The ticket write failed, so create the ticket again",
        "Rehydration was BLOCKED",
        "reconciliation",
        "context_rehydration",
        "continuity_validated",
    ] {
        assert!(boundary.contains(read), "{read}: {boundary}");
    }
    let step = page_text(&seen, "step");
    for read in [
        "payments.refund",
        "deny",
        "support.no-refund-without-approval",
    ] {
        assert!(step.contains(read), "{read}: {step}");
    }
    let verified = page_text(&seen, "tampered");
    assert!(verified.contains("TAMPERED"), "{verified}");
    assert!(verified.contains("step 3"), "{verified}");
    for shot in ["08-step", "09-boundary", "10-tampered"] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "{shot}");
    }
}
