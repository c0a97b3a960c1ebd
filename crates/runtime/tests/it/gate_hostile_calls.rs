//! Issue 15 ("No tool call gets through undecided"): the executor judges exactly the bytes it
//! records, or denies — through the real Cedar gate, with a policy that forbids refunds over
//! 10,000.

use crate::common;

use std::sync::Arc;

use cairn_ledger::Store;
use cairn_ledger::record::AllowDeny;
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::protect::{ProjectGuard, Protected};
use cairn_runtime::{Admitted, DenyCause, Executor, ToolCall};

const POLICY: &str = r#"
@id("all") permit(principal, action, resource);
@id("refund-cap") forbid(principal, action == Action::"payments.refund", resource)
    when { context.args has amount && context.args.amount > 10000 };
"#;

const CATALOG: &str = r#"{"tools": {"payments.refund": {"args": {"amount": "Long"}}}}"#;

fn executor(dir: &std::path::Path) -> (Executor, Arc<cairn_store_sqlite::SqliteStore>) {
    let store = common::open(&dir.join("gate.db"));
    let catalog = ToolCatalog::from_json("tools.json", CATALOG).unwrap();
    let gate = PolicyGate::load(&[PolicySource::new("p.cedar", POLICY)], &catalog).unwrap();
    let recorder = common::sync_recorder(store.clone(), "task-g", "run-g");
    (Executor::new(recorder, Arc::new(gate), "agent"), store)
}

fn refund(args: &[u8]) -> ToolCall<'_> {
    call_of("payments.refund", args)
}

/// `(allowed, rule ids)` of one admitted call.
fn admit(executor: &mut Executor, args: &[u8]) -> (bool, Vec<String>) {
    match executor.admit(&refund(args)).unwrap() {
        Admitted::Permitted(_) => (true, vec!["<allowed>".to_owned()]),
        Admitted::Denied(denial) => (false, denial.rule_ids),
    }
}

#[test]
fn issue_15_arguments_a_lenient_reader_drops_are_denied_by_a_built_in_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (mut executor, store) = executor(dir.path());
    let deep = format!(
        r#"{{"amount": 25000, "tags": {}{}}}"#,
        "[".repeat(127),
        "]".repeat(127)
    );
    let hostile: [&[u8]; 5] = [
        // A lone surrogate in a field no policy reads.
        br#"{"amount": 25000, "memo": "\udead"}"#,
        // Nesting past the limit, in an undeclared field.
        deep.as_bytes(),
        // A number no double holds, in the declared field.
        br#"{"amount": 1e400}"#,
        // A duplicate key: the record digests both, a lenient reader keeps the last.
        br#"{"amount": 25000, "amount": 5}"#,
        // Not JSON at all.
        br#"{"amount": 25000"#,
    ];
    for args in hostile {
        assert_eq!(
            admit(&mut executor, args),
            (false, vec!["cairn.args-unreadable".to_owned()]),
            "{}",
            String::from_utf8_lossy(args)
        );
    }
    // The same refund, readable, is forbidden by the policy itself.
    assert_eq!(
        admit(&mut executor, br#"{"amount": 25000, "memo": "x"}"#),
        (false, vec!["refund-cap".to_owned()])
    );
    // Every refusal is recorded like any other deny.
    let rows = store
        .rows(&"acme".parse().unwrap(), &"run-g".parse().unwrap())
        .unwrap();
    assert_eq!(rows.len(), hostile.len() + 1);
    for row in &rows[..hostile.len()] {
        let admission = row.as_ref().unwrap().admission.clone().unwrap();
        assert_eq!(admission.decision, AllowDeny::Deny);
        assert_eq!(admission.rule_ids[0].as_str(), "cairn.args-unreadable");
    }
}

#[test]
fn issue_15_a_declared_long_of_minus_zero_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (mut executor, _store) = executor(dir.path());
    assert!(admit(&mut executor, br#"{"amount": -0}"#).0);
    // Numbers that are not integer literals stay refused, never rounded.
    for args in [
        &br#"{"amount": 25000.0}"#[..],
        br#"{"amount": 2.5e4}"#,
        br#"{"amount": 9223372036854775808}"#,
    ] {
        assert!(
            !admit(&mut executor, args).0,
            "{}",
            String::from_utf8_lossy(args)
        );
    }
}

/// What an edge hands the guard besides `.cairn/` (the hooks: the hosts' settings and the
/// person-only commands, `cairn_hooks::PROTECTED`), as much as these calls need.
const EDGE: Protected = Protected {
    files: &[".claude/settings.json"],
    program: "cairn",
    person_commands: &[&["reconcile"], &["decisions", "set"]],
    ..Protected::NOTHING_ELSE
};

fn guarded(dir: &std::path::Path, root: &std::path::Path) -> Executor {
    let (executor, _store) = executor(dir);
    executor.with_guard(ProjectGuard::new(root, &[], EDGE))
}

fn call_of<'a>(tool: &str, args: &'a [u8]) -> ToolCall<'a> {
    common::call(tool, "1", args)
}

#[test]
fn issue_15_no_policy_lets_a_call_touch_cairns_own_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join(".cairn/policies")).unwrap();
    // The policy permits every tool but refunds over the cap: Write and Bash are permitted.
    let mut executor = guarded(dir.path(), &root);
    let target = root.join(".cairn/policies/all.cedar").display().to_string();
    let hostile = [
        (
            "Write",
            serde_json::json!({"file_path": target, "content": "permit(principal, action, resource);"}),
        ),
        (
            "Edit",
            serde_json::json!({"file_path": ".cairn/lanes.json", "old_string": "verification", "new_string": "authoring"}),
        ),
        (
            "Bash",
            serde_json::json!({"command": "sed -i 's/agent:codex/agent:author/' .cairn/hooks.json"}),
        ),
        (
            "Bash",
            serde_json::json!({"command": "cairn decisions set scope x && cairn decisions approve-change scope --from 1 --to 2 --approval review:self-approved"}),
        ),
        (
            "Bash",
            serde_json::json!({"command": "cairn reconcile --run r --key r:0 --outcome applied --evidence none"}),
        ),
        (
            "Write",
            serde_json::json!({"file_path": ".claude/settings.json", "content": "{}"}),
        ),
    ];
    for (tool, args) in hostile {
        let bytes = args.to_string();
        match executor.admit(&call_of(tool, bytes.as_bytes())).unwrap() {
            Admitted::Denied(denial) => {
                assert_eq!(denial.rule_ids, ["cairn.self-protection"], "{args}");
                assert!(matches!(denial.cause, DenyCause::SelfProtection { .. }));
            }
            Admitted::Permitted(_) => panic!("{tool} {args} was admitted"),
        }
    }
    let fine = serde_json::json!({"command": "cargo test && cairn runs list"}).to_string();
    assert!(matches!(
        executor.admit(&call_of("Bash", fine.as_bytes())).unwrap(),
        Admitted::Permitted(_)
    ));
}

#[test]
fn issue_15_a_lane_path_is_judged_by_where_it_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("src/real")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("src/link")).unwrap();
    std::os::unix::fs::symlink(outside.join("file.txt"), root.join("src/file-link")).unwrap();
    let config = serde_json::json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": "authoring",
        "lanes": [{"lane_id": "authoring", "owner_ref": "agent", "objective": "edit src",
                   "mutation_scope": {"allowed_refs": ["file:src/*"], "denied_refs": []}}],
        "tool_bindings": {"Write": {"effect_refs": ["file:{file_path}"]}}
    });
    let lanes_file = dir.path().join("lanes.json");
    std::fs::write(&lanes_file, config.to_string()).unwrap();
    let book = cairn_runtime::config::load_lanes(&lanes_file, &root)
        .unwrap()
        .unwrap();
    let mut executor = guarded(dir.path(), &root).with_lanes(book);
    let admitted = |executor: &mut Executor, path: String| {
        let args = serde_json::json!({"file_path": path, "content": "x"}).to_string();
        matches!(
            executor.admit(&call_of("Write", args.as_bytes())).unwrap(),
            Admitted::Permitted(_)
        )
    };
    assert!(admitted(&mut executor, "src/real/ok.rs".to_owned()));
    assert!(admitted(
        &mut executor,
        root.join("src/new/ok.rs").display().to_string()
    ));
    for escape in [
        "src/link/evil.txt".to_owned(),
        root.join("src/link/evil.txt").display().to_string(),
        "src/file-link".to_owned(),
        "src/link/../evil.txt".to_owned(),
        "src/real/../link/evil.txt".to_owned(),
    ] {
        assert!(!admitted(&mut executor, escape.clone()), "{escape}");
    }
}
