//! The resident hook server (`cairn hooks serve`): `cairn hook` hands its call to it when it
//! runs, gets the same answers a fresh process would give (an edited policy takes effect on
//! the next call), and answers by itself when the server is gone, even if its socket is left.

use crate::common;

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;

use std::time::{Duration, Instant};

use common::{Output, command_in};
use serde_json::json;

fn project() -> tempfile::TempDir {
    common::init_project()
}

use common::{serve, socket};

/// One `PreToolUse` of `Bash` through `cairn hook claude-code`.
fn pre_tool_use(dir: &Path, i: usize) -> Output {
    let stdin = json!({
        "session_id": "resident-session", "cwd": dir, "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": "Bash",
        "tool_input": {"command": format!("echo {i}")}, "tool_use_id": format!("toolu_{i}"),
        "transcript_path": "/tmp/t.jsonl",
    })
    .to_string();
    common::hook(&mut command_in(dir), "claude-code", &stdin)
}

fn records(dir: &Path) -> u64 {
    let out = Output::of(command_in(dir).args(["--json", "runs", "list"]));
    out.expect(0);
    let runs = out.json();
    let run = runs
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {runs}"))
        .iter()
        .find(|r| r["run_id"] == "cc-resident-session")
        .unwrap_or_else(|| panic!("no run in {runs}"));
    run["records"].as_u64().unwrap()
}

fn denied(out: &Output) -> bool {
    out.code == 2 && out.stdout.contains("\"permissionDecision\":\"deny\"")
}

#[test]
fn the_server_answers_as_a_fresh_process_would_and_follows_policy_edits() {
    let dir = project();
    let mut server = serve(dir.path(), "10m");
    let allowed = pre_tool_use(dir.path(), 1);
    assert_eq!(
        (allowed.code, allowed.stdout.as_str()),
        (0, ""),
        "{allowed:?}"
    );
    assert_eq!(records(dir.path()), 1);

    // A policy added while the server runs takes effect on the next call.
    let stop = dir.path().join(".cairn/policies/zz-stop.cedar");
    std::fs::write(
        &stop,
        "@id(\"test.stop-all\")\nforbid(principal, action, resource);\n",
    )
    .unwrap();
    let refused = pre_tool_use(dir.path(), 2);
    assert!(denied(&refused), "{refused:?}");
    assert!(refused.stdout.contains("test.stop-all"), "{refused:?}");
    std::fs::remove_file(&stop).unwrap();
    let again = pre_tool_use(dir.path(), 3);
    assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{again:?}");

    assert_eq!(
        records(dir.path()),
        3,
        "one intent record per call, denied or not"
    );
    Output::of(command_in(dir.path()).args(["ledger", "verify", "--all"])).expect(0);

    // A second server for the same project refuses to start.
    let second = Output::of(
        command_in(dir.path())
            .args(["hooks", "serve", "--dir"])
            .arg(dir.path()),
    );
    assert_ne!(second.code, 0, "{second:?}");
    assert!(second.stderr.contains("already answers"), "{second:?}");

    // A request that is not the protocol is refused and the server keeps serving.
    let mut junk = UnixStream::connect(socket(dir.path())).unwrap();
    junk.write_all(b"not a header\n{}").unwrap();
    junk.shutdown(std::net::Shutdown::Write).unwrap();
    let mut reply = String::new();
    junk.read_to_string(&mut reply).unwrap();
    let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["exit"], 2, "{reply}");
    assert_eq!(reply["denies"], true, "{reply}");
    let after = pre_tool_use(dir.path(), 4);
    assert_eq!(after.code, 0, "{after:?}");
    assert_eq!(records(dir.path()), 4);

    // Killed without a chance to clean up: the socket stays, and calls are answered by the
    // hook process itself.
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(socket(dir.path()).exists());
    let alone = pre_tool_use(dir.path(), 5);
    assert_eq!((alone.code, alone.stdout.as_str()), (0, ""), "{alone:?}");
    assert_eq!(records(dir.path()), 5);

    // A new server replaces the stale socket.
    let mut server = serve(dir.path(), "10m");
    assert_eq!(pre_tool_use(dir.path(), 6).code, 0);
    assert_eq!(records(dir.path()), 6);
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn an_idle_server_exits_and_removes_its_socket() {
    let dir = project();
    let mut server = serve(dir.path(), "1s");
    assert_eq!(pre_tool_use(dir.path(), 1).code, 0);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(!socket(dir.path()).exists());
}

#[test]
fn serving_needs_a_project() {
    let dir = tempfile::tempdir().unwrap();
    let out = Output::of(
        command_in(dir.path())
            .args(["hooks", "serve", "--dir"])
            .arg(dir.path()),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no `.cairn/` folder"), "{out:?}");
}

#[test]
fn the_server_uses_only_the_projects_own_store() {
    let dir = project();
    let out = Output::of(
        command_in(dir.path())
            .args(["hooks", "serve", "--store"])
            .arg(dir.path().join("other.db"))
            .arg("--dir")
            .arg(dir.path()),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("project's own store"), "{out:?}");
    assert!(!socket(dir.path()).exists());
}

/// Issue 16: by default the first hook call starts the resident server, so a session pays
/// for two process starts, a policy parse and a store open once, not on every call.
#[test]
fn the_server_starts_by_itself_by_default() {
    let dir = project();
    assert!(!dir.path().join(".cairn/hooks.json").exists());
    // No server yet: the call is answered by its own process, which starts one.
    let first = pre_tool_use(dir.path(), 1);
    assert_eq!((first.code, first.stdout.as_str()), (0, ""), "{first:?}");
    let started = Instant::now();
    while UnixStream::connect(socket(dir.path())).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no server started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 2..5 {
        assert_eq!(pre_tool_use(dir.path(), i).code, 0);
    }
    assert_eq!(records(dir.path()), 4);
    // Removing the socket stops the server.
    std::fs::remove_file(socket(dir.path())).unwrap();
    assert_eq!(pre_tool_use(dir.path(), 5).code, 0);
}

#[test]
fn a_project_can_turn_the_server_off() {
    let dir = project();
    std::fs::write(
        dir.path().join(".cairn/hooks.json"),
        r#"{"schema_version": "cairn.hooks/v1", "resident_server": false}"#,
    )
    .unwrap();
    for i in 0..3 {
        assert_eq!(pre_tool_use(dir.path(), i).code, 0);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!socket(dir.path()).exists(), "no server was started");
    assert_eq!(records(dir.path()), 3);
}

#[test]
fn a_server_that_takes_the_call_and_answers_nothing_denies_it() {
    let dir = project();
    // Something accepts at the socket and hangs up without an answer.
    let listener = std::os::unix::net::UnixListener::bind(socket(dir.path())).unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let _ = stream.read_to_end(&mut request);
        }
    });
    let refused = pre_tool_use(dir.path(), 1);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("hook_resident_failed"),
        "{refused:?}"
    );
    let compact = json!({
        "session_id": "resident-session", "cwd": dir.path(), "hook_event_name": "PreCompact",
        "trigger": "auto", "transcript_path": "/tmp/t.jsonl",
    })
    .to_string();
    let compaction = common::hook(&mut command_in(dir.path()), "claude-code", &compact);
    assert_eq!(
        compaction.code, 0,
        "a compaction is never blocked: {compaction:?}"
    );
    server.join().unwrap();
}

/// Issue 16: the resident server is a long-lived writer, so it checkpoints the store's
/// write-ahead log as it grows; the log stays about 1 MiB however many calls it answers
/// (it grew by about 64 KiB a call before: 12.6 MB after 200 records).
#[test]
fn the_servers_write_ahead_log_does_not_grow_with_the_session() {
    let dir = project();
    let d = dir.path();
    let mut server = serve(d, "2m");
    let wal = common::state(d).join("cairn.db-wal");
    let mut largest = 0;
    for i in 0..240 {
        pre_tool_use(d, i).expect(0);
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(records(d), 240);
    assert!(
        largest <= 2 << 20,
        "the write-ahead log reached {largest} bytes"
    );
    Output::of(command_in(d).args(["ledger", "verify", "--all"])).expect(0);
}

/// A server whose project is deleted exits (its socket alone can outlive a folder removed
/// while the server started: it must not keep answering, or running, for nothing).
#[test]
fn a_server_whose_project_is_deleted_exits() {
    let dir = project();
    let d = dir.path();
    let mut server = serve(d, "30m");
    std::fs::remove_dir_all(d.join(".cairn").join("policies")).unwrap();
    let started = Instant::now();
    loop {
        if server.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server outlived its project"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!socket(d).exists(), "it removed its own socket");
}

/// What the model was shown after a call — the `PostToolUse`'s tool result — is kept in the
/// content store for investigators, with a worker process and with the resident server alike:
/// `ledger show` of the next step, which carries its digest, prints it. (It was lost: a
/// commit of content alone, with no record, kept nothing.)
#[test]
fn the_tool_result_a_model_was_shown_is_kept_for_the_next_step() {
    for resident in [false, true] {
        let dir = project();
        let mut server = resident.then(|| serve(dir.path(), "10m"));
        let session = format!("kept-{resident}");
        let event = |name: &str, i: usize, extra: serde_json::Value| {
            let mut event = json!({
                "session_id": session, "cwd": dir.path(), "hook_event_name": name,
                "tool_name": "Bash", "tool_input": {"command": format!("echo {i}")},
                "tool_use_id": format!("toolu_{i}"), "transcript_path": "/tmp/t.jsonl",
            });
            if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
                event.extend(extra.clone());
            }
            let mut command = command_in(dir.path());
            if !resident {
                command.env("CAIRN_HOOK_RESIDENT", "off");
            }
            common::hook(&mut command, "claude-code", &event.to_string()).expect(0);
        };
        event("PreToolUse", 0, json!({}));
        event(
            "PostToolUse",
            0,
            json!({"tool_response": {"stdout": "SHOWN-TO-THE-MODEL", "stderr": "", "interrupted": false, "isImage": false}}),
        );
        event("PreToolUse", 1, json!({}));
        let shown = Output::of(command_in(dir.path()).args([
            "--json",
            "ledger",
            "show",
            "--run",
            &format!("cc-{session}"),
            "--step",
            "1",
        ]))
        .expect(0)
        .json();
        assert!(
            shown["observation_content"]
                .as_str()
                .is_some_and(|text| text.contains("SHOWN-TO-THE-MODEL")),
            "resident {resident}: {shown}"
        );
        if let Some(server) = server.as_mut() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// A server that opened the store before a newer Cairn migrated it does not go on writing with
/// the schema it checked then: the next call's intent record is refused, and the call denied,
/// as `store_schema_too_new`; nothing is written.
#[test]
fn a_server_whose_store_a_newer_cairn_migrated_denies_and_writes_nothing() {
    let dir = project();
    let mut server = serve(dir.path(), "10m");
    // The server has the store open: it answered (and recorded) a call.
    let first = pre_tool_use(dir.path(), 1);
    assert_eq!((first.code, first.stdout.as_str()), (0, ""), "{first:?}");
    assert_eq!(records(dir.path()), 1);

    let db = common::state(dir.path()).join("cairn.db");
    let newer = rusqlite::Connection::open(&db).unwrap();
    newer.execute_batch("PRAGMA user_version = 999;").unwrap();
    let refused = pre_tool_use(dir.path(), 2);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("error[store_schema_too_new]"),
        "{refused:?}"
    );
    let count: i64 = newer
        .query_row("SELECT COUNT(*) FROM records", [], |row| row.get(0))
        .unwrap();
    assert_eq!(count, 1, "the refused call wrote no record");
    server.kill().unwrap();
    server.wait().unwrap();
}

/// Issue 34, 4: the resident server a hook starts keeps none of the descriptors the host
/// handed that hook (a lock file, a pipe): a host that opened `marker.txt` as descriptor 7 and
/// closed it after the hook sees no process keep it open.
#[test]
fn the_server_a_hook_starts_keeps_none_of_the_hosts_descriptors() {
    let dir = common::init_project();
    let d = dir.path();
    let marker = d.join("marker.txt");
    let session = json!({
        "session_id": "fds", "cwd": d, "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    let script = format!(
        "exec 7>'{}'; printf '%s' '{session}' | '{}' claude-code --project '{}'; exec 7>&-",
        marker.display(),
        env!("CARGO_BIN_EXE_cairn-hook"),
        d.display()
    );
    let mut shell = common::program_in("sh", d);
    let out = Output::of(shell.args(["-c", &script]));
    out.expect(0);
    common::wait_for_socket(d);
    let holders: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|entry| {
            std::fs::read_dir(entry.path().join("fd")).is_ok_and(|fds| {
                fds.filter_map(Result::ok)
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == marker))
            })
        })
        .map(|entry| {
            std::fs::read_to_string(entry.path().join("cmdline"))
                .unwrap_or_default()
                .replace('\0', " ")
        })
        .collect();
    assert!(
        holders.is_empty(),
        "still holding {}: {holders:?}",
        marker.display()
    );
}
