//! `cairn hook claude-code|codex`: answers one hook call of the host. The host runs it for
//! every event it is installed for (`cairn hooks install`), with the event's JSON on stdin.
//!
//! The answer has the host's own contract, not the CLI's (SPEC §9.2): exit 0 with a JSON
//! object or nothing on stdout; exit 2 with the reason on stderr to block a `PreToolUse` that
//! could not be decided. No other exit code is used: the hosts let a call through on any
//! other, and on a timeout. So `main` hands this command its stdin and lets it write its own
//! output, bypassing the CLI's output and exit-code mapping.
//!
//! When the project runs a resident hook server (`cairn hooks serve`), the call is answered
//! there (see `cairn_hooks::resident`); a process with `--store`, `--keys`, `CAIRN_FAULT` or
//! `CAIRN_HOOK_RESIDENT=off` always answers by itself.
//!
//! `CAIRN_FAULT=gate-panic` makes the gate panic (a test-only fault switch, see
//! `cairn_hooks::gate`): it can only turn a decision into a deny.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use cairn_core::{ErrorCode, SystemClock};
use cairn_hooks::{Answer, Environment, Fault, Host, StoreOpener};
use cairn_ledger::{Store, StoreError};
use cairn_store_sqlite::{OpenMode, SqliteStore};

use crate::args::{HookArgs, HookHost};
use crate::context::Context;
use crate::output::Outcome;

/// The embedded SQLite store, created on first use.
struct SqliteStores;

impl StoreOpener for SqliteStores {
    fn open(&self, path: &Path) -> Result<Arc<dyn Store>, StoreError> {
        let store = SqliteStore::open(path, OpenMode::CreateIfMissing)?;
        // One process per tool call: keeping a small write-ahead log between processes saves
        // a checkpoint, a deletion and a re-creation of the log (fsyncs) on every call.
        store.tune_for_short_lived_process()?;
        Ok(Arc::new(store))
    }
}

/// The embedded SQLite store for a long-lived process: each store is opened once and kept.
#[derive(Default)]
pub struct KeptSqliteStores {
    open: std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<dyn Store>>>,
}

impl StoreOpener for KeptSqliteStores {
    fn open(&self, path: &Path) -> Result<Arc<dyn Store>, StoreError> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(store) = open.get(path) {
            return Ok(Arc::clone(store));
        }
        let store = SqliteStores.open(path)?;
        open.insert(path.to_path_buf(), Arc::clone(&store));
        Ok(store)
    }
}

/// Runs `cairn hook HOST` and returns its exit code.
pub fn run(ctx: &Context, args: &HookArgs) -> ExitCode {
    ExitCode::from(answer_fail_closed(ctx, args))
}

/// [`answer`], with a last line of defence: `cairn_hooks::handle` catches its own panics, and
/// a panic anywhere else here (which would exit 101 and let the call through) exits 2.
fn answer_fail_closed(ctx: &Context, args: &HookArgs) -> u8 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(ctx, args))).unwrap_or_else(
        |_| {
            let _ = writeln!(
                std::io::stderr(),
                "Cairn denied this call: the hook failed internally (error[hook_internal_panic]). Nothing was run."
            );
            cairn_hooks::answer::EXIT_BLOCK
        },
    )
}

/// The same, for the generic dispatcher (`main` calls [`run`] before it gets there).
pub fn run_as_outcome(ctx: &Context, args: &HookArgs) -> Outcome {
    Outcome {
        json: serde_json::Value::Null,
        human: String::new(),
        exit: answer_fail_closed(ctx, args),
        silent: true,
    }
}

fn answer(ctx: &Context, args: &HookArgs) -> u8 {
    // A panic is caught and answered (deny, exit 2); the default panic hook would only print
    // it a second time.
    std::panic::set_hook(Box::new(|_| {}));
    let host = match args.host {
        HookHost::ClaudeCode => Host::ClaudeCode,
        HookHost::Codex => Host::Codex,
    };
    let stdin = cairn_hooks::input::read_limited(std::io::stdin().lock());
    let fault = std::env::var("CAIRN_FAULT")
        .ok()
        .and_then(|value| Fault::parse(&value));
    #[cfg(unix)]
    let resident = ctx.explicit_store.is_none()
        && ctx.explicit_keys.is_none()
        && fault.is_none()
        && std::env::var("CAIRN_HOOK_RESIDENT").map_or(true, |v| v != "off");
    #[cfg(unix)]
    if resident
        && let Ok(bytes) = &stdin
        && let Some(answer) = cairn_hooks::resident::ask(host, bytes)
    {
        return emit(&answer);
    }
    let environment = Environment {
        clock: Arc::new(SystemClock),
        stores: Arc::new(SqliteStores),
        store_path: ctx.explicit_store.as_ref().map(PathBuf::from),
        keys_dir: ctx.explicit_keys.clone(),
        fault,
        gates: Arc::default(),
    };
    let answer = match stdin {
        Ok(bytes) => {
            let answer = cairn_hooks::handle(host, &bytes, &environment);
            #[cfg(unix)]
            if resident {
                start_server_if_configured(&bytes);
            }
            answer
        }
        Err(error) => Answer::fail_closed(format!(
            "Cairn denied this call: its hook input could not be read (error[{}]: {error}). Nothing was run or recorded.",
            error.code()
        )),
    };
    emit(&answer)
}

/// Starts `cairn hooks serve` for the call's project, in the background and detached from
/// this process (its own process group, no inherited stdio, so the host waits for nothing),
/// when the project's `.cairn/hooks.json` asks for it and no server answers. Best effort:
/// the call has been answered already, and a server that cannot start only means the next
/// call is answered by its own process too.
#[cfg(unix)]
fn start_server_if_configured(stdin: &[u8]) {
    use std::os::unix::process::CommandExt as _;
    let Some(project) = cairn_hooks::resident::project_of(stdin) else {
        return;
    };
    let wanted = cairn_hooks::config::HookConfig::load(&project).is_ok_and(|c| c.resident_server);
    if !wanted || cairn_hooks::resident::is_serving(&project) {
        return;
    }
    let Ok(program) = std::env::current_exe() else {
        return;
    };
    let _ = std::process::Command::new(program)
        .args(["hooks", "serve", "--dir"])
        .arg(project.root())
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
}

/// Writes the answer; a refusal whose JSON cannot be written exits 2 instead, so that it
/// still blocks.
fn emit(answer: &Answer) -> u8 {
    let mut exit = answer.exit;
    if let Some(text) = &answer.stdout {
        let mut out = std::io::stdout().lock();
        let written = writeln!(out, "{text}").and_then(|()| out.flush());
        if written.is_err() && answer.denies {
            exit = cairn_hooks::answer::EXIT_BLOCK;
        }
    }
    if let Some(text) = &answer.stderr {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
    exit
}
