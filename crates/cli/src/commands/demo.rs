//! `cairn demo`: the main job on the embedded default. A scripted support-triage agent run on
//! a fresh SQLite store — several steps, one denied call, a terminal record — closed with a
//! signed checkpoint, verified, and printed as a timeline.
//!
//! The demo's gate is a fixed rule table standing in for the Cedar policy gate, which replaces
//! it; the records it writes are the same `cairn.intent/v1` records every interface writes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::canonical::jcs_digest;
use cairn_core::{Clock, Digest, SystemClock};
use cairn_ledger::Store;
use cairn_ledger::record::{Admission, Decision, Label, TerminationReason, ToolRef};
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use cairn_runtime::keyring::{Keyring, KeyringError};
use cairn_runtime::{Recorder, RecorderOptions, ToolCall};
use cairn_store_sqlite::{OpenMode, SqliteStore};
use serde_json::{Value, json};

use crate::args::DemoArgs;
use crate::context::{Context, PROJECT_DIR, STORE_FILE};
use crate::failure::{Failure, exit};
use crate::output::Outcome;

/// The demo's rules: (rule id, tool, effect). A call no rule names is denied by default.
const RULES: &[(&str, &str, Decision)] = &[
    ("support.read-tickets", "tickets.read", Decision::Allow),
    ("support.search-kb", "kb.search", Decision::Allow),
    ("support.read-billing", "billing.lookup", Decision::Allow),
    (
        "support.no-refund-without-approval",
        "payments.refund",
        Decision::Deny,
    ),
    ("support.write-tickets", "tickets.comment", Decision::Allow),
    ("support.escalate", "tickets.escalate", Decision::Allow),
];

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

/// The version of the demo's rule table: the digest of its canonical form.
fn policy_version() -> Result<Digest, Failure> {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, tool, effect)| json!({"id": id, "tool": tool, "effect": effect.as_str()}))
        .collect();
    Ok(jcs_digest(&rules)?)
}

fn admit(tool: &str, version: Digest) -> Result<Admission, Failure> {
    let matched: Vec<_> = RULES.iter().filter(|(_, t, _)| *t == tool).collect();
    let decision = if !matched.is_empty() && matched.iter().all(|(_, _, e)| *e == Decision::Allow) {
        Decision::Allow
    } else {
        Decision::Deny
    };
    let rule_ids = matched
        .iter()
        .filter(|(_, _, e)| *e == decision)
        .map(|(id, _, _)| Label::new(*id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Admission {
        decision,
        policy_set_version: version,
        rule_ids,
    })
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
    let version = policy_version()?;

    let mut recorder = Recorder::open(
        store.clone(),
        clock,
        (tenant.clone(), task.clone(), run_id.clone()),
        RecorderOptions::default(),
    )?;
    recorder.observe(&json!({
        "role": "user",
        "content": "Customer C-0193 says order A-1009 was charged twice. Please sort it out."
    }))?;
    for step in script() {
        let args_bytes = serde_json::to_vec(&step.args)
            .map_err(|e| Failure::internal("internal", e.to_string()))?;
        let admission = admit(step.tool, version)?;
        let decision = admission.decision;
        let rules: Vec<String> = admission.rule_ids.iter().map(ToString::to_string).collect();
        recorder.record_step(
            &ToolCall {
                tool: ToolRef {
                    name: Label::new(step.tool)?,
                    version: Label::new(step.version)?,
                },
                args: &args_bytes,
                lane: None,
            },
            admission,
        )?;
        // A denied call is never executed: the model is shown the denial instead.
        let observation = match decision {
            Decision::Allow => json!({"tool": step.tool, "result": step.result}),
            Decision::Deny => json!({"tool": step.tool, "denied": true, "rule_ids": rules}),
        };
        recorder.observe(&observation)?;
    }
    let closed = recorder.terminate(
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
        "  {:>4}  {:<8}  {:<20}  {:<8}  {:<36}  {:>6}  observation",
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
            "  {:>4}  {:<8}  {:<20}  {:<8}  {:<36}  {:>6}  {}",
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
