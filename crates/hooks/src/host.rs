//! The two hosts Cairn answers as a hook: Claude Code and Codex.

/// A host agent that runs `cairn hook <host>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    /// Anthropic's Claude Code (`.claude/settings.json`).
    ClaudeCode,
    /// OpenAI's Codex (`.codex/hooks.json`).
    Codex,
}

impl Host {
    /// Both hosts.
    pub const ALL: [Self; 2] = [Self::ClaudeCode, Self::Codex];

    /// The name on the command line and in files (`claude-code`, `codex`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The prefix of the run ids of this host's sessions (`cc-<session>`, `codex-<session>`).
    #[must_use]
    pub const fn run_prefix(self) -> &'static str {
        match self {
            Self::ClaudeCode => "cc",
            Self::Codex => "codex",
        }
    }

    /// The principal a session acts for unless the project configures one.
    #[must_use]
    pub const fn default_principal(self) -> &'static str {
        match self {
            Self::ClaudeCode => "agent:claude-code",
            Self::Codex => "agent:codex",
        }
    }

    /// The host's display name.
    #[must_use]
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
        }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Host {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "claude-code" => Ok(Self::ClaudeCode),
            "codex" => Ok(Self::Codex),
            other => Err(format!("expected `claude-code` or `codex`, got `{other}`")),
        }
    }
}
