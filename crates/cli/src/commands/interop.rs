//! `cairn vce check` and `cairn rlc check`: the published VCE 0.1 and RLC 0.1 formats,
//! decided as their reference implementations decide them, with every finding and its code.
//! The JSON form is `{"decision", "findings": [{"code", "message"}]}`; the exit code says the
//! decision (0 RESUMABLE / PASSED, 3 REVIEW_REQUIRED, 4 BLOCKED) or malformed input (2).
//! Inputs are read as Python's `json.loads` reads them (`cairn_interop::py_json`), so anything
//! the reference decides is decided here too; only what is not JSON (or nests more than
//! 1,000 levels) exits 2.
//!
//! Many documents in one process — several files, or JSON lines on stdin (`--jsonl`) — are
//! decided on every core, and their results written in input order, one per document: a JSON
//! line with `--json` or `--jsonl`, else `FILE: DECISION` and the findings. A document that
//! cannot be read gets an `error` in its place, and the run goes on. The exit code is the
//! worst over the documents: 2 if any could not be read, else 4 if any is BLOCKED, else 3 if
//! any needs review, else 0.

use std::fmt::Write as _;
use std::io::{BufRead, Read as _, Write as _};
use std::path::{Path, PathBuf};

use cairn_core::CodedFinding;
use cairn_interop::py_json::{self, PyJson};
use cairn_interop::request::{RequestShapeError, RlcRequest, VceRequest};
use cairn_interop::rlc::{RlcDecision, RlcValidator};
use cairn_interop::vce::{VceDecision, VceValidator};
use serde::Serialize;
use serde_json::json;

use crate::args::{RlcCommand, VceCommand};
use crate::failure::{CliCode, Failure, exit};
use crate::input::read_py_json;
use crate::output::Outcome;

/// The longest JSON line read with `--jsonl`, as for a file.
const MAX_LINE_BYTES: u64 = 4 << 20;

/// How many JSON lines are read before they are decided and their results written.
const LINES_PER_ROUND: usize = 4096;

/// A numbered input line, or why it was not read (too long).
type Line = (usize, Result<String, Failure>);

/// One document's decision, or why it could not be read.
enum DocumentResult {
    Decided {
        decision: &'static str,
        exit: u8,
        findings: Vec<CodedFinding>,
    },
    Unreadable(Failure),
}

impl DocumentResult {
    fn exit(&self) -> u8 {
        match self {
            Self::Decided { exit, .. } => *exit,
            Self::Unreadable(_) => exit::INVALID,
        }
    }

    /// The result as one JSON line, `{"<label>": …, "decision", "findings"}` or
    /// `{"<label>": …, "error": {"code", "message"}}`, written straight from the report (no
    /// intermediate JSON value: batches write tens of thousands of these a second).
    fn json_line(&self, label: &str, at: &impl Serialize) -> String {
        #[derive(Serialize)]
        struct Error<'a> {
            code: &'a str,
            message: &'a str,
        }
        let mut out = Vec::with_capacity(256);
        out.push(b'{');
        let _ = serde_json::to_writer(&mut out, label);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, at);
        match self {
            Self::Decided {
                decision, findings, ..
            } => {
                out.extend_from_slice(b",\"decision\":");
                let _ = serde_json::to_writer(&mut out, decision);
                out.extend_from_slice(b",\"findings\":");
                let _ = serde_json::to_writer(&mut out, findings);
            }
            Self::Unreadable(failure) => {
                out.extend_from_slice(b",\"error\":");
                let error = Error {
                    code: failure.code,
                    message: &failure.message,
                };
                let _ = serde_json::to_writer(&mut out, &error);
            }
        }
        out.extend_from_slice(b"}\n");
        String::from_utf8(out).unwrap_or_default()
    }
}

fn vce_verdict(
    validator: &VceValidator,
    envelope: &PyJson,
    restore: Option<&PyJson>,
) -> DocumentResult {
    let report = validator.check_read(envelope, restore);
    DocumentResult::Decided {
        decision: report.decision.as_str(),
        exit: match report.decision {
            VceDecision::Resumable => exit::OK,
            VceDecision::ReviewRequired => exit::REVIEW,
            VceDecision::Blocked => exit::BLOCKED,
        },
        findings: report.findings,
    }
}

fn rlc_verdict(
    validator: &RlcValidator,
    document: &PyJson,
    restore: Option<&PyJson>,
    vce: Option<&PyJson>,
) -> DocumentResult {
    let report = validator.check_read(document, restore, vce);
    DocumentResult::Decided {
        decision: report.decision.as_str(),
        exit: match report.decision {
            RlcDecision::Passed => exit::OK,
            RlcDecision::ReviewRequired => exit::REVIEW,
            RlcDecision::Blocked => exit::BLOCKED,
        },
        findings: report.findings,
    }
}

/// Runs `cairn vce …`.
pub fn run_vce(command: VceCommand, json: bool) -> Result<Outcome, Failure> {
    let VceCommand::Check {
        envelopes,
        restore,
        jsonl,
    } = command;
    let restore = restore
        .map(|path| read_py_json(&path, "restore results"))
        .transpose()?;
    let validator =
        VceValidator::new().map_err(|e| Failure::new(CliCode::SCHEMA_COMPILE, e.to_string()))?;
    if jsonl {
        return lines(|line| {
            let request = VceRequest::from_document(line).map_err(|e| line_shape(&e))?;
            Ok(vce_verdict(
                &validator,
                &request.envelope,
                request.restore.as_ref(),
            ))
        });
    }
    let decide = |path: &Path| {
        read_py_json(path, "envelope")
            .map(|envelope| vce_verdict(&validator, &envelope, restore.as_ref()))
    };
    files(&envelopes, json, decide)
}

/// Runs `cairn rlc …`.
pub fn run_rlc(command: RlcCommand, json: bool) -> Result<Outcome, Failure> {
    let RlcCommand::Check {
        files: paths,
        restore,
        vce,
        jsonl,
    } = command;
    let restore = restore
        .map(|path| read_py_json(&path, "restore results"))
        .transpose()?;
    let vce = vce
        .map(|path| read_py_json(&path, "VCE envelope"))
        .transpose()?;
    let validator =
        RlcValidator::new().map_err(|e| Failure::new(CliCode::SCHEMA_COMPILE, e.to_string()))?;
    if jsonl {
        return lines(|line| {
            let request = RlcRequest::from_document(line).map_err(|e| line_shape(&e))?;
            Ok(rlc_verdict(
                &validator,
                &request.extension,
                request.restore.as_ref(),
                request.vce.as_ref(),
            ))
        });
    }
    let decide = |path: &Path| {
        read_py_json(path, "extension")
            .map(|document| rlc_verdict(&validator, &document, restore.as_ref(), vce.as_ref()))
    };
    files(&paths, json, decide)
}

fn line_shape(error: &RequestShapeError) -> Failure {
    Failure::new(
        cairn_runtime::RuntimeError::INVALID_INPUT,
        format!("the line {error}; see `--help` for the members a line has"),
    )
}

/// Runs `work` on each of `items` on every core; the results in input order. A worker that
/// panics yields `failed()` for each of its items.
fn on_every_core<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    failed: impl Fn() -> R,
) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len().div_ceil(64).max(1));
    if workers <= 1 {
        return items.iter().map(&work).collect();
    }
    let chunk = items.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&work).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .zip(items.chunks(chunk))
            .flat_map(|(handle, part)| {
                handle
                    .join()
                    .unwrap_or_else(|_| part.iter().map(|_| failed()).collect())
            })
            .collect()
    })
}

fn worker_failed() -> DocumentResult {
    DocumentResult::Unreadable(Failure::new(
        CliCode::INTERNAL,
        "a worker failed while deciding".to_owned(),
    ))
}

/// Decides the files at `paths`: one file as a single result (the form `--json` prints for
/// one document), several as one result each.
fn files(
    paths: &[PathBuf],
    json: bool,
    decide: impl Fn(&Path) -> Result<DocumentResult, Failure> + Sync,
) -> Result<Outcome, Failure> {
    if let [path] = paths {
        return match decide(path)? {
            DocumentResult::Decided {
                decision,
                exit,
                findings,
            } => Ok(outcome(decision, &findings, exit)),
            DocumentResult::Unreadable(failure) => Err(failure),
        };
    }
    let results = on_every_core(
        paths,
        |path| decide(path).unwrap_or_else(DocumentResult::Unreadable),
        worker_failed,
    );
    let mut out = String::new();
    for (path, verdict) in paths.iter().zip(&results) {
        let file = path.display().to_string();
        if json {
            out.push_str(&verdict.json_line("file", &file));
            continue;
        }
        match verdict {
            DocumentResult::Decided {
                decision, findings, ..
            } => {
                let _ = writeln!(out, "{file}: {decision}");
                for finding in findings {
                    let _ = writeln!(out, "  {}: {}", finding.code, finding.message);
                }
            }
            DocumentResult::Unreadable(failure) => {
                let _ = writeln!(out, "{file}: error[{}]: {}", failure.code, failure.message);
            }
        }
    }
    write_stdout(out.as_bytes())?;
    Ok(written(worst(&results)))
}

/// Decides JSON lines from stdin, `LINES_PER_ROUND` at a time, writing one result line per
/// input line (blank lines are skipped, and numbered). While one round is decided on every
/// core, the next is read, and the previous one's results written.
fn lines(
    decide: impl Fn(PyJson) -> Result<DocumentResult, Failure> + Sync,
) -> Result<Outcome, Failure> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut number = 0_usize;
    let mut worst_exit = exit::OK;
    let decide_line = |(line, text): &Line| -> (u8, String) {
        let verdict = match text {
            Ok(text) => py_json::parse(text)
                .map_err(|e| {
                    Failure::new(
                        CliCode::MALFORMED_JSON,
                        format!("the line is not JSON: {e}"),
                    )
                })
                .and_then(&decide)
                .unwrap_or_else(DocumentResult::Unreadable),
            Err(failure) => DocumentResult::Unreadable(failure.clone()),
        };
        (verdict.exit(), verdict.json_line("line", line))
    };
    let failed_line = || {
        let failed = worker_failed();
        (failed.exit(), failed.json_line("line", &()))
    };
    let (decide_line, failed_line) = (&decide_line, &failed_line);
    std::thread::scope(|scope| {
        let mut in_flight = None;
        loop {
            let round = read_round(&mut input, &mut number)?;
            let done = round.is_empty();
            if let Some(handle) = in_flight.take() {
                let results: Vec<(u8, String)> = std::thread::ScopedJoinHandle::join(handle)
                    .map_err(|_| {
                        Failure::new(
                            CliCode::INTERNAL,
                            "a worker failed while deciding".to_owned(),
                        )
                    })?;
                let mut out = String::new();
                for (code, text) in results {
                    worst_exit = combine(worst_exit, code);
                    out.push_str(&text);
                }
                write_stdout(out.as_bytes())?;
            }
            if done {
                return Ok(written(worst_exit));
            }
            in_flight = Some(scope.spawn(move || on_every_core(&round, decide_line, failed_line)));
        }
    })
}

/// Up to `LINES_PER_ROUND` numbered lines of `input`; an over-long line is an error in its
/// place. Empty at the end of the input.
fn read_round(input: &mut impl BufRead, number: &mut usize) -> Result<Vec<Line>, Failure> {
    let mut round = Vec::new();
    while round.len() < LINES_PER_ROUND {
        let mut line = String::new();
        let read = input
            .take(MAX_LINE_BYTES + 1)
            .read_line(&mut line)
            .map_err(|e| {
                Failure::new(
                    cairn_runtime::RuntimeError::UNREADABLE_INPUT,
                    format!("cannot read stdin: {e}"),
                )
            })?;
        if read == 0 {
            break;
        }
        *number += 1;
        if line.len() as u64 > MAX_LINE_BYTES {
            // Skip the rest of the over-long line.
            let mut rest = Vec::new();
            let _ = input.read_until(b'\n', &mut rest);
            round.push((
                *number,
                Err(Failure::new(
                    CliCode::INPUT_TOO_LARGE,
                    format!("the line is longer than {MAX_LINE_BYTES} bytes"),
                )),
            ));
        } else if !line.trim().is_empty() {
            round.push((*number, Ok(line)));
        }
    }
    Ok(round)
}

/// The exit code of a batch: 2 if any document could not be read, else the worst decision.
fn worst(results: &[DocumentResult]) -> u8 {
    results
        .iter()
        .map(DocumentResult::exit)
        .fold(exit::OK, combine)
}

/// The worse of two batch exit codes: unreadable input over any decision, then BLOCKED over
/// REVIEW_REQUIRED over passed.
fn combine(a: u8, b: u8) -> u8 {
    if a == exit::INVALID || b == exit::INVALID {
        exit::INVALID
    } else {
        a.max(b)
    }
}

fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::new(
            CliCode::IO,
            format!("cannot write output: {e}"),
        )),
        _ => Ok(()),
    }
}

fn written(code: u8) -> Outcome {
    Outcome {
        exit: code,
        ..Outcome::already_written()
    }
}

fn outcome(decision: &str, findings: &[CodedFinding], code: u8) -> Outcome {
    let mut human = format!("{decision}\n");
    for finding in findings {
        let _ = writeln!(human, "  {}: {}", finding.code, finding.message);
    }
    Outcome {
        json: json!({"decision": decision, "findings": findings}),
        human,
        exit: code,
        silent: false,
    }
}
