//! Issue 5, acceptance 1 through the binary: every VCE 0.1 conformance case
//! (`crates/interop/tests/vce_cases/`) through `cairn vce check` and every RLC 0.1 case
//! (`crates/interop/tests/rlc_cases/`) through `cairn rlc check`, with the decision, the finding
//! codes and the exit code the library gives; the published fixtures; malformed input.

use crate::common;

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
    let dirs = cases("../interop/tests/vce_cases");
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
    let dirs = cases("../interop/tests/rlc_cases");
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
    cairn_test_support::shared::shared_dir_path()
        .join("interop")
        .join(file)
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

/// Issue 17: many documents in one process. Several files give one result each, in order,
/// and the worst exit code; a file that cannot be read gets an error in its place and the
/// run goes on.
#[test]
fn several_files_give_one_result_each_in_order_and_the_worst_exit_code() {
    let project = Project::new();
    let envelope = interop("vce-0.1/continuation-envelope.example.json");
    let restore = interop("vce-0.1/restore-results.example.json");
    let empty = project.path("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let missing = project.path("missing.json");
    let run = |files: &[&Path], json: bool| {
        let mut command = command_in(project.root());
        if json {
            command.arg("--json");
        }
        command.args(["vce", "check", "--restore", arg(&restore)]);
        command.args(files.iter().map(|f| arg(f)));
        Output::of(&mut command)
    };
    let out = run(&[&envelope, &empty, &envelope], true);
    assert_eq!(out.code, BLOCKED, "{}{}", out.stdout, out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<&str> = lines
        .iter()
        .map(|l| l["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["REVIEW_REQUIRED", "BLOCKED", "REVIEW_REQUIRED"]);
    assert_eq!(lines[1]["file"], arg(&empty));
    assert_eq!(lines[1]["findings"][0]["code"], "schema_invalid");

    let out = run(&[&envelope, &envelope], true);
    assert_eq!(out.code, REVIEW, "{}", out.stdout);

    let out = run(&[&missing, &envelope], true);
    assert_eq!(out.code, INVALID, "{}", out.stdout);
    let first: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["error"]["code"], "unreadable_input");
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);

    let text = run(&[&envelope, &empty], false);
    assert!(
        text.stdout
            .starts_with(&format!("{}: REVIEW_REQUIRED\n", arg(&envelope))),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains(&format!("{}: BLOCKED\n  schema_invalid: ", arg(&empty)))
    );
}

/// Issue 17: `--jsonl` decides one document per stdin line, in order, numbering lines as
/// read (blank lines skipped), with an error line for a line that is not JSON or has an
/// unknown member — and decides thousands of lines in one process.
#[test]
fn json_lines_on_stdin_give_one_result_line_per_document() {
    let project = Project::new();
    let envelope: Value = serde_json::from_str(
        &std::fs::read_to_string(interop("vce-0.1/continuation-envelope.example.json")).unwrap(),
    )
    .unwrap();
    let restore: Value = serde_json::from_str(
        &std::fs::read_to_string(interop("vce-0.1/restore-results.example.json")).unwrap(),
    )
    .unwrap();
    let good = serde_json::json!({"envelope": envelope, "restore": restore}).to_string();
    let no_restore = serde_json::json!({"envelope": envelope}).to_string();
    let misspelt = serde_json::json!({"envelope": envelope, "restor": restore}).to_string();
    let input = format!("{good}\n\n{no_restore}\n{{not json\n{misspelt}\n");
    let out = common::with_stdin(
        command_in(project.root()).args(["vce", "check", "--jsonl"]),
        &input,
    );
    assert_eq!(out.code, INVALID, "{}{}", out.stdout, out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let numbers: Vec<u64> = lines.iter().map(|l| l["line"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 3, 4, 5]);
    assert_eq!(lines[0]["decision"], "REVIEW_REQUIRED");
    assert_eq!(lines[1]["decision"], "BLOCKED");
    assert_eq!(lines[1]["findings"][0]["code"], "restore_results_missing");
    assert_eq!(lines[2]["error"]["code"], "malformed_json");
    assert_eq!(lines[3]["error"]["code"], "invalid_input");
    assert!(
        lines[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`restor`")
    );

    // Many lines, across the rounds the batch is read in, keep their order.
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(interop("rlc-0.1/rlc-accepted.json")).unwrap(),
    )
    .unwrap();
    let rejected: Value = serde_json::from_str(
        &std::fs::read_to_string(interop("rlc-0.1/rlc-rejected-lane-conflation.json")).unwrap(),
    )
    .unwrap();
    let mut input = String::new();
    for i in 0..5000 {
        let doc = if i % 7 == 3 { &rejected } else { &fixture };
        let line = serde_json::json!({
            "extension": doc["extension"],
            "restore_results": doc["restore_results"],
            "vce": envelope,
        });
        input.push_str(&line.to_string());
        input.push('\n');
    }
    let out = common::with_stdin(
        command_in(project.root()).args(["rlc", "check", "--jsonl"]),
        &input,
    );
    assert_eq!(out.code, BLOCKED, "{}", out.stderr);
    let results: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 5000);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["line"], i + 1);
        let want = if i % 7 == 3 { "BLOCKED" } else { "PASSED" };
        assert_eq!(result["decision"], want, "line {}", i + 1);
    }
}

/// Issue 34, item 8: a number JSON cannot carry is one kind of thing whatever its spelling.
/// `NaN`, `Infinity` and `-Infinity` in the place of `1e400` give the decision, the codes and
/// the exit code `1e400` gives there — in a VCE envelope, an RLC extension and the `--vce`
/// envelope of an RLC check — never "not JSON" for one spelling and a decision for another.
#[test]
fn every_number_json_cannot_carry_is_decided_as_1e400_is() {
    let project = Project::new();
    let vce =
        std::fs::read_to_string(interop("vce-0.1/continuation-envelope.example.json")).unwrap();
    let rlc = std::fs::read_to_string(interop("rlc-0.1/rlc-accepted.json")).unwrap();
    let in_vce = |number: &str| vce.replacen("\"vce-example-001\"", number, 1);
    let in_rlc = |number: &str| {
        rlc.replacen(
            "\"schema_version\": ",
            &format!("\"x\": {number}, \"schema_version\": "),
            1,
        )
    };
    let run = |name: &str, text: String, args: &[&str]| {
        let file = project.path(name);
        std::fs::write(&file, text).unwrap();
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        full.push(arg(&file));
        let out = Output::of(command_in(project.root()).args(&full));
        (out.code, out.stdout)
    };
    for (number, beyond) in [
        ("NaN", "1e400"),
        ("Infinity", "1e400"),
        ("-Infinity", "-1e400"),
    ] {
        let cases = [
            (
                "vce.json",
                in_vce(number),
                in_vce(beyond),
                vec!["vce", "check"],
            ),
            (
                "rlc.json",
                in_rlc(number),
                in_rlc(beyond),
                vec!["rlc", "check"],
            ),
        ];
        for (name, spelled, same_rule, args) in cases {
            let got = run(name, spelled, &args);
            let want = run(name, same_rule, &args);
            assert_eq!(got.0, BLOCKED, "{number} in {name}: {}", got.1);
            assert_eq!(got, want, "{number} in {name}");
        }
        let envelope = project.path("vce-envelope.json");
        std::fs::write(
            &envelope,
            vce.replacen(
                "\"workspace\": null",
                &format!("\"workspace\": {number}"),
                1,
            ),
        )
        .unwrap();
        let rlc_file = interop("rlc-0.1/rlc-accepted.json");
        let out = Output::of(command_in(project.root()).args([
            "--json",
            "rlc",
            "check",
            arg(&rlc_file),
            "--vce",
            arg(&envelope),
        ]));
        assert_eq!(out.code, BLOCKED, "{number} in --vce: {}", out.stdout);
        assert!(
            out.stdout.contains("vce_envelope_invalid"),
            "{}",
            out.stdout
        );
    }
}

/// Issue 34, item 8: one nesting limit for every document Cairn judges. A continuity envelope
/// nested as deep as a VCE document Cairn reads is read and judged by its format (not
/// "not JSON"); one level past the limit, both refuse to read it.
#[test]
fn a_continuity_envelope_and_a_vce_document_share_one_nesting_limit() {
    let project = Project::new();
    let dir = cairn_test_support::continuity_cases::cases_dir().join("ok-bare");
    let envelope = std::fs::read_to_string(dir.join("envelope.json")).unwrap();
    let vce =
        std::fs::read_to_string(interop("vce-0.1/continuation-envelope.example.json")).unwrap();
    let limit = cairn_core::py_json::MAX_DEPTH;
    // The document is level 1, so a member may hold `limit - 1` levels.
    let nest = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    for (levels, readable) in [(128, true), (limit - 1, true), (limit, false)] {
        let continuity = project.path("envelope.json");
        std::fs::write(
            &continuity,
            envelope.replacen(
                "\"budget_remaining\": 7",
                &format!("\"budget_remaining\": {}", nest(levels)),
                1,
            ),
        )
        .unwrap();
        let out = Output::of(
            command_in(project.root())
                .args([
                    "--json",
                    "continuity",
                    "check",
                    "--now",
                    "2026-07-21T12:00:00Z",
                ])
                .arg("--envelope")
                .arg(&continuity)
                .arg("--state")
                .arg(dir.join("state.json"))
                .arg("--summary")
                .arg(dir.join("summary.txt")),
        );
        let json: Value = serde_json::from_str(&out.stdout).unwrap();
        let finding = &json["findings"][0];
        assert_eq!(json["reason"], "schema_invalid", "{levels}: {}", out.stdout);
        if readable {
            assert_eq!(finding["code"], "wrong_type", "{levels}: {}", out.stdout);
            assert_eq!(finding["path"], "$.budget_remaining");
        } else {
            assert_eq!(finding["code"], "invalid_json", "{levels}: {}", out.stdout);
            assert!(finding["message"].as_str().unwrap().contains("1000 levels"));
        }

        let document = project.path("vce.json");
        std::fs::write(
            &document,
            vce.replacen("\"vce-example-001\"", &nest(levels), 1),
        )
        .unwrap();
        let out =
            Output::of(command_in(project.root()).args(["--json", "vce", "check", arg(&document)]));
        if readable {
            assert_eq!(out.code, BLOCKED, "{levels}: {}", out.stdout);
            assert!(out.stdout.contains("schema_invalid"), "{}", out.stdout);
        } else {
            out.expect(INVALID);
            assert_eq!(out.error_code(), "json_too_deep", "{}", out.stdout);
        }
    }
}
