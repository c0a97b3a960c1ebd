//! `cairn decisions set|list|snapshot|compare|approve-change` (SPEC §8): the task's
//! decisions in `.cairn/decisions/` (see `cairn_runtime::decision_files`), snapshotted before
//! a boundary and compared after it; with `--tenant`, one tenant's book in the folder of
//! `cairn serve` (the one `/v1/decisions` edits).
//!
//! No raw decision value is ever printed or written: `set` hands the value to the book,
//! which keeps only its keyed digest, and every output shows keys, revisions, times,
//! references and digests. `compare` exits with the continuity verdict: 0 `preserved` /
//! `approved_change`, 3 `unverified` / `continuity_evidence_missing`, 4 `dropped` /
//! `conflicting`.

use std::fmt::{Display, Write as _};
use std::io::Write as _;
use std::path::Path;

use cairn_core::normalize::NormalizedDigest;
use cairn_core::{ErrorCode, SystemClock, Timestamp};
use cairn_decisions::{
    CheckOutcome, Comparison, ContinuityHealth, DecisionError, DecisionKind, SetOutcome,
    parse_observations,
};
use cairn_runtime::decision_files::{DecisionFiles, DecisionFilesError, check_name};
use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::args::{DecisionsArgs, DecisionsCommand, NowArg};
use crate::context::Context;
use crate::failure::{CliCode, Failure, exit};
use crate::input;
use crate::output::Outcome;

/// Runs `cairn decisions …`.
pub fn run(ctx: &Context, args: DecisionsArgs) -> Result<Outcome, Failure> {
    let files = match &args.tenant {
        Some(tenant) => {
            let tenant =
                cairn_core::TenantId::new(tenant.as_str()).map_err(at_field("--tenant"))?;
            let data = match &args.data {
                Some(dir) => dir.clone(),
                None => ctx.state_dir()?,
            };
            let keys = match &ctx.explicit_keys {
                Some(keys) => keys.clone(),
                None => data.join(cairn_runtime::layout::KEYS_DIR),
            };
            DecisionFiles::open_tenant(&data, &tenant, keys)?
        }
        None => open_files(ctx)?,
    };
    match args.command {
        DecisionsCommand::Set {
            key,
            value,
            json_value,
            approval,
            source,
            at,
        } => {
            let value = parse_value(&value, json_value)?;
            set(
                &files,
                &key,
                &value,
                approval.as_deref(),
                &source,
                now(&at)?,
            )
        }
        DecisionsCommand::List => list(&files),
        DecisionsCommand::Snapshot {
            name,
            boundary_at,
            at,
        } => {
            let now = now(&at)?;
            let boundary_at = boundary_at
                .as_deref()
                .map(|text| timestamp("--boundary-at", text))
                .transpose()?
                .unwrap_or(now);
            snapshot(ctx, &files, &name, now, boundary_at)
        }
        DecisionsCommand::Compare {
            name,
            observations,
            window: text,
            at,
        } => compare(
            &files,
            name.as_deref(),
            observations.as_deref(),
            now(&at)?,
            window(&text)?,
        ),
        DecisionsCommand::ApproveChange {
            key,
            from,
            to,
            approval,
            at,
        } => approve_change(&files, &key, from, to, &approval, now(&at)?),
    }
}

/// The decision files of the resolved project: in the state folder that holds the store,
/// the HMAC key lives in the key directory.
pub(super) fn open_files(ctx: &Context) -> Result<DecisionFiles, Failure> {
    Ok(DecisionFiles::open(ctx.state_dir()?, ctx.keys_dir()?)?)
}

/// `--now`, or the system clock.
pub(super) fn now(arg: &NowArg) -> Result<Timestamp, Failure> {
    match &arg.now {
        Some(text) => timestamp("--now", text),
        None => Ok(cairn_core::Clock::now(&SystemClock)),
    }
}

fn timestamp(flag: &str, text: &str) -> Result<Timestamp, Failure> {
    text.parse().map_err(|e| {
        Failure::new(
            cairn_core::CoreError::INVALID_TIMESTAMP,
            format!("`{flag}`: {e}"),
        )
    })
}

/// `--window`: `90s`, `10m`, `2h`, `1h30m` or an ISO 8601 duration; not negative.
pub(super) fn window(text: &str) -> Result<SignedDuration, Failure> {
    crate::input::parse_duration("--window", text)
}

/// Maps an error to a failure whose message names the offending argument.
fn at_field<E: ErrorCode + Display>(field: &'static str) -> impl FnOnce(E) -> Failure {
    move |error| {
        let mut failure = Failure::from_error(&error);
        failure.message = format!("`{field}`: {}", failure.message);
        failure
    }
}

fn parse_kind(text: &str) -> Result<DecisionKind, Failure> {
    text.parse().map_err(at_field("KEY"))
}

/// VALUE as a JSON string, or parsed as JSON. The error never echoes the value.
fn parse_value(text: &str, json_value: bool) -> Result<Value, Failure> {
    if !json_value {
        return Ok(Value::String(text.to_owned()));
    }
    serde_json::from_str(text).map_err(|e| {
        Failure::new(
            CliCode::MALFORMED_JSON,
            format!(
                "`VALUE` is not JSON (line {}, column {}); drop `--json-value` to set it as a string",
                e.line(),
                e.column()
            ),
        )
    })
}

/// A digest shortened for people: the key id and the first 12 hex digits.
pub(super) fn short(digest: &NormalizedDigest) -> String {
    let text = digest.digest();
    match text.rsplit_once(':') {
        Some((head, hex)) => format!("{head}:{}…", hex.get(..12).unwrap_or(hex)),
        None => text.to_owned(),
    }
}

fn set(
    files: &DecisionFiles,
    key: &str,
    value: &Value,
    approval: Option<&str>,
    source: &str,
    now: Timestamp,
) -> Result<Outcome, Failure> {
    let kind = parse_kind(key)?;
    let hmac = files.hmac_key()?;
    let outcome =
        files.update_book(|book| book.set(kind, value, approval, Some(source), now, &hmac))?;
    let entry = outcome.entry();
    let human = match &outcome {
        SetOutcome::Created { .. } => format!(
            "created {} revision {} ({})",
            entry.key(),
            entry.revision(),
            short(entry.value_digest())
        ),
        SetOutcome::Reobserved { .. } => format!(
            "reobserved {} revision {} (same value, observed at {})",
            entry.key(),
            entry.revision(),
            entry.observed_at()
        ),
        SetOutcome::Revised {
            previous_revision,
            approval: Some(approval),
            ..
        } => format!(
            "revised {} revision {previous_revision} → {} ({}), approved by {}",
            entry.key(),
            entry.revision(),
            short(entry.value_digest()),
            approval.approval_ref()
        ),
        SetOutcome::Revised {
            previous_revision,
            approval: None,
            ..
        } => format!(
            "revised {key} revision {previous_revision} → {rev} ({digest}) without an approval: a comparison calls it conflicting until `cairn decisions approve-change {key} --from {previous_revision} --to {rev} --approval REF`",
            key = entry.key(),
            rev = entry.revision(),
            digest = short(entry.value_digest()),
        ),
    };
    let json = serde_json::to_value(&outcome)
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot serialise: {e}")))?;
    Ok(Outcome::ok(json, human))
}

fn list(files: &DecisionFiles) -> Result<Outcome, Failure> {
    let book = files.book()?;
    let latest = files.latest()?;
    let mut human = format!(
        "{} decision(s) in {}\n",
        book.len(),
        files.book_path().display()
    );
    for entry in book.current() {
        let _ = writeln!(
            human,
            "  {:<18} rev {:<3} observed {}  approval {}  source {}  {}",
            entry.key().as_str(),
            entry.revision(),
            entry.observed_at(),
            entry.approval_ref().unwrap_or("-"),
            entry.source().unwrap_or("-"),
            short(entry.value_digest())
        );
    }
    if !book.approvals().is_empty() {
        human.push_str("approved changes\n");
        for approval in book.approvals() {
            let _ = writeln!(
                human,
                "  {:<18} rev {} → {}  by {}  at {}",
                approval.key().as_str(),
                approval.from().revision,
                approval.to().revision,
                approval.approval_ref(),
                approval.approved_at()
            );
        }
    }
    if let Some(latest) = &latest {
        let _ = writeln!(human, "latest snapshot: {latest}");
    }
    let current: Vec<_> = book.current().collect();
    Ok(Outcome::ok(
        json!({
            "book": files.book_path(),
            "decisions": current,
            "approvals": book.approvals(),
            "latest_snapshot": latest,
        }),
        human,
    ))
}

fn snapshot(
    ctx: &Context,
    files: &DecisionFiles,
    name: &str,
    now: Timestamp,
    boundary_at: Timestamp,
) -> Result<Outcome, Failure> {
    check_name(name).map_err(at_field("--name"))?;
    let snapshot = match files.snapshot_book(name, now, boundary_at) {
        Ok(snapshot) => snapshot,
        // D-4: recorded as a boundary without a usable snapshot.
        Err(DecisionFilesError::Decision(error @ DecisionError::SnapshotRefused { .. })) => {
            return Ok(refused(ctx, &error));
        }
        Err(other) => return Err(other.into()),
    };
    let keys: Vec<&str> = snapshot
        .decisions()
        .iter()
        .map(|entry| entry.key().as_str())
        .collect();
    let human = format!(
        "snapshot `{name}` of {} decisions ({}) taken at {}, boundary {}\n  digest {}\n",
        keys.len(),
        keys.join(", "),
        snapshot.taken_at(),
        boundary_at,
        snapshot.digest()
    );
    Ok(Outcome::ok(
        json!({
            "name": name,
            "snapshot_digest": snapshot.digest(),
            "taken_at": snapshot.taken_at(),
            "boundary_at": boundary_at,
            "decisions": keys,
            "path": files.snapshot_path(name),
        }),
        human,
    ))
}

/// A refused snapshot: exit 2 with every finding and its code, in the error shape.
fn refused(ctx: &Context, error: &DecisionError) -> Outcome {
    let findings = error.findings();
    if !ctx.json {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "error[{}]: {error}", error.code());
        for finding in findings {
            let _ = writeln!(err, "  {}: {}", finding.code, finding.message);
        }
        let _ = writeln!(
            err,
            "  recorded: a comparison of this boundary says continuity_evidence_missing"
        );
    }
    Outcome {
        json: json!({
            "error": {
                "code": error.code(),
                "message": error.to_string(),
                "findings": findings,
            },
            "recorded": ContinuityHealth::ContinuityEvidenceMissing,
        }),
        human: String::new(),
        exit: exit::INVALID,
        silent: false,
    }
}

fn compare(
    files: &DecisionFiles,
    name: Option<&str>,
    observations: Option<&Path>,
    now: Timestamp,
    window: SignedDuration,
) -> Result<Outcome, Failure> {
    let name = files.resolve_name(name).map_err(at_field("--name"))?;
    let comparison = match observations {
        Some(path) => {
            let text = input::read(path, "observations")?;
            let after = parse_observations(&text).map_err(|e| {
                let mut failure = Failure::from_error(&e);
                failure.message = format!("`{}`: {}", path.display(), failure.message);
                failure
            })?;
            files.compare_observations(name.as_deref(), &after, now, window)?
        }
        None => files.compare_now(name.as_deref(), now, window)?,
    };
    let json = serde_json::to_value(&comparison)
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot serialise: {e}")))?;
    Ok(Outcome {
        json,
        human: human_comparison(&comparison, name.as_deref()),
        exit: exit_for(comparison.state()),
        silent: false,
    })
}

fn approve_change(
    files: &DecisionFiles,
    key: &str,
    from: u32,
    to: u32,
    approval: &str,
    now: Timestamp,
) -> Result<Outcome, Failure> {
    let kind = parse_kind(key)?;
    let approved = files.update_book(|book| book.approve_change(&kind, from, to, approval, now))?;
    let human = format!(
        "approved {} revision {} → {} ({} → {}) by {}",
        approved.key(),
        approved.from().revision,
        approved.to().revision,
        short(&approved.from().value_digest),
        short(&approved.to().value_digest),
        approved.approval_ref()
    );
    let json = serde_json::to_value(&approved)
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot serialise: {e}")))?;
    Ok(Outcome::ok(json, human))
}

/// The exit code of a continuity state (SPEC §9.1): 0, 3 or 4.
pub(super) fn exit_for(state: ContinuityHealth) -> u8 {
    match state.outcome() {
        CheckOutcome::Pass => exit::OK,
        CheckOutcome::ReviewRequired => exit::REVIEW,
        CheckOutcome::Blocked => exit::BLOCKED,
    }
}

/// `continuity conflicting (scope: changed_without_approval) → stop_and_ask`.
pub(super) fn continuity_line(
    state: &str,
    determining_key: Option<&str>,
    reason: &str,
    action: &str,
) -> String {
    match determining_key {
        Some(key) => format!("continuity {state} ({key}: {reason}) → {action}"),
        None => format!("continuity {state} ({reason}) → {action}"),
    }
}

fn human_comparison(comparison: &Comparison, name: Option<&str>) -> String {
    let mut out = continuity_line(
        comparison.state().as_str(),
        comparison.determining_key().map(DecisionKind::as_str),
        comparison.reason().code(),
        comparison.action().as_str(),
    );
    out.push('\n');
    let snapshot = comparison
        .snapshot_digest()
        .map_or_else(|| "none".to_owned(), |d| d.short());
    let _ = writeln!(
        out,
        "  snapshot {} ({snapshot})  boundary {}  compared {}  observe by {}",
        name.unwrap_or("-"),
        comparison.boundary_at(),
        comparison.compared_at(),
        comparison.observation_deadline()
    );
    for decision in comparison.decisions() {
        let _ = writeln!(
            out,
            "  {:<18} {:<16} {:<30} {}",
            decision.key().as_str(),
            decision.state().as_str(),
            decision.reason().code(),
            decision.action().as_str()
        );
    }
    if !comparison.unmatched_observations().is_empty() {
        let keys: Vec<&str> = comparison
            .unmatched_observations()
            .iter()
            .map(DecisionKind::as_str)
            .collect();
        let _ = writeln!(
            out,
            "  observed but not in the snapshot: {}",
            keys.join(", ")
        );
    }
    out
}
