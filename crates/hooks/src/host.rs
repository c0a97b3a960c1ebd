//! The hosts Cairn answers as a hook: Claude Code, Codex, Gemini CLI, GitHub Copilot CLI,
//! Cursor and OpenCode (through Cairn's plugin).

/// A host agent that runs `cairn hook <host>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    /// Anthropic's Claude Code (`.claude/settings.json`).
    ClaudeCode,
    /// OpenAI's Codex (`.codex/hooks.json`).
    Codex,
    /// Google's Gemini CLI (`.gemini/settings.json`).
    GeminiCli,
    /// GitHub's Copilot CLI (`.github/hooks/cairn.json`, in Claude Code's hook format).
    CopilotCli,
    /// Cursor's agent (`.cursor/hooks.json`).
    Cursor,
    /// OpenCode (a plugin, `.opencode/plugins/cairn.js`).
    OpenCode,
}

/// What a host tells its hooks of a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// `PreCompact` before it and `PostCompact` after it (Claude Code, with the summary;
    /// Codex and OpenCode, without).
    Bracketed,
    /// Only `PreCompact`, just before it, and no summary (Copilot CLI, Cursor): the
    /// compaction is recorded then.
    Announced,
    /// `PreCompress` before every turn, compaction or not; the compaction is read from the
    /// history its `BeforeModel` carries (Gemini CLI).
    FromHistory,
}

impl Host {
    /// Every host.
    pub const ALL: [Self; 6] = [
        Self::ClaudeCode,
        Self::Codex,
        Self::GeminiCli,
        Self::CopilotCli,
        Self::Cursor,
        Self::OpenCode,
    ];

    /// The name on the command line and in files (`claude-code`, `codex`, `gemini-cli`,
    /// `copilot-cli`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
            Self::CopilotCli => "copilot-cli",
            Self::Cursor => "cursor",
            Self::OpenCode => "opencode",
        }
    }

    /// What the host tells its hooks of a compaction.
    #[must_use]
    pub const fn compaction(self) -> Compaction {
        match self {
            Self::ClaudeCode | Self::Codex | Self::OpenCode => Compaction::Bracketed,
            Self::CopilotCli | Self::Cursor => Compaction::Announced,
            Self::GeminiCli => Compaction::FromHistory,
        }
    }

    /// Whether the summary of a compaction arrives after the host's `SessionStart(compact)`
    /// (Claude Code's `PostCompact`), so that the context shown then says it is still to be
    /// bound.
    #[must_use]
    pub const fn summary_follows_start(self) -> bool {
        matches!(self, Self::ClaudeCode)
    }

    /// Whether the host sends no id of a call, so that Cairn makes one of the call's name and
    /// arguments (`input::call_id`).
    #[must_use]
    pub const fn sends_no_call_id(self) -> bool {
        matches!(self, Self::GeminiCli | Self::CopilotCli | Self::Cursor)
    }

    /// The prefix of the run ids of this host's sessions (`cc-<session>`, `codex-<session>`,
    /// `gemini-<session>`, `copilot-<session>`, `cursor-<conversation>`).
    #[must_use]
    pub const fn run_prefix(self) -> &'static str {
        match self {
            Self::ClaudeCode => "cc",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini",
            Self::CopilotCli => "copilot",
            Self::Cursor => "cursor",
            Self::OpenCode => "opencode",
        }
    }

    /// The principal a session acts for unless the project configures one.
    #[must_use]
    pub const fn default_principal(self) -> &'static str {
        match self {
            Self::ClaudeCode => "agent:claude-code",
            Self::Codex => "agent:codex",
            Self::GeminiCli => "agent:gemini-cli",
            Self::CopilotCli => "agent:copilot-cli",
            Self::Cursor => "agent:cursor",
            Self::OpenCode => "agent:opencode",
        }
    }

    /// The host's display name.
    #[must_use]
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::GeminiCli => "Gemini CLI",
            Self::CopilotCli => "Copilot CLI",
            Self::Cursor => "Cursor",
            Self::OpenCode => "OpenCode",
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
            "gemini-cli" => Ok(Self::GeminiCli),
            "copilot-cli" => Ok(Self::CopilotCli),
            "cursor" => Ok(Self::Cursor),
            "opencode" => Ok(Self::OpenCode),
            other => Err(format!(
                "expected `claude-code`, `codex`, `gemini-cli`, `copilot-cli`, `cursor` or `opencode`, got `{other}`"
            )),
        }
    }
}

/// The longest run id base (the session id part is cut and suffixed with its digest).
const MAX_BASE_LEN: usize = 96;

/// The base run id of a session: `cc-<session>` / `codex-<session>`, with every character
/// outside `[A-Za-z0-9._-]` replaced by `-`; when anything was replaced or cut, the first 12
/// hex digits of the session id's SHA-256 are appended so that distinct sessions never share
/// a run. The same id names the session's state file and decision snapshot.
#[must_use]
pub fn run_base(host: Host, session_id: &str) -> String {
    let clean: String = session_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut base = format!("{}-{clean}", host.run_prefix());
    if clean != session_id || base.len() > MAX_BASE_LEN {
        base.truncate(MAX_BASE_LEN.saturating_sub(13));
        base.push('-');
        base.push_str(
            cairn_core::Digest::of(session_id.as_bytes())
                .hex()
                .get(..12)
                .unwrap_or("0"),
        );
    }
    base
}

#[cfg(test)]
mod tests {
    use cairn_core::RunId;

    use super::*;

    #[test]
    fn run_ids_keep_clean_session_ids_and_digest_the_rest() {
        assert_eq!(
            run_base(Host::ClaudeCode, "0f8e-42"),
            "cc-0f8e-42".to_owned()
        );
        let odd = run_base(Host::Codex, "a/b c");
        assert!(odd.starts_with("codex-a-b-c-"), "{odd}");
        assert_ne!(odd, run_base(Host::Codex, "a-b-c"));
        let long = run_base(Host::ClaudeCode, &"x".repeat(500));
        assert!(long.len() <= MAX_BASE_LEN, "{}", long.len());
        assert!(RunId::new(&long).is_ok());
    }
}
