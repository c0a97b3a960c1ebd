//! Installing the hooks into a host's settings: `.claude/settings.json` (Claude Code),
//! `.codex/hooks.json` (Codex), `.gemini/settings.json` (Gemini CLI) or
//! `.github/hooks/cairn.json` (Copilot CLI, which reads Claude Code's hook format from any
//! file there), in the project folder.
//!
//! The hosts read the same shape — event name → list of matcher groups, each with a list of
//! handlers. Claude Code's handler names the program and its arguments (the *exec form*: the
//! host starts `cairn-hook` itself, no shell in between), and on `PreToolUse` tells the host to
//! refuse the call when the hook fails — cannot be started, crashes, times out:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "cairn-hook",
//!   "args": ["claude-code", "--project", "${CLAUDE_PROJECT_DIR}"], "timeout": 60,
//!   "onFailure": "block"}]}]}}
//! ```
//!
//! Codex runs a handler's `command` with a shell: `exec cairn-hook codex --project 'DIR'`.
//! So does Gemini CLI (its `timeout` is in milliseconds), which has no setting that refuses a
//! call whose hook failed: its `BeforeTool` handler is `cairn-hook gemini-cli --project 'DIR'
//! || { echo … >&2; exit 2; }`, so that a `cairn-hook` that cannot start, or fails without an
//! answer, still blocks the call (Gemini CLI blocks on exit 2 only with a reason on stderr); a
//! hook it kills at its timeout still lets the call through. Gemini CLI's settings may hold
//! comments: they are kept as they are.
//!
//! The handler names its project (see [`owned_fields`]), so that a session is gated and
//! recorded in its project whatever its `cwd`. Cairn's groups have no `matcher` (every tool,
//! every source). Installing adds one group per event that does not already run Cairn's hook
//! (in the form above, or as a shell command `exec cairn-hook <host> …`, `cairn-hook <host> …`
//! or `cairn hook <host> …` as earlier installs wrote it) and brings an older Cairn handler up
//! to date in place; installing twice changes nothing.
//!
//! **The file is edited in place.** Everything Cairn does not add or remove stays byte for
//! byte as it was — formatting, key order, numbers such as `123456789012345678901234567890`
//! or `-0` — because the edit works on the file's concrete syntax tree (`jsonc-parser`), and
//! the result is checked to mean exactly the intended merge before it is written. A settings
//! file that is not strict JSON (a duplicate key, a bad escape, comments), or whose `hooks`
//! do not have the shape above, is an error and is never overwritten. A symlinked settings
//! file is written through: its target gets the hooks and the link stays a link.
//! Uninstalling removes exactly the handlers that run Cairn's hook for the host (either form),
//! the groups and events that become empty because of it, and the file itself when the
//! install created it and nothing else is left (recorded in `.cairn/installed-hooks.json`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::error::HookError;
use crate::host::Host;
use cairn_runtime::layout::PROJECT_DIR;

pub mod plugin;
mod text;

use text::{edited, merge_text, unmerge_text};

/// How long a host waits for one hook invocation, in seconds. Cairn answers well before (its
/// deadline, `cairn hook --deadline`, is 10 s by default and at most 50 s), so a slow store
/// fails closed instead of timing out (a timeout lets the call through).
pub const HOOK_TIMEOUT_SECS: u64 = 60;

/// The record of what the installer created, inside `.cairn/`.
pub const INSTALLED_FILE: &str = "installed-hooks.json";

/// How long Codex lets a `SessionEnd` hook run, in seconds: it clamps a longer timeout to
/// this and warns about it at every start. Closing a run takes milliseconds.
pub const CODEX_SESSION_END_TIMEOUT_SECS: u64 = 3;

/// The events Cairn installs for `host`. Codex has no `PostToolUseFailure`; it sends
/// `SessionEnd` (reason `other`) from 0.17x on, and without it no Codex run would ever close.
#[must_use]
pub const fn events(host: Host) -> &'static [&'static str] {
    match host {
        Host::ClaudeCode => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "PostCompact",
            "Stop",
            "SubagentStop",
            "SessionEnd",
        ],
        Host::Codex => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PreCompact",
            "PostCompact",
            "Stop",
            "SessionEnd",
        ],
        // `BeforeModel` shows Cairn the history, from which a compaction is read (its
        // `PreCompress` comes before every turn); Gemini CLI has no failure event of a tool.
        // Copilot CLI runs Claude Code's hook configuration, with Claude Code's event names; it
        // has no `PostCompact` (its `PreCompact` comes just before the compaction itself).
        Host::CopilotCli => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStop",
            "SessionEnd",
        ],
        // Cursor gates every call at `preToolUse` (its tool-specific gates would record a call
        // twice); its `preCompact` is the one event of a compaction.
        Host::Cursor => &[
            "sessionStart",
            "beforeSubmitPrompt",
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "preCompact",
            "stop",
            "sessionEnd",
        ],
        // OpenCode's plugin hooks (it has no command hooks: Cairn's plugin, `plugin`).
        Host::OpenCode => &plugin::PLUGIN_HOOKS,
        Host::GeminiCli => &[
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "PreCompress",
            "BeforeModel",
            "AfterAgent",
            "SessionEnd",
        ],
    }
}

/// The event of `host` that comes before a tool call (the gate).
#[must_use]
pub const fn gate_event(host: Host) -> &'static str {
    match host {
        Host::GeminiCli => "BeforeTool",
        Host::Cursor => "preToolUse",
        Host::OpenCode => "tool.execute.before",
        Host::ClaudeCode | Host::Codex | Host::CopilotCli => "PreToolUse",
    }
}

/// Whether `host`'s events list their handlers directly (Cursor: `{"preToolUse": [{"command":
/// …}]}`), rather than in groups with a `hooks` array of handlers (every other host).
#[must_use]
pub const fn flat(host: Host) -> bool {
    matches!(host, Host::Cursor)
}

/// Whether `host`'s settings file may hold comments (Gemini CLI strips them before reading).
#[must_use]
pub const fn allows_comments(host: Host) -> bool {
    matches!(host, Host::GeminiCli)
}

/// The timeout Cairn installs for `host`'s `event`, in seconds.
#[must_use]
pub fn timeout_secs(host: Host, event: &str) -> u64 {
    match (host, event) {
        (Host::Codex, "SessionEnd") => CODEX_SESSION_END_TIMEOUT_SECS,
        _ => HOOK_TIMEOUT_SECS,
    }
}

/// The timeout as `host`'s settings write it (Gemini CLI's are in milliseconds).
fn timeout_setting(host: Host, event: &str) -> u64 {
    match host {
        Host::GeminiCli => timeout_secs(host, event).saturating_mul(1000),
        Host::ClaudeCode | Host::Codex | Host::CopilotCli | Host::Cursor | Host::OpenCode => {
            timeout_secs(host, event)
        }
    }
}

/// The fields of `host`'s handler for `event` that Cairn owns and sets on every install
/// (the rest — `type`, `timeout` — are written when the handler is added, and a user's change
/// to them is kept).
///
/// Claude Code hands every hook its project as `CLAUDE_PROJECT_DIR` and substitutes
/// `${CLAUDE_PROJECT_DIR}` in an exec-form argument, so a committed `.claude/settings.json`
/// works in every clone. The exec form spares every hook event the shell the host otherwise
/// starts first (two per tool call); `onFailure: block` on `PreToolUse` makes the host refuse
/// a call whose hook it could not run to an answer — a missing `cairn-hook`, a crash, the
/// host's own timeout — where it would otherwise let the call through.
///
/// Codex has no such variable and runs `command` with a shell: its command names the folder
/// itself, and `exec` makes the shell become the hook rather than fork once more for it.
#[must_use]
pub fn owned_fields(host: Host, dir: &Path, event: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    match host {
        Host::ClaudeCode => {
            fields.insert("command".to_owned(), json!(HOOK_PROGRAM));
            fields.insert(
                "args".to_owned(),
                json!([host.as_str(), "--project", "${CLAUDE_PROJECT_DIR}"]),
            );
            if event == "PreToolUse" {
                fields.insert("onFailure".to_owned(), json!("block"));
            }
        }
        Host::Codex => {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            fields.insert(
                "command".to_owned(),
                json!(format!(
                    "exec {HOOK_PROGRAM} codex --project {}",
                    shell_quoted(&dir.to_string_lossy())
                )),
            );
        }
        Host::CopilotCli => {
            // Copilot CLI runs `command` with a shell and ignores `args`; it hands every hook
            // its project as `COPILOT_PROJECT_DIR`, so the file works in every clone.
            fields.insert(
                "command".to_owned(),
                json!(format!(
                    "exec {HOOK_PROGRAM} copilot-cli --project \"$COPILOT_PROJECT_DIR\""
                )),
            );
        }
        Host::OpenCode => {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            fields.insert(
                "command".to_owned(),
                json!(format!(
                    "{HOOK_PROGRAM} opencode --project {}",
                    dir.display()
                )),
            );
        }
        Host::Cursor => {
            // Cursor runs `command` with a shell; `failClosed` on the gate makes it refuse a
            // call whose hook failed, where it would otherwise let it through.
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            fields.insert(
                "command".to_owned(),
                json!(format!(
                    "exec {HOOK_PROGRAM} cursor --project {}",
                    shell_quoted(&dir.to_string_lossy())
                )),
            );
            if event == gate_event(host) {
                fields.insert("failClosed".to_owned(), json!(true));
            }
        }
        Host::GeminiCli => {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            let run = format!(
                "{HOOK_PROGRAM} gemini-cli --project {}",
                shell_quoted(&dir.to_string_lossy())
            );
            fields.insert(
                "command".to_owned(),
                json!(if event == gate_event(host) {
                    format!("{run} || {{ {GEMINI_CANNOT_RUN}; exit 2; }}")
                } else {
                    format!("exec {run}")
                }),
            );
        }
    }
    fields
}

/// What the host runs for the project at `dir`, as one line for people (the settings hold it
/// as [`owned_fields`]).
#[must_use]
pub fn command(host: Host, dir: &Path) -> String {
    let fields = owned_fields(host, dir, "PreToolUse");
    let program = fields
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or(HOOK_PROGRAM);
    let args = fields.get("args").and_then(Value::as_array);
    std::iter::once(program)
        .chain(args.into_iter().flatten().filter_map(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` as one word for a POSIX shell.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// What Gemini CLI's `BeforeTool` command says when `cairn-hook` fails without an answer:
/// Gemini CLI blocks on exit 2 only when there is a reason to show (exit 2 alone, or exit 1,
/// lets the call run).
const GEMINI_CANNOT_RUN: &str =
    "echo 'cairn-hook could not run, so Cairn refuses this call (run `cairn doctor`)' >&2";

/// The program the installed hooks run: the thin client of the resident server, which
/// hands every call it does not answer itself to `cairn hook` (see the `cairn-hook` binary).
pub const HOOK_PROGRAM: &str = "cairn-hook";

/// Whether a handler with this `command` and `args` runs Cairn's hook for `host`: the exec
/// form (`cairn-hook` with the host as its first argument), or a shell command `exec
/// cairn-hook HOST …`, `cairn-hook HOST …` or `cairn hook HOST …` as earlier installs wrote it
/// (an install updates it in place, an uninstall removes it).
pub(crate) fn is_cairn_handler(command: &str, args: Option<&[Value]>, host: Host) -> bool {
    if let Some(args) = args {
        return command == HOOK_PROGRAM
            && args.first().and_then(Value::as_str) == Some(host.as_str());
    }
    let command = command.strip_prefix("exec ").unwrap_or(command);
    [HOOK_PROGRAM, "cairn hook"].iter().any(|program| {
        command
            .strip_prefix(&format!("{program} {}", host.as_str()))
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    })
}

/// The host's settings file in the project at `dir`.
#[must_use]
pub fn settings_path(host: Host, dir: &Path) -> PathBuf {
    match host {
        Host::ClaudeCode => dir.join(".claude").join("settings.json"),
        Host::Codex => dir.join(".codex").join("hooks.json"),
        Host::GeminiCli => dir.join(".gemini").join("settings.json"),
        Host::CopilotCli => dir.join(".github").join("hooks").join("cairn.json"),
        Host::Cursor => dir.join(".cursor").join("hooks.json"),
        Host::OpenCode => dir.join(".opencode").join("plugins").join("cairn.js"),
    }
}

/// What an install or uninstall did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The host.
    pub host: Host,
    /// The settings file.
    pub path: PathBuf,
    /// The command installed (or removed).
    pub command: String,
    /// The events whose Cairn hook was added, updated or removed.
    pub events: Vec<String>,
    /// Whether the file was created (install) or deleted (uninstall).
    pub file_created_or_removed: bool,
}

pub(crate) fn shape_error(path: &Path, reason: impl Into<String>) -> HookError {
    HookError::Settings {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Checks the shape of `settings` and returns its `hooks` object (created when absent).
fn hooks_of<'a>(
    settings: &'a mut Value,
    host: Host,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, HookError> {
    let object = settings
        .as_object_mut()
        .ok_or_else(|| shape_error(path, "the top level is not a JSON object"))?;
    let hooks = object
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let hooks = hooks
        .as_object_mut()
        .ok_or_else(|| shape_error(path, "`hooks` is not an object"))?;
    for (event, groups) in hooks.iter() {
        let groups = groups
            .as_array()
            .ok_or_else(|| shape_error(path, format!("`hooks.{event}` is not an array")))?;
        for (i, group) in groups.iter().enumerate() {
            if flat(host) {
                if !group.is_object() {
                    return Err(shape_error(
                        path,
                        format!("`hooks.{event}[{i}]` is not an object"),
                    ));
                }
                continue;
            }
            let handlers = group.get("hooks").and_then(Value::as_array);
            if !group.is_object() || handlers.is_none() {
                return Err(shape_error(
                    path,
                    format!("`hooks.{event}[{i}]` is not an object with a `hooks` array"),
                ));
            }
        }
    }
    Ok(hooks)
}

fn is_ours(handler: &Value, host: Host) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| {
            let args = handler.get("args").and_then(Value::as_array);
            is_cairn_handler(command, args.map(Vec::as_slice), host)
        })
}

/// A new handler of Cairn's for `host`'s `event`, its `owned` fields included.
pub(crate) fn our_handler(host: Host, event: &str, owned: &Map<String, Value>) -> Value {
    let mut handler = Map::new();
    handler.insert("type".to_owned(), json!("command"));
    handler.extend(owned.iter().map(|(k, v)| (k.clone(), v.clone())));
    handler.insert("timeout".to_owned(), json!(timeout_setting(host, event)));
    Value::Object(handler)
}

/// Adds Cairn's hook for `host` in the project at `dir` to `settings` (bringing an older
/// Cairn handler up to date in place); returns the events added or updated. This is what an
/// install means; the file is edited to mean exactly this.
///
/// # Errors
/// [`HookError::Settings`] when `settings` does not have the hosts' shape.
pub fn merge(
    settings: &mut Value,
    host: Host,
    dir: &Path,
    path: &Path,
) -> Result<Vec<String>, HookError> {
    if flat(host)
        && let Some(object) = settings.as_object_mut()
        && !object.contains_key("version")
    {
        // Cursor's file states its format's version.
        object.insert("version".to_owned(), json!(1));
    }
    let hooks = hooks_of(settings, host, path)?;
    let mut changed = Vec::new();
    for event in events(host) {
        let owned = owned_fields(host, dir, event);
        let groups = hooks
            .entry((*event).to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let mut present = false;
        let mut updated = false;
        for handler in handlers_mut(host, groups).filter(|handler| is_ours(handler, host)) {
            present = true;
            let Some(object) = handler.as_object_mut() else {
                continue;
            };
            for (key, value) in &owned {
                if object.get(key) != Some(value) {
                    object.insert(key.clone(), value.clone());
                    updated = true;
                }
            }
        }
        if !present {
            let handler = our_handler(host, event, &owned);
            groups.push(if flat(host) {
                handler
            } else {
                json!({"hooks": [handler]})
            });
        }
        if !present || updated {
            changed.push((*event).to_owned());
        }
    }
    Ok(changed)
}

/// Every handler of an event's `groups` of `host` (see [`flat`]).
fn handlers_mut(host: Host, groups: &mut [Value]) -> Box<dyn Iterator<Item = &mut Value> + '_> {
    if flat(host) {
        Box::new(groups.iter_mut())
    } else {
        Box::new(
            groups
                .iter_mut()
                .filter_map(|group| group.get_mut("hooks").and_then(Value::as_array_mut))
                .flatten(),
        )
    }
}

/// Removes Cairn's hook for `host` from `settings`; returns the events it was removed from.
/// The `hooks` object left empty is removed too when `drop_hooks` (the install added it).
///
/// # Errors
/// [`HookError::Settings`] when `settings` does not have the hosts' shape.
pub fn unmerge(
    settings: &mut Value,
    host: Host,
    path: &Path,
    drop_hooks: bool,
) -> Result<Vec<String>, HookError> {
    let had_hooks = settings.get("hooks").is_some();
    let hooks = hooks_of(settings, host, path)?;
    let mut removed = Vec::new();
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let mut touched = false;
        if flat(host) {
            let before = groups.len();
            groups.retain(|handler| !is_ours(handler, host));
            touched = groups.len() != before;
        }
        groups.retain_mut(|group| {
            if flat(host) {
                return true;
            }
            let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = handlers.len();
            handlers.retain(|h| !is_ours(h, host));
            if handlers.len() == before {
                return true;
            }
            touched = true;
            !handlers.is_empty()
        });
        if touched {
            removed.push(event.clone());
            if groups.is_empty() {
                emptied.push(event.clone());
            }
        }
    }
    for event in &emptied {
        hooks.remove(event);
    }
    let hooks_empty = hooks.is_empty();
    if let Some(object) = settings.as_object_mut()
        && hooks_empty
        && ((drop_hooks && !removed.is_empty()) || !had_hooks)
    {
        object.remove("hooks");
    }
    Ok(removed)
}

/// A settings file as read: its text and what it means.
pub(crate) struct Settings {
    pub(crate) text: String,
    pub(crate) value: Value,
}

/// Reads `host`'s settings at `path` (through a symlink), refusing anything but strict JSON
/// (with comments, where the host allows them).
fn read_settings(host: Host, path: &Path) -> Result<Option<Settings>, HookError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            if std::fs::metadata(path).is_ok_and(|meta| meta.permissions().readonly()) {
                return Err(shape_error(
                    path,
                    "it is read-only; Cairn does not change a settings file its owner made read-only (make it writable, or add the hooks by hand: see `cairn hooks install --help`)",
                ));
            }
            let value = text::meaning(host, &text).map_err(|e| {
                shape_error(
                    path,
                    format!("not strict JSON ({}: {e}); fix it by hand, Cairn edits only what it can keep exactly", cairn_core::ErrorCode::code(&e)),
                )
            })?;
            Ok(Some(Settings { text, value }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HookError::io(path, &e)),
    }
}

/// What the text of a `host` settings file means (comments blanked where the host allows
/// them), if it reads.
#[must_use]
pub fn settings_value(host: Host, text: &str) -> Option<Value> {
    text::meaning(host, text).ok()
}

/// Writes `bytes` to `path` atomically (a temporary file beside it, then a rename). A
/// symlink is written through: its target is replaced and keeps its permissions, the link
/// stays.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HookError> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).map_err(|e| HookError::io(path, &e))?
        }
        _ => path.to_path_buf(),
    };
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(|e| HookError::io(dir, &e))?;
    }
    let mode = std::fs::metadata(&target).map_or(0o644, |meta| {
        use std::os::unix::fs::PermissionsExt as _;
        meta.permissions().mode() & 0o7777
    });
    cairn_runtime::files::replace(&target, mode, bytes).map_err(|(_, e)| HookError::io(&target, &e))
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text.into_bytes()
}

fn installed_path(dir: &Path) -> PathBuf {
    dir.join(PROJECT_DIR).join(INSTALLED_FILE)
}

/// What the installer created, by host (`.cairn/installed-hooks.json`): the settings files,
/// and the `hooks` objects it added to a file that had none — what `uninstall` removes once
/// it is empty again (a user's own empty `hooks` stays).
#[derive(Default)]
struct Created {
    files: Map<String, Value>,
    hooks: Map<String, Value>,
}

impl Created {
    fn read(dir: &Path) -> Self {
        let doc = std::fs::read_to_string(installed_path(dir))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        let map = |key: &str| {
            doc.as_ref()
                .and_then(|v| v.get(key).and_then(Value::as_object).cloned())
                .unwrap_or_default()
        };
        Self {
            files: map("created_files"),
            hooks: map("created_hooks"),
        }
    }

    fn save(&self, dir: &Path) -> Result<(), HookError> {
        let path = installed_path(dir);
        if self.files.is_empty() && self.hooks.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(HookError::io(&path, &e)),
                _ => Ok(()),
            };
        }
        let mut doc =
            json!({"schema_version": "cairn.installed-hooks/v1", "created_files": self.files});
        if !self.hooks.is_empty()
            && let Some(object) = doc.as_object_mut()
        {
            object.insert(
                "created_hooks".to_owned(),
                Value::Object(self.hooks.clone()),
            );
        }
        write_atomic(&path, &pretty(&doc))
    }
}

/// Whether `host`'s settings file in `dir` holds Cairn's `PreToolUse` hook (a file that does
/// not read holds none).
#[must_use]
pub fn installed(host: Host, dir: &Path) -> bool {
    if host == Host::OpenCode {
        return plugin::installed(dir);
    }
    let path = settings_path(host, dir);
    let Some(value) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| settings_value(host, &text))
    else {
        return false;
    };
    let gate = gate_event(host);
    let mut groups = value
        .get("hooks")
        .and_then(|hooks| hooks.get(gate))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    handlers_mut(host, &mut groups).any(|handler| is_ours(handler, host))
}

/// Checks that `host`'s settings file in `dir`, if any, can be merged (strict JSON of the
/// hosts' shape, editable in place), without writing anything.
///
/// # Errors
/// As [`install`].
pub fn check(host: Host, dir: &Path) -> Result<(), HookError> {
    if host == Host::OpenCode {
        return plugin::check(dir);
    }
    plan_install(host, dir).map(|_| ())
}

/// What installing `host`'s hooks in `dir` would do (see [`Plan`]).
fn plan_install(host: Host, dir: &Path) -> Result<Plan, HookError> {
    let path = settings_path(host, dir);
    let command = command(host, dir);
    let existing = read_settings(host, &path)?;
    let created = existing.is_none();
    let had_hooks = existing
        .as_ref()
        .is_some_and(|s| s.value.get("hooks").is_some());
    let mut expected = existing
        .as_ref()
        .map_or_else(|| Value::Object(Map::new()), |s| s.value.clone());
    let events = merge(&mut expected, host, dir, &path)?;
    let text = if events.is_empty() {
        None
    } else {
        Some(edited(host, existing.as_ref(), &path, &expected, |root| {
            merge_text(root, host, dir)
        })?)
    };
    Ok(Plan {
        text,
        events,
        created,
        had_hooks,
        command,
    })
}

/// What an install will do: the file's new text (`None`: nothing to change), the events
/// added or updated, whether the file is created, whether it had a `hooks` object, and the
/// command installed.
struct Plan {
    text: Option<String>,
    events: Vec<String>,
    created: bool,
    had_hooks: bool,
    command: String,
}

/// Installs Cairn's hooks for `host` into the project at `dir` (its `.cairn/` must exist).
///
/// # Errors
/// [`HookError::Settings`] for a settings file that is not strict JSON, not of the hosts'
/// shape, or that cannot be edited in place (it is left untouched); [`HookError::Io`].
pub fn install(host: Host, dir: &Path) -> Result<Change, HookError> {
    if host == Host::OpenCode {
        return plugin::install(dir);
    }
    let path = settings_path(host, dir);
    let Plan {
        text,
        events,
        created,
        had_hooks,
        command,
    } = plan_install(host, dir)?;
    if let Some(text) = text {
        write_atomic(&path, text.as_bytes())?;
    }
    if created || !had_hooks {
        let mut record = Created::read(dir);
        let entry = if created {
            &mut record.files
        } else {
            &mut record.hooks
        };
        entry.insert(host.as_str().to_owned(), Value::Bool(true));
        record.save(dir)?;
    }
    Ok(Change {
        host,
        path,
        command,
        events,
        file_created_or_removed: created,
    })
}

/// Removes Cairn's hooks for `host` from the project at `dir`.
///
/// # Errors
/// [`HookError::Settings`] for a settings file that is not strict JSON or not of the hosts'
/// shape (it is left untouched); [`HookError::Io`].
pub fn uninstall(host: Host, dir: &Path) -> Result<Change, HookError> {
    if host == Host::OpenCode {
        return plugin::uninstall(dir);
    }
    let path = settings_path(host, dir);
    let command = command(host, dir);
    let Some(settings) = read_settings(host, &path)? else {
        return Ok(Change {
            host,
            path,
            command,
            events: Vec::new(),
            file_created_or_removed: false,
        });
    };
    let mut record = Created::read(dir);
    let we_created = record.files.remove(host.as_str()).is_some();
    let drop_hooks = record.hooks.remove(host.as_str()).is_some() || we_created;
    let mut expected = settings.value.clone();
    let events = unmerge(&mut expected, host, &path, drop_hooks)?;
    // A file left with nothing but Cursor's format version is empty.
    let empty = expected.as_object().is_some_and(|object| {
        object.is_empty() || (flat(host) && object.len() == 1 && object.contains_key("version"))
    });
    let removed_file = we_created && empty;
    if removed_file {
        std::fs::remove_file(&path).map_err(|e| HookError::io(&path, &e))?;
        if let Some(parent) = path.parent() {
            // Only an empty folder is removed; anything else in it stays.
            let _ = std::fs::remove_dir(parent);
        }
    } else if !events.is_empty() {
        let text = edited(host, Some(&settings), &path, &expected, |root| {
            unmerge_text(root, host, drop_hooks)
        })?;
        write_atomic(&path, text.as_bytes())?;
    }
    record.save(dir)?;
    Ok(Change {
        host,
        path,
        command,
        events,
        file_created_or_removed: removed_file,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

    use super::*;

    #[test]
    fn merging_keeps_other_hooks_and_is_idempotent() {
        let path = Path::new("settings.json");
        let mut settings = json!({
            "permissions": {"allow": ["Bash(npm test)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]}
        });
        let dir = Path::new("/work/project");
        let added = merge(&mut settings, Host::ClaudeCode, dir, path).unwrap();
        assert_eq!(added.len(), events(Host::ClaudeCode).len());
        let once = settings.clone();
        assert!(
            merge(&mut settings, Host::ClaudeCode, dir, path)
                .unwrap()
                .is_empty()
        );
        assert_eq!(settings, once);
        assert_eq!(settings["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        let removed = unmerge(&mut settings, Host::ClaudeCode, path, true).unwrap();
        assert_eq!(removed.len(), events(Host::ClaudeCode).len());
        assert_eq!(
            settings,
            json!({
                "permissions": {"allow": ["Bash(npm test)"]},
                "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]}
            })
        );
    }

    #[test]
    fn a_wrong_shape_is_refused() {
        let path = Path::new("settings.json");
        for bad in [
            json!([]),
            json!({"hooks": []}),
            json!({"hooks": {"Stop": {}}}),
            json!({"hooks": {"Stop": [1]}}),
        ] {
            let mut settings = bad.clone();
            assert!(
                merge(&mut settings, Host::Codex, Path::new("/p"), path).is_err(),
                "{bad}"
            );
            assert_eq!(settings, bad);
        }
    }
}
