//! What a hook invocation answers: stdout, stderr and the exit code, in the host's format.
//!
//! # The contract with the hosts
//!
//! - Exit `0` with a JSON object on stdout is a structured answer; exit `0` with nothing on
//!   stdout is "no decision": the host's own permission flow goes on.
//! - Exit `2` blocks a `PreToolUse` and shows stderr to the model. Any other non-zero exit,
//!   and a timeout, let the call through — so Cairn never uses them: an internal failure of
//!   a `PreToolUse` answers exit `2` (fail closed).
//! - A `PreToolUse` deny exits `2` with the reason on stderr — the one answer both hosts
//!   block on whatever they make of stdout — and also prints `{"hookSpecificOutput":
//!   {"hookEventName": "PreToolUse", "permissionDecision": "deny",
//!   "permissionDecisionReason": …}}` (Codex's output schemas define the same form). So exit
//!   0 always means the call may run, as far as Cairn is concerned.
//! - An allow is answered with **nothing** by default: Claude Code's `"allow"` skips the
//!   user's permission prompt, and a policy that only narrows must not widen what the user's
//!   own settings allow. A project can ask for explicit allows (`explicit_allow` in
//!   `.cairn/hooks.json`, Claude Code only).
//! - Context for the model goes in `hookSpecificOutput.additionalContext` of `SessionStart`,
//!   `UserPromptSubmit`, `PostToolUse` and `PostToolUseFailure` (at most
//!   [`MAX_CONTEXT_CHARS`] characters); a message for the user in `systemMessage`.
//!
//! Answers are built in Claude Code's form and written in the host's by [`Answer::for_host`]:
//! Gemini CLI reads a deny as `{"decision": "deny", "reason": …}` (exit 2 blocks as well), the
//! context of its `AfterTool`, `BeforeAgent` and `SessionStart` in
//! `hookSpecificOutput.additionalContext`, and — unlike the others — reads stderr as its
//! answer when stdout is empty, turning a note into an `allow`; so every exit-0 answer to it
//! carries a JSON object on stdout (`{}`: no decision). Copilot CLI reads Claude Code's form
//! but the context at the top level (`additionalContext`); it refuses a call on any exit code
//! but 0, yet shows the model a refusal's reason only for its JSON deny with exit 0 — so there,
//! and only there, a refusal exits 0 with that JSON (exit 2 when stdout cannot be written).
//! Cursor reads `permission`, `user_message`, `agent_message` and `additional_context`. Codex
//! and OpenCode (through Cairn's plugin) read Claude Code's form as it is.

use serde_json::json;

use crate::host::Host;

/// The longest `additionalContext` the hosts accept without spilling it to a file.
pub const MAX_CONTEXT_CHARS: usize = 10_000;

/// The exit code that blocks a `PreToolUse`.
pub const EXIT_BLOCK: u8 = 2;

/// A hook's answer (serialised as is between `cairn hook` and the resident server).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    /// What goes to stdout (a JSON object), if anything.
    pub stdout: Option<String>,
    /// What goes to stderr, if anything.
    pub stderr: Option<String>,
    /// The exit code.
    pub exit: u8,
    /// Whether the answer refuses a tool call. When stdout cannot be written, such an
    /// answer must exit 2 instead (a host that reads no JSON lets the call through).
    pub denies: bool,
}

impl Answer {
    /// Exit 0, nothing printed: no decision, nothing to say.
    #[must_use]
    pub const fn silent() -> Self {
        Self {
            stdout: None,
            stderr: None,
            exit: 0,
            denies: false,
        }
    }

    /// Exit 0 with a note on stderr (the hosts show it only in their debug log).
    #[must_use]
    pub fn note(text: impl Into<String>) -> Self {
        Self {
            stdout: None,
            stderr: Some(text.into()),
            exit: 0,
            denies: false,
        }
    }

    /// Exit 2 with the reason on stderr: the call is blocked and the model is told why.
    #[must_use]
    pub fn fail_closed(reason: impl Into<String>) -> Self {
        Self {
            stdout: None,
            stderr: Some(reason.into()),
            exit: EXIT_BLOCK,
            denies: true,
        }
    }

    /// A `PreToolUse` deny with its reason: exit 2, the reason on stderr, and the hosts'
    /// JSON deny on stdout.
    #[must_use]
    pub fn deny(reason: &str) -> Self {
        Self {
            denies: true,
            exit: EXIT_BLOCK,
            stderr: Some(reason.to_owned()),
            ..Self::json(&json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }))
        }
    }

    /// A `PreToolUse` allow: nothing, unless `explicit` (Claude Code only).
    #[must_use]
    pub fn allow(host: Host, explicit: bool, reason: &str) -> Self {
        if explicit && host == Host::ClaudeCode {
            Self::json(&json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": reason,
                }
            }))
        } else {
            Self::silent()
        }
    }

    /// Context for the model, through the event's `additionalContext` (truncated to
    /// [`MAX_CONTEXT_CHARS`]).
    #[must_use]
    pub fn context(event: &str, text: &str) -> Self {
        Self::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "additionalContext": truncate(text, MAX_CONTEXT_CHARS),
            }
        }))
    }

    /// A message shown to the user (not the model).
    #[must_use]
    pub fn system_message(text: &str) -> Self {
        Self::json(&json!({ "systemMessage": truncate(text, MAX_CONTEXT_CHARS) }))
    }

    /// Adds a stderr note to an answer.
    #[must_use]
    pub fn with_note(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        self.stderr = Some(match self.stderr.take() {
            Some(before) => format!("{before}\n{text}"),
            None => text,
        });
        self
    }

    /// The reason of a refusal, as the model is to be told it.
    fn refusal_reason(&self) -> String {
        self.stderr
            .clone()
            .unwrap_or_else(|| "Cairn refused this call".to_owned())
    }

    /// This answer as `host` reads it (see the module documentation).
    #[must_use]
    pub fn for_host(&self, host: Host) -> Self {
        match host {
            Host::GeminiCli => self.for_gemini_cli(),
            Host::CopilotCli => self.for_copilot_cli(),
            Host::Cursor => self.for_cursor(),
            Host::ClaudeCode | Host::Codex | Host::OpenCode => self.clone(),
        }
    }

    /// Cursor reads `permission` (`deny`) with `user_message` and `agent_message`, and the
    /// context for the model as `additional_context`; a refusal also exits 2, which Cursor
    /// blocks on whatever it makes of the JSON. Every answer is a JSON object.
    fn for_cursor(&self) -> Self {
        let mut answer = self.clone();
        let value = answer
            .stdout
            .as_deref()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
        let specific = value
            .as_ref()
            .and_then(|v| v.get("hookSpecificOutput"))
            .cloned();
        let mut out = serde_json::Map::new();
        if let Some(message) = value.as_ref().and_then(|v| v.get("systemMessage")) {
            out.insert("user_message".to_owned(), message.clone());
        }
        if let Some(context) = specific.as_ref().and_then(|s| s.get("additionalContext")) {
            out.insert("additional_context".to_owned(), context.clone());
        }
        if answer.denies {
            let reason = answer.refusal_reason();
            out.insert("permission".to_owned(), json!("deny"));
            out.insert("user_message".to_owned(), json!(reason));
            out.insert("agent_message".to_owned(), json!(reason));
        }
        answer.stdout = Some(serde_json::Value::Object(out).to_string());
        answer
    }

    /// Copilot CLI reads the context for the model at the top level (`additionalContext`), and
    /// shows the model a refusal's reason only when the refusal is its JSON deny with exit 0
    /// (for exit 2 it says "hook exited with code 2"); it refuses a call on any other exit
    /// code. So a refusal is written as that JSON with exit 0 — and [`crate::client::emit`]
    /// exits 2 instead if stdout cannot be written.
    fn for_copilot_cli(&self) -> Self {
        let mut answer = self.clone();
        let mut object = match answer
            .stdout
            .as_deref()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        {
            Some(serde_json::Value::Object(object)) => object,
            _ => serde_json::Map::new(),
        };
        let context = object
            .get("hookSpecificOutput")
            .and_then(|specific| specific.get("additionalContext"))
            .cloned();
        if let Some(context) = context {
            object.insert("additionalContext".to_owned(), context);
        }
        if answer.denies {
            let reason = answer.refusal_reason();
            object.insert("permissionDecision".to_owned(), json!("deny"));
            object.insert("permissionDecisionReason".to_owned(), json!(reason));
            object.insert(
                "hookSpecificOutput".to_owned(),
                json!({
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }),
            );
            answer.exit = 0;
        }
        if !object.is_empty() {
            answer.stdout = Some(serde_json::Value::Object(object).to_string());
        }
        answer
    }

    fn for_gemini_cli(&self) -> Self {
        let mut answer = self.clone();
        let value = answer
            .stdout
            .as_deref()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
        let mut out = serde_json::Map::new();
        if let Some(serde_json::Value::Object(object)) = &value {
            if let Some(message) = object.get("systemMessage") {
                out.insert("systemMessage".to_owned(), message.clone());
            }
            let specific = object.get("hookSpecificOutput");
            let field = |name: &str| specific.and_then(|s| s.get(name)).cloned();
            if field("permissionDecision").and_then(|d| d.as_str().map(str::to_owned))
                == Some("deny".to_owned())
            {
                out.insert("decision".to_owned(), json!("deny"));
                out.insert(
                    "reason".to_owned(),
                    field("permissionDecisionReason").unwrap_or_else(|| json!("")),
                );
            }
            if let Some(context) = field("additionalContext") {
                let event = field("hookEventName")
                    .and_then(|e| e.as_str().map(gemini_event))
                    .unwrap_or("AfterTool");
                out.insert(
                    "hookSpecificOutput".to_owned(),
                    json!({"hookEventName": event, "additionalContext": context}),
                );
            }
        }
        // A refusal says so in JSON too (with its reason: Gemini CLI blocks on exit 2 only
        // when it has a reason to show).
        if answer.denies && !out.contains_key("decision") {
            out.insert("decision".to_owned(), json!("deny"));
            let reason = answer.refusal_reason();
            out.insert("reason".to_owned(), json!(reason));
        }
        if answer.exit == 0 || answer.stdout.is_some() || answer.denies {
            answer.stdout = Some(serde_json::Value::Object(out).to_string());
        }
        answer
    }

    fn json(value: &serde_json::Value) -> Self {
        Self {
            stdout: Some(value.to_string()),
            stderr: None,
            exit: 0,
            denies: false,
        }
    }
}

/// Gemini CLI's name of the event Cairn names `event`.
fn gemini_event(event: &str) -> &'static str {
    match event {
        "UserPromptSubmit" => "BeforeAgent",
        "SessionStart" => "SessionStart",
        _ => "AfterTool",
    }
}

/// `text` cut to at most `max` characters, on a character boundary, with a marker when cut.
#[must_use]
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let marker = "\n[… truncated by Cairn]";
    let keep = max.saturating_sub(marker.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(marker);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

    use super::*;

    #[test]
    fn context_is_cut_to_the_hosts_limit() {
        let long = "é".repeat(MAX_CONTEXT_CHARS + 50);
        let answer = Answer::context("SessionStart", &long);
        let value: serde_json::Value = serde_json::from_str(&answer.stdout.unwrap()).unwrap();
        let text = value["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap();
        assert_eq!(text.chars().count(), MAX_CONTEXT_CHARS);
        assert!(text.ends_with("truncated by Cairn]"));
    }

    #[test]
    fn gemini_cli_reads_denies_and_context_in_its_own_form() {
        let deny = Answer::deny("no").for_host(Host::GeminiCli);
        assert_eq!(deny.exit, EXIT_BLOCK);
        let value: serde_json::Value = serde_json::from_str(&deny.stdout.unwrap()).unwrap();
        assert_eq!(value, json!({"decision": "deny", "reason": "no"}));
        let context = Answer::context("PostToolUse", "blocks: none").for_host(Host::GeminiCli);
        let value: serde_json::Value = serde_json::from_str(&context.stdout.unwrap()).unwrap();
        assert_eq!(
            value,
            json!({"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "blocks: none"}})
        );
        // A note alone would be read from stderr as an `allow`: stdout says "no decision".
        let note = Answer::note("cairn: something").for_host(Host::GeminiCli);
        assert_eq!(note.stdout.as_deref(), Some("{}"));
        assert_eq!(
            Answer::silent().for_host(Host::GeminiCli).stdout.as_deref(),
            Some("{}")
        );
        // A refusal made without JSON (a failure) carries its reason in Gemini CLI's JSON too.
        let failed = Answer::fail_closed("store locked").for_host(Host::GeminiCli);
        let value: serde_json::Value = serde_json::from_str(&failed.stdout.unwrap()).unwrap();
        assert_eq!(value, json!({"decision": "deny", "reason": "store locked"}));
        assert_eq!(failed.exit, EXIT_BLOCK);
        // Copilot CLI reads the context at the top level, and a refusal as its JSON deny.
        let context = Answer::context("PostToolUse", "blocks: none").for_host(Host::CopilotCli);
        let value: serde_json::Value = serde_json::from_str(&context.stdout.unwrap()).unwrap();
        assert_eq!(value["additionalContext"], "blocks: none");
        for refusal in [Answer::deny("rule r"), Answer::fail_closed("rule r")] {
            let copilot = refusal.for_host(Host::CopilotCli);
            assert!(copilot.denies);
            assert_eq!(copilot.exit, 0);
            let value: serde_json::Value =
                serde_json::from_str(copilot.stdout.as_deref().unwrap()).unwrap();
            assert_eq!(value["permissionDecision"], "deny");
            assert_eq!(
                value["hookSpecificOutput"]["permissionDecisionReason"],
                "rule r"
            );
        }
        // Cursor reads `permission`, its messages and `additional_context`.
        let denied = Answer::deny("rule r").for_host(Host::Cursor);
        assert_eq!(denied.exit, EXIT_BLOCK);
        let value: serde_json::Value = serde_json::from_str(&denied.stdout.unwrap()).unwrap();
        assert_eq!(value["permission"], "deny");
        assert_eq!(value["agent_message"], "rule r");
        let context = Answer::context("PostToolUse", "blocks: none").for_host(Host::Cursor);
        let value: serde_json::Value = serde_json::from_str(&context.stdout.unwrap()).unwrap();
        assert_eq!(value, json!({"additional_context": "blocks: none"}));
        assert_eq!(
            Answer::silent().for_host(Host::Cursor).stdout.as_deref(),
            Some("{}")
        );
        // Every other host reads the answer as built.
        assert_eq!(Answer::note("x").for_host(Host::Codex), Answer::note("x"));
    }

    #[test]
    fn allows_are_silent_unless_asked_for_on_claude_code() {
        assert_eq!(Answer::allow(Host::Codex, true, "r"), Answer::silent());
        assert_eq!(
            Answer::allow(Host::ClaudeCode, false, "r"),
            Answer::silent()
        );
        assert!(
            Answer::allow(Host::ClaudeCode, true, "r")
                .stdout
                .unwrap()
                .contains("\"allow\"")
        );
    }
}
