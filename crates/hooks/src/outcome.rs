//! What a host's `PostToolUse` (or `PostToolUseFailure`) says of a call's outcome, read
//! against the shapes the pinned hosts are known to report (issue 34, 1).
//!
//! A call's outcome is *known* only when its report has a shape Cairn recognises as a call
//! that ran to its end: anything else — interrupted, timed out, killed by a signal, moved to
//! the background, or reported in a shape Cairn does not know — is [`OutcomeClass::Unknown`]
//! or [`OutcomeClass::Backgrounded`], never success. Of a consequential call, those are
//! recorded as `side_effect_unknown` (see `tools`).
//!
//! The shapes, as the pinned versions report them (`tests/hosts/post_tool_use/` holds one
//! recorded payload of each, with its expected class):
//!
//! - **Claude Code** `Bash`: an object with `stdout` (text) and `interrupted` (`false`), and
//!   only fields of a finished command (see [`BASH_FINISHED`]). A command moved to the
//!   background — by `run_in_background`, or because it outlived its `timeout`, which Claude
//!   Code no longer kills — carries `backgroundTaskId` (and `timedOutAfterMs`): its outcome
//!   comes later, in a `<task-notification>` (see [`TaskNotification`]). `Write` and `Edit`:
//!   an object naming `filePath` with only the fields of a finished edit. An MCP tool
//!   (`mcp__…`): the result's text, or its list of content blocks. A failure
//!   (`PostToolUseFailure`) is known — the tool ran and reported an error, such as a
//!   command's non-zero exit — unless it was interrupted, timed out, or the command was
//!   killed by a signal (exit codes 129–159).
//! - **Codex** sends `PostToolUse` only for a call that ended, its response the output text
//!   (`Bash`, the multi-agent tools); an MCP tool's response is the `CallToolResult` object
//!   (`isError: true` is a known failure). A command that outlives its yield time is never
//!   reported at all (it is settled when the turn ends).
//! - **Gemini CLI** reports every tool as `{llmContent, returnDisplay, error?}` (only those
//!   fields). `run_shell_command`'s `llmContent` (inside `<untrusted_context>` tags) starts
//!   `Output:` for a command that ran to its end, with `Exit Code: N` after a failing one and
//!   `Signal: S` after one killed by a signal (unknown); a command cancelled for its inactivity
//!   timeout or by the user, or moved to the background (`is_background`), says so instead
//!   (unknown: Gemini CLI never reports a background command's end to its hooks). Any other
//!   tool: an `error` is a known failure, its absence a completion. A call Gemini CLI cancels
//!   before it returns is never reported (it is settled at the turn's `AfterAgent`).
//! - **Copilot CLI** (in Claude Code's form) reports `tool_result: {result_type,
//!   text_result_for_llm}`: `Bash` ran to its end when the text ends `<shellId: N completed
//!   with exit code X>` (failed, known, for X ≠ 0; unknown for a signal's 129–159), and was
//!   moved to the background when it says `started in background` (unknown: its end is not
//!   reported); any other tool completed on `success`, failed on `failure`, `rejected` or
//!   `denied` (it did not run), and timed out on `timeout`. A failure event
//!   (`PostToolUseFailure`) is read as Claude Code's.
//! - **Cursor** (from its documentation; the agent cannot be installed here) sends
//!   `postToolUse` only for a call that succeeded — a failure is `postToolUseFailure`, with its
//!   `failure_type` (`timeout`, `error`, `permission_denied`) — with the result as
//!   `tool_output`: text or an object is a completion; a missing or other output is unknown.
//! - **OpenCode** (through Cairn's plugin) reports `{title, output, metadata}`: `bash` ran to
//!   its end with `metadata.exit` (0: completed; 129–159: killed by a signal, unknown; any
//!   other: failed, known), and without an exit code (timed out, aborted) its outcome is
//!   unknown; any other tool with an `output` completed. A tool that throws sends no report
//!   (its call is settled at the turn's end).
//! - Any other tool, or any other shape: unknown.

use serde_json::Value;

use crate::host::Host;
use crate::input::ToolOutcome;

/// What a call's report says of its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeClass {
    /// It ran to its end and returned a result.
    Completed,
    /// It ran and reported an error: its outcome is known.
    Failed,
    /// The host moved it to the background before it ended: its outcome is unknown until
    /// the host reports the task's end.
    Backgrounded {
        /// The host's id of the background task.
        task: String,
        /// Whether it was moved because it outlived its timeout.
        at_timeout: bool,
    },
    /// Its outcome cannot be told from the report.
    Unknown {
        /// Why, as a stable reason code (`interrupted`, `timed_out`, `killed_by_signal`,
        /// `response_unrecognised`, `response_unreadable`).
        reason: &'static str,
        /// What exactly, for people.
        detail: String,
    },
}

impl OutcomeClass {
    /// The class's name as the recorded payload corpus spells it.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Backgrounded { .. } => "backgrounded",
            Self::Unknown { .. } => "unknown",
        }
    }

    /// Whether the call's outcome is known now.
    #[must_use]
    pub const fn is_known(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }

    fn unknown(reason: &'static str, detail: impl Into<String>) -> Self {
        Self::Unknown {
            reason,
            detail: detail.into(),
        }
    }
}

/// The fields of a Claude Code `Bash` response of a command that ran to its end.
pub const BASH_FINISHED: [&str; 19] = [
    "stdout",
    "stderr",
    "rawOutputPath",
    "interrupted",
    "isImage",
    "dangerouslyDisableSandbox",
    "returnCodeInterpretation",
    "noOutputExpected",
    "structuredContent",
    "persistedOutputPath",
    "persistedOutputSize",
    "stdoutHoldsOutputEnd",
    "memoryLimitNote",
    "triggeredNote",
    "staleReadFileStateHint",
    "ghRateLimitHint",
    "gitOperation",
    "bashEditDiff",
    "viewedImagePaths",
];

/// The fields of a Claude Code `Bash` response of a command moved to the background.
pub const BASH_BACKGROUNDED: [&str; 11] = [
    "backgroundTaskId",
    "backgroundOutputPath",
    "backgroundedByUser",
    "backgroundedByTurnAbort",
    "backgroundedToDeliverMessage",
    "backgroundedForAgentReport",
    "timedOutAfterMs",
    "backgroundCwdHint",
    "backgroundEndsWithFinalResponse",
    "backgroundWakesOwner",
    "subagentCapApplied",
];

/// The fields of a Claude Code `Write` response.
const WRITE_FIELDS: [&str; 9] = [
    "type",
    "filePath",
    "content",
    "structuredPatch",
    "originalFile",
    "userModified",
    "gitDiff",
    "staged",
    "stagedWording",
];

/// The fields of a Claude Code `Edit` response.
const EDIT_FIELDS: [&str; 10] = [
    "filePath",
    "oldString",
    "newString",
    "originalFile",
    "structuredPatch",
    "userModified",
    "replaceAll",
    "gitDiff",
    "staged",
    "stagedWording",
];

/// The fields of an MCP `CallToolResult`, as Codex reports it.
const MCP_RESULT_FIELDS: [&str; 4] = ["content", "structuredContent", "isError", "_meta"];

/// The longest task id accepted from a host.
const MAX_TASK_ID: usize = 64;

/// Reads `outcome`, the report of a call of `tool` by `host`.
#[must_use]
pub fn classify(host: Host, tool: &str, outcome: &ToolOutcome) -> OutcomeClass {
    match outcome {
        ToolOutcome::Failure { error, interrupted } => failure(*interrupted, error),
        ToolOutcome::Response(response) => match response.value() {
            None => OutcomeClass::unknown(
                "response_unreadable",
                "the host's `tool_response` could not be read as JSON",
            ),
            Some(value) => match host {
                Host::ClaudeCode => claude_code(tool, value),
                Host::Codex => codex(tool, value),
                Host::GeminiCli => gemini_cli(tool, value),
                Host::CopilotCli => copilot_cli(tool, value),
                Host::Cursor => cursor(tool, value),
                Host::OpenCode => opencode(tool, value),
            },
        },
    }
}

/// A failure report: known, unless interrupted, timed out or killed by a signal.
fn failure(interrupted: bool, error: &str) -> OutcomeClass {
    if interrupted {
        return OutcomeClass::unknown("interrupted", "the host interrupted the call");
    }
    let lower = error.to_ascii_lowercase();
    if lower.contains("timed out") || lower.contains("timeout") {
        return OutcomeClass::unknown("timed_out", "the call timed out");
    }
    if let Some(code) = exit_code(error).filter(|code| (129..=159).contains(code)) {
        return OutcomeClass::unknown(
            "killed_by_signal",
            format!("the command was killed by signal {}", code - 128),
        );
    }
    OutcomeClass::Failed
}

/// The exit code a failure names first (`Exit code 137`), if any.
fn exit_code(error: &str) -> Option<u32> {
    let rest = error.trim_start().strip_prefix("Exit code ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn claude_code(tool: &str, value: &Value) -> OutcomeClass {
    match tool {
        "Bash" => claude_code_bash(value),
        "Write" => edit_shape(value, &WRITE_FIELDS, |object| {
            matches!(
                object.get("type").and_then(Value::as_str),
                Some("create" | "update")
            )
        }),
        "Edit" => edit_shape(value, &EDIT_FIELDS, |_| true),
        mcp if mcp.starts_with("mcp__") => match value {
            Value::String(_) => OutcomeClass::Completed,
            Value::Array(blocks) if blocks.iter().all(is_content_block) => OutcomeClass::Completed,
            _ => unrecognised(
                tool,
                "an MCP result that is neither text nor content blocks",
            ),
        },
        _ => unrecognised(tool, "a tool whose report Cairn does not know"),
    }
}

/// The fields of an OpenCode tool report.
const OPENCODE_FIELDS: [&str; 3] = ["title", "output", "metadata"];

fn opencode(tool: &str, value: &Value) -> OutcomeClass {
    let object = match object_of(tool, value, &OPENCODE_FIELDS) {
        Ok(object) => object,
        Err(class) => return class,
    };
    if tool != "bash" {
        return if object.get("output").is_some_and(Value::is_string) {
            OutcomeClass::Completed
        } else {
            unrecognised(tool, "no `output` text")
        };
    }
    match object
        .get("metadata")
        .and_then(|metadata| metadata.get("exit"))
        .and_then(Value::as_u64)
    {
        Some(0) => OutcomeClass::Completed,
        Some(code) if (129..=159).contains(&code) => OutcomeClass::unknown(
            "killed_by_signal",
            format!("the command was killed by signal {}", code - 128),
        ),
        Some(_) => OutcomeClass::Failed,
        None => OutcomeClass::unknown(
            "response_unrecognised",
            "the command reported no exit code (timed out or aborted)",
        ),
    }
}

fn cursor(tool: &str, value: &Value) -> OutcomeClass {
    match value {
        Value::String(_) | Value::Object(_) => OutcomeClass::Completed,
        _ => unrecognised(tool, "a `tool_output` that is neither text nor an object"),
    }
}

/// The fields of a Copilot CLI `tool_result`.
const COPILOT_FIELDS: [&str; 3] = ["result_type", "text_result_for_llm", "error"];

/// `value` as an object of only the `known` fields, or why it is not one (unrecognised).
fn object_of<'a>(
    tool: &str,
    value: &'a Value,
    known: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, OutcomeClass> {
    let Some(object) = value.as_object() else {
        return Err(unrecognised(tool, "not an object"));
    };
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(field) => Err(unrecognised(tool, &format!("the field `{field}`"))),
        None => Ok(object),
    }
}

fn copilot_cli(tool: &str, value: &Value) -> OutcomeClass {
    let object = match object_of(tool, value, &COPILOT_FIELDS) {
        Ok(object) => object,
        Err(class) => return class,
    };
    let text = object
        .get("text_result_for_llm")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match object.get("result_type").and_then(Value::as_str) {
        Some("success") if tool == "Bash" => copilot_shell(text),
        Some("success") => OutcomeClass::Completed,
        Some("failure" | "rejected" | "denied") => OutcomeClass::Failed,
        Some("timeout") => OutcomeClass::unknown("timed_out", "the call timed out"),
        _ => unrecognised(tool, "a `result_type` Cairn does not know"),
    }
}

/// A Copilot CLI shell command's outcome, from the text the model is shown.
fn copilot_shell(text: &str) -> OutcomeClass {
    if text.contains("started in background") {
        return OutcomeClass::unknown(
            "moved_to_background",
            "the command was started in the background, whose end Copilot CLI does not report",
        );
    }
    let code = text
        .trim_end()
        .strip_suffix('>')
        .and_then(|rest| rest.rsplit_once("completed with exit code "))
        .and_then(|(_, code)| code.trim().parse::<u32>().ok());
    match code {
        Some(0) => OutcomeClass::Completed,
        Some(code) if (129..=159).contains(&code) => OutcomeClass::unknown(
            "killed_by_signal",
            format!("the command was killed by signal {}", code - 128),
        ),
        Some(_) => OutcomeClass::Failed,
        None => unrecognised("Bash", "a result that does not say the command completed"),
    }
}

/// The fields of a Gemini CLI tool report.
const GEMINI_FIELDS: [&str; 3] = ["llmContent", "returnDisplay", "error"];

fn gemini_cli(tool: &str, value: &Value) -> OutcomeClass {
    let object = match object_of(tool, value, &GEMINI_FIELDS) {
        Ok(object) => object,
        Err(class) => return class,
    };
    if !object.contains_key("llmContent") {
        return unrecognised(tool, "no `llmContent`");
    }
    if tool == "run_shell_command" {
        return gemini_shell(object);
    }
    match object.get("error") {
        None | Some(Value::Null) => OutcomeClass::Completed,
        Some(error) => {
            let text = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase();
            if text.contains("cancel") || text.contains("abort") {
                OutcomeClass::unknown("interrupted", "the call was cancelled")
            } else if text.contains("timed out") || text.contains("timeout") {
                OutcomeClass::unknown("timed_out", "the call timed out")
            } else {
                OutcomeClass::Failed
            }
        }
    }
}

fn gemini_shell(object: &serde_json::Map<String, Value>) -> OutcomeClass {
    let Some(text) = object.get("llmContent").and_then(Value::as_str) else {
        return unrecognised("run_shell_command", "`llmContent` is not text");
    };
    let text = text.trim();
    let text = text
        .strip_prefix("<untrusted_context>")
        .and_then(|inner| inner.strip_suffix("</untrusted_context>"))
        .unwrap_or(text)
        .trim_start();
    if text.starts_with("Command was automatically cancelled") {
        return OutcomeClass::unknown(
            "timed_out",
            "the command was cancelled when it outlived its inactivity timeout",
        );
    }
    if text.starts_with("Command was cancelled") {
        return OutcomeClass::unknown("interrupted", "the command was cancelled");
    }
    if text.starts_with("Command moved to background") {
        return OutcomeClass::unknown(
            "moved_to_background",
            "the command was moved to the background, whose end Gemini CLI does not report",
        );
    }
    if !text.starts_with("Output:") {
        return unrecognised(
            "run_shell_command",
            "an output that does not start `Output:`",
        );
    }
    if let Some(signal) = text.lines().find_map(|line| line.strip_prefix("Signal: ")) {
        return OutcomeClass::unknown(
            "killed_by_signal",
            format!("the command was killed by signal {}", signal.trim()),
        );
    }
    if text.lines().any(|line| line.starts_with("Exit Code: ")) || object.contains_key("error") {
        OutcomeClass::Failed
    } else {
        OutcomeClass::Completed
    }
}

fn claude_code_bash(value: &Value) -> OutcomeClass {
    let Some(object) = value.as_object() else {
        return unrecognised("Bash", "not an object");
    };
    if let Some(field) = object.keys().find(|key| {
        !BASH_FINISHED.contains(&key.as_str()) && !BASH_BACKGROUNDED.contains(&key.as_str())
    }) {
        return unrecognised("Bash", &format!("the field `{field}`"));
    }
    match object.get("interrupted") {
        Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            return OutcomeClass::unknown("interrupted", "the command was interrupted");
        }
        _ => return unrecognised("Bash", "no `interrupted: false`"),
    }
    if !object.get("stdout").is_some_and(Value::is_string) {
        return unrecognised("Bash", "no `stdout` text");
    }
    let at_timeout = object.contains_key("timedOutAfterMs");
    match object.get("backgroundTaskId").and_then(Value::as_str) {
        Some(task) if is_task_id(task) => OutcomeClass::Backgrounded {
            task: task.to_owned(),
            at_timeout,
        },
        _ if object
            .keys()
            .any(|key| BASH_BACKGROUNDED.contains(&key.as_str())) =>
        {
            OutcomeClass::unknown(
                if at_timeout {
                    "timed_out"
                } else {
                    "response_unrecognised"
                },
                "the command was moved to the background without a task id Cairn can follow",
            )
        }
        _ => OutcomeClass::Completed,
    }
}

/// A file edit's report: an object naming `filePath`, with only `fields`, that `valid` accepts.
fn edit_shape(
    value: &Value,
    fields: &[&str],
    valid: impl Fn(&serde_json::Map<String, Value>) -> bool,
) -> OutcomeClass {
    let Some(object) = value.as_object() else {
        return unrecognised("edit", "not an object");
    };
    if let Some(field) = object.keys().find(|key| !fields.contains(&key.as_str())) {
        return unrecognised("edit", &format!("the field `{field}`"));
    }
    if object.get("filePath").is_some_and(Value::is_string) && valid(object) {
        OutcomeClass::Completed
    } else {
        unrecognised(
            "edit",
            "no `filePath`, or a `type` other than create or update",
        )
    }
}

fn codex(tool: &str, value: &Value) -> OutcomeClass {
    match value {
        Value::String(_) => OutcomeClass::Completed,
        Value::Object(object) if tool.starts_with("mcp__") => {
            let shaped = object
                .keys()
                .all(|key| MCP_RESULT_FIELDS.contains(&key.as_str()))
                && object
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|blocks| blocks.iter().all(is_content_block));
            match (shaped, object.get("isError")) {
                (false, _) => unrecognised(tool, "an MCP result of another shape"),
                (true, Some(Value::Bool(true))) => OutcomeClass::Failed,
                (true, None | Some(Value::Bool(false))) => OutcomeClass::Completed,
                (true, Some(_)) => unrecognised(tool, "an `isError` that is not a boolean"),
            }
        }
        _ => unrecognised(tool, "a response that is not the call's output text"),
    }
}

/// An MCP content block: an object with a `type`.
fn is_content_block(block: &Value) -> bool {
    block.get("type").is_some_and(Value::is_string)
}

fn unrecognised(tool: &str, what: &str) -> OutcomeClass {
    OutcomeClass::unknown(
        "response_unrecognised",
        format!("the report of `{tool}` has a shape Cairn does not recognise ({what})"),
    )
}

/// Whether `id` is a task id Cairn can name in a record: short, letters, digits, `-`, `_`.
fn is_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_TASK_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Claude Code's report of a background task's end, which it delivers as the text of a
/// `UserPromptSubmit`:
///
/// ```text
/// <task-notification>
/// <task-id>b4t7pkp8w</task-id>
/// <tool-use-id>toolu_000007</tool-use-id>
/// <output-file>/tmp/claude-0/…/tasks/b4t7pkp8w.output</output-file>
/// <status>completed</status>
/// <summary>Background command "long" completed (exit code 0)</summary>
/// </task-notification>
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskNotification {
    /// The task.
    pub task: String,
    /// The call that started it.
    pub tool_use_id: String,
    /// `completed`, `failed`, `killed`, …
    pub status: String,
    /// The exit code the summary names, if any.
    pub exit_code: Option<u32>,
}

impl TaskNotification {
    /// The notification `prompt` is, if it is one (the whole prompt, nothing around it).
    #[must_use]
    pub fn parse(prompt: &str) -> Option<Self> {
        let body = prompt
            .trim()
            .strip_prefix("<task-notification>")?
            .strip_suffix("</task-notification>")?;
        let tag = |name: &str| -> Option<String> {
            let open = format!("<{name}>");
            let close = format!("</{name}>");
            let start = body.find(&open)? + open.len();
            let end = start + body.get(start..)?.find(&close)?;
            Some(body.get(start..end)?.trim().to_owned())
        };
        let task = tag("task-id").filter(|id| is_task_id(id))?;
        let tool_use_id = tag("tool-use-id").filter(|id| !id.is_empty() && id.len() <= 128)?;
        let status = tag("status").filter(|s| is_task_id(s))?;
        let exit_code = tag("summary").and_then(|summary| {
            let rest = summary.rsplit_once("exit code ")?.1;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        Some(Self {
            task,
            tool_use_id,
            status,
            exit_code,
        })
    }

    /// Whether the task ran to its own end: `completed`, or `failed` with an exit code the
    /// command chose (not a signal's): its call's outcome is known, as a synchronous
    /// command's is. A task killed, stopped, or ended in a way the notification does not say
    /// stays unknown until a person reconciles it.
    #[must_use]
    pub fn ran_to_its_end(&self) -> bool {
        match (self.status.as_str(), self.exit_code) {
            ("completed", None | Some(0)) => true,
            ("completed" | "failed", Some(code)) => code <= 128,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn a_notification_is_read_only_whole() {
        let text = "<task-notification>\n<task-id>b1</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n<status>failed</status>\n<summary>Background command \"x\" failed with exit code 3</summary>\n</task-notification>";
        let read = TaskNotification::parse(text).unwrap();
        assert_eq!(read.task, "b1");
        assert_eq!(read.exit_code, Some(3));
        assert!(read.ran_to_its_end());
        assert!(TaskNotification::parse(&format!("please {text}")).is_none());
        let killed = text.replace("exit code 3", "exit code 137");
        assert!(!TaskNotification::parse(&killed).unwrap().ran_to_its_end());
        let stopped = text.replace("failed</status>", "killed</status>");
        assert!(!TaskNotification::parse(&stopped).unwrap().ran_to_its_end());
    }

    #[test]
    fn exit_codes_of_signals_are_unknown() {
        assert_eq!(failure(false, "Exit code 1").name(), "failed");
        assert_eq!(failure(false, "Exit code 128\nfatal: x").name(), "failed");
        assert_eq!(failure(false, "Exit code 137").name(), "unknown");
        assert_eq!(
            failure(false, "Exit code 143\nCommand timed out after 1s").name(),
            "unknown"
        );
        assert_eq!(failure(true, "Exit code 1").name(), "unknown");
    }
}
