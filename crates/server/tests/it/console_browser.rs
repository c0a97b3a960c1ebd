//! The web console in real headless Chromium (Debian's `chromium`, driven by Playwright's
//! `playwright-core` from `tests/console`), as a person uses it: sign in, find the run, read
//! the denied step's rule, go through the approvals queue by keyboard only and approve the held
//! call — which then runs — and read the runs on a phone-width screen. Every page is
//! screenshotted (into `CAIRN_CONSOLE_SHOTS` when set); no request may leave the service, no
//! script may fail.
//!
//! Skipped, and said so, without Node, the npm package (`npm ci --prefix tests/console`) or
//! `/usr/bin/chromium` — unless `CAIRN_REQUIRE_BROWSER` is set (`.ci/run`), when that fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use cairn_server::client::Endpoint;
use cairn_server::tokens::Role;
use serde_json::Value;

use crate::Harness;

/// The held refund of the tests' policy (`refunds-ask`).
const REFUND: &str =
    r#"{"tool": "payments.refund", "arguments": {"amount": 500}, "call_id": "toolu_1"}"#;

/// The browser script and Chromium, or `None` (with the reason printed).
fn browser(test: &str) -> Option<(PathBuf, PathBuf)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/console");
    let chromium = PathBuf::from("/usr/bin/chromium");
    let missing = if Command::new("node").arg("--version").output().is_err() {
        Some("no `node` on PATH".to_owned())
    } else if !folder.join("node_modules/playwright-core").is_dir() {
        Some("playwright-core is not installed (`npm ci --prefix tests/console`)".to_owned())
    } else if !chromium.is_file() {
        Some("no /usr/bin/chromium (Debian's `chromium` package)".to_owned())
    } else {
        None
    };
    match missing {
        None => Some((folder.join("browse.mjs"), chromium)),
        Some(reason) if std::env::var_os("CAIRN_REQUIRE_BROWSER").is_some() => {
            panic!("{test}: {reason}, and CAIRN_REQUIRE_BROWSER is set")
        }
        Some(reason) => {
            eprintln!("skipped {test}: {reason}");
            None
        }
    }
}

fn text<'a>(seen: &'a Value, page: &str) -> &'a str {
    seen.pointer(&format!("/pages/{page}/text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[test]
fn a_person_finds_a_run_reads_a_refusal_and_approves_a_held_call_by_keyboard() {
    let Some((script, chromium)) = browser("the console in Chromium") else {
        return;
    };
    let service = Harness::start();
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
    let kept = std::env::var_os("CAIRN_CONSOLE_SHOTS").map(PathBuf::from);
    let temporary = tempfile::tempdir().expect("tempdir");
    let shots = kept.unwrap_or_else(|| temporary.path().to_path_buf());
    std::fs::create_dir_all(&shots).expect("the screenshots' folder");
    let output = Command::new("node")
        .arg(&script)
        .args([
            "--base",
            &base,
            "--token",
            &admin,
            "--run",
            &run,
            "--approval",
            &approval,
        ])
        .arg("--shots")
        .arg(&shots)
        .arg("--chromium")
        .arg(&chromium)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let seen: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| {
            panic!(
                "the browser script printed no result ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    assert_eq!(seen["ok"], true, "{seen:#}");

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
    assert!(text(&seen, "request").contains("refunds-ask"), "{seen:#}");
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
    // Nothing failed in the page, and nothing was requested from anywhere else.
    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "{seen:#}");
    assert_eq!(seen["pageErrors"], serde_json::json!([]), "{seen:#}");
    let requests = seen["requests"].as_array().expect("requests");
    assert!(requests.len() >= 7, "{requests:?}");
    for url in requests {
        assert!(
            url.as_str()
                .is_some_and(|u| u.starts_with(&format!("{base}/ui"))),
            "a request left the console: {url}"
        );
    }
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
