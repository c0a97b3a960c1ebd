//! Acceptance (I-7): a canary secret passed as a tool argument (and shown to the model in an
//! observation) never appears in the store's structural tables, in exports, in proofs or in
//! logs — at the most verbose log level, through the library and through the binary.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use cairn_core::{Clock, SystemClock};
use cairn_ledger::record::{Admission, AllowDeny, Label, TerminationReason, ToolRef};
use cairn_runtime::keyring::Keyring;
use cairn_runtime::{Durability, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};

const CANARY: &str = "CANARY-7f3e9d1c-do-not-leak";

/// A log sink the test can read back.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn cairn(store: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env("CAIRN_LOG", "trace")
        .output()
        .expect("run cairn");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every column of every row of a table, as text.
fn dump(conn: &rusqlite::Connection, table: &str) -> String {
    let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
    let columns = stmt.column_count();
    let mut rows = stmt.query([]).unwrap();
    let mut text = String::new();
    while let Some(row) = rows.next().unwrap() {
        for i in 0..columns {
            let value: rusqlite::types::Value = row.get(i).unwrap();
            text.push_str(&format!("{value:?}|"));
        }
        text.push('\n');
    }
    text
}

#[test]
fn a_canary_argument_never_reaches_structural_tables_exports_or_logs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".cairn/cairn.db");
    let store = Arc::new(SqliteStore::open(&db, OpenMode::CreateIfMissing).unwrap());
    let keyring = Keyring::open(dir.path().join(".cairn/keys"));
    keyring
        .generate(&mut rand_core::OsRng, "cairn.test")
        .unwrap();
    let key = keyring.active_signing_key().unwrap();

    let sink = Sink::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let sink = sink.clone();
            move || sink.clone()
        })
        .finish();
    let run_id = tracing::subscriber::with_default(subscriber, || {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let mut recorder = Recorder::open(
            store.clone(),
            clock,
            (
                "acme".parse().unwrap(),
                "task-canary".parse().unwrap(),
                "run-canary".parse().unwrap(),
            ),
            RecorderOptions {
                durability: Durability::Sync,
                content_retention: Some(jiff::SignedDuration::from_hours(1)),
            },
        )
        .unwrap();
        recorder
            .observe(&serde_json::json!({"user": format!("my password is {CANARY}")}))
            .unwrap();
        let args = serde_json::json!({"password": CANARY}).to_string();
        for decision in [AllowDeny::Allow, AllowDeny::Deny] {
            recorder
                .record_step(
                    &ToolCall {
                        tool: ToolRef {
                            name: Label::new("vault.store").unwrap(),
                            version: Label::new("1").unwrap(),
                        },
                        args: args.as_bytes(),
                        lane: None,
                    },
                    Admission {
                        decision,
                        policy_set_version: cairn_core::Digest::of(b"p"),
                        rule_ids: vec![Label::new("vault.rule").unwrap()],
                    },
                )
                .unwrap();
            recorder
                .observe(&serde_json::json!({"echo": CANARY}))
                .unwrap();
        }
        let run = recorder.run_id().clone();
        recorder
            .terminate(TerminationReason::Completed, None, &key)
            .unwrap();
        run
    });
    let logs = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("step recorded"),
        "the library logged nothing at trace level: the check would be vacuous"
    );
    assert!(
        !logs.contains(CANARY),
        "library logs leak the canary:\n{logs}"
    );

    let conn = rusqlite::Connection::open(&db).unwrap();
    for table in ["runs", "records", "checkpoints"] {
        let text = dump(&conn, table);
        assert!(
            !text.is_empty(),
            "{table} is empty: the check would be vacuous"
        );
        assert!(
            !text.contains(CANARY),
            "structural table {table} holds the canary"
        );
    }
    let retained: Vec<Vec<u8>> = conn
        .prepare("SELECT bytes FROM content")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        retained
            .iter()
            .any(|bytes| String::from_utf8_lossy(bytes).contains(CANARY)),
        "the canary should be retained in the content store, or this test proves nothing"
    );
    drop(conn);

    let run = run_id.to_string();
    let export = dir.path().join("bundle.jsonl");
    for args in [
        vec!["ledger", "export", "--run", &run, "--format", "jsonl"],
        crate::common::export_args(&run, export.to_str().unwrap()).to_vec(),
        vec!["--json", "ledger", "verify", "--all"],
        vec!["ledger", "verify", "--bundle", export.to_str().unwrap()],
        vec!["--json", "runs", "list"],
        vec!["--json", "cost", "--by", "tool"],
        vec!["ledger", "prove", "--run", &run, "--step", "1"],
    ] {
        let (stdout, stderr) = cairn(&db, &args);
        assert!(
            !stdout.contains(CANARY),
            "`cairn {}` prints the canary",
            args.join(" ")
        );
        assert!(
            !stderr.contains(CANARY),
            "`cairn {}` logs the canary",
            args.join(" ")
        );
    }
    let bundle = std::fs::read_to_string(&export).unwrap();
    assert!(
        bundle.lines().count() == 4,
        "the export is suspiciously short"
    );
    assert!(
        !bundle.contains(CANARY),
        "the exported bundle holds the canary"
    );

    // `ledger show` is the investigator's view of retained content: its output may show the
    // content, but its logs may not.
    let (_, stderr) = cairn(&db, &["ledger", "show", "--run", &run, "--step", "1"]);
    assert!(!stderr.contains(CANARY), "`ledger show` logs the canary");
}
