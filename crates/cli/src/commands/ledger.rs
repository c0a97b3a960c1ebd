//! `cairn ledger …`: verify (store or bundle), export, show, prove, verify-proof (`boundary`
//! is in `commands::boundary`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use cairn_ledger::bundle::{CheckpointLine, parse_bundle_bytes, write_bundle};
use cairn_ledger::keys::TrustedKeys;
use cairn_ledger::proof::{InclusionProof, build_proof, verify_proof};
use cairn_ledger::record::IntentRecord;
use cairn_ledger::store::{RunFilter, RunInfo};
use cairn_ledger::verify::{CheckpointPolicy, CheckpointState, RunReport, verify_run};

use crate::args::{LedgerCommand, RunSelector, VerifyArgs};
use crate::context::{Context, resolve_run};
use crate::failure::{CliCode, Failure, exit};
use crate::output::Outcome;
use crate::remote::Remote;
use cairn_runtime::content::StepText;

/// The largest file `verify --bundle` and `verify-proof` read.
const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Runs `cairn ledger …`.
pub fn run(ctx: &Context, command: LedgerCommand) -> Result<Outcome, Failure> {
    match command {
        LedgerCommand::Verify(args) => verify(ctx, &args),
        LedgerCommand::Export {
            run,
            format: _,
            out,
        } => export(ctx, &run, out.as_deref()),
        LedgerCommand::Show { run, step } => show(ctx, &run, step),
        LedgerCommand::Boundary { run, step } => super::boundary::run(ctx, &run, step),
        LedgerCommand::Prove { run, step, out } => prove(ctx, &run, step, out.as_deref()),
        LedgerCommand::VerifyProof {
            proof,
            checkpoint,
            trusted_keys,
        } => verify_proof_cmd(ctx, &proof, checkpoint.as_deref(), &trusted_keys),
    }
}

fn read_input(path: &Path, what: &str) -> Result<String, Failure> {
    read_text(path, what, MAX_INPUT_BYTES, "the limit of every input")
}

/// The text of `path` (`-`: stdin), as [`read_input_bytes`] reads it.
fn read_text(path: &Path, what: &str, limit: u64, why: &str) -> Result<String, Failure> {
    let bytes = read_input_bytes(path, what, limit, why)?;
    String::from_utf8(bytes).map_err(|e| {
        Failure::new(
            cairn_runtime::RuntimeError::UNREADABLE_INPUT,
            format!("{what} `{}` is not UTF-8: {e}", path.display()),
        )
    })
}

/// The bytes of `path` (`-`: stdin), refused — unread, where the size is known first —
/// beyond `limit` bytes, saying `why` that is the limit.
fn read_input_bytes(path: &Path, what: &str, limit: u64, why: &str) -> Result<Vec<u8>, Failure> {
    let too_large = || {
        Failure::new(
            CliCode::INPUT_TOO_LARGE,
            format!(
                "{what} `{}` is larger than {limit} bytes ({why})",
                path.display()
            ),
        )
    };
    let unreadable = |e: std::io::Error| {
        Failure::new(
            cairn_runtime::RuntimeError::UNREADABLE_INPUT,
            format!("cannot read {what} `{}`: {e}", path.display()),
        )
    };
    let mut bytes = Vec::new();
    let budget = limit.saturating_add(1);
    if path.as_os_str() == "-" {
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::io::stdin(), budget),
            &mut bytes,
        )
        .map_err(unreadable)?;
    } else {
        if std::fs::metadata(path).map_err(unreadable)?.len() > limit {
            return Err(too_large());
        }
        let file = std::fs::File::open(path).map_err(unreadable)?;
        std::io::Read::read_to_end(&mut std::io::Read::take(file, budget), &mut bytes)
            .map_err(unreadable)?;
    }
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Trusted keys, or none when no keys are configured (chains still verify; checkpoints then
/// fail as untrusted, which is reported).
fn trusted_or_empty(ctx: &Context, files: &[std::path::PathBuf]) -> Result<TrustedKeys, Failure> {
    match ctx.trusted_keys(files) {
        Ok(keys) => Ok(keys),
        Err(f) if f.code == "no_trusted_keys" => Ok(TrustedKeys::new(Vec::new())),
        Err(f) => Err(f),
    }
}

fn verify(ctx: &Context, args: &VerifyArgs) -> Result<Outcome, Failure> {
    let reports = match &args.bundle {
        Some(path) => {
            // Read as bytes: a line that is not UTF-8 is a damaged record, reported at its
            // place, not an unreadable file.
            let bytes =
                read_input_bytes(path, "bundle", MAX_INPUT_BYTES, "the limit of every input")?;
            let bundle = parse_bundle_bytes(&bytes)?;
            // A bundle is checked against its signature: without a trusted key that is a
            // configuration problem, not tampering.
            let trusted = ctx.trusted_keys(&args.trusted_keys)?;
            vec![bundle.verify(&trusted)]
        }
        None if let Some(service) = Remote::from_env(ctx, "an investigator's")? => {
            remote_reports(&service, args.run.as_deref())?
        }
        None => {
            let store = ctx.open_existing_store()?;
            let runs: Vec<RunInfo> = match &args.run {
                Some(run) => vec![resolve_run(
                    store.as_ref(),
                    &RunSelector {
                        run: run.clone(),
                        tenant: args.tenant.clone(),
                    },
                )?],
                None => store.list_runs(&RunFilter::default())?,
            };
            let trusted = trusted_or_empty(ctx, &args.trusted_keys)?;
            if trusted.is_empty() && runs.iter().any(|r| r.checkpointed) {
                return Err(Failure::new(
                    cairn_ledger::checkpoint::CheckpointError::NO_TRUSTED_KEYS,
                    "no trusted verifier keys: checkpoints cannot be checked (pass --trusted-key FILE or set --keys DIR)",
                ));
            }
            let bar = ctx.progress(runs.len() as u64, "verifying runs");
            let mut reports = Vec::with_capacity(runs.len());
            for info in &runs {
                // A store whose pages no longer read is reported as the tampering it is, with
                // the run it was reading.
                let in_run = |e: cairn_ledger::StoreError| {
                    let failure = Failure::from_error(&e);
                    Failure {
                        message: format!(
                            "run {}/{}: {}",
                            info.meta.tenant_id, info.meta.run_id, failure.message
                        ),
                        ..failure
                    }
                };
                let rows = store
                    .rows(&info.meta.tenant_id, &info.meta.run_id)
                    .map_err(in_run)?;
                let note = store
                    .checkpoint(&info.meta.tenant_id, &info.meta.run_id)
                    .map_err(in_run)?;
                reports.push(verify_run(
                    &info.meta.tenant_id,
                    &info.meta.run_id,
                    &rows,
                    note.as_deref(),
                    &trusted,
                    CheckpointPolicy::WhenTerminated,
                ));
                bar.inc(1);
            }
            bar.finish_and_clear();
            reports
        }
    };
    Ok(verification_outcome(&reports))
}

/// The service's verification of `run` (every run of the token's tenant by default), each
/// verified by the service against its trusted keys.
fn remote_reports(service: &Remote, run: Option<&str>) -> Result<Vec<RunReport>, Failure> {
    #[derive(serde::Deserialize)]
    struct Listed {
        run_id: String,
    }
    #[derive(serde::Deserialize)]
    struct Verified {
        report: RunReport,
    }
    let runs: Vec<String> = match run {
        Some(run) => vec![run.to_owned()],
        None => service
            .get::<Vec<Listed>>("/v1/runs")?
            .into_iter()
            .map(|listed| listed.run_id)
            .collect(),
    };
    runs.iter()
        .map(|run| {
            let path = format!("/v1/runs/{}/verify", crate::remote::encoded(run));
            Ok(service.get::<Verified>(&path)?.report)
        })
        .collect()
}

/// Renders verification reports; exit 5 when any run is not intact.
pub fn verification_outcome(reports: &[RunReport]) -> Outcome {
    let tampered = reports.iter().filter(|r| !r.is_intact()).count();
    let mut human = String::new();
    for report in reports {
        let _ = writeln!(human, "{}", describe_report(report));
        for finding in &report.findings {
            let step = finding
                .step
                .map_or_else(|| "-".to_owned(), |s| s.to_string());
            let _ = writeln!(
                human,
                "    step {step:>5}  {:<10} {}",
                finding.kind.as_str(),
                finding.message
            );
        }
    }
    let _ = writeln!(
        human,
        "{} run(s) verified: {} intact, {tampered} tampered",
        reports.len(),
        reports.len() - tampered
    );
    Outcome {
        json: serde_json::json!({
            "intact": tampered == 0,
            "runs": reports,
        }),
        human,
        exit: if tampered == 0 {
            exit::OK
        } else {
            exit::TAMPER
        },
        silent: false,
    }
}

fn describe_report(report: &RunReport) -> String {
    let name = format!("{}/{}", report.tenant_id, report.run_id);
    let state = if report.terminated {
        "terminated"
    } else {
        "UNTERMINATED"
    };
    let checkpoint = match &report.checkpoint {
        CheckpointState::Verified { signers, .. } => {
            format!("checkpoint signed by {}", signers.join(", "))
        }
        CheckpointState::Absent => "no checkpoint".to_owned(),
        CheckpointState::Failed { reason } => format!("checkpoint FAILED: {reason}"),
    };
    if report.is_intact() {
        format!(
            "intact    {name}: {} records, {state}, {checkpoint}",
            report.records
        )
    } else {
        format!(
            "TAMPERED  {name}: {} records, {state}, {checkpoint}",
            report.records
        )
    }
}

/// A run's bundle as `export` writes it.
struct Exported {
    tenant: String,
    run: String,
    /// The JSON lines: the records, then the checkpoint when there is one.
    text: String,
    records: usize,
    checkpointed: bool,
}

/// The bundle of the run `selector` names, from the local store.
fn local_bundle(ctx: &Context, selector: &RunSelector) -> Result<Exported, Failure> {
    let store = ctx.open_existing_store()?;
    let info = resolve_run(store.as_ref(), selector)?;
    let (tenant, run) = (&info.meta.tenant_id, &info.meta.run_id);
    let rows = store.rows(tenant, run)?;
    let note = store.checkpoint(tenant, run)?;
    let checkpointed = note.is_some();
    let text = write_bundle(tenant, run, &rows, note).map_err(|fault| {
        Failure::new(
            CliCode::RECORD_UNREADABLE,
            format!(
                "run `{tenant}/{run}` step {}: {} (run `cairn ledger verify --run {run}`)",
                fault.step_index, fault.detail
            ),
        )
    })?;
    Ok(Exported {
        tenant: tenant.to_string(),
        run: run.to_string(),
        text,
        records: rows.len(),
        checkpointed,
    })
}

/// The bundle of the run `selector` names, as the service exports it (`GET
/// /v1/runs/{run}/bundle`, the same JSON lines).
fn remote_bundle(service: &Remote, selector: &RunSelector) -> Result<Exported, Failure> {
    #[derive(serde::Deserialize)]
    struct Listed {
        tenant_id: String,
        run_id: String,
    }
    let path = format!("/v1/runs/{}", crate::remote::encoded(&selector.run));
    let listed: Listed = service.get(&path)?;
    let bytes = service.bytes("GET", &format!("{path}/bundle"), None)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Failure::new(
            CliCode::SERVICE_REFUSED,
            format!("the service's bundle is not UTF-8: {e}"),
        )
    })?;
    let checkpointed = text
        .lines()
        .last()
        .is_some_and(|line| line.contains("\"cairn.checkpoint/v1\""));
    Ok(Exported {
        tenant: listed.tenant_id,
        run: listed.run_id,
        records: text.lines().count() - usize::from(checkpointed),
        text,
        checkpointed,
    })
}

fn export(ctx: &Context, selector: &RunSelector, out: Option<&Path>) -> Result<Outcome, Failure> {
    let Exported {
        tenant,
        run,
        text,
        records,
        checkpointed,
    } = match Remote::from_env(ctx, "an investigator's")? {
        Some(service) => remote_bundle(&service, selector)?,
        None => local_bundle(ctx, selector)?,
    };
    let summary = serde_json::json!({
        "tenant_id": tenant, "run_id": run, "records": records, "checkpoint": checkpointed,
        "out": out,
    });
    match out {
        Some(path) => {
            write_file(path, text.as_bytes())?;
            Ok(Outcome::ok(
                summary,
                format!(
                    "exported {records} records{} of run `{tenant}/{run}` to {}",
                    if checkpointed {
                        " and the signed checkpoint"
                    } else {
                        " (no checkpoint: the run is not closed)"
                    },
                    path.display()
                ),
            ))
        }
        None => {
            // The JSON lines are the product: they go to stdout whatever the output mode.
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                return Err(Failure::new(
                    CliCode::IO,
                    format!("cannot write the export: {e}"),
                ));
            }
            Ok(Outcome::already_written())
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes).map_err(|e| {
        Failure::new(
            CliCode::UNWRITABLE_OUTPUT,
            format!("cannot write `{}`: {e}", path.display()),
        )
    })
}

fn show(ctx: &Context, selector: &RunSelector, step: u64) -> Result<Outcome, Failure> {
    let shown: StepText = match Remote::from_env(ctx, "an investigator's or an approver's")? {
        Some(service) => service.get(&format!(
            "/v1/runs/{}/steps/{step}",
            crate::remote::encoded(&selector.run)
        ))?,
        None => {
            let store = ctx.open_existing_store()?;
            let info = resolve_run(store.as_ref(), selector)?;
            let (tenant, run) = (&info.meta.tenant_id, &info.meta.run_id);
            let view = cairn_runtime::content::step_view(store.as_ref(), tenant, run, step)?
                .ok_or_else(|| crate::context::no_step(&info, step))?;
            view.to_text().map_err(|fault| {
                Failure::new(
                    CliCode::RECORD_UNREADABLE,
                    format!("run `{tenant}/{run}` step {step}: {}", fault.detail),
                )
            })?
        }
    };
    let record = shown.record;
    let args_content = match (shown.args, &record.args) {
        (Some(retained), Some(args)) => shown_content(retained.into(), &args.digest)?,
        _ => None,
    };
    let obs_content = match (shown.observation, &record.observation_digest) {
        (Some(retained), Some(digest)) => shown_content(retained.into(), digest)?,
        _ => None,
    };
    let digest_ok = shown.digest_matches_content;
    let human = show_human(
        &record,
        digest_ok,
        args_content.as_deref(),
        obs_content.as_deref(),
    );
    Ok(Outcome::ok(
        serde_json::json!({
            "record": record,
            "digest_matches_content": digest_ok,
            "policy_set_version": record.admission.as_ref().map(|a| a.policy_set_version),
            "lane_id": record.lane_id,
            "observation_digest": record.observation_digest,
            "args_content": args_content.as_deref().map(String::from_utf8_lossy),
            "observation_content": obs_content.as_deref().map(String::from_utf8_lossy),
        }),
        human,
    ))
}

/// Retained content as `ledger show` prints it: the bytes, nothing when not retained, and an
/// error when the store's bytes do not hash to the record's digest (I-4).
fn shown_content(
    retained: cairn_runtime::content::Retained,
    digest: &cairn_core::Digest,
) -> Result<Option<Vec<u8>>, Failure> {
    use cairn_runtime::content::Retained;
    match retained {
        Retained::Matches(bytes) => Ok(Some(bytes)),
        Retained::Gone => Ok(None),
        Retained::Altered { actual } => Err(Failure::new(
            CliCode::CONTENT_DIGEST_MISMATCH,
            format!(
                "retained content for {digest} does not hash to its digest (it hashes to {actual}): the content store was altered"
            ),
        )),
    }
}

fn show_human(
    record: &IntentRecord,
    digest_ok: bool,
    args: Option<&[u8]>,
    obs: Option<&[u8]>,
) -> String {
    let mut out = String::new();
    let none = || "-".to_owned();
    let _ = writeln!(out, "run          {}/{}", record.tenant_id, record.run_id);
    let _ = writeln!(out, "task         {}", record.task_id);
    let _ = writeln!(out, "step         {} ({})", record.step_index, record.kind);
    let _ = writeln!(out, "recorded at  {}", record.recorded_at);
    let _ = writeln!(
        out,
        "lane         {}",
        record
            .lane_id
            .as_ref()
            .map_or_else(none, ToString::to_string)
    );
    if let Some(tool) = &record.tool {
        let _ = writeln!(out, "tool         {}@{}", tool.name, tool.version);
    }
    if let Some(admission) = &record.admission {
        let rules = if admission.rule_ids.is_empty() {
            "(none: default deny)".to_owned()
        } else {
            admission
                .rule_ids
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "decision     {} by {rules}",
            admission.decision.as_str()
        );
        let _ = writeln!(out, "policy set   {}", admission.policy_set_version);
    }
    if let Some(args_ref) = &record.args {
        let _ = writeln!(
            out,
            "arguments    {} ({} bytes)",
            args_ref.digest, args_ref.size
        );
    }
    let _ = writeln!(
        out,
        "observation  {}",
        record
            .observation_digest
            .map_or_else(none, |d| d.to_string())
    );
    if let Some(t) = &record.termination {
        let _ = writeln!(
            out,
            "termination  {} {}",
            t.reason,
            t.detail
                .as_ref()
                .map_or_else(String::new, ToString::to_string)
        );
    }
    if let Some(b) = &record.boundary {
        let _ = writeln!(out, "boundary     {}", b.event);
    }
    let _ = writeln!(
        out,
        "digest       {} ({})",
        record.digest,
        if digest_ok {
            "matches the record"
        } else {
            "DOES NOT MATCH the record"
        }
    );
    let _ = writeln!(
        out,
        "prev digest  {}",
        record.prev_digest.map_or_else(none, |d| d.to_string())
    );
    let content = |label: &str, bytes: Option<&[u8]>, out: &mut String| match bytes {
        Some(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            let shown: String = text.chars().take(2000).collect();
            let _ = writeln!(out, "{label} (retained, digest re-checked):\n  {shown}");
        }
        None => {
            let _ = writeln!(out, "{label}: not retained (expired or never kept)");
        }
    };
    if record.args.is_some() {
        content("argument content", args, &mut out);
    }
    if record.observation_digest.is_some() {
        content("observation content", obs, &mut out);
    }
    out
}

fn prove(
    ctx: &Context,
    selector: &RunSelector,
    step: u64,
    out: Option<&Path>,
) -> Result<Outcome, Failure> {
    let store = ctx.open_existing_store()?;
    let info = resolve_run(store.as_ref(), selector)?;
    let (tenant, run) = (&info.meta.tenant_id, &info.meta.run_id);
    let note = store.checkpoint(tenant, run)?.ok_or_else(|| {
        Failure::new(
            CliCode::NO_CHECKPOINT,
            format!("run `{tenant}/{run}` has no signed checkpoint yet: proofs need a closed run"),
        )
    })?;
    let record = store
        .record(tenant, run, step)?
        .ok_or_else(|| {
            Failure::new(
                CliCode::STEP_NOT_FOUND,
                format!("run `{tenant}/{run}` has no step {step}"),
            )
        })?
        .map_err(|fault| Failure::new(CliCode::RECORD_UNREADABLE, fault.detail))?;
    let digests = store.digests(tenant, run)?;
    let proof = build_proof(record, &digests, note)?;
    let json =
        serde_json::to_value(&proof).map_err(|e| Failure::new(CliCode::INTERNAL, e.to_string()))?;
    let pretty = serde_json::to_string_pretty(&proof).unwrap_or_default();
    match out {
        Some(path) => {
            write_file(path, pretty.as_bytes())?;
            Ok(Outcome::ok(
                json,
                format!(
                    "inclusion proof of step {step} written to {}",
                    path.display()
                ),
            ))
        }
        None => Ok(Outcome::ok(json, pretty)),
    }
}

fn verify_proof_cmd(
    ctx: &Context,
    proof_path: &Path,
    checkpoint_path: Option<&Path>,
    trusted_files: &[std::path::PathBuf],
) -> Result<Outcome, Failure> {
    let text = read_text(
        proof_path,
        "proof",
        cairn_ledger::proof::MAX_PROOF_BYTES,
        "the most a proof can need: one record, one signed checkpoint and an RFC 6962 audit path of at most 64 hashes",
    )?;
    let proof: InclusionProof = serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            cairn_ledger::proof::ProofError::PROOF_MALFORMED,
            format!("`{}` is not an inclusion proof: {e}", proof_path.display()),
        )
    })?;
    let external = checkpoint_path
        .map(|path| {
            let text = read_input(path, "checkpoint")?;
            // Accept a raw signed note or a bundle's checkpoint line.
            if text.trim_start().starts_with('{') {
                serde_json::from_str::<CheckpointLine>(text.trim())
                    .map(|line| line.note)
                    .map_err(|e| {
                        Failure::new(
                            cairn_ledger::bundle::BundleError::BUNDLE_INVALID_CHECKPOINT,
                            format!("`{}`: {e}", path.display()),
                        )
                    })
            } else {
                Ok(text)
            }
        })
        .transpose()?;
    let trusted = ctx.trusted_keys(trusted_files)?;
    let verified = verify_proof(&proof, external.as_deref(), &trusted)?;
    let cp = verified.checkpoint();
    let signers: Vec<String> = verified
        .signers()
        .iter()
        .map(cairn_ledger::keys::VerifierKey::id_label)
        .collect();
    Ok(Outcome::ok(
        serde_json::json!({
            "valid": true,
            "origin": cp.origin,
            "tree_size": cp.size,
            "leaf_index": proof.leaf_index,
            "record_digest": proof.record.digest,
            "signers": signers,
        }),
        format!(
            "valid: step {} ({}) of `{}` is included in the signed tree of {} records",
            proof.leaf_index, proof.record.digest, cp.origin, cp.size
        ),
    ))
}
