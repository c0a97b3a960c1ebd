//! What the hooks hand the runtime's self-protection (`cairn_runtime::protect`) besides
//! Cairn's own `.cairn/`: the hook settings of the hosts they install into, and the `cairn`
//! commands they tell a person — never the agent — to run.

use cairn_runtime::protect::Protected;

/// The hosts' hook settings and the person-only `cairn` commands.
pub const PROTECTED: Protected = Protected {
    // Claude Code's project settings (shared and local) and Codex's hooks and configuration.
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
    // Approvals and reconciliations are a person's, and so are the keys, the project's
    // set-up and the hooks' own settings.
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_runtimes_tests_judge_what_the_hooks_hand_over() {
        assert_eq!(super::PROTECTED, cairn_test_support::protected::HOSTS);
    }
}
