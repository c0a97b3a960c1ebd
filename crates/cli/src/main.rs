//! The `cairn` binary: parses the command line, dispatches to one module per command, and
//! decides output format and exit code in one place.

mod args;
mod commands;
mod context;
mod failure;
mod output;

use std::process::ExitCode;

use clap::Parser;

use crate::args::Cli;
use crate::context::Context;
use crate::output::render;

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let context = Context::new(&cli.global);
    let result = commands::run(cli.command, &context);
    ExitCode::from(render(result, context.json))
}

/// Logs go to stderr, filtered by `CAIRN_LOG` (default: warnings). Records never carry
/// payloads, and nothing logs argument or observation bytes (I-7).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAIRN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
