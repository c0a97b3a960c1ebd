//! Issue 15 ("No tool call gets through undecided") end to end through the `cairn` binary,
//! as `cairn hook claude-code` and `cairn hook codex`, with the exact hostile inputs of the
//! issue: each fail-open path is closed, a `PreToolUse` only ever exits 0 (the call may run)
//! or 2 (it may not), and what must not leak or be lost does not.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Output, command_in};
use serde_json::{Value, json};

const HOSTS: [&str; 2] = ["claude-code", "codex"];

/// A refund tool with a declared `amount`, forbidden above 10,000; everything else permitted.
const REFUND_POLICY: &str = r#"@id("all")
permit(principal, action, resource);
@id("refund-cap")
forbid(principal, action == Action::"mcp__pay__refund", resource)
    when { context.args has amount && context.args.amount > 10000 };
"#;
const REFUND_TOOLS: &str = r#"{"tools": {"mcp__pay__refund": {"args": {"amount": "Long"}}}}"#;

/// A project from `cairn init` with `policy` as its only policy file and `tools` as its
/// catalog.
fn project(policy: &str, tools: &str) -> tempfile::TempDir {
    let dir = common::init_project();
    std::fs::write(dir.path().join(".cairn/policies/starter.cedar"), policy).unwrap();
    std::fs::write(dir.path().join(".cairn/tools.json"), tools).unwrap();
    dir
}

/// The hook payload of a `PreToolUse` of `tool` whose `tool_input` is the raw JSON text
/// `input` (kept byte for byte, as a host sends it), at `cwd`.
fn pre_tool_use(session: &str, cwd: &Path, tool: &str, input: &str) -> String {
    format!(
        r#"{{"session_id": "{session}", "cwd": {}, "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": "{tool}", "tool_input": {input}, "tool_use_id": "toolu_{}"}}"#,
        json!(cwd),
        cairn_core::Digest::of(input.as_bytes()).short()
    )
}

/// The payload of a `PreToolUse` of `ls` in Bash, at `cwd`.
fn ls_call(session: &str, cwd: &Path) -> String {
    pre_tool_use(session, cwd, "Bash", r#"{"command": "ls"}"#)
}

fn hook(dir: &Path, host: &str, stdin: &str) -> Output {
    common::hook(&mut command_in(dir), host, stdin)
}

fn hook_with(dir: &Path, host: &str, args: &[&str], stdin: &str) -> Output {
    let mut command = command_in(dir);
    command.args(["hook", host]).args(args);
    raw_hook(&mut command, stdin)
}

/// Runs a prepared `cairn hook …` command with `stdin`.
fn raw_hook(command: &mut std::process::Command, stdin: impl AsRef<[u8]>) -> Output {
    use std::io::Write as _;
    let args = format!("{command:?}");
    let mut child = common::spawn_piped(command);
    let _ = child.stdin.take().unwrap().write_all(stdin.as_ref());
    Output::finished(&child.wait_with_output().unwrap(), args)
}

/// Asserts a deny (exit 2) naming `rule`.
#[track_caller]
fn assert_denied(out: &Output, rule: &str) {
    out.expect(2);
    assert!(out.stderr.contains(rule), "{rule} not named: {out:?}");
}

/// The records of every run in the project's store, as JSON lines.
fn exported(dir: &Path, run: &str) -> Vec<Value> {
    let out =
        Output::of(command_in(dir).args(["ledger", "export", "--run", run, "--format", "jsonl"]));
    out.expect(0);
    out.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn run_of(host: &str, session: &str) -> String {
    match host {
        "claude-code" => format!("cc-{session}"),
        _ => format!("codex-{session}"),
    }
}

#[test]
fn issue_15_item_1_arguments_the_gate_cannot_read_are_denied_and_recorded() {
    let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
    let hostile = [
        r#"{"amount": 25000, "memo": "\udead"}"#.to_owned(),
        format!(r#"{{"amount": 25000, "tags": {deep}}}"#),
        r#"{"amount": 1e400}"#.to_owned(),
        r#"{"amount": 25000, "amount": 5}"#.to_owned(),
    ];
    for host in HOSTS {
        let dir = project(REFUND_POLICY, REFUND_TOOLS);
        let d = dir.path();
        for input in &hostile {
            let out = hook(d, host, &pre_tool_use("args", d, "mcp__pay__refund", input));
            assert_denied(&out, "cairn.args-unreadable");
        }
        // The same refund readable is forbidden by the policy; -0 is the Long 0.
        let out = hook(
            d,
            host,
            &pre_tool_use("args", d, "mcp__pay__refund", r#"{"amount": 25000}"#),
        );
        assert_denied(&out, "refund-cap");
        hook(
            d,
            host,
            &pre_tool_use("args", d, "mcp__pay__refund", r#"{"amount": -0}"#),
        )
        .expect(0);
        let records = exported(d, &run_of(host, "args"));
        let rules: Vec<&str> = records
            .iter()
            .filter_map(|r| r["admission"]["rule_ids"][0].as_str())
            .collect();
        assert_eq!(
            rules,
            ["cairn.args-unreadable"; 4]
                .into_iter()
                .chain(["refund-cap", "all"])
                .collect::<Vec<_>>(),
            "{host}"
        );
        // `policy explain` answers the same for the same bytes.
        let explain = Output::of(command_in(d).args([
            "--json",
            "policy",
            "explain",
            "--tool",
            "mcp__pay__refund",
            "--args",
            &hostile[3],
        ]));
        assert_eq!(
            explain.expect(0).json()["decision"]["rule_ids"],
            json!(["cairn.args-unreadable"])
        );
    }
}

#[test]
fn issue_15_item_2_a_policy_that_would_overflow_the_stack_is_refused_not_aborted() {
    let nested = format!(
        "@id(\"deep\")\npermit(principal, action, resource) when {{ {}true{} }};\n",
        "(".repeat(600),
        ")".repeat(600)
    );
    let chained = format!(
        "@id(\"and\")\npermit(principal, action, resource) when {{ {} }};\n",
        vec!["true"; 12_800].join(" && ")
    );
    for policy in [nested, chained] {
        let dir = project(&policy, r#"{"tools": {}}"#);
        let d = dir.path();
        for host in HOSTS {
            let out = hook(d, host, &ls_call("deep", d));
            assert_denied(&out, "policy_invalid");
        }
        let check = Output::of(command_in(d).args(["--json", "policy", "check"]));
        assert_eq!(check.expect(2).error_code(), "policy_invalid");
        assert!(
            check.error_message().contains("starter.cedar:2:"),
            "{check:?}"
        );
    }
}

#[test]
fn issue_15_item_3_a_store_locked_by_another_process_is_denied_within_the_deadline() {
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    // The store exists once a first call is recorded.
    hook(d, "claude-code", &ls_call("lock", d)).expect(0);
    let db = rusqlite::Connection::open(common::state(d).join("cairn.db")).unwrap();
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    for host in HOSTS {
        let started = Instant::now();
        let out = hook_with(d, host, &["--deadline", "2s"], &ls_call("lock", d));
        out.expect(2);
        // Well before the host's own 60 s timeout (which would let the call through).
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }
    db.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn issue_15_item_3_a_host_that_never_closes_stdin_is_denied_within_the_deadline() {
    use std::io::Write as _;
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    let payload = ls_call("open", d);
    for (host, sent) in HOSTS
        .into_iter()
        .flat_map(|h| [(h, ""), (h, &payload[..40])])
    {
        let started = Instant::now();
        let mut child = common::spawn_piped(command_in(d).args(["hook", host, "--deadline", "1s"]));
        // Part of the input (or none), and stdin kept open until the answer is in.
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(sent.as_bytes()).unwrap();
        // Bounded: a hook that waits for the end of its input would never exit.
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("{host} {sent:?}: no answer 20 s after a 1 s deadline");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{host} {sent:?}: {stderr}");
        assert!(stderr.contains("in time"), "{host} {sent:?}: {stderr}");
    }
}

#[test]
fn issue_15_item_3_a_huge_policy_set_is_denied_within_the_deadline() {
    // 90,000 trivial permits in two files (each under the 4 MiB file limit).
    let half = |from: usize| {
        let mut policy = String::with_capacity(3 << 20);
        for i in from..from + 45_000 {
            policy.push_str(&format!(
                "@id(\"p{i}\")permit(principal,action,resource);\n"
            ));
        }
        policy
    };
    let dir = project(&half(0), r#"{"tools": {}}"#);
    let d = dir.path();
    std::fs::write(d.join(".cairn/policies/more.cedar"), half(45_000)).unwrap();
    for host in HOSTS {
        let started = Instant::now();
        let out = hook_with(d, host, &["--deadline", "1s"], &ls_call("huge", d));
        // Either decided in time (a fast machine) or denied at the deadline: never let through
        // by the host's timeout.
        assert!(out.code == 0 || out.code == 2, "{out:?}");
        if out.code == 2 {
            assert!(out.stderr.contains("hook_deadline"), "{out:?}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }
}

#[test]
fn issue_15_item_4_a_session_stays_gated_in_its_project_wherever_its_cwd_goes() {
    let dir = project("", r#"{"tools": {}}"#);
    let d = dir.path();
    let elsewhere = tempfile::tempdir().unwrap();
    for host in HOSTS {
        // Default deny: known at the project. Away from it, where no project is, the
        // session's call is refused, never let through (issue 34, 7: nor recorded in a
        // project it says it does not run in).
        let session = "wandering";
        let at_home = hook(d, host, &ls_call(session, d));
        at_home.expect(2);
        let away = hook(d, host, &ls_call(session, elsewhere.path()));
        assert_denied(&away, "hook_session_elsewhere");
        assert_eq!(
            exported(d, &run_of(host, session)).len(),
            1,
            "only the call in the project is recorded there"
        );
        // A new session whose hook names its project, started outside it (by the same user:
        // the same Cairn home, where the project's state is).
        let mut command = command_in(elsewhere.path());
        command.env("CAIRN_HOME", d.join(".cairn-home")).args([
            "hook",
            host,
            "--project",
            d.to_str().unwrap(),
        ]);
        let named = raw_hook(&mut command, ls_call("named", elsewhere.path()));
        named.expect(2);
        assert_eq!(exported(d, &run_of(host, "named")).len(), 1);
    }
    // Claude Code hands hooks CLAUDE_PROJECT_DIR.
    let mut command = command_in(elsewhere.path());
    command
        .env("CLAUDE_PROJECT_DIR", d)
        .env("CAIRN_HOME", d.join(".cairn-home"))
        .args(["hook", "claude-code"]);
    raw_hook(&mut command, ls_call("from-env", elsewhere.path())).expect(2);
    assert_eq!(exported(d, "cc-from-env").len(), 1);
    // A named project without `.cairn/` denies rather than letting calls through unrecorded.
    let gone = tempfile::tempdir().unwrap();
    let out = hook_with(
        gone.path(),
        "codex",
        &["--project", gone.path().to_str().unwrap()],
        &ls_call("gone", gone.path()),
    );
    assert_denied(&out, "hook_project_missing");
}

#[test]
fn issue_15_item_5_the_agent_cannot_switch_its_own_gate_off() {
    for host in HOSTS {
        let dir = project(REFUND_POLICY, REFUND_TOOLS);
        let d = dir.path();
        let policy_file = d.join(".cairn/policies/starter.cedar");
        let bash = |command: &str| ("Bash", json!({ "command": command }));
        let hostile = [
            (
                "Write",
                json!({"file_path": policy_file, "content": "@id(\"x\") permit(principal, action, resource);"}),
            ),
            (
                "Edit",
                json!({"file_path": d.join(".cairn/lanes.json"), "old_string": "verification", "new_string": "authoring"}),
            ),
            bash("sed -i 's/verification/authoring/' .cairn/lanes.json"),
            bash("sed -i 's/agent:claude-code/agent:author/' .cairn/hooks.json"),
            bash(
                "cairn decisions set scope 'all of it' && cairn decisions approve-change scope --from 1 --to 2 --approval review:self-approved",
            ),
            bash("cairn reconcile --run x --key x:0 --outcome applied --evidence none"),
            bash("cairn keys generate --name mine"),
            bash("cairn hooks uninstall --claude-code"),
            (
                "Write",
                json!({"file_path": ".claude/settings.json", "content": "{}"}),
            ),
            bash("echo '{}' > .codex/hooks.json"),
        ];
        for (tool, input) in &hostile {
            let out = hook(d, host, &pre_tool_use("self", d, tool, &input.to_string()));
            assert_denied(&out, "cairn.self-protection");
        }
        assert!(
            std::fs::read_to_string(&policy_file)
                .unwrap()
                .contains("refund-cap")
        );
        hook(
            d,
            host,
            &pre_tool_use("self", d, "Bash", r#"{"command": "cairn runs list"}"#),
        )
        .expect(0);
    }
}

#[cfg(unix)]
#[test]
fn issue_15_item_5b_a_symlink_does_not_carry_a_write_out_of_its_lane() {
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::os::unix::fs::symlink(outside.path(), d.join("src/link")).unwrap();
    let lanes = json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": "authoring",
        "lanes": [{"lane_id": "authoring", "owner_ref": "agent:claude-code", "objective": "edit src",
                   "mutation_scope": {"allowed_refs": ["file:src/*"], "denied_refs": []}}],
        "tool_bindings": {"Write": {"effect_refs": ["file:{file_path}"]}}
    });
    std::fs::write(d.join(".cairn/lanes.json"), lanes.to_string()).unwrap();
    let write = |path: &str| {
        let input = json!({"file_path": path, "content": "x"}).to_string();
        hook(d, "claude-code", &pre_tool_use("lane", d, "Write", &input))
    };
    write(&d.join("src/ok.rs").display().to_string()).expect(0);
    for escape in ["src/link/evil.txt", "src/link/../../evil.txt"] {
        assert_denied(
            &write(&d.join(escape).display().to_string()),
            "cairn.lane-scope",
        );
    }
}

#[test]
fn issue_15_item_6_no_exit_code_but_0_or_2_whatever_breaks() {
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    let call = ls_call("faults", d);
    let compact = json!({"session_id": "faults", "cwd": d, "hook_event_name": "PreCompact", "trigger": "auto"}).to_string();
    for host in HOSTS {
        let faulted = |fault: &str, stdin: &str| {
            let mut command = command_in(d);
            command
                .env("CAIRN_FAULT", fault)
                .args(["hook", host, "--deadline", "2s"]);
            raw_hook(&mut command, stdin).code
        };
        for fault in [
            "gate-panic",
            "gate-abort",
            "gate-overflow",
            "gate-exit",
            "gate-hang",
        ] {
            assert_eq!(faulted(fault, &call), 2, "{host} {fault}");
            assert_eq!(faulted(fault, &compact), 0, "{host} {fault}");
        }
        // Found by the hook_stdin fuzz target: an unknown event carrying a tool call, whose
        // payload is not UTF-8, was answered exit 0 (only its event name was looked at).
        let renamed = b"{\"session_id\": \"fz\xff\", \"cwd\": \"/tmp\", \"hook_event_name\": \"PreolUse\", \"tool_name\": \"Bash\", \"tool_input\": {}}";
        let mut command = command_in(d);
        command.args(["hook", host]);
        assert_eq!(raw_hook(&mut command, renamed).code, 2, "{host}");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt as _;
            let mut command = command_in(d);
            command
                .arg("hook")
                .arg(host)
                .arg(std::ffi::OsStr::from_bytes(b"\xff\xfe"));
            assert_eq!(raw_hook(&mut command, &call).code, 2, "{host}");
            let mut command = command_in(d);
            command
                .arg("--json")
                .arg(std::ffi::OsStr::from_bytes(b"\xff"));
            let out = Output::of(&mut command);
            assert_eq!(out.expect(2).error_code(), "usage");
        }
    }
}

#[cfg(unix)]
#[test]
fn issue_15_item_7_a_slow_client_holds_neither_the_server_nor_other_calls() {
    use std::io::Write as _;
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    let mut server = command_in(d)
        .args(["hooks", "serve", "--idle", "60s"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let socket = common::state(d).join("hookd.sock");
    let ready = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            ready.elapsed() < Duration::from_secs(30),
            "the server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // One byte a second: the server must not wait for it.
    let mut slow = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let dribble = std::thread::spawn(move || {
        for _ in 0..6 {
            if slow.write_all(b"{").is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        false
    });
    std::thread::sleep(Duration::from_millis(200));
    for host in HOSTS {
        let started = Instant::now();
        let out = hook(
            d,
            host,
            &pre_tool_use("busy", d, "mcp__pay__refund", r#"{"amount": 25000}"#),
        );
        assert_denied(&out, "refund-cap");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
    assert!(dribble.join().unwrap(), "the slow client was cut off");
    let _ = server.kill();
    let _ = server.wait();
}

fn compaction(dir: &Path, session: &str, summary: &str) {
    for event in [
        json!({"session_id": session, "cwd": dir, "hook_event_name": "PreCompact", "trigger": "manual"}),
        json!({"session_id": session, "cwd": dir, "hook_event_name": "PostCompact", "trigger": "manual", "compact_summary": summary}),
        json!({"session_id": session, "cwd": dir, "hook_event_name": "SessionStart", "source": "compact"}),
        json!({"session_id": session, "cwd": dir, "hook_event_name": "SessionEnd", "reason": "other"}),
    ] {
        hook(dir, "claude-code", &event.to_string()).expect(0);
    }
}

/// Every file below `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            found.push(path.display().to_string());
        }
    }
    found
}

#[test]
fn issue_15_item_8_a_summary_goes_only_to_the_content_store_under_its_retention() {
    let secret = "SUMMARY-SECRET-7f3a-the user's private notes";
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    hook(d, "claude-code", &ls_call("sum", d)).expect(0);
    compaction(d, "sum", secret);
    assert_eq!(
        files_holding(&common::state(d).join("sessions"), secret.as_bytes()),
        Vec::<String>::new()
    );
    // Kept in the content store under the default retention…
    assert!(!files_holding(&common::state(d), secret.as_bytes()).is_empty());

    // … and nowhere at all with retention off.
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    std::fs::write(
        d.join(".cairn/hooks.json"),
        r#"{"schema_version": "cairn.hooks/v1", "content_retention_hours": 0}"#,
    )
    .unwrap();
    hook(d, "claude-code", &ls_call("sum", d)).expect(0);
    compaction(d, "sum", secret);
    assert_eq!(files_holding(d, secret.as_bytes()), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn issue_15_item_9_the_store_is_owner_only_and_keys_others_can_write_are_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    hook(d, "claude-code", &ls_call("modes", d)).expect(0);
    for file in ["cairn.db", "cairn.db-wal", "cairn.db-shm"] {
        assert_eq!(mode(&common::state(d).join(file)), 0o600, "{file}");
    }
    assert_eq!(mode(&d.join(".cairn")), 0o700);
    assert_eq!(mode(&common::state(d)), 0o700);
    // A store left world-readable by an older Cairn is fixed by `init`.
    std::fs::set_permissions(
        common::state(d).join("cairn.db"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    Output::of(command_in(d).args(["init", "--dir", d.to_str().unwrap()])).expect(0);
    assert_eq!(mode(&common::state(d).join("cairn.db")), 0o600);
    // A keys folder others can write is refused, loudly.
    std::fs::set_permissions(
        common::state(d).join("keys"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let verify = Output::of(command_in(d).args(["--json", "ledger", "verify", "--all"]));
    assert_eq!(verify.expect(2).error_code(), "keys_writable_by_others");
    let start = json!({"session_id": "modes", "cwd": d, "hook_event_name": "SessionStart", "source": "startup"});
    let out = hook(d, "claude-code", &start.to_string());
    out.expect(0);
    assert!(out.stderr.contains("keys_writable_by_others"), "{out:?}");
}

#[test]
fn issue_15_item_11_a_store_whose_pages_are_garbage_is_reported_as_tampering() {
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    for i in 0..40 {
        hook(
            d,
            "claude-code",
            &pre_tool_use(
                "pages",
                d,
                "Bash",
                &json!({"command": format!("echo {i}")}).to_string(),
            ),
        )
        .expect(0);
    }
    // Fold the write-ahead log into the file, then overwrite pages after the header.
    let db = rusqlite::Connection::open(common::state(d).join("cairn.db")).unwrap();
    db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(db);
    let mut bytes = std::fs::read(common::state(d).join("cairn.db")).unwrap();
    let page = 16 << 10;
    for byte in bytes.iter_mut().skip(page) {
        *byte = 0xa5;
    }
    std::fs::write(common::state(d).join("cairn.db"), bytes).unwrap();
    let out = Output::of(command_in(d).args(["--json", "ledger", "verify", "--all"]));
    assert_eq!(out.expect(5).error_code(), "store_corrupt", "{out:?}");
}

#[test]
fn issue_15_item_12_a_tool_named_like_the_checkpoint_schema_keeps_its_bundle_verifiable() {
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    let call = pre_tool_use("named", d, "cairn.checkpoint/v1", "{}");
    hook(d, "claude-code", &call).expect(0);
    // Its outcome comes back, a known failure (a call left without one at SessionEnd, or
    // with a response of a shape Cairn does not know, keeps the run open).
    let mut done: serde_json::Value = serde_json::from_str(&call).unwrap();
    done["hook_event_name"] = json!("PostToolUseFailure");
    done["error"] = json!("the tool reported an error");
    hook(d, "claude-code", &done.to_string()).expect(0);
    let end = json!({"session_id": "named", "cwd": d, "hook_event_name": "SessionEnd", "reason": "other"});
    hook(d, "claude-code", &end.to_string()).expect(0);
    let bundle = d.join("named.jsonl");
    Output::of(command_in(d).args(common::export_args("cc-named", bundle.to_str().unwrap())))
        .expect(0);
    let out = Output::of(command_in(d).args([
        "--json",
        "ledger",
        "verify",
        "--bundle",
        bundle.to_str().unwrap(),
    ]));
    assert_eq!(out.expect(0).json()["intact"], true);
}

#[test]
fn issue_15_item_13_a_proof_larger_than_any_proof_can_be_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("proof.json");
    let hashes = vec!["\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\""; 40_000].join(",");
    std::fs::write(&path, format!("{{\"audit_path\": [{hashes}]}}")).unwrap();
    let out = Output::of(command_in(d).args([
        "--json",
        "ledger",
        "verify-proof",
        path.to_str().unwrap(),
    ]));
    out.expect(2);
    assert!(out.error_message().contains("at most 64 hashes"), "{out:?}");
}

#[test]
fn issue_15_item_14_an_invalid_policy_id_is_invalid_input() {
    for id in ["a\\0b".to_owned(), "x".repeat(300)] {
        let dir = project(
            &format!("@id(\"{id}\")\npermit(principal, action, resource);\n"),
            r#"{"tools": {}}"#,
        );
        let out = Output::of(command_in(dir.path()).args(["--json", "policy", "check"]));
        assert_eq!(out.expect(2).error_code(), "policy_invalid_id");
    }
}

#[test]
fn issue_15_item_14_a_missing_signing_key_is_said_at_session_start_and_in_runs_list() {
    let dir = project(REFUND_POLICY, REFUND_TOOLS);
    let d = dir.path();
    std::fs::remove_dir_all(common::state(d).join("keys")).unwrap();
    let start = json!({"session_id": "nokey", "cwd": d, "hook_event_name": "SessionStart", "source": "startup"});
    let out = hook(d, "claude-code", &start.to_string());
    out.expect(0);
    assert!(out.stderr.contains("no usable signing key"), "{out:?}");
    assert!(out.stdout.contains("systemMessage"), "{out:?}");
    hook(d, "claude-code", &ls_call("nokey", d)).expect(0);
    let list = Output::of(command_in(d).args(["runs", "list"]));
    list.expect(0);
    assert!(list.stderr.contains("no usable signing key"), "{list:?}");
}
