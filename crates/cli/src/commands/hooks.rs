//! `cairn hooks install|uninstall --claude-code|--codex|--gemini-cli|--copilot-cli|--cursor`:
//! adds Cairn's hooks to the host's project settings (`.claude/settings.json`,
//! `.codex/hooks.json`, `.gemini/settings.json`, `.github/hooks/cairn.json`) without touching any
//! other setting or hook, and scaffolds `.cairn/` in observe-first mode (every call allowed
//! and recorded) when the project has none, so installing never breaks a working setup. With
//! `CAIRN_SERVER` set, the project is the service's client: only the hosts' settings are
//! written (the service holds the policies, the key and the ledger).
//! `uninstall` removes exactly what `install` added; `.cairn/` and the ledger stay.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cairn_hooks::Host;
use cairn_hooks::install::{self, Change};
use serde_json::json;

use crate::args::{HooksCommand, HooksServe, HooksTarget};
use crate::commands::init;
use crate::context::{Context, PROJECT_DIR};
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;

/// What `.cairn/.gitignore` keeps out of version control: the store, private keys and the
/// per-session state of a project that keeps them in `.cairn/` (made before they moved to
/// the state folder outside the working tree), so that none is ever committed.
const GITIGNORE: &str = "# Written by `cairn hooks install`: Cairn keeps the ledger, private keys and session state\n# outside the working tree (`cairn where`); in a project made before that, they are these.\ncairn.db\ncairn.db-*\nkeys/\nsessions/\ndecisions/\nhookd.sock*\n";

/// Runs `cairn hooks …`.
pub fn run(ctx: &Context, command: HooksCommand) -> Result<Outcome, Failure> {
    match command {
        HooksCommand::Install(target) => install_hooks(&target),
        HooksCommand::Uninstall(target) => uninstall_hooks(&target),
        HooksCommand::Serve(args) => serve(ctx, &args),
    }
}

/// `cairn hooks serve`: blocks until the server exits (idle, or its socket removed).
#[cfg(unix)]
fn serve(ctx: &Context, args: &HooksServe) -> Result<Outcome, Failure> {
    let start = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| {
            Failure::new(
                cairn_runtime::RuntimeError::INVALID_INPUT,
                format!("the current directory: {e}"),
            )
        })?,
    };
    let Some(project) = cairn_hooks::project::Project::find(&start) else {
        return Err(Failure::new(
            cairn_runtime::decision_files::DecisionFilesError::NO_PROJECT,
            format!(
                "no `.cairn/` folder at or above `{}` (run `cairn hooks install` or `cairn init` first)",
                start.display()
            ),
        ));
    };
    // `cairn hook` hands a call to the server only when it has no store or key directory of
    // its own, so the server must use the project's, as that process would.
    if ctx.explicit_store.is_some() || ctx.explicit_keys.is_some() {
        return Err(Failure::new(
            cairn_runtime::RuntimeError::INVALID_INPUT,
            "`cairn hooks serve` always uses the project's own store and keys: drop `--store`/`--keys` (and `CAIRN_STORE`/`CAIRN_KEYS`)",
        ));
    }
    let environment = cairn_hooks::Environment {
        clock: std::sync::Arc::new(cairn_core::SystemClock),
        stores: std::sync::Arc::new(cairn_hooks::KeptStores::new(
            crate::store::HookStores::LongLived,
        )),
        store: None,
        keys_dir: None,
        fault: None,
        gates: std::sync::Arc::default(),
        // The server answers for its own project only; the client sends it only the calls
        // whose project this is.
        binding: cairn_hooks::project::Binding {
            fixed: None,
            explicit: Some(project.root().to_path_buf()),
            index: None,
            home: None,
        },
        namespace: None,
        gate: None,
    };
    let idle = crate::input::parse_duration("--idle", &args.idle)?;
    let idle = std::time::Duration::try_from(idle)
        .unwrap_or_default()
        .max(std::time::Duration::from_secs(1));
    eprintln!(
        "cairn: answering the hook calls of `{}` at `{}` (exits after {} without a call)",
        project.root().display(),
        cairn_hooks::resident::socket_path(&project).display(),
        args.idle
    );
    let stopped = cairn_hooks::resident::serve(&project, environment, idle)
        .map_err(|e| Failure::from_error(&e))?;
    // Returning ends the process, and with it the threads that wait for calls.
    Ok(Outcome {
        json: json!({"served": true, "stopped": format!("{stopped:?}")}),
        human: String::new(),
        exit: 0,
        silent: true,
    })
}

#[cfg(not(unix))]
fn serve(_ctx: &Context, _args: &HooksServe) -> Result<Outcome, Failure> {
    Err(Failure::new(
        CliCode::UNSUPPORTED,
        "the resident hook server needs Unix domain sockets",
    ))
}

fn hosts(target: &HooksTarget) -> Vec<Host> {
    [
        (target.claude_code, Host::ClaudeCode),
        (target.codex, Host::Codex),
        (target.gemini_cli, Host::GeminiCli),
        (target.copilot_cli, Host::CopilotCli),
        (target.cursor, Host::Cursor),
        (target.opencode, Host::OpenCode),
    ]
    .into_iter()
    .filter_map(|(chosen, host)| chosen.then_some(host))
    .collect()
}

fn base(target: &HooksTarget) -> Result<PathBuf, Failure> {
    match &target.dir {
        Some(dir) if dir.is_dir() => Ok(dir.clone()),
        Some(dir) => Err(Failure::new(
            cairn_runtime::RuntimeError::INVALID_INPUT,
            format!("`--dir`: `{}` is not a folder", dir.display()),
        )),
        None => std::env::current_dir().map_err(|e| {
            Failure::new(
                CliCode::IO,
                format!("cannot read the current directory: {e}"),
            )
        }),
    }
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn install_hooks(target: &HooksTarget) -> Result<Outcome, Failure> {
    let base = base(target)?;
    let hosts = hosts(target);
    // Every settings file is checked before anything is written.
    for host in &hosts {
        install::check(*host, &base).map_err(|e| Failure::from_error(&e))?;
    }
    let mut human = String::new();
    let project = base.join(PROJECT_DIR);
    // A client of a service needs the hosts' settings only: the service holds the policies,
    // the key and the ledger, and `cairn-hook` sends it every event.
    let service = std::env::var_os("CAIRN_SERVER").filter(|s| !s.is_empty());
    if let Some(server) = &service {
        server
            .to_str()
            .unwrap_or_default()
            .parse::<cairn_server::client::Endpoint>()
            .map_err(|e| Failure::from_error(&e))?;
    }
    let scaffolded = if let Some(server) = &service {
        let _ = writeln!(
            human,
            "CAIRN_SERVER is set: this project is a client of {}. Its policies, signing key and ledger are the service's: none is created here (`.cairn/installed-hooks.json` only records what was installed, for `cairn hooks uninstall`){}.",
            server.to_string_lossy(),
            if project.is_dir() {
                "; the existing `.cairn/` is not read while CAIRN_SERVER is set"
            } else {
                ""
            }
        );
        Vec::new()
    } else if project.is_dir() {
        init::restrict_project(&cairn_runtime::layout::Project::at(&base))?;
        let _ = writeln!(
            human,
            "kept the existing {} (its policies apply)",
            project.display()
        );
        Vec::new()
    } else {
        let scaffold = init::scaffold(&base)?;
        let _ = writeln!(
            human,
            "created {} in observe-first mode: every call allowed and recorded (policy set {})",
            scaffold.project.display(),
            scaffold.policy_set_version
        );
        scaffold.created
    };
    let gitignore = project.join(".gitignore");
    if service.is_none() && !gitignore.exists() {
        std::fs::write(&gitignore, GITIGNORE).map_err(|e| {
            Failure::new(
                CliCode::IO,
                format!("cannot write `{}`: {e}", gitignore.display()),
            )
        })?;
    }
    let mut changes = Vec::new();
    for host in hosts {
        let change = install::install(host, &base).map_err(|e| Failure::from_error(&e))?;
        describe(&mut human, &change, &base, "installed", "already installed");
        changes.push(change);
    }
    let codex = changes.iter().any(|c| c.host == Host::Codex);
    if codex {
        human.push_str(&codex_trust_steps(&base));
    }
    let gemini = changes.iter().any(|c| c.host == Host::GeminiCli);
    if gemini {
        human.push_str(&gemini_notes(&base));
    }
    if changes.iter().any(|c| c.host == Host::CopilotCli) {
        human.push_str(COPILOT_NOTES);
    }
    if changes.iter().any(|c| c.host == Host::Cursor) {
        human.push_str(CURSOR_NOTES);
    }
    if changes.iter().any(|c| c.host == Host::OpenCode) {
        human.push_str(OPENCODE_NOTES);
    }
    let hook_program_found = on_path(install::HOOK_PROGRAM);
    if !hook_program_found {
        let _ = writeln!(
            human,
            "
warning: `{program}` is not on PATH. The hosts run it for every hook event: Claude Code refuses every tool call while it cannot run it, Codex lets the call through. Put `{program}` beside `cairn` on the PATH the agent runs with (`cargo install --locked --path crates/cli` installs both).",
            program = install::HOOK_PROGRAM
        );
    }
    if service.is_some() {
        let _ = writeln!(
            human,
            "\nnext: run the agent with CAIRN_SERVER and an agent's token in CAIRN_TOKEN (`cairn tokens create --data DIR --tenant T --role agent` on the service's host); every tool call is decided and recorded by the service, and refused while it cannot be reached.\n  With an investigator's token in CAIRN_TOKEN instead, from any shell:\n  cairn runs list              the tenant's runs, one per session\n  cairn ledger verify --all    the service verifies every chain and signed checkpoint\n  cairn doctor                 what this set-up protects against"
        );
    } else {
        let _ = writeln!(
            human,
            "\nnext: use the agent as usual; every tool call is gated and recorded.\n  cairn runs list              one run per session (cc-, codex-, gemini-, copilot-<session>)\n  cairn ledger verify --all    check every chain and signed checkpoint"
        );
    }
    Ok(Outcome::ok(
        json!({
            "project": if service.is_some() { None } else { Some(&project) },
            "service": service.as_ref().map(|s| s.to_string_lossy()),
            "created": scaffolded,
            "hooks": changes.iter().map(|c| to_json(c, &base)).collect::<Vec<_>>(),
            "codex_trust_required": codex,
            "gemini_hooks_disabled": gemini && gemini_hooks_disabled(&base).is_some(),
            "hook_program_on_path": hook_program_found,
        }),
        human,
    ))
}

/// Whether an executable file named `program` is in a folder of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let file = dir.join(program);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::metadata(&file)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            }
            #[cfg(not(unix))]
            {
                file.with_extension("exe").is_file() || file.is_file()
            }
        })
    })
}

/// What a Codex user must do before Codex runs the hooks at all (issue 16, B7): Codex
/// ignores a project's `.codex/hooks.json` until the project is trusted, and runs no hook
/// until its exact command has been reviewed and trusted — and `codex exec` says nothing of
/// either, it simply runs every tool ungated.
fn codex_trust_steps(base: &Path) -> String {
    let dir = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    format!(
        "\nCodex: until both steps below are done, Codex ignores these hooks and runs every tool ungated and unrecorded (`codex exec` warns about an untrusted project, but says nothing of untrusted hooks):\n  1. trust the project: run `codex` in {dir} and accept the trust prompt, or run `codex exec --trust` there once\n     (it adds [projects.\"{dir}\"] trust_level = \"trusted\" to ~/.codex/config.toml);\n  2. trust the hooks: run `codex` in {dir} and choose \"Trust all and continue\" at \"Hooks need review\"\n     (Codex asks again whenever a hook's command changes, e.g. after `cairn hooks install` updates it).\n  Check: `cairn runs list` shows a codex-<session> run after a Codex session that used a tool.\n",
        dir = dir.display()
    )
}

/// What a Copilot CLI user must know.
const COPILOT_NOTES: &str = "\nCopilot CLI: it runs these hooks only in a trusted folder (accept the prompt, or `copilot --trust-folder` / COPILOT_ALLOW_ALL=true for `copilot -p`). It refuses a call whose hook exits with any code but 0, and lets it through when the hook outlives its timeout. It also runs the Claude Code hooks of `.claude/settings.json`: Cairn's there answer nothing under Copilot CLI while this file holds Cairn's hooks, so every call is recorded once.\n  Check: `cairn runs list` shows a copilot-<session> run after a Copilot CLI session that used a tool.\n";

/// What an OpenCode user must know.
const OPENCODE_NOTES: &str = "\nOpenCode: it has no command hooks; Cairn's plugin hands every event to `cairn-hook opencode` and refuses a tool call by throwing — also when Cairn cannot be asked. OpenCode runs without the plugin if the file is removed or fails to load, and sends no session end: a run stays open until the next session.\n  Check: `cairn runs list` shows an opencode-<session> run after an OpenCode session that used a tool.\n";

/// What a Cursor user must know.
const CURSOR_NOTES: &str = "\nCursor: built from Cursor's documented hooks (the agent cannot be run in Cairn's tests). `failClosed: true` on preToolUse makes Cursor refuse a call whose hook failed. Restart Cursor (or open a new agent session) to load the hooks.\n  Check: `cairn runs list` shows a cursor-<conversation> run after an agent session that used a tool.\n";

/// What a Gemini CLI user must know: it reads a project's hooks only in a trusted folder, has
/// no setting that refuses a call whose hook failed, and can have its hooks switched off.
fn gemini_notes(base: &Path) -> String {
    let mut notes = "\nGemini CLI: it runs these hooks only in a trusted folder. Trust the folder when Gemini CLI asks (or set GEMINI_CLI_TRUST_WORKSPACE=true for a headless run); `gemini --skip-trust` runs the session WITHOUT the project's hooks, every tool ungated and unrecorded. Gemini CLI lets a call through when its hook fails: Cairn's BeforeTool command exits 2 when `cairn-hook` cannot start, but a hook it kills at its timeout (60 s) lets the call through.\n  Check: `cairn runs list` shows a gemini-<session> run after a Gemini CLI session that used a tool.\n".to_owned();
    if let Some(file) = gemini_hooks_disabled(base) {
        let _ = writeln!(
            notes,
            "\nwarning: `hooksConfig.enabled` is false in {}: Gemini CLI runs no hook at all, so every tool call is ungated and unrecorded. Set it to true.",
            file.display()
        );
    }
    notes
}

/// The Gemini CLI settings file (the project's, then the user's) that switches hooks off.
fn gemini_hooks_disabled(base: &Path) -> Option<PathBuf> {
    let user = std::env::var_os("HOME").map(|home| Path::new(&home).join(".gemini/settings.json"));
    std::iter::once(install::settings_path(Host::GeminiCli, base))
        .chain(user)
        .find(|file| {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|text| install::settings_value(Host::GeminiCli, &text))
                .is_some_and(|value| {
                    value
                        .get("hooksConfig")
                        .and_then(|config| config.get("enabled"))
                        == Some(&serde_json::Value::Bool(false))
                })
        })
}

fn uninstall_hooks(target: &HooksTarget) -> Result<Outcome, Failure> {
    let base = base(target)?;
    let mut human = String::new();
    let mut changes = Vec::new();
    for host in hosts(target) {
        let change = install::uninstall(host, &base).map_err(|e| Failure::from_error(&e))?;
        describe(&mut human, &change, &base, "removed", "not installed");
        changes.push(change);
    }
    let _ = writeln!(
        human,
        "{} and its ledger are kept.",
        base.join(PROJECT_DIR).display()
    );
    Ok(Outcome::ok(
        json!({"hooks": changes.iter().map(|c| to_json(c, &base)).collect::<Vec<_>>()}),
        human,
    ))
}

fn describe(human: &mut String, change: &Change, base: &Path, done: &str, nothing: &str) {
    let file = relative(&change.path, base);
    if change.events.is_empty() {
        let _ = writeln!(
            human,
            "{}: {nothing} in {file} (nothing changed)",
            change.host.display_name()
        );
    } else {
        let _ = writeln!(
            human,
            "{}: {done} `{}` for {} in {file}{}",
            change.host.display_name(),
            change.command,
            change.events.join(", "),
            if change.file_created_or_removed {
                if done == "installed" {
                    " (created)"
                } else {
                    " (file removed: the install had created it)"
                }
            } else {
                ""
            }
        );
    }
}

fn to_json(change: &Change, base: &Path) -> serde_json::Value {
    json!({
        "host": change.host.as_str(),
        "settings": relative(&change.path, base),
        "command": change.command,
        "events": change.events,
        "file_created_or_removed": change.file_created_or_removed,
    })
}
