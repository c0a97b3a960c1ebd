//! The hosts' hook input, read from stdin and converted by hand into a host-neutral
//! [`HookInput`]. This is the only place that knows the hook JSON's field names.
//!
//! Cursor names its events in camel case (`preToolUse`: see [`CURSOR_EVENTS`]), its session
//! `conversation_id`, its working folders `workspace_roots`, a call's result `tool_output`
//! and a failure `error_message` ([`cursor_fields`] reads them as the others').
//!
//! GitHub Copilot CLI sends Claude Code's form (it runs Claude Code's hook configuration) with
//! Claude Code's tool names (`Bash`, `Write`, `Edit`, `Read`), no id of a call, and a tool's
//! result as `tool_result` (`{result_type, text_result_for_llm}`).
//!
//! Gemini CLI names its events differently (`BeforeTool`, `AfterTool`, `BeforeAgent`,
//! `AfterAgent`, `PreCompress`, `BeforeModel`: see [`GEMINI_EVENTS`]), sends no id of a call
//! (one is made of the call's name and arguments: [`call_id`]), and announces a compaction
//! only before it — at every turn, compaction or not — so Cairn reads its compactions from
//! the history each `BeforeModel` carries ([`Event::ModelRequest`]).
//!
//! The hosts send one JSON object with `session_id`, `cwd`, `hook_event_name` and, per
//! event, `tool_name` / `tool_input` / `tool_use_id` (tool events), `tool_response`
//! (`PostToolUse`), `error` / `is_interrupt` (`PostToolUseFailure`), `prompt`
//! (`UserPromptSubmit`), `trigger` and `compact_summary` (compaction; Codex sends no
//! summary), `source` (`SessionStart`) and `reason` (`SessionEnd`). Unknown fields are
//! ignored, so a host that adds fields keeps working.
//!
//! The object is first read as a map of *raw* JSON values: `tool_input` keeps the exact
//! bytes the host sent, because the intent record digests the arguments as submitted (I-1).
//! Every other field is then parsed on its own, so an error names the field.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::HookError;
use crate::host::Host;

/// The largest hook input read (a `Write` of a large file carries the file in `tool_input`).
pub const MAX_INPUT_BYTES: usize = 32 << 20;

/// Gemini CLI's events and the events they are to Cairn. Its `AfterAgent` ends a turn (a
/// `Stop`); its `PreCompress` comes before every turn, whether a compaction follows or not.
pub const GEMINI_EVENTS: [(&str, &str); 6] = [
    ("BeforeTool", "PreToolUse"),
    ("AfterTool", "PostToolUse"),
    ("BeforeAgent", "UserPromptSubmit"),
    ("AfterAgent", "Stop"),
    ("PreCompress", "PreCompact"),
    ("BeforeModel", "ModelRequest"),
];

/// Cursor's events and the events they are to Cairn (its other events are not installed;
/// [`CURSOR_SPECIFIC_GATES`] are refused).
pub const CURSOR_EVENTS: [(&str, &str); 9] = [
    ("preToolUse", "PreToolUse"),
    ("postToolUse", "PostToolUse"),
    ("postToolUseFailure", "PostToolUseFailure"),
    ("beforeSubmitPrompt", "UserPromptSubmit"),
    ("preCompact", "PreCompact"),
    ("stop", "Stop"),
    ("subagentStop", "SubagentStop"),
    ("sessionStart", "SessionStart"),
    ("sessionEnd", "SessionEnd"),
];

/// Cursor's tool-specific gates. Cairn gates every call at `preToolUse`; one of these reaching
/// Cairn (a hand-made configuration) is refused rather than passed unexamined.
pub const CURSOR_SPECIFIC_GATES: [&str; 3] = [
    "beforeShellExecution",
    "beforeMCPExecution",
    "beforeReadFile",
];

/// The event `name` of a host's input as Cairn names it (Gemini CLI's and Cursor's names
/// mapped, every other name as it is).
#[must_use]
pub fn canonical_event(name: &str) -> &str {
    GEMINI_EVENTS
        .iter()
        .chain(CURSOR_EVENTS.iter())
        .find(|(host, _)| *host == name)
        .map_or(name, |(_, ours)| ours)
}

/// Cursor's input in the fields Cairn reads: its `conversation_id` is the session, its first
/// workspace root the `cwd` when it sends none, its `tool_output` the response and its
/// `error_message` (with `failure_type`) the error.
fn cursor_fields(map: &mut RawMap) {
    let alias = |map: &mut RawMap, ours: &str, theirs: &str| {
        if !map.contains_key(ours)
            && let Some(value) = map.get(theirs).cloned()
        {
            map.insert(ours.to_owned(), value);
        }
    };
    alias(map, "session_id", "conversation_id");
    alias(map, "tool_response", "tool_output");
    if !map.contains_key("cwd")
        && let Some(root) = map
            .get("workspace_roots")
            .and_then(|raw| serde_json::from_str::<Vec<String>>(raw.get()).ok())
            .and_then(|roots| roots.into_iter().next())
        && let Ok(raw) = RawValue::from_string(Value::String(root).to_string())
    {
        map.insert("cwd".to_owned(), raw);
    }
    if !map.contains_key("error")
        && let Some(message) = map
            .get("error_message")
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
    {
        let kind = map
            .get("failure_type")
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
        let text = match kind {
            Some(kind) => format!("{kind}: {message}"),
            None => message,
        };
        if let Ok(raw) = RawValue::from_string(Value::String(text).to_string()) {
            map.insert("error".to_owned(), raw);
        }
    }
}

/// The text Gemini CLI's model answers a compaction's summary with, right after it in the
/// history.
const GEMINI_SUMMARY_ACK: &str = "Got it. Thanks for the additional context!";

/// The events a host may send that Cairn knows and deliberately does not act on.
const IGNORED_EVENTS: [&str; 26] = [
    "Notification",
    "SubagentStart",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolBatch",
    "StopFailure",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
    "Setup",
    "UserPromptExpansion",
    "MessageDisplay",
    "PreModelSwitch",
    "PostModelSwitch",
    "Interrupt",
    "AfterModel",
    "BeforeToolSelection",
];

/// One tool call as the host describes it.
#[derive(Debug, Clone)]
pub struct ToolUse {
    /// The tool's name (`Bash`, `Write`, `mcp__github__create_issue`, …).
    pub name: String,
    /// The arguments, exactly as the host sent them.
    pub input: Box<RawValue>,
    /// The host's id of the call, linking `PreToolUse` to `PostToolUse`.
    pub id: Option<String>,
    /// The subagent making the call (`agent_id`), when it is not the session's main agent.
    pub agent: Option<String>,
    /// The subagent's type (`agent_type`: `general-purpose`, `default`, …), when the host
    /// says.
    pub agent_type: Option<String>,
}

impl ToolUse {
    /// The acting subagent as a record names it — `<agent type>:<agent id>`, or the id alone
    /// — when it is not the session's main agent and the text makes a label.
    #[must_use]
    pub fn actor(&self) -> Option<cairn_runtime::ledger::record::Label> {
        let id = self.agent.as_deref()?;
        let text = match self.agent_type.as_deref().filter(|t| !t.is_empty()) {
            Some(kind) => format!("{kind}:{id}"),
            None => id.to_owned(),
        };
        cairn_runtime::ledger::record::Label::new(text).ok()
    }
}

/// A tool's `tool_response`: the exact bytes the host sent, and the JSON they read as.
#[derive(Debug, Clone)]
pub struct Response {
    raw: Box<RawValue>,
    value: Option<Value>,
}

impl Response {
    /// Reads `raw`: a lone surrogate escape reads as U+FFFD (see
    /// [`lone_surrogates_replaced`]); a response that still does not read (nesting past
    /// `serde_json`'s limit) keeps only its bytes, and its outcome is unknown.
    fn read(raw: Box<RawValue>) -> Self {
        let value = serde_json::from_str(raw.get())
            .or_else(|_| serde_json::from_str(&lone_surrogates_replaced(raw.get())))
            .ok();
        Self { raw, value }
    }

    /// The response as JSON, when it reads.
    #[must_use]
    pub const fn value(&self) -> Option<&Value> {
        self.value.as_ref()
    }

    /// The exact bytes the host sent.
    #[must_use]
    pub fn raw(&self) -> &str {
        self.raw.get()
    }
}

/// How a tool call ended, as `PostToolUse` or `PostToolUseFailure` report it.
#[derive(Debug, Clone)]
pub enum ToolOutcome {
    /// It returned this response.
    Response(Response),
    /// It failed with this error; `interrupted` when the host interrupted it.
    Failure {
        /// The host's error text.
        error: String,
        /// Whether the host says the call was interrupted.
        interrupted: bool,
    },
}

/// A hook event, host-neutral.
#[derive(Debug, Clone)]
pub enum Event {
    /// Before a tool call: the gate decides it.
    PreToolUse(ToolUse),
    /// After a tool call, successful or failed.
    PostToolUse {
        /// The call.
        tool: ToolUse,
        /// What came of it.
        outcome: ToolOutcome,
    },
    /// The user submitted a prompt.
    UserPromptSubmit {
        /// The prompt, when the host sends it.
        prompt: Option<String>,
        /// The subagent it was given to (`agent_id`, Codex), when not the main agent.
        agent: Option<String>,
    },
    /// A compaction is about to start.
    PreCompact {
        /// `manual` or `auto`.
        trigger: String,
    },
    /// A compaction finished.
    PostCompact {
        /// `manual` or `auto`.
        trigger: String,
        /// The summary the model continues from (Claude Code only).
        summary: Option<String>,
    },
    /// A session started (`startup`, `resume`, `clear`, `compact`, …).
    SessionStart {
        /// Why it started.
        source: String,
    },
    /// The agent finished a turn.
    Stop,
    /// A subagent finished.
    SubagentStop {
        /// Its id (`agent_id`).
        agent: Option<String>,
    },
    /// The session ended.
    SessionEnd {
        /// Why (`clear`, `logout`, `prompt_input_exit`, `other`, …).
        reason: String,
    },
    /// The host is about to ask its model (Gemini CLI's `BeforeModel`).
    ModelRequest {
        /// The summary of the latest compaction the history starts from, if it does, and how
        /// many messages the history holds after it.
        summary: Option<(String, usize)>,
    },
    /// An event Cairn knows and does not act on.
    Ignored(String),
    /// An event name Cairn does not know.
    Unknown {
        /// The name.
        name: String,
        /// Whether it carries a tool call about to run (`tool_name` and `tool_input`, no
        /// `tool_response`): it may be a renamed `PreToolUse`.
        tool_shaped: bool,
    },
}

impl Event {
    /// The event's name as the hosts spell it.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::PreToolUse(_) => "PreToolUse",
            Self::PostToolUse {
                outcome: ToolOutcome::Failure { .. },
                ..
            } => "PostToolUseFailure",
            Self::PostToolUse { .. } => "PostToolUse",
            Self::UserPromptSubmit { .. } => "UserPromptSubmit",
            Self::PreCompact { .. } => "PreCompact",
            Self::PostCompact { .. } => "PostCompact",
            Self::SessionStart { .. } => "SessionStart",
            Self::Stop => "Stop",
            Self::SubagentStop { .. } => "SubagentStop",
            Self::SessionEnd { .. } => "SessionEnd",
            Self::ModelRequest { .. } => "ModelRequest",
            Self::Ignored(name) | Self::Unknown { name, .. } => name,
        }
    }
}

/// A parsed hook input.
#[derive(Debug, Clone)]
pub struct HookInput {
    /// The host that sent it.
    pub host: Host,
    /// The host's session id (never empty: see [`parse`]).
    pub session_id: String,
    /// The session's working directory, when the host sends it.
    pub cwd: Option<PathBuf>,
    /// The event.
    pub event: Event,
}

/// Reads stdin up to [`MAX_INPUT_BYTES`].
///
/// # Errors
/// [`HookError::InputUnreadable`], [`HookError::InputTooLarge`].
pub fn read_limited(reader: impl std::io::Read) -> Result<Vec<u8>, HookError> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_INPUT_BYTES).unwrap_or(u64::MAX);
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| HookError::InputUnreadable(e.to_string()))?;
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(HookError::InputTooLarge {
            limit: MAX_INPUT_BYTES,
        });
    }
    Ok(bytes)
}

type RawMap = BTreeMap<String, Box<RawValue>>;

fn malformed(reason: impl Into<String>, event: Option<&str>) -> HookError {
    HookError::InputMalformed {
        reason: reason.into(),
        event: event.map(str::to_owned),
    }
}

/// Field `name` parsed as `T`; `None` when absent or `null`. A lone surrogate escape in it
/// reads as U+FFFD (see [`lone_surrogates_replaced`]).
fn field<T: DeserializeOwned>(
    map: &RawMap,
    name: &str,
    what: &str,
    event: Option<&str>,
) -> Result<Option<T>, HookError> {
    match map.get(name) {
        None => Ok(None),
        Some(raw) if raw.get().trim() == "null" => Ok(None),
        Some(raw) => serde_json::from_str(raw.get())
            .or_else(|_| serde_json::from_str(&lone_surrogates_replaced(raw.get())))
            .map(Some)
            .map_err(|_| malformed(format!("`{name}` must be {what}"), event)),
    }
}

/// `json` with every escape of a lone UTF-16 surrogate (`\ud800` not followed by the escape
/// of a low surrogate, or a low surrogate's escape on its own) replaced by `\ufffd`. Claude
/// Code hands a broken string to its hooks both ways — as U+FFFD in a call's `tool_input`,
/// as the raw escape in its `tool_response` (issue 34, 2) — and both must read as the same
/// text. Hook input read this way is never a decision's arguments: those go to the strict
/// reader, which refuses lone surrogates.
#[must_use]
pub fn lone_surrogates_replaced(json: &str) -> std::borrow::Cow<'_, str> {
    /// The code unit of the escape `\uXXXX` at the start of `text`, if it is one.
    fn unit(text: &str) -> Option<u16> {
        let hex = text.strip_prefix("\\u")?.get(..4)?;
        u16::from_str_radix(hex, 16).ok()
    }
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    if !json.contains("\\u") {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find('\\') {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let keep = match unit(from) {
            Some(high) if is_high(high) => {
                if from.get(6..).and_then(unit).is_some_and(is_low) {
                    12
                } else {
                    0
                }
            }
            Some(low) if is_low(low) => 0,
            Some(_) => 6,
            // Any other escape (`\\`, `\"`) is kept whole, so that the backslash it ends with
            // is never read as the start of the next one.
            None => 2,
        };
        if keep == 0 {
            out.push_str("\\ufffd");
            rest = from.get(6..).unwrap_or_default();
        } else {
            out.push_str(from.get(..keep).unwrap_or(from));
            rest = from.get(keep..).unwrap_or_default();
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

fn required<T: DeserializeOwned>(
    map: &RawMap,
    name: &str,
    what: &str,
    event: Option<&str>,
) -> Result<T, HookError> {
    field(map, name, what, event)?.ok_or_else(|| malformed(format!("`{name}` is missing"), event))
}

/// The event name in input that is not valid JSON, when it can still be read: the first
/// `"hook_event_name"` followed by `:` and a string. Used only to decide whether a malformed
/// input may be blocked (a `PreCompact` must never be).
#[must_use]
pub fn sniff_event_name(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let key = "\"hook_event_name\"";
    let after = text.get(text.find(key)? + key.len()..)?.trim_start();
    let after = after.strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let name: String = after.chars().take_while(|c| *c != '"').collect();
    (!name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric()))
        .then_some(name)
}

/// Whether a failure to answer `bytes` must block: a `PreToolUse`, an event Cairn does not
/// know that carries a tool call about to run (it may be a renamed `PreToolUse`), or input
/// whose event cannot be told. Every other event (a `PreCompact`, say) must never be blocked.
#[must_use]
pub fn blocks_on_failure(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Peek {
        hook_event_name: Option<String>,
        tool_name: Option<serde::de::IgnoredAny>,
        tool_input: Option<serde::de::IgnoredAny>,
        tool_response: Option<serde::de::IgnoredAny>,
        tool_result: Option<serde::de::IgnoredAny>,
    }
    let Ok(peek) = serde_json::from_slice::<Peek>(bytes) else {
        // Not JSON: only an event that is known never to carry a call may pass.
        return sniff_event_name(bytes).is_none_or(|name| {
            let name = canonical_event(&name);
            name == "PreToolUse" || !is_known_event(name)
        });
    };
    match peek.hook_event_name.as_deref().map(canonical_event) {
        Some("PreToolUse") | None => true,
        Some(gate) if CURSOR_SPECIFIC_GATES.contains(&gate) => true,
        Some(name) if is_known_event(name) => false,
        Some(_) => {
            peek.tool_name.is_some()
                && peek.tool_input.is_some()
                && peek.tool_response.is_none()
                && peek.tool_result.is_none()
        }
    }
}

/// Parses one hook input of `host`.
///
/// An empty or missing `session_id` (a host bug seen in the wild) is replaced by
/// `transcript-<digest of transcript_path>` when the transcript path is known, else by
/// `unknown-session`, so that the calls are still recorded and gated.
///
/// # Errors
/// [`HookError::InputMalformed`] naming the field, with the event name when it was read.
pub fn parse(host: Host, bytes: &[u8]) -> Result<HookInput, HookError> {
    let mut map: RawMap = serde_json::from_slice(bytes).map_err(|e| {
        malformed(
            format!("not a JSON object: {e}"),
            sniff_event_name(bytes).as_deref(),
        )
    })?;
    let host_event: String = required(&map, "hook_event_name", "a string", None)?;
    let name = if matches!(host, Host::GeminiCli | Host::Cursor) {
        canonical_event(&host_event).to_owned()
    } else {
        host_event.clone()
    };
    if host == Host::Cursor {
        cursor_fields(&mut map);
    }
    let event_name = Some(host_event.as_str());
    let session_id: Option<String> = field(&map, "session_id", "a string", event_name)?;
    let transcript: Option<String> = field(&map, "transcript_path", "a string", event_name)?;
    let session_id = match session_id.filter(|s| !s.trim().is_empty()) {
        Some(id) => id,
        None => transcript.filter(|t| !t.is_empty()).map_or_else(
            || "unknown-session".to_owned(),
            |t| {
                format!(
                    "transcript-{}",
                    cairn_core::Digest::of(t.as_bytes()).short()
                )
            },
        ),
    };
    let cwd: Option<String> = field(&map, "cwd", "a string", event_name)?;
    let mut event = parse_event(&map, &name)?;
    if host.sends_no_call_id() {
        match &mut event {
            Event::PreToolUse(tool) | Event::PostToolUse { tool, .. } if tool.id.is_none() => {
                tool.id = Some(call_id(&tool.name, tool.input.get()));
            }
            _ => {}
        }
    }
    Ok(HookInput {
        host,
        session_id,
        cwd: cwd.filter(|c| !c.is_empty()).map(PathBuf::from),
        event,
    })
}

/// The id of a call whose host sends none (Gemini CLI): made of its tool's name and its
/// arguments, exactly as sent — the host hands the same arguments object to the hook before
/// and after the call, so both events name the same id. Identical calls in flight share it
/// (the session keeps them apart: `SessionState::remember`).
#[must_use]
pub fn call_id(tool: &str, input: &str) -> String {
    let mut bytes = Vec::with_capacity(tool.len() + input.len() + 1);
    bytes.extend_from_slice(tool.as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(input.as_bytes());
    format!("call-{}", cairn_core::Digest::of(&bytes).short())
}

/// The summary the history of a Gemini CLI model request starts from, if a compaction made
/// it: the user turn just before the model's fixed acknowledgement, without the session
/// context the host puts in front of it; and how many messages follow the acknowledgement
/// (a history only grows between compactions).
fn gemini_summary(map: &RawMap, event: Option<&str>) -> Result<Option<(String, usize)>, HookError> {
    #[derive(serde::Deserialize)]
    struct Message {
        role: Option<String>,
        content: Option<Value>,
    }
    #[derive(serde::Deserialize)]
    struct Request {
        messages: Option<Vec<Message>>,
    }
    let request: Option<Request> = field(map, "llm_request", "an object", event)?;
    let messages = request.and_then(|r| r.messages).unwrap_or_default();
    let text = |m: &Message| match &m.content {
        Some(Value::String(text)) => Some(text.clone()),
        _ => None,
    };
    let ack = messages.iter().position(|m| {
        m.role.as_deref() == Some("model") && text(m).as_deref() == Some(GEMINI_SUMMARY_ACK)
    });
    let Some(before) = ack
        .and_then(|at| at.checked_sub(1))
        .and_then(|at| messages.get(at))
        .filter(|m| m.role.as_deref() == Some("user"))
        .and_then(text)
    else {
        return Ok(None);
    };
    let summary = match before.find("</session_context>") {
        Some(end) => before
            .get(end + "</session_context>".len()..)
            .unwrap_or_default()
            .to_owned(),
        None => before,
    };
    let after = messages
        .len()
        .saturating_sub(ack.map_or(0, |at| at.saturating_add(1)));
    Ok(Some(summary.trim().to_owned())
        .filter(|s| !s.is_empty())
        .map(|s| (s, after)))
}

fn tool_use(map: &RawMap, event: &str, input_required: bool) -> Result<ToolUse, HookError> {
    let event_name = Some(event);
    let name: String = required(map, "tool_name", "a string", event_name)?;
    if name.is_empty() {
        return Err(malformed("`tool_name` must not be empty", event_name));
    }
    let input = match map.get("tool_input") {
        Some(raw) => raw.clone(),
        None if input_required => {
            return Err(malformed("`tool_input` is missing", event_name));
        }
        None => RawValue::from_string("null".to_owned())
            .map_err(|e| malformed(e.to_string(), event_name))?,
    };
    let id: Option<String> = field(map, "tool_use_id", "a string", event_name)?;
    let agent: Option<String> = field(map, "agent_id", "a string", event_name)?;
    let agent_type: Option<String> = field(map, "agent_type", "a string", event_name)?;
    Ok(ToolUse {
        name,
        input,
        id,
        agent: agent.filter(|a| !a.is_empty()),
        agent_type,
    })
}

/// The events [`parse_event`] acts on by name.
const HANDLED_EVENTS: [&str; 11] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "PreCompact",
    "PostCompact",
    "SessionStart",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "ModelRequest",
];

/// Whether `name` is an event Cairn handles or deliberately ignores (not `Event::Unknown`).
#[must_use]
pub fn is_known_event(name: &str) -> bool {
    let name = canonical_event(name);
    HANDLED_EVENTS.contains(&name) || IGNORED_EVENTS.contains(&name)
}

fn parse_event(map: &RawMap, name: &str) -> Result<Event, HookError> {
    let event_name = Some(name);
    let text = |field_name: &str| -> Result<Option<String>, HookError> {
        field(map, field_name, "a string", event_name)
    };
    Ok(match name {
        "PreToolUse" => Event::PreToolUse(tool_use(map, name, true)?),
        "PostToolUse" => Event::PostToolUse {
            tool: tool_use(map, name, false)?,
            // Copilot CLI reports a tool's result as `tool_result`.
            outcome: ToolOutcome::Response(Response::read(
                match map.get("tool_response").or_else(|| map.get("tool_result")) {
                    Some(raw) => raw.clone(),
                    None => RawValue::from_string("null".to_owned())
                        .map_err(|e| malformed(e.to_string(), event_name))?,
                },
            )),
        },
        "PostToolUseFailure" => {
            let error: Option<Value> = field(map, "error", "JSON", event_name)?;
            let error = match error {
                Some(Value::String(text)) => text,
                Some(other) => other.to_string(),
                None => "the tool call failed".to_owned(),
            };
            Event::PostToolUse {
                tool: tool_use(map, name, false)?,
                outcome: ToolOutcome::Failure {
                    error,
                    interrupted: field(map, "is_interrupt", "a boolean", event_name)?
                        .unwrap_or(false),
                },
            }
        }
        "UserPromptSubmit" => Event::UserPromptSubmit {
            prompt: text("prompt")?,
            agent: text("agent_id")?.filter(|a| !a.is_empty()),
        },
        "PreCompact" => Event::PreCompact {
            trigger: text("trigger")?.unwrap_or_else(|| "unknown".to_owned()),
        },
        "PostCompact" => Event::PostCompact {
            trigger: text("trigger")?.unwrap_or_else(|| "unknown".to_owned()),
            summary: text("compact_summary")?,
        },
        "SessionStart" => Event::SessionStart {
            source: text("source")?.unwrap_or_else(|| "startup".to_owned()),
        },
        "Stop" => Event::Stop,
        "SubagentStop" => Event::SubagentStop {
            agent: text("agent_id")?.filter(|a| !a.is_empty()),
        },
        "SessionEnd" => Event::SessionEnd {
            reason: text("reason")?.unwrap_or_else(|| "other".to_owned()),
        },
        "ModelRequest" => Event::ModelRequest {
            summary: gemini_summary(map, event_name)?,
        },
        known if IGNORED_EVENTS.contains(&known) => Event::Ignored(known.to_owned()),
        gate if CURSOR_SPECIFIC_GATES.contains(&gate) => Event::Unknown {
            name: gate.to_owned(),
            tool_shaped: true,
        },
        other => Event::Unknown {
            name: other.to_owned(),
            tool_shaped: map.contains_key("tool_name")
                && map.contains_key("tool_input")
                && !map.contains_key("tool_response")
                && !map.contains_key("tool_result"),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

    use super::*;

    #[test]
    fn tool_input_keeps_the_bytes_the_host_sent() {
        let text = br#"{"session_id":"s1","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input": {"command" : "ls",  "b":1.50},"tool_use_id":"t1"}"#;
        let input = parse(Host::ClaudeCode, text).unwrap();
        let Event::PreToolUse(tool) = input.event else {
            panic!("not a PreToolUse")
        };
        assert_eq!(tool.input.get(), r#"{"command" : "ls",  "b":1.50}"#);
        assert_eq!(tool.id.as_deref(), Some("t1"));
    }

    #[test]
    fn a_lone_surrogate_reads_as_the_replacement_character() {
        assert_eq!(lone_surrogates_replaced(r#""a\ud800b""#), r#""a\ufffdb""#);
        assert_eq!(
            lone_surrogates_replaced(r#""\udc00\ud83d""#),
            r#""\ufffd\ufffd""#
        );
        // A pair, an escaped backslash before `u`, and other escapes stay as they are.
        for kept in [r#""\ud83d\ude00""#, r#""\\ud800""#, r#""\u0041\n\"""#] {
            assert_eq!(lone_surrogates_replaced(kept), kept);
        }
        let text = br#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{},"tool_response":{"filePath":"src/\ud800.rs"}}"#;
        let Event::PostToolUse {
            outcome: ToolOutcome::Response(response),
            ..
        } = parse(Host::ClaudeCode, text).unwrap().event
        else {
            panic!("not a PostToolUse")
        };
        assert_eq!(response.value().unwrap()["filePath"], "src/\u{fffd}.rs");
        assert_eq!(response.raw(), r#"{"filePath":"src/\ud800.rs"}"#);
    }

    #[test]
    fn errors_name_the_field_and_keep_the_event() {
        let e = parse(
            Host::ClaudeCode,
            br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_input":{}}"#,
        )
        .unwrap_err();
        let HookError::InputMalformed { reason, event } = e else {
            panic!("{e}")
        };
        assert!(reason.contains("`tool_name`"), "{reason}");
        assert_eq!(event.as_deref(), Some("PreToolUse"));
    }

    #[test]
    fn broken_json_still_yields_the_event_name_when_readable() {
        assert_eq!(
            sniff_event_name(br#"{"hook_event_name": "PreCompact", "trigger": "#),
            Some("PreCompact".to_owned())
        );
        assert_eq!(sniff_event_name(b"not json"), None);
    }

    #[test]
    fn an_empty_session_id_falls_back_to_the_transcript() {
        let input = parse(
            Host::Codex,
            br#"{"session_id":"","transcript_path":"/t.jsonl","hook_event_name":"Stop"}"#,
        )
        .unwrap();
        assert!(input.session_id.starts_with("transcript-"));
    }

    #[test]
    fn the_known_events_are_exactly_the_ones_not_parsed_as_unknown() {
        let map: RawMap = serde_json::from_str(
            r#"{"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t"}"#,
        )
        .unwrap();
        for name in HANDLED_EVENTS.iter().chain(IGNORED_EVENTS.iter()) {
            let event = parse_event(&map, name).unwrap();
            assert!(!matches!(event, Event::Unknown { .. }), "{name}");
            assert!(is_known_event(name), "{name}");
        }
        assert!(!is_known_event("PreToolUseV2"));
        assert!(matches!(
            parse_event(&map, "PreToolUseV2").unwrap(),
            Event::Unknown { .. }
        ));
    }

    #[test]
    fn gemini_cli_events_read_as_cairn_names_them_and_calls_get_an_id() {
        let before = br#"{"session_id":"g","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#;
        let after = br#"{"session_id":"g","cwd":"/p","hook_event_name":"AfterTool","tool_name":"run_shell_command","tool_input":{"command":"ls"},"tool_response":{"llmContent":"Output: a"}}"#;
        let Event::PreToolUse(pre) = parse(Host::GeminiCli, before).unwrap().event else {
            panic!("not a PreToolUse")
        };
        let Event::PostToolUse { tool: post, .. } = parse(Host::GeminiCli, after).unwrap().event
        else {
            panic!("not a PostToolUse")
        };
        // Both events of one call name the same id; another call's differs.
        assert_eq!(pre.id, post.id);
        assert!(pre.id.as_deref().is_some_and(|id| id.starts_with("call-")));
        assert_ne!(
            pre.id,
            Some(call_id("run_shell_command", r#"{"command":"pwd"}"#))
        );
        for (gemini, ours) in GEMINI_EVENTS {
            let text = format!(
                r#"{{"session_id":"g","hook_event_name":"{gemini}","tool_name":"t","tool_input":{{}}}}"#
            );
            let event = parse(Host::GeminiCli, text.as_bytes()).unwrap().event;
            assert_eq!(event.name(), ours, "{gemini}");
            // Another host sending Gemini CLI's name of a tool call is not let through.
            assert!(
                blocks_on_failure(text.as_bytes()) == (ours == "PreToolUse"),
                "{gemini}"
            );
        }
        // Claude Code does not send Gemini CLI's names: one carrying a call is unknown.
        let text =
            br#"{"session_id":"g","hook_event_name":"BeforeTool","tool_name":"t","tool_input":{}}"#;
        assert!(matches!(
            parse(Host::ClaudeCode, text).unwrap().event,
            Event::Unknown {
                tool_shaped: true,
                ..
            }
        ));
    }

    #[test]
    fn a_gemini_model_request_names_the_summary_its_history_starts_from() {
        let request = |messages: &str| {
            format!(
                r#"{{"session_id":"g","hook_event_name":"BeforeModel","llm_request":{{"model":"m","messages":{messages}}}}}"#
            )
        };
        let summary = |text: &str| match parse(Host::GeminiCli, text.as_bytes()).unwrap().event {
            Event::ModelRequest { summary } => summary,
            other => panic!("{other:?}"),
        };
        let compacted = request(
            r#"[{"role":"user","content":"<session_context>cwd</session_context><state_snapshot>S</state_snapshot>"},{"role":"model","content":"Got it. Thanks for the additional context!"},{"role":"user","content":"go on"}]"#,
        );
        assert_eq!(
            summary(&compacted),
            Some(("<state_snapshot>S</state_snapshot>".to_owned(), 1))
        );
        let plain = request(
            r#"[{"role":"user","content":"<session_context>cwd</session_context>"},{"role":"model","content":"done"},{"role":"user","content":"go on"}]"#,
        );
        assert_eq!(summary(&plain), None);
        assert_eq!(summary(&request("[]")), None);
    }

    #[test]
    fn unknown_events_say_whether_they_carry_a_call() {
        let input = parse(
            Host::ClaudeCode,
            br#"{"session_id":"s","hook_event_name":"PreToolCall","tool_name":"Bash","tool_input":{}}"#,
        )
        .unwrap();
        assert!(matches!(
            input.event,
            Event::Unknown {
                tool_shaped: true,
                ..
            }
        ));
    }
}
