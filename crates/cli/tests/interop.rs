//! Issue 5, acceptance 1 through the binary: every VCE 0.1 conformance case
//! (`crates/continuity/tests/vce_cases/`) through `cairn vce check` and every RLC 0.1 case
//! (`crates/lanes/tests/rlc_cases/`) through `cairn rlc check`, with the decision, the finding
//! codes and the exit code the library gives; the published fixtures; malformed input.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is the test failing"
)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{INVALID, OK, Output, Project, arg, command_in};
use serde_json::Value;

const REVIEW: i32 = 3;
const BLOCKED: i32 = 4;

fn cases(relative: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn expected(dir: &Path) -> (String, BTreeSet<String>) {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let codes = value["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    (value["decision"].as_str().unwrap().to_owned(), codes)
}

fn exit_for(decision: &str) -> i32 {
    match decision {
        "RESUMABLE" | "PASSED" => OK,
        "REVIEW_REQUIRED" => REVIEW,
        "BLOCKED" => BLOCKED,
        other => panic!("unknown decision {other}"),
    }
}

/// Runs one case and checks decision, codes and exit code.
fn check(dir: &Path, args: &[&str]) {
    let (decision, codes) = expected(dir);
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = Output::of(command_in(dir).args(&full));
    assert_eq!(
        out.code,
        exit_for(&decision),
        "{}: exit code\n{}{}",
        dir.display(),
        out.stdout,
        out.stderr
    );
    let json: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", dir.display(), out.stdout));
    assert_eq!(json["decision"], decision.as_str(), "{}", dir.display());
    let seen: BTreeSet<String> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert!(f["message"].as_str().is_some_and(|m| !m.is_empty()), "{f}");
            f["code"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(seen, codes, "{}: finding codes", dir.display());
}

/// Runs `one` on every case, on a few threads: each case is a process of its own, and a
/// hundred of them in a row dominate the suite's time.
fn each_case(dirs: Vec<PathBuf>, one: impl Fn(&Path) + Sync) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    let chunk = dirs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in dirs.chunks(chunk) {
            let one = &one;
            scope.spawn(move || part.iter().for_each(|dir| one(dir)));
        }
    });
}

fn present(dir: &Path, name: &str) -> Option<String> {
    dir.join(name)
        .is_file()
        .then(|| dir.join(name).display().to_string())
}

#[test]
fn every_vce_case_gives_the_same_decision_and_codes_through_the_binary() {
    let dirs = cases("../continuity/tests/vce_cases");
    assert!(dirs.len() >= 17, "only {} VCE cases", dirs.len());
    each_case(dirs, |dir| {
        let envelope = present(dir, "envelope.json").unwrap();
        let restore = present(dir, "restore.json");
        let mut args = vec!["vce", "check", envelope.as_str()];
        if let Some(restore) = &restore {
            args.extend(["--restore", restore.as_str()]);
        }
        check(dir, &args);
    });
}

#[test]
fn every_rlc_case_gives_the_same_decision_and_codes_through_the_binary() {
    let dirs = cases("../lanes/tests/rlc_cases");
    assert!(dirs.len() >= 21, "only {} RLC cases", dirs.len());
    each_case(dirs, |dir| {
        let file = present(dir, "fixture.json")
            .or_else(|| present(dir, "extension.json"))
            .unwrap_or_else(|| panic!("{}: no fixture.json or extension.json", dir.display()));
        let restore = present(dir, "restore.json");
        let vce = present(dir, "vce.json");
        let mut args = vec!["rlc", "check", file.as_str()];
        if let Some(restore) = &restore {
            args.extend(["--restore", restore.as_str()]);
        }
        if let Some(vce) = &vce {
            args.extend(["--vce", vce.as_str()]);
        }
        check(dir, &args);
    });
}

fn interop(file: &str) -> PathBuf {
    let shared = std::env::var_os("CAIRN_SHARED_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    shared.join("interop").join(file)
}

#[test]
fn the_published_fixtures_give_the_reference_decisions() {
    let accepted = interop("rlc-0.1/rlc-accepted.json");
    if !accepted.is_file() {
        println!(
            "skipped: the interop folder {} was not found (set CAIRN_SHARED_DIR)",
            accepted.display()
        );
        return;
    }
    let project = Project::new();
    let run = |args: &[&str]| {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        Output::of(command_in(project.root()).args(&full))
    };
    let out = run(&["rlc", "check", arg(&accepted)]);
    assert_eq!(out.code, OK, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.json()["decision"], "PASSED");
    assert_eq!(out.json()["findings"], Value::Array(Vec::new()));

    let rejected = interop("rlc-0.1/rlc-rejected-lane-conflation.json");
    let out = run(&["rlc", "check", arg(&rejected)]);
    assert_eq!(out.code, BLOCKED, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.json()["decision"], "BLOCKED");
    assert!(
        !out.json()["findings"].as_array().unwrap().is_empty(),
        "{}",
        out.stdout
    );

    let envelope = interop("vce-0.1/continuation-envelope.example.json");
    let restore = interop("vce-0.1/restore-results.example.json");
    // The published example restores, but its task verification is still pending and its
    // next action is blocked: the reference says REVIEW_REQUIRED.
    let out = run(&["vce", "check", arg(&envelope), "--restore", arg(&restore)]);
    assert_eq!(out.json()["decision"], "REVIEW_REQUIRED", "{}", out.stdout);
    assert_eq!(out.code, REVIEW);
    // Without restore results nothing was shown to be restored: BLOCKED.
    let out = run(&["vce", "check", arg(&envelope)]);
    assert_eq!(out.code, BLOCKED, "{}", out.stdout);

    // Human output names the decision and every finding.
    let text = Output::of(command_in(project.root()).args(["rlc", "check", arg(&rejected)]));
    assert!(text.stdout.starts_with("BLOCKED\n"), "{}", text.stdout);
}

#[test]
fn malformed_or_missing_input_is_a_usage_error() {
    let project = Project::new();
    let bad = project.path("bad.json");
    std::fs::write(&bad, "{\"schema_version\": ").unwrap();
    for args in [
        vec!["vce", "check", arg(&bad)],
        vec!["rlc", "check", arg(&bad)],
    ] {
        let mut full = vec!["--json"];
        full.extend_from_slice(&args);
        let out = Output::of(command_in(project.root()).args(&full));
        out.expect(INVALID);
        assert_eq!(out.error_code(), "malformed_json", "{}", out.stdout);
    }
    let missing = project.path("missing.json");
    let out =
        Output::of(command_in(project.root()).args(["--json", "rlc", "check", arg(&missing)]));
    out.expect(INVALID);
    assert_eq!(out.error_code(), "unreadable_input");
}
