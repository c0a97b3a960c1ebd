//! What the hooks hand the runtime's self-protection for Claude Code and Codex, restated for
//! the runtime's tests of the mechanism (`cairn_hooks::PROTECTED`, which the hooks' tests hold
//! equal to this).

use cairn_runtime::protect::Protected;

/// The hosts' hook settings and the person-only `cairn` commands.
pub const HOSTS: Protected = Protected {
    files: &[
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".codex/hooks.json",
        ".codex/config.toml",
    ],
    file_text: &[
        ".claude/settings",
        ".codex/hooks.json",
        ".codex/config.toml",
    ],
    program: "cairn",
    program_options: &["--store", "--keys"],
    person_commands: &[
        &["reconcile"],
        &["keys"],
        &["init"],
        &["decisions", "set"],
        &["decisions", "approve-change"],
        &["decisions", "snapshot"],
        &["hooks", "install"],
        &["hooks", "uninstall"],
    ],
};
