//! OpenCode's way in: it has no command hooks, so `hooks install --opencode` writes a plugin of
//! Cairn's own, `.opencode/plugins/cairn.js`, which hands every event to
//! `cairn-hook opencode --project DIR` in the hook JSON Cairn reads for every host and throws to
//! refuse a tool call (see the file itself, `opencode-plugin.js`). The file is Cairn's: an
//! install writes it (over an older Cairn plugin, never over another file), an uninstall
//! removes it.

use std::path::Path;

use super::{Change, command, settings_path, write_atomic};
use crate::error::HookError;
use crate::host::Host;

/// The first line of Cairn's plugin, by which an install and an uninstall know it is Cairn's.
const FIRST_LINE: &str = "// Cairn on every tool call of OpenCode.";

/// The plugin OpenCode runs: how each event reaches Cairn.
pub const PLUGIN_HOOKS: [&str; 5] = [
    "tool.execute.before",
    "tool.execute.after",
    "chat.message",
    "experimental.session.compacting",
    "event",
];

/// The plugin's hooks, when the plugin was written or removed (else none: nothing changed).
fn hooks_if(changed: bool) -> Vec<String> {
    if changed {
        PLUGIN_HOOKS.iter().map(|hook| (*hook).to_owned()).collect()
    } else {
        Vec::new()
    }
}

/// The plugin for the project at `dir`.
fn text(dir: &Path) -> String {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let literal = serde_json::Value::String(dir.to_string_lossy().into_owned()).to_string();
    include_str!("opencode-plugin.js").replace("__CAIRN_PROJECT__", &literal)
}

/// What is at the plugin's path now: nothing, Cairn's plugin (its text), or another file.
fn existing(path: &Path) -> Result<Option<String>, HookError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.starts_with(FIRST_LINE) => Ok(Some(text)),
        Ok(_) => Err(super::shape_error(
            path,
            "it is not Cairn's plugin; Cairn writes only its own file there (move it away, or name yours differently)",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HookError::io(path, &e)),
    }
}

/// Checks that the plugin can be written, without writing it.
///
/// # Errors
/// As [`install`].
pub fn check(dir: &Path) -> Result<(), HookError> {
    existing(&settings_path(Host::OpenCode, dir)).map(|_| ())
}

/// Writes Cairn's plugin into the project at `dir`.
///
/// # Errors
/// [`HookError::Settings`] when another file is at the plugin's path; [`HookError::Io`].
pub fn install(dir: &Path) -> Result<Change, HookError> {
    let path = settings_path(Host::OpenCode, dir);
    let before = existing(&path)?;
    let text = text(dir);
    let changed = before.as_deref() != Some(text.as_str());
    if changed {
        write_atomic(&path, text.as_bytes())?;
    }
    Ok(Change {
        host: Host::OpenCode,
        command: command(Host::OpenCode, dir),
        events: hooks_if(changed),
        file_created_or_removed: before.is_none(),
        path,
    })
}

/// Removes Cairn's plugin from the project at `dir`.
///
/// # Errors
/// [`HookError::Settings`] when the file there is not Cairn's; [`HookError::Io`].
pub fn uninstall(dir: &Path) -> Result<Change, HookError> {
    let path = settings_path(Host::OpenCode, dir);
    let removed = existing(&path)?.is_some();
    if removed {
        std::fs::remove_file(&path).map_err(|e| HookError::io(&path, &e))?;
    }
    Ok(Change {
        host: Host::OpenCode,
        command: command(Host::OpenCode, dir),
        events: hooks_if(removed),
        file_created_or_removed: removed,
        path,
    })
}

/// Whether the project at `dir` holds Cairn's plugin.
#[must_use]
pub fn installed(dir: &Path) -> bool {
    existing(&settings_path(Host::OpenCode, dir)).is_ok_and(|text| text.is_some())
}
