//! The one place that turns a command's outcome (or failure) into stdout, stderr and an exit
//! code: JSON on stdout with `--json`, text otherwise; errors as `error[code]: message`.

use std::io::Write;

use crate::failure::{Failure, exit};

/// What a command produced.
#[derive(Debug)]
pub struct Outcome {
    /// The machine form, printed with `--json`.
    pub json: serde_json::Value,
    /// The human form, printed otherwise (may be empty).
    pub human: String,
    /// The exit code.
    pub exit: u8,
    /// The command wrote its product to stdout itself; print nothing more.
    pub silent: bool,
}

impl Outcome {
    /// A successful outcome.
    pub fn ok(json: serde_json::Value, human: String) -> Self {
        Self {
            json,
            human,
            exit: exit::OK,
            silent: false,
        }
    }

    /// A successful outcome whose output the command already wrote.
    pub fn already_written() -> Self {
        Self {
            json: serde_json::Value::Null,
            human: String::new(),
            exit: exit::OK,
            silent: true,
        }
    }
}

/// Prints the outcome and returns the exit code.
pub fn render(result: Result<Outcome, Failure>, json: bool) -> u8 {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match result {
        Ok(outcome) => {
            let written = if outcome.silent {
                Ok(())
            } else if json {
                serde_json::to_writer_pretty(&mut out, &outcome.json)
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(out))
            } else if outcome.human.is_empty() {
                Ok(())
            } else {
                write!(out, "{}", outcome.human).and_then(|()| {
                    if outcome.human.ends_with('\n') {
                        Ok(())
                    } else {
                        writeln!(out)
                    }
                })
            };
            match written.and_then(|()| out.flush()) {
                // A closed pipe (`cairn … | head`) is not a failure of the command.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    let _ = writeln!(std::io::stderr(), "error[io]: cannot write output: {e}");
                    exit::INTERNAL
                }
                _ => outcome.exit,
            }
        }
        Err(failure) => {
            if json {
                let body = serde_json::json!({
                    "error": { "code": failure.code, "message": failure.message }
                });
                let _ = serde_json::to_writer_pretty(&mut out, &body);
                let _ = writeln!(out);
            } else {
                let _ = writeln!(
                    std::io::stderr(),
                    "error[{}]: {}",
                    failure.code,
                    failure.message
                );
            }
            failure.exit
        }
    }
}
