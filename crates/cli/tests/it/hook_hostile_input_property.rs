//! Issue 15, acceptance 2: over generated hostile hook inputs and arguments, every
//! `PreToolUse` answers exit 0 or 2, and exit 0 — the call may run — happens only when the
//! project's policy, given exactly the bytes the record digests, allows the call (and the
//! call touches nothing of Cairn's own). Cases run in-process through `cairn_hooks::handle`
//! (the worker's own code path) and a sample through the `cairn` binary itself.

use crate::common;

use std::path::Path;
use std::sync::{Arc, LazyLock};

use cairn_core::Digest;
use cairn_hooks::{Answer, Environment, Host, KeptStores, StoreLocation, StoreOpener};
use cairn_ledger::Store;
use cairn_policy::{Arguments, GateRequest, PolicyGate};
use proptest::prelude::*;
use serde_json::json;

const POLICY: &str = r#"@id("all")
permit(principal, action, resource);
@id("refund-cap")
forbid(principal, action == Action::"mcp__pay__refund", resource)
    when { context.args has amount && context.args.amount > 10000 };
@id("no-rm")
forbid(principal, action == Action::"Bash", resource)
    when { context.args has command && context.args.command like "*rm -rf*" };
"#;
const TOOLS: &str = r#"{"tools": {"mcp__pay__refund": {"args": {"amount": "Long", "memo": "String"}},
                       "Bash": {"args": {"command": "String"}}}}"#;

struct Fixture {
    dir: tempfile::TempDir,
    gate: PolicyGate,
    env: Environment,
    store: Arc<dyn Store>,
}

/// A project with [`POLICY`] and [`TOOLS`].
fn project() -> tempfile::TempDir {
    let dir = common::init_project();
    std::fs::write(dir.path().join(".cairn/policies/starter.cedar"), POLICY).unwrap();
    std::fs::write(dir.path().join(".cairn/tools.json"), TOOLS).unwrap();
    dir
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let dir = project();
    let policies = dir.path().join(".cairn/policies");
    let tools = dir.path().join(".cairn/tools.json");
    let gate = cairn_runtime::config::load_gate(&policies, Some(&tools)).unwrap();
    let opener = Arc::new(KeptStores::new(cairn_store_sqlite::SqliteFiles));
    let store = opener
        .open(&StoreLocation::File(
            common::state(dir.path()).join("cairn.db"),
        ))
        .unwrap();
    let env = Environment {
        clock: Arc::new(cairn_core::SystemClock),
        stores: opener,
        store: None,
        keys_dir: None,
        fault: None,
        gates: Arc::default(),
        binding: cairn_hooks::project::Binding {
            fixed: None,
            explicit: Some(dir.path().to_path_buf()),
            index: None,
            home: Some(dir.path().join(".cairn-home")),
        },
        namespace: None,
        gate: None,
    };
    Fixture {
        dir,
        gate,
        env,
        store,
    }
});

/// Raw JSON text for an argument value, hostile constructs included.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("25000".to_owned()),
        Just("5".to_owned()),
        Just("-0".to_owned()),
        Just("1e400".to_owned()),
        Just("-1e400".to_owned()),
        Just("2.5e4".to_owned()),
        Just("10000.0000000000001".to_owned()),
        Just("9223372036854775808".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("true".to_owned()),
        Just("null".to_owned()),
        Just(r#""\udead""#.to_owned()),
        Just(r#""\ud83d\ude00""#.to_owned()),
        Just(r#""rm -rf /""#.to_owned()),
        Just(r#""cat .cairn/keys/active""#.to_owned()),
        Just(r#""x\u0000y""#.to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[a-z .*/-]{0,12}".prop_map(|s| json!(s).to_string()),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(","))),
            (1..130_usize).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
        ]
    })
}

/// Raw JSON text for a tool's arguments: objects with declared and other keys (duplicates
/// possible), other JSON, or text that is not JSON at all.
fn arguments() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("amount"),
        Just("memo"),
        Just("command"),
        Just("file_path"),
        Just("tags"),
    ];
    prop_oneof![
        8 => prop::collection::vec((key, value()), 0..4).prop_map(|members| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            format!("{{{}}}", members.join(", "))
        }),
        1 => value(),
        1 => Just(r#"{"amount": 25000"#.to_owned()),
    ]
}

fn tool() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("mcp__pay__refund"),
        Just("Bash"),
        Just("Write"),
        Just("Read")
    ]
}

fn payload(session: &str, tool: &str, input: &str) -> String {
    payload_in(FIXTURE.dir.path(), session, tool, input)
}

/// A `PreToolUse` of `tool` at `root`.
fn payload_in(root: &Path, session: &str, tool: &str, input: &str) -> String {
    format!(
        r#"{{"session_id": "{session}", "cwd": {}, "hook_event_name": "PreToolUse", "tool_name": "{tool}", "tool_input": {input}, "tool_use_id": "t"}}"#,
        json!(root)
    )
}

/// What the policy says of `tool` with exactly these argument bytes; `None` when they do not
/// read (the built-in rule denies them).
fn policy_allows(tool: &str, raw: &str) -> bool {
    policy_allows_in(FIXTURE.dir.path(), tool, raw)
}

/// The same for the project at `root` (with the same policy).
fn policy_allows_in(root: &Path, tool: &str, raw: &str) -> bool {
    let Ok(args) = Arguments::read(raw.as_bytes()) else {
        return false;
    };
    let guard = cairn_runtime::protect::ProjectGuard::new(root, &[], cairn_hooks::PROTECTED);
    if guard.refusal(args.value()).is_some() {
        return false;
    }
    FIXTURE
        .gate
        .decide(&GateRequest {
            mcp: None,
            tenant: "local",
            principal: "agent:claude-code",
            run: "r",
            task: "t",
            lane: None,
            tool,
            tool_version: "unversioned",
            args: &args,
        })
        .is_allow()
}

/// The last record of the session's run: (allowed, digest of the arguments recorded).
fn last_record(session: &str) -> (bool, Digest) {
    let rows = FIXTURE
        .store
        .rows(
            &"local".parse().unwrap(),
            &format!("cc-{session}").parse().unwrap(),
        )
        .unwrap();
    let record = rows.last().unwrap().as_ref().unwrap();
    (
        record.admission.as_ref().unwrap().decision == cairn_ledger::record::AllowDeny::Allow,
        record.args.as_ref().unwrap().digest,
    )
}

/// Whether an answer lets the call run: exit 0 (a deny always exits 2).
#[track_caller]
fn lets_through(answer: &Answer) -> bool {
    assert!(answer.exit == 0 || answer.exit == 2, "{answer:?}");
    if answer.exit == 0 {
        assert!(!answer.denies, "{answer:?}");
    }
    answer.exit == 0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn issue_15_a_pre_tool_use_runs_only_what_the_policy_allows_for_the_digested_bytes(
        tool in tool(),
        raw in arguments(),
        session in "[a-z]{6}",
    ) {
        let stdin = payload(&session, tool, &raw);
        let answer = cairn_hooks::handle(Host::ClaudeCode, stdin.as_bytes(), &FIXTURE.env);
        let through = lets_through(&answer);
        // The host's payload itself may not parse (it then never reaches the gate).
        let parsed = serde_json::from_str::<serde_json::Value>(&stdin).is_ok()
            || cairn_hooks::input::parse(Host::ClaudeCode, stdin.as_bytes()).is_ok();
        if through {
            prop_assert!(parsed);
            prop_assert!(policy_allows(tool, &raw), "let through: {tool} {raw}");
            let (allowed, digest) = last_record(&session);
            prop_assert!(allowed);
            prop_assert_eq!(digest, Digest::of(raw.as_bytes()), "the record digests other bytes");
        } else if cairn_hooks::input::parse(Host::ClaudeCode, stdin.as_bytes()).is_ok() {
            // Whatever was refused after the input was read is recorded as a deny of these bytes.
            let (allowed, digest) = last_record(&session);
            prop_assert!(!allowed);
            prop_assert_eq!(digest, Digest::of(raw.as_bytes()));
        }
    }

    #[test]
    fn issue_15_garbage_stdin_is_never_let_through(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        cut in 0..400_usize,
    ) {
        let mut stdin = payload("garbage", "Bash", r#"{"command": "ls"}"#).into_bytes();
        stdin.truncate(cut.min(stdin.len()));
        stdin.extend_from_slice(&bytes);
        for host in [Host::ClaudeCode, Host::Codex] {
            let answer = cairn_hooks::handle(host, &stdin, &FIXTURE.env);
            if lets_through(&answer) {
                // Only a call that really read as an allowed one, or an event that is not a
                // tool call at all, may pass.
                prop_assert!(!cairn_hooks::input::blocks_on_failure(&stdin)
                    || cairn_hooks::input::parse(host, &stdin).is_ok());
            }
        }
    }
}

/// The same property through the `cairn` binary: the process only ever exits 0 or 2, and 0
/// only for what the policy allows.
#[test]
fn issue_15_the_binary_exits_0_only_for_what_the_policy_allows() {
    // A project of its own, removed at the end: the resident server the first call starts
    // there exits once the project is gone (the static fixture's folder never is).
    let dir = project();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(48));
    let strategy = (tool(), arguments());
    runner
        .run(&strategy, |(tool, raw)| {
            let stdin = payload_in(dir.path(), "binary", tool, &raw);
            let out = common::hook(&mut common::command_in(dir.path()), "claude-code", &stdin);
            prop_assert!(out.code == 0 || out.code == 2, "{out:?}");
            if out.code == 0 {
                prop_assert!(
                    policy_allows_in(dir.path(), tool, &raw),
                    "let through: {tool} {raw}"
                );
            }
            Ok(())
        })
        .unwrap();
}
