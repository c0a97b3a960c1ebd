//! Acceptance (issue 3, point 3): with `sync` durability, a process killed right after the
//! gate recorded a call and before the call executed leaves the record in the store — and the
//! call's effect never happened.
//!
//! The test runs itself again in a child process that admits a call and then stalls before
//! executing it, until it is killed.

use crate::common;
use cairn_test_support::gates::AllowAll;
use cairn_test_support::this_test_in_a_child;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use cairn_ledger::Store;
use cairn_ledger::record::{AllowDeny, ToolRef};
use cairn_runtime::{Admitted, Executor, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};

const CHILD_ENV: &str = "CAIRN_ADMIT_CHILD";

fn child(db: &Path) {
    let store = Arc::new(SqliteStore::open(db, OpenMode::CreateIfMissing).expect("store"));
    let recorder = common::sync_recorder(store, "task-k", "run-k");
    let mut executor = Executor::new(recorder, Arc::new(AllowAll("test.allow-all")), "agent");
    let marker = db.with_extension("effect");
    let call = ToolCall {
        tool: ToolRef {
            name: common::label("files.write"),
            version: common::label("1"),
        },
        args: br#"{"path":"/tmp/x"}"#,
        lane: None,
    };
    let Admitted::Permitted(permit) = executor.admit(&call).expect("admit") else {
        panic!("the test gate allows everything");
    };
    println!("recorded {}", permit.step_index());
    std::io::stdout().flush().expect("flush");
    // Stall between recording and executing, as a process might when it is killed.
    std::thread::sleep(std::time::Duration::from_secs(60));
    let _ = executor.execute(permit, || {
        std::fs::write(&marker, b"done").map(|()| serde_json::Value::Null)
    });
}

/// The same test is the parent (the test) and, when `CAIRN_ADMIT_CHILD` names a store, the
/// child that admits a call and stalls before executing it.
#[test]
fn killed_between_record_and_execute_leaves_the_record_and_no_effect() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        child(Path::new(&path));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("k.db");
    let mut child = this_test_in_a_child(
        "record_before_execute::killed_between_record_and_execute_leaves_the_record_and_no_effect",
    )
    .env(CHILD_ENV, &db)
    .stdout(Stdio::piped())
    .spawn()
    .expect("spawn");
    // The harness's own lines come first.
    let line = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .find(|line| line.as_ref().is_ok_and(|l| l.starts_with("recorded")))
        .expect("child output")
        .unwrap();
    assert_eq!(line, "recorded 0");
    child.kill().expect("SIGKILL");
    child.wait().unwrap();

    let store = SqliteStore::open(&db, OpenMode::MustExist).unwrap();
    let rows = store
        .rows(&"acme".parse().unwrap(), &"run-k".parse().unwrap())
        .unwrap();
    assert_eq!(
        rows.len(),
        1,
        "the admitted call's record must survive the kill"
    );
    let record = rows[0].as_ref().unwrap();
    let admission = record.admission.as_ref().unwrap();
    assert_eq!(admission.decision, AllowDeny::Allow);
    assert_eq!(admission.rule_ids[0].as_str(), "test.allow-all");
    assert!(
        !db.with_extension("effect").exists(),
        "the call must not have executed"
    );
}
