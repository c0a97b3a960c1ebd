//! `cairn demo`: the main job on the embedded default. The canonical support-triage scenario
//! ([`scenario`]) runs on a fresh SQLite store through the real Cedar gate, the executor façade
//! and the boundary protocol; the run is closed with a terminal record and a signed
//! checkpoint, verified, and printed as a timeline ([`timeline`]).

mod scenario;
mod timeline;

use std::fmt::Write as _;
use std::sync::Arc;

use cairn_core::{Clock, SystemClock};
use cairn_ledger::record::{Label, TerminationReason};
use cairn_ledger::store::OpenMode;
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::keyring::{Keyring, KeyringError};
use cairn_runtime::{RecorderOptions, Replay, Runs};
use serde_json::json;

use crate::args::DemoArgs;
use crate::context::{Context, PROJECT_DIR, STORE_FILE, StoreLocation};
use crate::failure::{CliCode, Failure, exit};
use crate::output::Outcome;
use crate::store::OpenStore as _;

/// The demo's policy set and tool catalog (Cedar; see `crates/cli/templates/`).
const DEMO_POLICY: &str = include_str!("../../../templates/demo.cedar");
const DEMO_TOOLS: &str = include_str!("../../../templates/demo-tools.json");

/// The demo's gate: its own Cedar policy set, validated against its own tool catalog.
fn demo_gate() -> Result<PolicyGate, Failure> {
    let catalog = ToolCatalog::from_json("demo-tools.json", DEMO_TOOLS)?;
    Ok(PolicyGate::load(
        &[PolicySource {
            name: "demo.cedar".to_owned(),
            text: DEMO_POLICY.to_owned(),
        }],
        &catalog,
    )?)
}

/// Where the demo's store goes: `--store`/`CAIRN_STORE` (a file or a `postgres://` URL),
/// else `--dir`, else an enclosing `.cairn/` project, else a new temporary directory that is
/// kept for exploring.
fn demo_store(ctx: &Context, args: &DemoArgs) -> Result<StoreLocation, Failure> {
    if ctx.explicit_store.is_some() {
        return ctx.store_location();
    }
    if let Some(dir) = &args.dir {
        return Ok(StoreLocation::File(dir.join(PROJECT_DIR).join(STORE_FILE)));
    }
    if ctx.has_configured_store() {
        // The enclosing project's store, in its state folder (made if missing).
        if let Some(project) = std::env::current_dir()
            .ok()
            .and_then(|cwd| cairn_runtime::layout::Project::find(&cwd))
        {
            project.prepare_state().map_err(|e| {
                Failure::new(
                    CliCode::IO,
                    format!("cannot create `{}`: {e}", project.state().display()),
                )
            })?;
        }
        return ctx.store_location();
    }
    let dir = tempfile::Builder::new()
        .prefix("cairn-demo-")
        .tempdir()
        .map_err(|e| {
            Failure::new(
                CliCode::IO,
                format!("cannot create a temporary directory: {e}"),
            )
        })?
        .keep();
    Ok(StoreLocation::File(dir.join(PROJECT_DIR).join(STORE_FILE)))
}

fn signing_key(keyring: &Keyring) -> Result<cairn_ledger::keys::SigningKey, Failure> {
    match keyring.active_signing_key() {
        Ok(key) => Ok(key),
        Err(KeyringError::NoSigningKey { .. }) => {
            keyring.generate(&mut rand_core::OsRng, "cairn.demo")?;
            Ok(keyring.active_signing_key()?)
        }
        Err(e) => Err(e.into()),
    }
}

fn new_run_id(now: cairn_core::Timestamp) -> Result<cairn_core::RunId, Failure> {
    let mut suffix = [0u8; 3];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut suffix);
    let stamp = now.as_jiff().strftime("%Y%m%dT%H%M%S").to_string();
    Ok(format!("run-{stamp}-{}", hex_lower(&suffix)).parse()?)
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Runs `cairn demo`.
pub fn run(ctx: &Context, args: &DemoArgs) -> Result<Outcome, Failure> {
    let location = demo_store(ctx, args)?;
    let store = location.open(OpenMode::CreateIfMissing)?;
    let keyring = Keyring::open(ctx.keys_dir_for(&location)?);
    let key = signing_key(&keyring)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let run_id = new_run_id(clock.now())?;
    let tenant: cairn_core::TenantId = "demo".parse()?;
    let task: cairn_core::TaskId = "task-support-T-4821".parse()?;
    let gate = Arc::new(demo_gate()?);

    let runs = Runs::new(store.clone(), clock.clone(), RecorderOptions::default());
    let recorder = runs.open(&tenant, &run_id, Some(&task))?;
    let mut executor = runs.executor(recorder, gate, "agent:support-triage", Replay::Skip)?;
    let notes = scenario::play(&mut executor, clock.as_ref())?;
    let closed = executor.terminate(
        TerminationReason::Completed,
        Some(Label::new("escalated to billing")?),
        &key,
    )?;

    let rows = store.rows(&tenant, &run_id)?;
    let note = store.checkpoint(&tenant, &run_id)?;
    let trusted = keyring.trusted_keys()?;
    let report = verify_run(
        &tenant,
        &run_id,
        &rows,
        note.as_deref(),
        &trusted,
        CheckpointPolicy::Required,
    );
    let records: Vec<_> = rows
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .cloned()
        .collect();
    let signer = key.verifier_key().id_label();
    let human = timeline::render(&timeline::Run {
        store: &location.to_string(),
        records: &records,
        notes: &notes,
        closed: &closed,
        report: &report,
        signer: &signer,
    });
    let intact = report.is_intact();
    let json = json!({
        "store": location.to_string(),
        "tenant_id": tenant,
        "run_id": run_id,
        "task_id": task,
        "records": records,
        "continuity": notes
            .iter()
            .map(|n| json!({"after_step": n.after_step, "decision": n.decision.to_json()}))
            .collect::<Vec<_>>(),
        "checkpoint": {
            "origin": closed.checkpoint.checkpoint().origin,
            "size": closed.checkpoint.checkpoint().size,
            "note": closed.checkpoint.note(),
        },
        "verification": report,
    });
    Ok(Outcome {
        json,
        human,
        exit: if intact { exit::OK } else { exit::TAMPER },
        silent: false,
    })
}
