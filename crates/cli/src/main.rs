//! The `cairn` binary: parses the command line, dispatches to one module per command, and
//! decides output format and exit code in one place.

mod args;
mod commands;
mod context;
mod failure;
mod input;
mod output;
mod remote;
mod store;

use std::process::ExitCode;

use crate::context::Context;
use crate::output::render;

fn main() -> ExitCode {
    // The arguments as the OS gave them: an argument that is not UTF-8 is a usage error,
    // never a panic.
    let cli = match args::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(error) => return ExitCode::from(usage_error(&error)),
    };
    // The process that supervises a hook call logs nothing of its own, on the path of every
    // tool call: it sets up no logger unless `CAIRN_LOG` asks for one (its worker, the
    // resident server and every other command do).
    let supervises_hook = matches!(&cli.command, args::Command::Hook(hook) if !hook.worker);
    if !supervises_hook || std::env::var_os("CAIRN_LOG").is_some() {
        init_logging();
    }
    let context = Context::new(&cli.global);
    // A hook answers in its host's format, with its own exit-code contract (SPEC §9.2); it
    // runs its own threads with the stack it needs.
    if let args::Command::Hook(hook) = &cli.command {
        return commands::hook::run(&context, hook);
    }
    let json = context.json;
    // Commands that load or decide policies need the stack the policy limits are sized for
    // (`cairn_policy::limits`); the main thread's is the OS's choice.
    let ran = std::thread::Builder::new()
        .name("cairn".to_owned())
        .stack_size(cairn_policy::limits::STACK_BYTES)
        .spawn(move || render(commands::run(cli.command, &context), json))
        .map_err(|e| e.to_string())
        .and_then(|thread| thread.join().map_err(|_| "the command panicked".to_owned()));
    ExitCode::from(ran.unwrap_or_else(|reason| {
        render(
            Err(failure::Failure::new(failure::CliCode::INTERNAL, reason)),
            json,
        )
    }))
}

/// Help and version go to stdout with exit 0; usage errors exit 2 — as structured JSON when
/// `--json` was asked for, so scripts get the same error shape as from any other failure.
fn usage_error(error: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = error.print();
        return failure::exit::OK;
    }
    if std::env::args_os().any(|arg| arg == "--json") {
        let detail = error.to_string();
        // The paragraph before clap's usage hint, on one line.
        let summary: Vec<&str> = detail
            .lines()
            .take_while(|line| !line.trim().is_empty())
            .map(str::trim)
            .collect();
        let message = summary.join(" ");
        render(
            Err(failure::Failure::new(
                failure::CliCode::USAGE,
                message.trim_start_matches("error: "),
            )),
            true,
        )
    } else {
        let _ = error.print();
        failure::exit::INVALID
    }
}

/// Logs go to stderr, filtered by `CAIRN_LOG` (default: warnings). Records never carry
/// payloads, and nothing logs argument or observation bytes (I-7).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAIRN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colours only for a person at a terminal: a host shows a hook's stderr to the model.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    // `CAIRN_LOG_FORMAT=json`: one JSON object per line, for a log pipeline.
    if std::env::var("CAIRN_LOG_FORMAT").is_ok_and(|f| f == "json") {
        let _ = logs.json().try_init();
    } else {
        let _ = logs.try_init();
    }
}
