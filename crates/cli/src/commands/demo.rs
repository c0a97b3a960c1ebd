//! `cairn demo`: the main job on the embedded default. A scripted support-triage agent run on
//! a fresh SQLite store goes through the real Cedar gate and the executor façade — several
//! allowed steps, a refund forbidden by a named rule, an export no rule covers (default deny),
//! a terminal record — and is closed with a signed checkpoint, verified, and printed as a
//! timeline.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Clock, SystemClock};
use cairn_ledger::Store;
use cairn_ledger::record::{Decision, Label, TerminationReason, ToolRef};
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::keyring::{Keyring, KeyringError};
use cairn_runtime::{Admitted, Executor, Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};
use serde_json::{Value, json};

use crate::args::DemoArgs;
use crate::context::{Context, PROJECT_DIR, STORE_FILE};
use crate::failure::{Failure, exit};
use crate::output::Outcome;

/// The demo's policy set and tool catalog (Cedar; see `crates/cli/templates/`).
const DEMO_POLICY: &str = include_str!("../../templates/demo.cedar");
const DEMO_TOOLS: &str = include_str!("../../templates/demo-tools.json");

/// One scripted step: the tool, its version, its arguments and what it returns.
struct ScriptStep {
    tool: &'static str,
    version: &'static str,
    args: Value,
    result: Value,
}

fn script() -> Vec<ScriptStep> {
    vec![
        ScriptStep {
            tool: "tickets.read",
            version: "1",
            args: json!({"ticket_id": "T-4821"}),
            result: json!({"ticket_id": "T-4821", "customer": "C-0193", "subject": "charged twice for order A-1009", "status": "open"}),
        },
        ScriptStep {
            tool: "kb.search",
            version: "3",
            args: json!({"query": "duplicate charge refund policy", "limit": 3}),
            result: json!({"hits": [{"doc": "KB-112", "title": "Duplicate charges: refunds need billing approval"}]}),
        },
        ScriptStep {
            tool: "billing.lookup",
            version: "2",
            args: json!({"order_id": "A-1009"}),
            result: json!({"order_id": "A-1009", "charges": [{"id": "ch_1", "amount": 4900, "currency": "EUR"}, {"id": "ch_2", "amount": 4900, "currency": "EUR"}]}),
        },
        ScriptStep {
            tool: "payments.refund",
            version: "2",
            args: json!({"charge_id": "ch_2", "amount": 4900, "currency": "EUR"}),
            result: Value::Null,
        },
        // No rule covers a bulk export: the gate denies it by default.
        ScriptStep {
            tool: "crm.export_customers",
            version: "1",
            args: json!({"format": "csv"}),
            result: Value::Null,
        },
        ScriptStep {
            tool: "tickets.comment",
            version: "1",
            args: json!({"ticket_id": "T-4821", "body": "Duplicate charge ch_2 confirmed; refund needs billing approval."}),
            result: json!({"comment_id": "CM-77", "ticket_id": "T-4821"}),
        },
        ScriptStep {
            tool: "tickets.escalate",
            version: "1",
            args: json!({"ticket_id": "T-4821", "queue": "billing", "reason": "refund approval"}),
            result: json!({"ticket_id": "T-4821", "queue": "billing", "status": "escalated"}),
        },
    ]
}

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

/// Where the demo's store goes: `--store`/`CAIRN_STORE`, else `--dir`, else an enclosing
/// `.cairn/` project, else a new temporary directory that is kept for exploring.
fn demo_store_path(ctx: &Context, args: &DemoArgs) -> Result<PathBuf, Failure> {
    if ctx.explicit_store.is_some() {
        return ctx.store_path();
    }
    if let Some(dir) = &args.dir {
        return Ok(dir.join(PROJECT_DIR).join(STORE_FILE));
    }
    if ctx.has_configured_store() {
        return ctx.store_path();
    }
    let dir = tempfile::Builder::new()
        .prefix("cairn-demo-")
        .tempdir()
        .map_err(|e| Failure::internal("io", format!("cannot create a temporary directory: {e}")))?
        .keep();
    Ok(dir.join(PROJECT_DIR).join(STORE_FILE))
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
    let store_path = demo_store_path(ctx, args)?;
    let store = Arc::new(SqliteStore::open(&store_path, OpenMode::CreateIfMissing)?);
    let keyring = Keyring::open(ctx.keys_dir(&store_path));
    let key = signing_key(&keyring)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let run_id = new_run_id(clock.now())?;
    let tenant: cairn_core::TenantId = "demo".parse()?;
    let task: cairn_core::TaskId = "task-support-T-4821".parse()?;
    let gate = Arc::new(demo_gate()?);

    let recorder = Recorder::open(
        store.clone(),
        clock,
        (tenant.clone(), task.clone(), run_id.clone()),
        RecorderOptions::default(),
    )?;
    let mut executor = Executor::new(recorder, gate, "agent:support-triage");
    executor.observe(&json!({
        "role": "user",
        "content": "Customer C-0193 says order A-1009 was charged twice. Please sort it out."
    }))?;
    for step in script() {
        let args_bytes = serde_json::to_vec(&step.args)
            .map_err(|e| Failure::internal("internal", e.to_string()))?;
        let call = ToolCall {
            tool: ToolRef {
                name: Label::new(step.tool)?,
                version: Label::new(step.version)?,
            },
            args: &args_bytes,
            lane: None,
        };
        // Admission writes the intent record before anything runs; a denied call is never
        // executed and the model is shown the denial instead.
        if let Admitted::Permitted(permit) = executor.admit(&call)? {
            let result = step.result.clone();
            let _ = executor.execute(permit, || Ok::<_, std::convert::Infallible>(result))?;
        }
    }
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
    let human = timeline(&store_path, &records, &closed, &report, &signer);
    let intact = report.is_intact();
    let json = json!({
        "store": store_path,
        "tenant_id": tenant,
        "run_id": run_id,
        "task_id": task,
        "records": records,
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

fn timeline(
    store_path: &Path,
    records: &[cairn_ledger::IntentRecord],
    closed: &cairn_runtime::ClosedRun,
    report: &cairn_ledger::RunReport,
    signer: &str,
) -> String {
    let mut out = String::new();
    let Some(first) = records.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "Cairn demo: a support-triage agent run, recorded and verified\n"
    );
    let _ = writeln!(out, "  store   {}", store_path.display());
    let _ = writeln!(
        out,
        "  run     {}/{}  (task {})",
        first.tenant_id, first.run_id, first.task_id
    );
    if let Some(admission) = records.iter().find_map(|r| r.admission.as_ref()) {
        let _ = writeln!(out, "  policy  {}", admission.policy_set_version.short());
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:>4}  {:<8}  {:<24}  {:<8}  {:<36}  {:>6}  observation",
        "step", "kind", "tool", "decision", "rule", "args"
    );
    for record in records {
        let tool = record
            .tool
            .as_ref()
            .map_or_else(String::new, |t| format!("{}@{}", t.name, t.version));
        let (decision, rule) = match &record.admission {
            Some(a) => (
                match a.decision {
                    Decision::Allow => "allow".to_owned(),
                    Decision::Deny => "DENY".to_owned(),
                },
                if a.rule_ids.is_empty() {
                    "(default deny)".to_owned()
                } else {
                    a.rule_ids
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                },
            ),
            None => (String::new(), String::new()),
        };
        let args = record
            .args
            .as_ref()
            .map_or_else(String::new, |a| format!("{} B", a.size));
        let obs = record
            .observation_digest
            .map_or_else(String::new, |d| d.short());
        let tool = match &record.termination {
            Some(t) => format!(
                "{} ({})",
                t.reason,
                t.detail.as_ref().map_or("", Label::as_str)
            ),
            None => tool,
        };
        let _ = writeln!(
            out,
            "  {:>4}  {:<8}  {:<24}  {:<8}  {:<36}  {:>6}  {}",
            record.step_index,
            record.kind.as_str(),
            tool,
            decision,
            rule,
            args,
            obs
        );
    }
    let cp = closed.checkpoint.checkpoint();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  checkpoint  {}  ({} records, signed by {signer})",
        cp.origin, cp.size
    );
    if report.is_intact() {
        let _ = writeln!(
            out,
            "  verify      intact: chain, Merkle root and signature check out"
        );
    } else {
        let _ = writeln!(out, "  verify      FAILED:");
        for finding in &report.findings {
            let _ = writeln!(out, "                {}", finding.message);
        }
    }
    let store_arg = store_path.display();
    let run = &first.run_id;
    let _ = writeln!(out, "\n  Explore it:");
    let _ = writeln!(out, "    cairn --store {store_arg} runs list");
    let _ = writeln!(
        out,
        "    cairn --store {store_arg} ledger show --run {run} --step 3"
    );
    let _ = writeln!(
        out,
        "    cairn --store {store_arg} ledger export --run {run} --format jsonl"
    );
    let _ = writeln!(out, "    cairn --store {store_arg} ledger verify --all");
    out
}
