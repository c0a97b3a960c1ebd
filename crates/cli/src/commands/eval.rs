//! `cairn eval DIR`: the full-vs-compacted evaluation of SPEC E-6. Every scenario file under
//! DIR is decided on its full history and on its compacted path; the table shows both
//! decisions and the verdict. Exit 0 when every case holds (each `pass` case is the same or
//! stricter, each deliberately lossy `caught` case is flagged), 4 when one does not, 2 when a
//! scenario file is unreadable or malformed (the error names the file and the JSON path).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cairn_continuity::eval::{EvalSummary, Evaluation, Scenario, evaluate};
use serde_json::{Value, json};

use crate::args::EvalArgs;
use crate::failure::{CliCode, Failure, exit};
use crate::output::Outcome;

/// The largest scenario file read (the parser has its own limit as well).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// How deep folders are searched (a guard against symlink loops).
const MAX_DEPTH: usize = 16;

fn unreadable(path: &Path, e: &std::io::Error) -> Failure {
    Failure::new(
        cairn_runtime::RuntimeError::UNREADABLE_INPUT,
        format!("cannot read `{}`: {e}", path.display()),
    )
}

/// Every `*.json` file under `dir`, sorted by path.
fn scenario_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::new(
            cairn_runtime::RuntimeError::INVALID_INPUT,
            format!(
                "`{}` is nested more than {MAX_DEPTH} folders deep",
                dir.display()
            ),
        ));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, &e))?;
    for entry in entries {
        let path = entry.map_err(|e| unreadable(dir, &e))?.path();
        if path.is_dir() {
            scenario_files(&path, depth + 1, out)?;
        } else if path.extension().is_some_and(|ext| ext == "json") {
            out.push(path);
        }
    }
    Ok(())
}

fn load(path: &Path) -> Result<Scenario, Failure> {
    let len = std::fs::metadata(path)
        .map_err(|e| unreadable(path, &e))?
        .len();
    if len > MAX_FILE_BYTES {
        return Err(Failure::new(
            CliCode::INPUT_TOO_LARGE,
            format!(
                "`{}` is {len} bytes; the limit is {MAX_FILE_BYTES}",
                path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(path, &e))?;
    Scenario::from_json(&text).map_err(|e| {
        Failure::new(
            cairn_continuity::eval::ScenarioError::INVALID_SCENARIO,
            format!("`{}`: {e}", path.display()),
        )
    })
}

/// Pads `cells` into aligned columns.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(line, "{cell:<width$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn human(rows: &[(PathBuf, Evaluation)], summary: &EvalSummary) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, r)| {
            vec![
                r.scenario.clone(),
                r.property.as_str().to_owned(),
                r.full.headline(),
                r.compacted.headline(),
                r.verdict.as_str().to_owned(),
                format!(
                    "{} {}",
                    r.expect.as_str(),
                    if r.holds { "ok" } else { "FAILED" }
                ),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "SCENARIO",
            "PROPERTY",
            "FULL",
            "COMPACTED",
            "VERDICT",
            "EXPECTED",
        ],
        &cells,
    );
    for (path, row) in rows.iter().filter(|(_, r)| !r.holds) {
        for problem in &row.problems {
            let _ = writeln!(
                out,
                "FAILED {} ({}): {problem}",
                row.scenario,
                path.display()
            );
        }
    }
    let _ = writeln!(
        out,
        "{} scenarios: {} hold ({} pass, {} lossy caught), {} failing; properties covered {}/{}",
        summary.scenarios,
        summary.holding,
        summary.passed,
        summary.caught,
        summary.failing,
        summary.properties_covered.len(),
        summary.properties_covered.len() + summary.properties_missing.len(),
    );
    if !summary.properties_missing.is_empty() {
        let missing: Vec<&str> = summary
            .properties_missing
            .iter()
            .map(|p| p.as_str())
            .collect();
        let _ = writeln!(
            out,
            "properties without both a passing and a caught case: {}",
            missing.join(", ")
        );
    }
    out
}

/// Runs `cairn eval DIR`.
pub fn run(args: &EvalArgs) -> Result<Outcome, Failure> {
    let mut files = Vec::new();
    if args.dir.is_file() {
        files.push(args.dir.clone());
    } else {
        scenario_files(&args.dir, 0, &mut files)?;
    }
    files.sort();
    if files.is_empty() {
        return Err(Failure::new(
            CliCode::NO_SCENARIOS,
            format!("`{}` holds no `*.json` scenario file", args.dir.display()),
        ));
    }
    let mut rows = Vec::with_capacity(files.len());
    for path in files {
        let scenario = load(&path)?;
        rows.push((path, evaluate(&scenario)));
    }
    let evaluations: Vec<Evaluation> = rows.iter().map(|(_, r)| r.clone()).collect();
    let summary = EvalSummary::of(&evaluations);
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|(path, row)| {
            let mut value = serde_json::to_value(row).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.insert("file".to_owned(), json!(path.display().to_string()));
            }
            value
        })
        .collect();
    let json = json!({
        "rows": json_rows,
        "summary": serde_json::to_value(&summary).unwrap_or(Value::Null),
    });
    Ok(Outcome {
        human: human(&rows, &summary),
        json,
        exit: if summary.all_hold() {
            exit::OK
        } else {
            exit::BLOCKED
        },
        silent: false,
    })
}
