//! The hooks' project configuration, `.cairn/hooks.json` (`cairn.hooks/v1`), optional.
//!
//! ```json
//! {"schema_version": "cairn.hooks/v1",
//!  "tenant_id": "local",
//!  "principal_id": "agent:claude-code",
//!  "authorization_mode": "platform_owned",
//!  "delegated_principal_id": null, "delegated_scope": null,
//!  "objective": "migrate the billing service to the new ledger API",
//!  "read_only_tools": ["Read", "Glob", "Grep", "…"],
//!  "consequential_tools": ["mcp__*"],
//!  "explicit_allow": false,
//!  "content_retention_hours": 168,
//!  "decision_window_minutes": 10,
//!  "resident_server": true,
//!  "approvals": {"while_waiting": "hold", "hold_seconds": 30, "request_minutes": 60}}
//! ```
//!
//! **`authorization_mode: "human_approved"`**: every consequential call the policies permit
//! needs a person's approval too (rule `cairn.human-approved`), held and approved as below;
//! the continuity envelope carries the approval in force (or the latest one).
//!
//! **Approvals** (a call a policy permits only with a person's approval, `@approval`): with
//! `while_waiting: "deny_and_retry"` (the default) a held call is denied at once with the
//! request's id, and the agent's identical retry runs once a person approved; with `"hold"`
//! the hook waits up to `hold_seconds` (default 30, at most 45) for a person's decision and
//! then answers — the held call itself runs when approved. The hook's deadline grows by the
//! hold for a tool call, and stays under the 60 s timeout `cairn hooks install` gives the
//! host (a host lets a call through on its own timeout). A request nobody decided within the
//! hold stays open: the identical retry runs once a person approves it. `request_minutes`
//! (default 60) is how long a request waits for a person before it lapses.
//!
//! Every field but `schema_version` is optional; unknown fields are refused (a misspelt
//! setting must not be silently ignored). Without the file every default applies.
//!
//! **Consequential tools** are the calls that may change something outside the model: they
//! are the ones denied while the session is blocked on reconciliation or its decisions are
//! `conflicting`, `dropped` or missing their snapshot, and the ones whose interrupted or
//! timed-out outcome is recorded as `side_effect_unknown`. A tool is consequential when it
//! matches `consequential_tools`, or when it does not match `read_only_tools` — so a tool
//! Cairn has never heard of is consequential (fail closed). Patterns are exact names or
//! prefixes ending in `*`. The default read-only list is [`DEFAULT_READ_ONLY`]; setting
//! `read_only_tools` replaces it.

use cairn_core::TenantId;
use cairn_runtime::continuity::AuthorizationMode;
use jiff::SignedDuration;
use serde::Deserialize;

use crate::error::HookError;
use crate::host::Host;
use crate::project::Project;

/// The configuration's schema tag.
pub const CONFIG_SCHEMA_VERSION: &str = "cairn.hooks/v1";

/// Tools that only read (Claude Code's, Codex's, Gemini CLI's and OpenCode's names): not
/// consequential by default.
pub const DEFAULT_READ_ONLY: [&str; 46] = [
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "WebSearch",
    "WebFetch",
    "TodoWrite",
    "TodoRead",
    "BashOutput",
    "TaskOutput",
    "ExitPlanMode",
    "EnterPlanMode",
    "AskUserQuestion",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "Task",
    "Agent",
    "Skill",
    "ToolSearch",
    "update_plan",
    "view_image",
    "web_search",
    "read_file",
    "list_dir",
    "grep_files",
    "list_mcp_resources",
    "read_many_files",
    "list_directory",
    "glob",
    "grep_search",
    "google_web_search",
    "web_fetch",
    "write_todos",
    "get_internal_docs",
    "read_mcp_resource",
    "ask_user",
    "enter_plan_mode",
    "exit_plan_mode",
    "read",
    "grep",
    "list",
    "webfetch",
    "todowrite",
    "todoread",
    "codesearch",
];

/// The largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The longest objective an envelope holds.
const MAX_OBJECTIVE_BYTES: usize = 4096;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    schema_version: String,
    #[serde(default)]
    tenant_id: Option<String>,
    #[serde(default)]
    principal_id: Option<String>,
    #[serde(default)]
    authorization_mode: Option<String>,
    #[serde(default)]
    delegated_principal_id: Option<String>,
    #[serde(default)]
    delegated_scope: Option<String>,
    #[serde(default)]
    objective: Option<String>,
    #[serde(default)]
    read_only_tools: Option<Vec<String>>,
    #[serde(default)]
    consequential_tools: Vec<String>,
    #[serde(default)]
    explicit_allow: bool,
    #[serde(default)]
    content_retention_hours: Option<u32>,
    #[serde(default)]
    decision_window_minutes: Option<u32>,
    #[serde(default)]
    resident_server: Option<bool>,
    #[serde(default)]
    approvals: Option<RawApprovals>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApprovals {
    #[serde(default)]
    while_waiting: Option<String>,
    #[serde(default)]
    hold_seconds: Option<u32>,
    #[serde(default)]
    request_minutes: Option<u32>,
}

/// The longest a hook holds a call for a person's decision: with the hook's own 10 s
/// deadline it stays under the 60 s timeout `hooks install` gives the hosts.
pub const MAX_HOLD_SECONDS: u32 = 45;

/// The hold when `hold_seconds` is not set.
pub const DEFAULT_HOLD_SECONDS: u32 = 30;

/// What a held call does while a person has not decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhileWaiting {
    /// Deny at once; the identical retry runs once a person approved.
    DenyAndRetry,
    /// Wait up to this long for the decision, then answer.
    Hold(std::time::Duration),
}

/// How the project's held calls wait for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalConfig {
    /// While nobody has decided.
    pub while_waiting: WhileWaiting,
    /// How long a request waits for a person.
    pub request_ttl: SignedDuration,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            while_waiting: WhileWaiting::DenyAndRetry,
            request_ttl: SignedDuration::from_hours(1),
        }
    }
}

impl ApprovalConfig {
    /// How long a hook may hold a call (zero when it does not hold).
    #[must_use]
    pub const fn hold(&self) -> std::time::Duration {
        match self.while_waiting {
            WhileWaiting::Hold(hold) => hold,
            WhileWaiting::DenyAndRetry => std::time::Duration::ZERO,
        }
    }
}

fn approvals_of(raw: RawApprovals, problems: &mut Vec<String>) -> ApprovalConfig {
    let mut config = ApprovalConfig::default();
    let hold = raw.hold_seconds.unwrap_or(DEFAULT_HOLD_SECONDS);
    if !(1..=MAX_HOLD_SECONDS).contains(&hold) {
        problems.push(format!(
            "`approvals.hold_seconds` must be 1 to {MAX_HOLD_SECONDS}, got {hold}"
        ));
    }
    match raw.while_waiting.as_deref() {
        None | Some("deny_and_retry") => {}
        Some("hold") => {
            config.while_waiting =
                WhileWaiting::Hold(std::time::Duration::from_secs(u64::from(hold)));
        }
        Some(other) => problems.push(format!(
            "`approvals.while_waiting` must be `deny_and_retry` or `hold`, got `{other}`"
        )),
    }
    if let Some(minutes) = raw.request_minutes {
        if minutes == 0 {
            problems.push("`approvals.request_minutes` must be at least 1".to_owned());
        }
        config.request_ttl = SignedDuration::from_mins(i64::from(minutes));
    }
    config
}

pub use cairn_runtime::restrictions::ToolClasses;

/// The hooks' tool classes before `.cairn/hooks.json` says otherwise: Claude Code's and
/// Codex's reading tools are read-only, every MCP tool (`mcp__*`) and every other tool is
/// consequential.
#[must_use]
pub fn default_tool_classes() -> ToolClasses {
    ToolClasses::new(
        DEFAULT_READ_ONLY.iter().map(|s| (*s).to_owned()).collect(),
        vec!["mcp__*".to_owned()],
    )
}

/// The hooks' configuration with every default applied.
#[derive(Debug, Clone)]
pub struct HookConfig {
    /// The tenant runs are recorded under (default `local`; checked when loaded).
    pub tenant: String,
    /// Who the session acts for (default `agent:claude-code` / `agent:codex`).
    pub principal: Option<String>,
    /// How authority was granted (default `platform_owned`).
    pub authorization_mode: AuthorizationMode,
    /// Who delegated (required with `user_delegated`).
    pub delegated_principal_id: Option<String>,
    /// What was delegated (required with `user_delegated`).
    pub delegated_scope: Option<String>,
    /// The task's objective as the user authorised it.
    pub objective: Option<String>,
    /// Which tools are consequential.
    pub tools: ToolClasses,
    /// Answer Claude Code's allowed calls with an explicit `"allow"` (skipping its
    /// permission prompt) instead of no decision.
    pub explicit_allow: bool,
    /// How long raw arguments and observations stay in the content store (`None`: never
    /// kept; default 7 days).
    pub content_retention: Option<SignedDuration>,
    /// How long after a compaction a decision may take to be re-observed (default 10 min,
    /// as `cairn decisions compare` and `cairn status`).
    pub decision_window: SignedDuration,
    /// Start the resident hook server (`cairn hooks serve`) in the background when a hook
    /// call finds none running (default on: the first call of a session answers by itself
    /// and starts it, the next calls cost a process start and a socket exchange instead of
    /// two process starts, a policy parse and a store open; `false` turns it off).
    pub resident_server: bool,
    /// How held calls wait for people.
    pub approvals: ApprovalConfig,
}

impl Default for HookConfig {
    fn default() -> Self {
        Self {
            tenant: "local".to_owned(),
            principal: None,
            authorization_mode: AuthorizationMode::PlatformOwned,
            delegated_principal_id: None,
            delegated_scope: None,
            objective: None,
            tools: default_tool_classes(),
            explicit_allow: false,
            content_retention: Some(SignedDuration::from_hours(24 * 7)),
            decision_window: cairn_runtime::restrictions::DECISION_WINDOW,
            resident_server: true,
            approvals: ApprovalConfig::default(),
        }
    }
}

impl HookConfig {
    /// Who the session acts for.
    #[must_use]
    pub fn principal(&self, host: Host) -> String {
        self.principal
            .clone()
            .unwrap_or_else(|| host.default_principal().to_owned())
    }

    /// Reads `.cairn/hooks.json` when it exists.
    ///
    /// # Errors
    /// [`HookError::Config`] naming the file and every problem found.
    pub fn load(project: &Project) -> Result<Self, HookError> {
        let path = project.config();
        if !path.exists() {
            return Ok(Self::default());
        }
        let error = |reason: String| HookError::Config {
            path: path.clone(),
            reason,
        };
        let len = std::fs::metadata(&path)
            .map_err(|e| error(e.to_string()))?
            .len();
        if len > MAX_CONFIG_BYTES {
            return Err(error(format!(
                "{len} bytes is more than the {MAX_CONFIG_BYTES}-byte limit"
            )));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| error(e.to_string()))?;
        Self::from_json(&text).map_err(error)
    }

    /// Parses and checks a configuration document.
    ///
    /// # Errors
    /// Every problem found, joined.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut problems = Vec::new();
        if raw.schema_version != CONFIG_SCHEMA_VERSION {
            problems.push(format!(
                "`schema_version` must be `{CONFIG_SCHEMA_VERSION}`, got `{}`",
                raw.schema_version
            ));
        }
        let mut config = Self::default();
        if let Some(tenant) = raw.tenant_id {
            match TenantId::new(&tenant) {
                Ok(_) => config.tenant = tenant,
                Err(e) => problems.push(format!("`tenant_id`: {e}")),
            }
        }
        if let Some(mode) = raw.authorization_mode {
            match AuthorizationMode::parse(&mode) {
                Some(m) => config.authorization_mode = m,
                None => problems.push(format!(
                    "`authorization_mode` must be `platform_owned`, `user_delegated` or `human_approved`, got `{mode}`"
                )),
            }
        }
        if config.authorization_mode == AuthorizationMode::UserDelegated
            && (raw.delegated_principal_id.is_none() || raw.delegated_scope.is_none())
        {
            problems.push(
                "`user_delegated` needs `delegated_principal_id` and `delegated_scope`".to_owned(),
            );
        }
        for (name, value) in [
            ("principal_id", &raw.principal_id),
            ("delegated_principal_id", &raw.delegated_principal_id),
            ("delegated_scope", &raw.delegated_scope),
        ] {
            if let Some(v) = value
                && (v.trim().is_empty() || v.len() > 256 || v.chars().any(char::is_control))
            {
                problems.push(format!(
                    "`{name}` must be 1 to 256 bytes without control characters"
                ));
            }
        }
        if let Some(objective) = &raw.objective
            && (objective.trim().is_empty() || objective.len() > MAX_OBJECTIVE_BYTES)
        {
            problems.push(format!(
                "`objective` must be 1 to {MAX_OBJECTIVE_BYTES} bytes"
            ));
        }
        for pattern in raw
            .read_only_tools
            .iter()
            .flatten()
            .chain(&raw.consequential_tools)
        {
            if !ToolClasses::pattern_is_valid(pattern) {
                problems.push(format!(
                    "tool pattern `{pattern}` must be a name or a prefix ending in `*`"
                ));
            }
        }
        let approvals = raw.approvals.map(|raw| approvals_of(raw, &mut problems));
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        config.approvals = approvals.unwrap_or_default();
        config.principal = raw.principal_id;
        config.delegated_principal_id = raw.delegated_principal_id;
        config.delegated_scope = raw.delegated_scope;
        config.objective = raw.objective;
        if let Some(read_only) = raw.read_only_tools {
            config.tools.set_read_only(read_only);
        }
        config.tools.add_consequential(raw.consequential_tools);
        config.explicit_allow = raw.explicit_allow;
        config.resident_server = raw.resident_server.unwrap_or(config.resident_server);
        if let Some(hours) = raw.content_retention_hours {
            config.content_retention =
                (hours > 0).then(|| SignedDuration::from_hours(i64::from(hours)));
        }
        if let Some(minutes) = raw.decision_window_minutes {
            config.decision_window = SignedDuration::from_mins(i64::from(minutes));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn unknown_tools_are_consequential_and_read_only_tools_are_not() {
        let tools = default_tool_classes();
        assert!(tools.is_consequential("Bash"));
        assert!(tools.is_consequential("Write"));
        assert!(tools.is_consequential("mcp__github__create_issue"));
        assert!(tools.is_consequential("SomethingNew"));
        assert!(!tools.is_consequential("Read"));
        assert!(!tools.is_consequential("Grep"));
    }

    #[test]
    fn every_problem_is_reported_and_unknown_fields_refused() {
        let e = HookConfig::from_json(
            r#"{"schema_version": "x", "authorization_mode": "root", "objective": " "}"#,
        )
        .unwrap_err();
        assert!(e.contains("schema_version") && e.contains("authorization_mode"));
        assert!(e.contains("objective"), "{e}");
        assert!(
            HookConfig::from_json(r#"{"schema_version": "cairn.hooks/v1", "tenant": "x"}"#)
                .is_err()
        );
    }

    #[test]
    fn settings_apply() {
        let c = HookConfig::from_json(
            r#"{"schema_version": "cairn.hooks/v1", "read_only_tools": ["Read", "Bash"],
                "consequential_tools": ["Read"], "content_retention_hours": 0}"#,
        )
        .unwrap();
        assert!(!c.tools.is_consequential("Bash"));
        assert!(c.tools.is_consequential("Read"));
        assert!(c.content_retention.is_none());
    }
}
