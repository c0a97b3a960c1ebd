//! What the fuzz targets share: a project on a memory file system for the hook target, the
//! policy the gate targets judge with, and the oracle of what that policy allows.

#![allow(dead_code, reason = "each target uses a different part")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use cairn_hooks::{Environment, KeptStores};
use cairn_policy::{Arguments, GateRequest, PolicyGate, PolicySource, ToolCatalog};

/// Forbids refunds over 10,000 and `rm -rf` in Bash; permits everything else.
pub const POLICY: &str = r#"@id("all")
permit(principal, action, resource);
@id("refund-cap")
forbid(principal, action == Action::"mcp__pay__refund", resource)
    when { context.args has amount && context.args.amount > 10000 };
@id("no-rm")
forbid(principal, action == Action::"Bash", resource)
    when { context.args has command && context.args.command like "*rm -rf*" };
"#;

/// Declares the refund's `amount` and Bash's `command`.
pub const TOOLS: &str = r#"{"tools": {"mcp__pay__refund": {"args": {"amount": "Long"}},
    "Bash": {"args": {"command": "String"}}}}"#;

pub static GATE: LazyLock<PolicyGate> = LazyLock::new(|| {
    let catalog = ToolCatalog::from_json("tools.json", TOOLS).expect("catalog");
    PolicyGate::load(&[PolicySource::new("p.cedar", POLICY)], &catalog).expect("policy")
});

/// A project whose files live on a memory file system when there is one (`fsync`s are then
/// cheap), with [`POLICY`] and [`TOOLS`].
pub struct HookFixture {
    pub root: PathBuf,
    pub env: Environment,
}

pub static HOOK: LazyLock<HookFixture> = LazyLock::new(|| {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let root = base.join(format!("cairn-fuzz-hook-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".cairn/policies")).expect("project");
    std::fs::write(root.join(".cairn/policies/p.cedar"), POLICY).expect("policy");
    std::fs::write(root.join(".cairn/tools.json"), TOOLS).expect("tools");
    let env = Environment {
        clock: Arc::new(cairn_core::SystemClock),
        stores: Arc::new(KeptStores::new(cairn_store_sqlite::SqliteFiles)),
        store: None,
        keys_dir: None,
        fault: None,
        gates: Arc::default(),
        binding: cairn_hooks::project::Binding {
            fixed: None,
            explicit: Some(root.clone()),
            index: None,
            home: Some(root.join(".cairn-home")),
        },
        namespace: None,
        gate: None,
    };
    HookFixture { root, env }
});

/// Whether [`POLICY`] allows `tool` with exactly the argument bytes `raw`, for the project
/// at `root` (whose own configuration no call may touch).
pub fn allows(root: &Path, tool: &str, raw: &[u8]) -> bool {
    let Ok(args) = Arguments::read(raw) else {
        return false;
    };
    let guard = cairn_runtime::protect::ProjectGuard::new(root, &[], cairn_hooks::PROTECTED);
    if guard.refusal(args.value()).is_some() {
        return false;
    }
    GATE.decide(&GateRequest {
        mcp: None,
        tenant: "local",
        principal: "agent",
        run: "r",
        task: "t",
        lane: None,
        tool,
        tool_version: "unversioned",
        args: &args,
    })
    .is_allow()
}

/// The trusted key and the genuine run of the fixture bundle (`fixtures/`).
pub fn demo_trusted() -> cairn_ledger::keys::TrustedKeys {
    let key = cairn_ledger::keys::VerifierKey::parse(include_str!("../fixtures/demo.pub").trim())
        .expect("fixture key");
    cairn_ledger::keys::TrustedKeys::new(vec![key])
}

/// The record digests of the genuine fixture run, in step order.
pub fn demo_digests() -> Vec<cairn_core::Digest> {
    let bundle = cairn_ledger::bundle::parse_bundle(include_str!("../fixtures/demo.bundle.jsonl"))
        .expect("fixture bundle");
    bundle
        .rows
        .iter()
        .map(|row| row.as_ref().expect("fixture record").digest)
        .collect()
}
