//! One module per command; `run` dispatches.

mod approvals;
mod boundary;
mod continuity;
mod cost;
mod decisions;
mod demo;
mod doctor;
mod eval;
mod gc;
pub mod hook;
mod hooks;
mod init;
mod inspect;
mod interop;
mod keys;
mod ledger;
mod mcp;
mod policy;
mod reconcile;
mod runs;
mod schema;
mod serve;
mod status;
mod store;
mod tokens;
mod ui;
mod r#where;

use crate::args::Command;
use crate::context::Context;
use crate::failure::Failure;
use crate::output::Outcome;

/// Runs a parsed command.
pub fn run(command: Command, ctx: &Context) -> Result<Outcome, Failure> {
    match command {
        Command::Demo(args) => demo::run(ctx, &args),
        Command::Init(args) => init::run(ctx, &args),
        Command::Policy(cmd) => policy::run(ctx, cmd),
        Command::Continuity(cmd) => continuity::run(cmd),
        Command::InspectContinuity(args) => inspect::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Reconcile(args) => reconcile::run(ctx, &args),
        Command::Approvals(cmd) => approvals::run(ctx, cmd),
        Command::Decisions(cmd) => decisions::run(ctx, cmd),
        Command::Status(args) => status::run(ctx, &args),
        Command::Hook(args) => Ok(hook::run_as_outcome(ctx, &args)),
        Command::Hooks(cmd) => hooks::run(ctx, cmd),
        Command::Vce(cmd) => interop::run_vce(cmd, ctx.json),
        Command::Rlc(cmd) => interop::run_rlc(cmd, ctx.json),
        Command::Keys(cmd) => keys::run(ctx, cmd),
        Command::Ledger(cmd) => ledger::run(ctx, cmd),
        Command::Runs(cmd) => runs::run(ctx, cmd),
        Command::Gc(args) => gc::run(ctx, &args),
        Command::Cost(args) => cost::run(ctx, &args),
        Command::Schema(args) => Ok(schema::run(&args)),
        Command::Store(cmd) => store::run(ctx, cmd),
        Command::Serve(args) => serve::run(ctx, &args),
        Command::Tokens(cmd) => tokens::run(cmd),
        Command::Doctor(args) => doctor::run(&args),
        Command::Where => r#where::run(ctx),
        Command::Ui(args) => ui::run(ctx, &args),
        Command::Mcp(cmd) => mcp::run(ctx, cmd),
    }
}
