//! What the hooks hand the runtime's self-protection (`cairn_runtime::protect`) besides
//! Cairn's own `.cairn/`: the hook settings of the hosts they install into, and the `cairn`
//! commands they tell a person — never the agent — to run.

use cairn_runtime::protect::Protected;

/// The hosts' hook settings and the person-only `cairn` commands.
pub const PROTECTED: Protected = Protected {
    // Claude Code's project settings (shared and local), Codex's hooks and configuration,
    // Gemini CLI's project settings and Copilot CLI's file of Cairn's hooks.
    files: &[
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".codex/hooks.json",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".github/hooks/cairn.json",
        ".cursor/hooks.json",
        ".opencode/plugins/cairn.js",
    ],
    file_text: &[
        ".claude/settings",
        ".codex/hooks.json",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".github/hooks/cairn.json",
        ".cursor/hooks.json",
        ".opencode/plugins/cairn.js",
    ],
    program: cairn_runtime::protect::PERSON_PROGRAM,
    program_options: cairn_runtime::protect::PERSON_PROGRAM_OPTIONS,
    person_commands: cairn_runtime::protect::PERSON_COMMANDS,
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use std::path::Path;

    use cairn_runtime::protect::ProjectGuard;
    use serde_json::json;

    use super::PROTECTED;

    #[test]
    fn commands_naming_the_configuration_or_human_only_commands_are_refused() {
        let guard = ProjectGuard::new(Path::new("/nonexistent/project"), &[], PROTECTED);
        for refused in [
            "sed -i s/verification/authoring/ .cairn/lanes.json",
            "rm -rf .cairn",
            "cat /nonexistent/project/.cairn/keys/active",
            "cd .cairn && ls",
            "echo '{}' > .claude/settings.local.json",
            "cat .codex/hooks.json",
            "echo '{}' > .gemini/settings.json",
            "rm .github/hooks/cairn.json",
            "echo x > .opencode/plugins/cairn.js",
            "cairn decisions set scope x && cairn decisions approve-change scope --from 1 --to 2",
            "/usr/local/bin/cairn reconcile --run r --key k --outcome applied --evidence e",
            "cairn --store x.db keys rotate",
            "cairn hooks uninstall --claude-code",
            "true; cairn init --dir .",
            "cairn approvals approve apr-0123456789abcdef01234567",
            "cairn --store .cairn/ledger.db approvals list",
        ] {
            assert!(
                guard.refusal(&json!({"command": refused})).is_some(),
                "{refused}"
            );
        }
        for allowed in [
            "cargo test",
            "cairn runs list",
            "cairn ledger verify --all",
            "cairn policy explain --tool Bash --args '{}'",
            "cairn decisions status",
            "ls docs/my.cairnfile notes.cairn-draft",
            "grep -r cairn src",
        ] {
            assert_eq!(
                guard.refusal(&json!({"command": allowed})),
                None,
                "{allowed}"
            );
        }
        assert!(
            guard
                .refusal(&json!({"command": ["bash", "-lc", "cat .cairn/hooks.json"]}))
                .is_some()
        );
    }
}
