//! The web console in real headless Chromium (Debian's `chromium`, driven by Playwright's
//! `playwright-core` from `tests/console`), as a person uses it: sign in, find the run, read
//! the denied step's rule, go through the approvals queue by keyboard only and approve the held
//! call — which then runs — and read the runs on a phone-width screen. Every page is
//! screenshotted (into `CAIRN_CONSOLE_SHOTS` when set); no request may leave the service, no
//! script may fail.
//!
//! Skipped, and said so, without Node, the npm package (`npm ci --prefix tests/console`) or
//! `/usr/bin/chromium` — unless `CAIRN_REQUIRE_BROWSER` is set (`.ci/run`), when that fails.

use cairn_server::client::Endpoint;
use cairn_server::tokens::Role;
use cairn_test_support::browser::{assert_clean_journey, browser, page_text as text, shots_dir};
use serde_json::Value;

use crate::Harness;

/// The held refund of the tests' policy (`refunds-ask`).
const REFUND: &str =
    r#"{"tool": "payments.refund", "arguments": {"amount": 500}, "call_id": "toolu_1"}"#;

#[test]
fn a_person_finds_a_run_reads_a_refusal_and_approves_a_held_call_by_keyboard() {
    let Some(browser) = browser("the console in Chromium") else {
        return;
    };
    let service = Harness::start_retaining();
    let agent = service.token("acme", Role::Agent);
    let admin = service.token("acme", Role::Admin);
    let run = crate::console::a_read_and_a_refusal(&service, &agent, "incident");
    let held = service.step(&agent, &run, REFUND).json();
    let approval = held["approval"]["id"]
        .as_str()
        .expect("a held call")
        .to_owned();

    let Endpoint::Tcp(address) = &service.tcp else {
        panic!("a TCP endpoint")
    };
    let base = format!("http://{address}");
    let temporary = tempfile::tempdir().expect("tempdir");
    let shots = shots_dir(temporary.path());
    let seen = browser.run(
        "approve",
        &[
            ("base", &base),
            ("token", &admin),
            ("run", &run),
            ("approval", &approval),
        ],
        &shots,
    );
    assert_clean_journey(&seen, &base);

    // What a person read on each page.
    assert_eq!(
        seen.pointer("/pages/login/url").and_then(Value::as_str),
        Some("/ui/login")
    );
    assert!(text(&seen, "runs").contains(&run), "{seen:#}");
    assert!(
        text(&seen, "runs").contains("waiting for approval"),
        "{seen:#}"
    );
    let timeline = text(&seen, "timeline");
    for read in [
        "tickets.create",
        "deny",
        "no-p0",
        "files.read",
        "read-ok",
        "held for a person",
    ] {
        assert!(timeline.contains(read), "{read}: {timeline}");
    }
    assert!(text(&seen, "queue").contains("payments.refund"), "{seen:#}");
    for read in [
        "refunds-ask",
        r#"{"amount": 500}"#,
        "Before it in the run",
        "no-p0",
    ] {
        assert!(text(&seen, "request").contains(read), "{read}: {seen:#}");
    }
    assert_eq!(seen["approveStatus"], 303, "{seen:#}");
    assert!(text(&seen, "approved").contains("active"), "{seen:#}");
    assert!(
        text(&seen, "approved").contains("approved by token:"),
        "{seen:#}"
    );
    assert!(
        seen.pointer("/pages/phone/overflow")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            <= 0,
        "the runs page scrolls sideways on a phone: {seen:#}"
    );
    // Every page was asked for, from the console alone.
    let requests = seen["requests"].as_array().expect("requests");
    assert!(requests.len() >= 7, "{requests:?}");
    for shot in [
        "01-sign-in",
        "02-runs",
        "03-timeline",
        "04-approvals",
        "05-request",
        "06-approved",
        "07-runs-phone",
    ] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "{shot}");
    }
    // The approval given in the browser admits the identical call.
    assert_eq!(
        service.step(&agent, &run, REFUND).json()["decision"],
        "allow"
    );
}
