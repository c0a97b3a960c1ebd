//! Issue 6, acceptance 2 (CLI side): the six D-5 boundaries of
//! `crates/decisions/tests/boundaries/` driven through the built binary — `decisions set`
//! before, `decisions snapshot`, the after-state through `decisions set` / `approve-change`
//! (or `--observations FILE` when a decision is looked for and found absent), then
//! `decisions compare --json` — judged by the same helper the library test uses. The
//! event-only rule calls all six healthy; the comparison separates them into 2 preserved,
//! 1 approved change, 1 dropped, 1 conflicting and 1 unverified, with exit codes
//! 0, 0, 0, 4, 4, 3.
//!
//! Also: no raw value reaches `.cairn/decisions/` or any output, the HMAC key file is 0600
//! and refused when others can read it, a corrupt book is a stable-code error, bad input is
//! a structured error, and `cairn status` reports both dimensions side by side.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use cairn_test_support::decision_boundaries::{Case, case_dirs, event_only_verdict};
use common::{INVALID, OK, Output, Project, arg};
use serde_json::{Value, json};

/// Exit codes of SPEC §9.1 for continuity states.
const REVIEW: i32 = 3;
const BLOCKED: i32 = 4;

/// A project made by `cairn init`, recording everything its commands print.
struct Session {
    project: Project,
    printed: Vec<String>,
}

impl Session {
    fn new() -> Self {
        let project = Project::new();
        let root = arg(project.root()).to_owned();
        project.cairn(&["init", "--dir", &root]).expect(OK);
        Self {
            project,
            printed: Vec::new(),
        }
    }

    fn keep(&mut self, out: Output) -> Output {
        self.printed.push(format!("{}\n{}", out.stdout, out.stderr));
        out
    }

    /// `cairn --json --store … ARGS`.
    fn json(&mut self, args: &[&str]) -> Output {
        let out = self.project.cairn_json(args);
        self.keep(out)
    }

    /// `cairn --store … ARGS` (human output).
    fn human(&mut self, args: &[&str]) -> Output {
        let out = self.project.cairn(args);
        self.keep(out)
    }

    fn decisions_dir(&self) -> PathBuf {
        self.project.path(".cairn/decisions")
    }

    /// The HMAC secret as written in its file, to check it never leaks.
    fn secret(&self) -> String {
        std::fs::read_to_string(self.project.path(".cairn/keys/decisions.hmac"))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// `decisions set KEY VALUE --json-value …` with the case's provenance and instant.
    fn set(&mut self, item: &Value, approval: Option<&str>) -> Value {
        let value = item["value"].to_string();
        let mut args = vec![
            "decisions",
            "set",
            item["key"].as_str().unwrap(),
            &value,
            "--json-value",
            "--source",
            item["source"].as_str().unwrap(),
            "--now",
            item["observed_at"].as_str().unwrap(),
        ];
        if let Some(approval) = approval {
            args.extend(["--approval", approval]);
        }
        self.json(&args).expect(OK).json()
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Asserts that none of `needles` appears in anything the session printed or in any file
/// under `.cairn/decisions/`.
fn assert_nothing_leaks(session: &Session, needles: &[String], what: &str) {
    let files = files_under(&session.decisions_dir());
    assert!(
        files.iter().any(|f| f.ends_with("book.json")),
        "{what}: {files:?}"
    );
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for needle in needles {
            assert!(
                !text.contains(needle.as_str()),
                "{what}: `{needle}` leaked into {}:\n{text}",
                file.display()
            );
        }
    }
    for printed in &session.printed {
        for needle in needles {
            assert!(
                !printed.contains(needle.as_str()),
                "{what}: `{needle}` leaked into the output:\n{printed}"
            );
        }
    }
}

/// The after-state as an observation file: present decisions as the book now holds them
/// (digests from `decisions list`), absent ones as the case says.
fn observation_file(session: &mut Session, after: &[Value]) -> PathBuf {
    let list = session.json(&["decisions", "list"]).expect(OK).json();
    let held: BTreeMap<&str, &Value> = list["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["key"].as_str().unwrap(), d))
        .collect();
    let observations: Vec<Value> = after
        .iter()
        .map(|item| {
            let key = item["key"].as_str().unwrap();
            if item["status"] == "absent" {
                return json!({"key": key, "status": "absent",
                    "observed_at": item["observed_at"], "source": item["source"]});
            }
            let entry = held[key];
            assert_eq!(entry["revision"], item["revision"], "{key}");
            json!({"key": key, "status": "present", "revision": entry["revision"],
                "value_digest": entry["value_digest"], "observed_at": entry["observed_at"],
                "source": entry["source"]})
        })
        .collect();
    let path = session.project.path("observations.json");
    std::fs::write(&path, serde_json::to_string_pretty(&observations).unwrap()).unwrap();
    path
}

/// One row of the D-5 table.
struct Row {
    name: String,
    event_only: &'static str,
    state: String,
    determining: String,
    exit: i32,
}

/// Drives one case folder through the CLI and judges it.
fn check(dir: &Path) -> Row {
    let case = Case::load(dir);
    let d = &case.decisions;
    let mut session = Session::new();
    let name = case.name.as_str();

    for item in d["before"]["decisions"].as_array().unwrap() {
        let out = session.set(item, item["approval_ref"].as_str());
        assert_eq!(out["outcome"], "created", "{name}: {out}");
    }
    let boundary_at = case.boundary_at().to_string();
    let snapshot = session
        .json(&[
            "decisions",
            "snapshot",
            "--name",
            name,
            "--now",
            d["before"]["taken_at"].as_str().unwrap(),
            "--boundary-at",
            &boundary_at,
        ])
        .expect(OK)
        .json();

    let after = d["after"].as_array().unwrap();
    for item in after.iter().filter(|i| i["status"] == "present") {
        let out = session.set(item, None);
        assert_eq!(out["entry"]["revision"], item["revision"], "{name}: {out}");
    }
    for approval in d["approvals"].as_array().unwrap() {
        let (from, to) = (
            approval["from_revision"].to_string(),
            approval["to_revision"].to_string(),
        );
        let change = approve_change(
            approval["key"].as_str().unwrap(),
            &from,
            &to,
            approval["approval_ref"].as_str().unwrap(),
        );
        let now = ["--now", approval["approved_at"].as_str().unwrap()];
        session.json(&[&change[..], &now].concat()).expect(OK);
    }

    let window = format!("{}s", d["window_seconds"]);
    let mut args = vec![
        "decisions",
        "compare",
        "--name",
        name,
        "--now",
        d["now"].as_str().unwrap(),
        "--window",
        &window,
    ];
    let observations;
    if after.iter().any(|i| i["status"] == "absent") {
        observations = observation_file(&mut session, after);
        args.extend(["--observations", arg(&observations)]);
    }
    let compared = session.json(&args);
    let comparison = compared.json();
    case.assert_comparison(&comparison);
    assert_eq!(
        comparison["snapshot_digest"], snapshot["snapshot_digest"],
        "{name}"
    );
    let state = comparison["state"].as_str().unwrap().to_owned();
    let want_exit = match state.as_str() {
        "preserved" | "approved_change" => OK,
        "unverified" | "continuity_evidence_missing" => REVIEW,
        _ => BLOCKED,
    };
    compared.expect(want_exit);

    // The human forms too, so that they are checked for leaks.
    session.human(&["decisions", "list"]).expect(OK);
    session.human(&args).expect(want_exit);

    let mut needles = case.raw_strings();
    needles.push(session.secret());
    assert_nothing_leaks(&session, &needles, name);

    Row {
        name: case.name.clone(),
        event_only: event_only_verdict(&case.events),
        state,
        determining: comparison["determining_key"]
            .as_str()
            .unwrap_or("-")
            .to_owned(),
        exit: compared.code,
    }
}

/// `decisions set scope x` at 09:31, a minute after the tests that use it set their three.
const SET_SCOPE_X: [&str; 6] = [
    "decisions",
    "set",
    "scope",
    "x",
    "--now",
    "2026-03-02T09:31:00Z",
];

/// The arguments of `decisions approve-change KEY --from FROM --to TO --approval REF`.
fn approve_change<'a>(key: &'a str, from: &'a str, to: &'a str, approval: &'a str) -> [&'a str; 9] {
    [
        "decisions",
        "approve-change",
        key,
        "--from",
        from,
        "--to",
        to,
        "--approval",
        approval,
    ]
}

#[test]
fn d5_through_the_cli_event_only_calls_all_six_healthy_while_compare_separates_them() {
    let rows: Vec<Row> = case_dirs().iter().map(|dir| check(dir)).collect();
    assert_eq!(rows.len(), 6, "D-5 has six boundaries");
    println!(
        "{:<38} {:<11} {:<16} {:<18} exit",
        "case", "event-only", "invariant", "determining"
    );
    for row in &rows {
        println!(
            "{:<38} {:<11} {:<16} {:<18} {}",
            row.name, row.event_only, row.state, row.determining, row.exit
        );
    }
    assert!(rows.iter().all(|r| r.event_only == "healthy"));
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &rows {
        *counts.entry(row.state.as_str()).or_default() += 1;
    }
    let want: BTreeMap<&str, usize> = [
        ("preserved", 2),
        ("approved_change", 1),
        ("dropped", 1),
        ("conflicting", 1),
        ("unverified", 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, want);
    let exits: Vec<i32> = rows.iter().map(|r| r.exit).collect();
    assert_eq!(exits, [0, 0, 0, 4, 4, 3]);
}

/// Three decisions set at 09:30 with values that must never be seen again.
const SECRET_VALUES: [(&str, &str); 3] = [
    (
        "scope",
        "{\"repository\":\"acme/secret-repo-x91\",\"paths\":[\"src/\"]}",
    ),
    ("target", "\"branch-secret-7f3\""),
    ("constraint", "[\"never-push-secret-q2\"]"),
];

fn set_three(session: &mut Session, at: &str) {
    for (key, value) in SECRET_VALUES {
        session
            .json(&["decisions", "set", key, value, "--json-value", "--now", at])
            .expect(OK);
    }
}

#[test]
fn no_value_or_key_is_printed_or_written_in_human_or_json_form() {
    let mut s = Session::new();
    for (key, value) in SECRET_VALUES {
        s.human(&[
            "decisions",
            "set",
            key,
            value,
            "--json-value",
            "--now",
            "2026-03-02T09:30:00Z",
        ])
        .expect(OK);
    }
    s.human(&[
        "decisions",
        "set",
        "acceptance_test",
        "plain string value secret-a1",
        "--now",
        "2026-03-02T09:31:00Z",
    ])
    .expect(OK);
    s.human(&["decisions", "snapshot", "--now", "2026-03-02T09:40:00Z"])
        .expect(OK);
    s.human(&[
        "decisions",
        "set",
        "target",
        "\"branch-secret-changed-b2\"",
        "--json-value",
        "--now",
        "2026-03-02T09:45:00Z",
    ])
    .expect(OK);
    s.human(&["decisions", "list"]).expect(OK);
    s.human(&["decisions", "compare", "--now", "2026-03-02T09:50:00Z"])
        .expect(BLOCKED);
    s.json(&["decisions", "compare", "--now", "2026-03-02T09:50:00Z"])
        .expect(BLOCKED);
    s.human(&["status", "--now", "2026-03-02T09:50:00Z"])
        .expect(OK);
    s.json(&["status", "--now", "2026-03-02T09:50:00Z"])
        .expect(OK);
    let needles: Vec<String> = [
        "secret-repo-x91",
        "branch-secret-7f3",
        "never-push-secret-q2",
        "plain string value",
        "branch-secret-changed-b2",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([s.secret()])
    .collect();
    assert_nothing_leaks(&s, &needles, "secret values");
}

#[test]
fn the_hmac_key_file_is_owner_only_and_a_readable_one_is_refused() {
    let mut s = Session::new();
    set_three(&mut s, "2026-03-02T09:30:00Z");
    let key_file = s.project.path(".cairn/keys/decisions.hmac");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let secret = s.secret();
    assert_eq!(secret.len(), 64);

    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = s.json(&SET_SCOPE_X);
    out.expect(INVALID);
    assert_eq!(out.error_code(), "key_file_permissions");
    assert!(
        out.error_message().contains("decisions.hmac"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(&secret));
    // Reading needs no key: listing still works and shows digests only.
    s.json(&["decisions", "list"]).expect(OK);
}

#[test]
fn a_corrupt_book_is_a_stable_code_error_and_is_left_alone() {
    let mut s = Session::new();
    set_three(&mut s, "2026-03-02T09:30:00Z");
    let book = s.decisions_dir().join("book.json");
    std::fs::write(
        &book,
        "{\"schema_version\": \"cairn.decision-book/v1\", \"decisions\": [",
    )
    .unwrap();
    for args in [
        &["decisions", "list"][..],
        &SET_SCOPE_X,
        &["decisions", "snapshot"],
        &["decisions", "compare"],
        &["status"],
    ] {
        let out = s.json(args);
        out.expect(INVALID);
        assert_eq!(out.error_code(), "corrupt_decision_file", "{args:?}");
        assert!(out.error_message().contains("book.json"), "{}", out.stdout);
    }
    let text = std::fs::read_to_string(&book).unwrap();
    assert!(
        text.ends_with("\"decisions\": ["),
        "the corrupt book was replaced"
    );
}

#[test]
fn a_refused_snapshot_lists_its_findings_and_leaves_evidence_missing() {
    let mut s = Session::new();
    for key in ["scope", "target"] {
        s.json(&[
            "decisions",
            "set",
            key,
            "v",
            "--now",
            "2026-03-02T09:30:00Z",
        ])
        .expect(OK);
    }
    let out = s.json(&[
        "decisions",
        "snapshot",
        "--name",
        "sess-1",
        "--now",
        "2026-03-02T10:00:00Z",
    ]);
    out.expect(INVALID);
    let body = out.json();
    assert_eq!(body["error"]["code"], "snapshot_refused");
    assert_eq!(body["error"]["findings"][0]["code"], "too_few_decisions");
    let out = s.json(&["decisions", "compare", "--now", "2026-03-02T10:01:00Z"]);
    out.expect(REVIEW);
    let comparison = out.json();
    assert_eq!(comparison["state"], "continuity_evidence_missing");
    assert_eq!(comparison["reason"], "no_snapshot");
    assert_eq!(comparison["boundary_at"], "2026-03-02T10:00:00Z");
    // Human form: the codes go to stderr.
    let out = s.human(&["decisions", "snapshot", "--now", "2026-03-02T10:00:00Z"]);
    out.expect(INVALID);
    assert!(
        out.stderr.contains("error[snapshot_refused]"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("too_few_decisions"), "{}", out.stderr);
}

#[test]
fn bad_input_gets_a_structured_error_naming_the_field() {
    let mut s = Session::new();
    set_three(&mut s, "2026-03-02T09:30:00Z");
    let cases: [(&[&str], &str, &str); 9] = [
        (
            &["decisions", "set", "Bad-Key", "v"],
            "invalid_decision_kind",
            "`KEY`",
        ),
        (
            &[
                "decisions",
                "set",
                "scope",
                "{not json secret-zz",
                "--json-value",
            ],
            "malformed_json",
            "`VALUE`",
        ),
        (
            &[
                "decisions",
                "set",
                "scope",
                "v",
                "--approval",
                "/home/alice/notes",
            ],
            "invalid_ref",
            "approval_ref",
        ),
        (
            &["decisions", "set", "scope", "v", "--now", "yesterday"],
            "invalid_timestamp",
            "`--now`",
        ),
        (
            &["decisions", "snapshot", "--name", "../escape"],
            "invalid_snapshot_name",
            "name",
        ),
        (
            &["decisions", "compare", "--window", "soon"],
            "invalid_input",
            "`--window`",
        ),
        (
            &["decisions", "compare", "--name", "a/b"],
            "invalid_snapshot_name",
            "`--name`",
        ),
        (
            &approve_change("scope", "1", "2", "r"),
            "unknown_revision",
            "scope",
        ),
        (&["status", "--activity", "busy"], "usage", "busy"),
    ];
    for (args, code, names) in cases {
        let out = s.json(args);
        out.expect(INVALID);
        assert_eq!(out.error_code(), code, "{args:?}: {}", out.stdout);
        assert!(
            out.error_message().contains(names),
            "{args:?}: {}",
            out.stdout
        );
    }
    assert_nothing_leaks(&s, &["secret-zz".to_owned()], "bad input");

    // An observation file that does not parse names the file and the element.
    let file = s.project.path("bad.json");
    std::fs::write(
        &file,
        r#"[{"key": "scope", "status": "present", "observed_at": "2026-03-02T10:00:00Z"}]"#,
    )
    .unwrap();
    let out = s.json(&["decisions", "compare", "--observations", arg(&file)]);
    out.expect(INVALID);
    assert_eq!(out.error_code(), "invalid_decision_observation");
    assert!(out.error_message().contains("$[0]"), "{}", out.stdout);

    // No project: a clear code, not an implicit `.cairn/`.
    let bare = Project::new();
    let out = bare.cairn_json(&["decisions", "list"]);
    out.expect(INVALID);
    assert_eq!(out.error_code(), "no_project");
    assert!(!bare.path(".cairn").exists());
}

#[test]
fn status_reports_activity_and_continuity_side_by_side() {
    let mut s = Session::new();
    // Issue 34, 6: before any boundary nothing is compared and nothing restricted — what the
    // hooks decide too (they compare only after a compaction).
    let out = s.human(&["status", "--now", "2026-03-02T09:00:00Z"]);
    out.expect(OK);
    assert!(
        out.stdout
            .starts_with("activity working · continuity unverified (no_boundary_yet) → re_observe"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("must wait"), "{}", out.stdout);
    let status = s.json(&["status", "--now", "2026-03-02T09:00:00Z"]).json();
    assert_eq!(status["restricts_consequential"], false, "{status}");

    set_three(&mut s, "2026-03-02T09:30:00Z");
    s.json(&[
        "decisions",
        "snapshot",
        "--name",
        "sess",
        "--now",
        "2026-03-02T09:59:58Z",
        "--boundary-at",
        "2026-03-02T10:00:00Z",
    ])
    .expect(OK);
    set_three(&mut s, "2026-03-02T10:00:30Z");
    let out = s.human(&[
        "status",
        "--activity",
        "waiting_human",
        "--now",
        "2026-03-02T10:05:00Z",
    ]);
    out.expect(OK);
    assert!(
        out.stdout.starts_with(
            "activity waiting_human · continuity preserved (digest_matches) → continue"
        ),
        "{}",
        out.stdout
    );

    s.json(&[
        "decisions",
        "set",
        "scope",
        "\"wider\"",
        "--json-value",
        "--now",
        "2026-03-02T10:01:00Z",
    ])
    .expect(OK);
    let out = s.human(&["status", "--now", "2026-03-02T10:05:00Z"]);
    out.expect(OK);
    assert!(
        out.stdout.starts_with(
            "activity working · continuity conflicting (scope: changed_without_approval) → stop_and_ask"
        ),
        "{}",
        out.stdout
    );
    let status = s
        .json(&[
            "status",
            "--name",
            "sess",
            "--activity",
            "working",
            "--now",
            "2026-03-02T10:05:00Z",
        ])
        .expect(OK)
        .json();
    assert_eq!(status["schema_version"], "cairn.decision-status/v1");
    assert_eq!(status["activity"], "working");
    assert_eq!(status["continuity"], "conflicting");
    assert_eq!(status["determining_key"], "scope");
    assert_eq!(status["action"], "stop_and_ask");
    assert_eq!(status["restricts_consequential"], true);

    // Approving the change turns it into an approved change; compare's exit follows.
    let change = approve_change("scope", "1", "2", "review:PR-9");
    s.json(&[&change[..], &["--now", "2026-03-02T10:02:00Z"]].concat())
        .expect(OK);
    let comparison = s
        .json(&["decisions", "compare", "--now", "2026-03-02T10:05:00Z"])
        .expect(OK)
        .json();
    assert_eq!(comparison["state"], "approved_change");
    let scope = comparison["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["key"] == "scope")
        .unwrap();
    assert_eq!(scope["state"], "approved_change");
    assert_eq!(scope["approval_refs"][0], "review:PR-9");
}
