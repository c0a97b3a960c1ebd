//! Which store the binary uses (SPEC §9.1), `cairn runs list` and its lifecycle filters
//! (I-2), and what usage errors and bad input get: exit 2 and a stable code naming the input.

use crate::common;

use common::{INTERNAL, INVALID, OK, Output, Project, arg, command_in};
use serde_json::Value;

/// The run ids of a `runs list --json` output, in order.
fn run_ids(out: &Output) -> Vec<String> {
    out.expect(OK)
        .json()
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {}", out.stdout))
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn without_store_flag_the_nearest_enclosing_project_two_levels_up_is_used() {
    let project = Project::new();
    let run = project.demo_run();
    let nested = project.path("a/b");
    std::fs::create_dir_all(&nested).unwrap();

    let out = Output::of(command_in(&nested).args(["--json", "runs", "list"]));
    assert_eq!(run_ids(&out), vec![run.clone()]);
    let human = Output::of(command_in(&nested).args(["runs", "list"]));
    assert!(human.expect(OK).stdout.contains(&run), "{}", human.stdout);
    // Keys are found beside that store too.
    Output::of(command_in(&nested).args(["ledger", "verify", "--all"])).expect(OK);
    assert!(
        !nested.join(".cairn").exists(),
        "no store may be created in the current directory"
    );
}

#[test]
fn cairn_store_in_the_environment_works_like_the_store_flag() {
    let project = Project::new();
    let run = project.demo_run();
    let elsewhere = Project::new();

    let out = Output::of(
        command_in(elsewhere.root())
            .env("CAIRN_STORE", project.store())
            .args(["--json", "runs", "list"]),
    );
    assert_eq!(run_ids(&out), vec![run.clone()]);
    let verify = Output::of(
        command_in(elsewhere.root())
            .env("CAIRN_STORE", project.store())
            .args(["--json", "ledger", "verify", "--run", &run]),
    );
    assert_eq!(verify.expect(OK).json()["intact"], true);
    assert!(!elsewhere.path(".cairn").exists());
}

#[test]
fn a_postgres_store_that_does_not_answer_fails_closed_without_printing_its_password() {
    let project = Project::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://cairn:s3cret@127.0.0.1:{port}/cairn?connect_timeout=1");
    let flag =
        Output::of(command_in(project.root()).args(["--json", "--store", &url, "runs", "list"]));
    assert_eq!(flag.expect(INTERNAL).error_code(), "store_unavailable");
    let env = Output::of(
        command_in(project.root())
            .env("CAIRN_STORE", url.replace("postgres://", "postgresql://"))
            .args(["ledger", "verify", "--all"]),
    );
    let env = env.expect(INTERNAL);
    assert!(
        env.stderr.contains("error[store_unavailable]"),
        "{}",
        env.stderr
    );
    for output in [&flag, env] {
        assert!(!output.stderr.contains("s3cret"), "{}", output.stderr);
        assert!(!output.stdout.contains("s3cret"), "{}", output.stdout);
    }
    assert!(env.stderr.contains("cairn:***@127.0.0.1"), "{}", env.stderr);
}

#[test]
fn runs_list_json_is_an_array_of_runs_with_the_contracted_fields_oldest_first() {
    let project = Project::new();
    let demo = project.demo();
    let first = demo["run_id"].as_str().unwrap().to_owned();
    let records = demo["records"].as_array().unwrap().len();
    let second = project.demo_run();

    let json = project.cairn_json(&["runs", "list"]).expect(OK).json();
    let runs = json.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{json}");
    for (run, id) in runs.iter().zip([&first, &second]) {
        assert_eq!(run["run_id"], id.as_str());
        assert_eq!(run["tenant_id"], "demo");
        assert_eq!(run["task_id"], "task-support-T-4821");
        assert_eq!(run["records"].as_u64(), Some(records as u64));
        assert_eq!(run["terminated"], true);
    }
    assert!(
        project
            .cairn_json(&["runs", "list", "--unterminated"])
            .expect(OK)
            .json()
            .as_array()
            .unwrap()
            .is_empty()
    );
    let other_tenant = project
        .cairn_json(&["runs", "list", "--tenant", "acme"])
        .expect(OK)
        .json();
    assert_eq!(other_tenant, Value::Array(Vec::new()));
}

#[test]
fn a_run_without_its_terminal_record_is_reported_as_unterminated() {
    let project = Project::new();
    let demo = project.demo();
    let crashed = demo["run_id"].as_str().unwrap().to_owned();
    let records = demo["records"].as_array().unwrap().len();
    let closed = project.demo_run();
    // Simulate an executor killed before it closed the run.
    assert_eq!(
        project.sql(
            "DELETE FROM records WHERE run_id = ?1 AND kind = 'terminal'",
            &[&crashed]
        ),
        1
    );
    assert_eq!(
        project.sql("DELETE FROM checkpoints WHERE run_id = ?1", &[&crashed]),
        1
    );

    assert_eq!(
        run_ids(&project.cairn_json(&["runs", "list", "--unterminated"])),
        vec![crashed.clone()]
    );
    assert_eq!(
        run_ids(&project.cairn_json(&["runs", "list", "--unterminated", "--older-than", "0s"])),
        vec![crashed.clone()]
    );
    let idle = run_ids(&project.cairn_json(&["runs", "list", "--older-than", "0s"]));
    assert!(idle.contains(&crashed), "{idle:?}");
    assert!(
        run_ids(&project.cairn_json(&["runs", "list", "--unterminated", "--older-than", "1h"]))
            .is_empty()
    );
    assert!(run_ids(&project.cairn_json(&["runs", "list", "--older-than", "1h"])).is_empty());

    let all = project.cairn_json(&["runs", "list"]).expect(OK).json();
    let crashed_info = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == crashed.as_str())
        .unwrap();
    assert_eq!(crashed_info["terminated"], false);
    assert_eq!(
        crashed_info["records"].as_u64(),
        Some(records as u64 - 1),
        "all but the terminal record"
    );
    let closed_info = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == closed.as_str())
        .unwrap();
    assert_eq!(closed_info["terminated"], true);

    let human = project.cairn(&["runs", "list", "--unterminated"]);
    let line = human
        .expect(OK)
        .stdout
        .lines()
        .find(|l| l.contains(&crashed))
        .map(str::to_owned);
    assert!(
        line.is_some_and(|l| l.contains("UNTERMINATED")),
        "{}",
        human.stdout
    );
}

#[test]
fn a_bad_older_than_duration_is_invalid_input() {
    let project = Project::new();
    project.demo();
    for bad in ["bogus", "-5m", "5 parsecs", ""] {
        let out = project.cairn_json(&["runs", "list", &format!("--older-than={bad}")]);
        assert_eq!(out.expect(INVALID).error_code(), "invalid_input", "`{bad}`");
        assert!(
            out.error_message().contains("--older-than"),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let project = Project::new();
    let out = Output::of(command_in(project.root()).args(["frobnicate"]));
    assert!(
        out.expect(INVALID).stderr.contains("frobnicate"),
        "{}",
        out.stderr
    );
    let out = Output::of(command_in(project.root()).args(["ledger", "frobnicate"]));
    out.expect(INVALID);
    let out = Output::of(command_in(project.root()).args(["ledger", "show", "--run", "r"]));
    assert!(
        out.expect(INVALID).stderr.contains("--step"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_missing_store_is_invalid_input_naming_the_path_and_is_not_created() {
    let project = Project::new();
    let missing = project.path("nowhere/.cairn/cairn.db");
    // `ledger show` of a step in the missing store, in text or as JSON.
    let show = |json: &[&str]| {
        Output::of(command_in(project.root()).args(json).args([
            "--store",
            arg(&missing),
            "ledger",
            "show",
            "--run",
            "r",
            "--step",
            "3",
        ]))
    };
    let text = show(&[]);
    assert!(
        text.expect(INVALID).stderr.contains(arg(&missing)),
        "{}",
        text.stderr
    );

    let json = show(&["--json"]);
    assert_eq!(json.expect(INVALID).error_code(), "store_not_found");
    assert!(
        json.error_message().contains(arg(&missing)),
        "{}",
        json.stdout
    );

    for command in [
        &["runs", "list"][..],
        &["ledger", "verify", "--all"],
        &["cost"],
        &["gc"],
    ] {
        Output::of(
            command_in(project.root())
                .arg("--store")
                .arg(&missing)
                .args(command),
        )
        .expect(INVALID);
    }
    assert!(!missing.exists(), "a read command created the store");
    assert!(
        !project.path("nowhere").exists(),
        "a read command created the store's folder"
    );
}

#[test]
fn bad_ids_and_unknown_runs_or_steps_are_invalid_input_with_stable_codes() {
    let project = Project::new();
    let run = project.demo_run();

    let bad = project.cairn_json(&["ledger", "show", "--run", "a/b", "--step", "3"]);
    assert_eq!(bad.expect(INVALID).error_code(), "invalid_id");
    assert!(bad.error_message().contains("--run"), "{}", bad.stdout);
    let bad_tenant = project.cairn_json(&["runs", "list", "--tenant", "a b"]);
    assert_eq!(bad_tenant.expect(INVALID).error_code(), "invalid_id");
    let unknown = project.cairn_json(&["ledger", "verify", "--run", "run-missing"]);
    assert_eq!(unknown.expect(INVALID).error_code(), "run_not_found");
    let step = project.cairn_json(&["ledger", "show", "--run", &run, "--step", "99"]);
    assert_eq!(step.expect(INVALID).error_code(), "step_not_found");
    let now = project.cairn_json(&["gc", "--now", "yesterday"]);
    assert_eq!(now.expect(INVALID).error_code(), "invalid_timestamp");
}

/// Bug: a read-only command pointed at another application's SQLite database silently runs
/// Cairn's migrations on it (adding `runs`, `records`, … tables) and reports "no matching
/// runs" with exit 0. It should refuse a database that is not a Cairn store, unchanged.
#[test]
fn a_read_command_never_turns_a_foreign_sqlite_database_into_a_store() {
    let project = Project::new();
    let foreign = project.path("app.db");
    {
        let db = rusqlite::Connection::open(&foreign).unwrap();
        db.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
    }
    let out = Output::of(command_in(project.root()).args([
        "--json",
        "--store",
        arg(&foreign),
        "runs",
        "list",
    ]));
    let db = rusqlite::Connection::open(&foreign).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        vec!["notes".to_owned()],
        "the foreign database was altered"
    );
    out.expect(INVALID);
}
