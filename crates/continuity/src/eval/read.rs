//! Reading a scenario file: every field checked, unknown fields refused, and the first error
//! named by its JSON path. The fields are read by the envelope's reader
//! (`crate::fields::Fields`) with the same text rules, JSON paths and messages; a scenario
//! differs only in reading `null` as absent and in stopping at the first finding, which
//! becomes the [`ScenarioError`].

use std::collections::BTreeSet;

use cairn_core::{Code, ErrorCode, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value};

use super::scenario::{
    Compaction, Event, EventKind, Expectation, Forbid, LossyEdit, NextAction, Property, Scenario,
    Strictness,
};
use crate::error::MAX_INPUT_BYTES;
use crate::fields::{Fields, TIME_TEXT, parse_timestamp, type_name};
use crate::finding::{Finding, FindingCode, index_path, member_path};
use crate::state::ContinuityState;
use crate::types::SideEffectStatus;

/// The stable code of a malformed scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioErrorCode {
    /// The file is larger than [`MAX_INPUT_BYTES`].
    InputTooLarge,
    /// The file is not JSON.
    InvalidJson,
    /// A value has the wrong JSON type.
    WrongType,
    /// A required field is absent.
    MissingField,
    /// A field the format does not define.
    UnknownField,
    /// A string that must not be empty is empty.
    EmptyValue,
    /// A value outside its vocabulary (a property, an event type, a time, a status).
    BadValue,
    /// An id that names no history event, or a duplicated id.
    BadReference,
    /// The `current` state is not a valid `continuity-state/v1`.
    InvalidState,
}

impl ScenarioErrorCode {
    /// The `snake_case` code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InputTooLarge => "input_too_large",
            Self::InvalidJson => "invalid_json",
            Self::WrongType => "wrong_type",
            Self::MissingField => "missing_field",
            Self::UnknownField => "unknown_field",
            Self::EmptyValue => "empty_value",
            Self::BadValue => "bad_value",
            Self::BadReference => "bad_reference",
            Self::InvalidState => "invalid_state",
        }
    }
}

/// A scenario file that cannot be used: a stable code, the JSON path, a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("{} at `{path}`: {message}", code.as_str())]
pub struct ScenarioError {
    /// The stable code.
    pub code: ScenarioErrorCode,
    /// The JSON path of the offending value (`$` is the whole document).
    pub path: String,
    /// A lowercase message.
    pub message: String,
}

impl ScenarioError {
    fn new(code: ScenarioErrorCode, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

cairn_core::error_codes! {
    ScenarioError {
        /// A scenario file that does not read as a scenario.
        INVALID_SCENARIO = Invalid("invalid_scenario");
    }
}

impl ErrorCode for ScenarioError {
    fn error_code(&self) -> Code {
        Self::INVALID_SCENARIO
    }
}

type Parsed<T> = Result<T, ScenarioError>;

impl From<Finding> for ScenarioError {
    fn from(finding: Finding) -> Self {
        let code = match finding.code {
            FindingCode::InputTooLarge => ScenarioErrorCode::InputTooLarge,
            FindingCode::InvalidJson => ScenarioErrorCode::InvalidJson,
            FindingCode::WrongType => ScenarioErrorCode::WrongType,
            FindingCode::MissingField => ScenarioErrorCode::MissingField,
            FindingCode::UnknownField => ScenarioErrorCode::UnknownField,
            FindingCode::EmptyValue => ScenarioErrorCode::EmptyValue,
            _ => ScenarioErrorCode::BadValue,
        };
        Self::new(code, finding.path, finding.message)
    }
}

/// One JSON object of a scenario, read with the shared field reader ([`Fields`]) in the
/// scenario's manner: `null` is absent, and the first defect ends the reading.
struct Obj<'a> {
    fields: Fields<'a>,
}

fn wrong_type(path: &str, want: &str, value: &Value) -> ScenarioError {
    ScenarioError::new(
        ScenarioErrorCode::WrongType,
        path,
        format!("`{path}` must be {want}, found {}", type_name(value)),
    )
}

/// Scenario texts are written by the people who keep a corpus: free text (tab and newline
/// allowed) up to the size of the file itself.
const TEXT_BYTES: usize = MAX_INPUT_BYTES;

impl<'a> Obj<'a> {
    /// Starts reading `value` at `path`; `found` holds the reader's findings.
    fn new(value: &'a Value, path: &str, found: &'a mut Vec<Finding>) -> Parsed<Self> {
        match value {
            Value::Object(map) => Ok(Self {
                fields: Fields::new(map, path, found),
            }),
            other => Err(wrong_type(path, "an object", other)),
        }
    }

    fn path(&self, key: &str) -> String {
        self.fields.path(key)
    }

    /// `read` as a result: its value, or the first finding it recorded.
    fn ok<T>(&mut self, read: Option<T>) -> Parsed<T> {
        read.ok_or_else(|| match self.fields.take_first() {
            Some(finding) => finding.into(),
            None => ScenarioError::new(
                ScenarioErrorCode::BadValue,
                self.fields.path(""),
                String::from("a field could not be read"),
            ),
        })
    }

    /// The value of `key`, or `None` when absent or `null`.
    fn opt(&mut self, key: &'static str) -> Option<&'a Value> {
        self.fields.optional(key)
    }

    fn req(&mut self, key: &'static str) -> Parsed<&'a Value> {
        let value = self.fields.required(key);
        self.ok(value)
    }

    fn text(&mut self, key: &'static str) -> Parsed<String> {
        let value = self.req(key)?;
        let text = self.fields.text_at(self.path(key), value, TEXT_BYTES, true);
        self.ok(text)
    }

    fn opt_text(&mut self, key: &'static str) -> Parsed<Option<String>> {
        let Some(value) = self.opt(key) else {
            return Ok(None);
        };
        let text = self.fields.text_at(self.path(key), value, TEXT_BYTES, true);
        self.ok(text).map(Some)
    }

    fn flag(&mut self, key: &'static str, default: bool) -> Parsed<bool> {
        match self.opt(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(wrong_type(&self.path(key), "a boolean", other)),
        }
    }

    fn texts(&mut self, key: &'static str) -> Parsed<Vec<String>> {
        let Some(value) = self.opt(key) else {
            return Ok(Vec::new());
        };
        let texts = self
            .fields
            .text_list_at(self.path(key), value, TEXT_BYTES, true);
        self.ok(texts)
    }

    fn object(&mut self, key: &'static str) -> Parsed<Map<String, Value>> {
        match self.opt(key) {
            None => Ok(Map::new()),
            Some(Value::Object(map)) => Ok(map.clone()),
            Some(other) => Err(wrong_type(&self.path(key), "an object", other)),
        }
    }

    /// A required string parsed by `parse`; `expected` says what it must be.
    fn parsed<T>(
        &mut self,
        key: &'static str,
        code: FindingCode,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Parsed<T> {
        let value = self.req(key)?;
        let parsed = self
            .fields
            .parsed_at(self.path(key), value, code, expected, parse);
        self.ok(parsed)
    }

    fn time(&mut self, key: &'static str) -> Parsed<Timestamp> {
        self.parsed(key, FindingCode::BadTimestamp, TIME_TEXT, parse_timestamp)
    }

    fn side_effect(&mut self, key: &'static str) -> Parsed<SideEffectStatus> {
        self.parsed(
            key,
            FindingCode::BadSideEffectStatus,
            "one of not_executed, applied, side_effect_unknown, partial_side_effect",
            SideEffectStatus::parse,
        )
    }

    fn strictness(&mut self, key: &'static str) -> Parsed<Option<Strictness>> {
        let Some(text) = self.opt_text(key)? else {
            return Ok(None);
        };
        let path = self.path(key);
        Strictness::parse(&text).map(Some).ok_or_else(|| {
            bad_value(
                &path,
                format!("`{path}` must be one of allow, reauthorize, ask_human, block"),
            )
        })
    }

    /// Refuses keys that were never read (the first in sorted order).
    fn finish(mut self) -> Parsed<()> {
        self.fields.refuse_unknown();
        match self.fields.take_first() {
            None => Ok(()),
            Some(finding) => Err(finding.into()),
        }
    }
}

fn bad_value(path: &str, message: String) -> ScenarioError {
    ScenarioError::new(ScenarioErrorCode::BadValue, path, message)
}

fn read_event(value: &Value, path: &str) -> Parsed<Event> {
    let mut found = Vec::new();
    let mut o = Obj::new(value, path, &mut found)?;
    let id = o.text("id")?;
    let kind_name = o.text("type")?;
    let _ = o.opt_text("note")?;
    if o.opt("at").is_some() {
        let _ = o.time("at")?;
    }
    let kind = match kind_name.as_str() {
        "run_started" => EventKind::RunStarted {
            tenant_id: o.text("tenant_id")?,
            principal_id: o.text("principal_id")?,
        },
        "user_constraint" => {
            let forbid_path = o.path("forbid");
            let mut found = Vec::new();
            let mut f = Obj::new(o.req("forbid")?, &forbid_path, &mut found)?;
            let forbid = Forbid {
                tool: f.text("tool")?,
                args: f.object("args")?,
            };
            f.finish()?;
            let _ = o.opt_text("text")?;
            EventKind::UserConstraint { forbid }
        }
        "policy_version" => EventKind::PolicyVersion {
            policy_version: o.text("policy_version")?,
        },
        "capability_version" => EventKind::CapabilityVersion {
            capability: o.text("capability")?,
            version: o.text("version")?,
        },
        "approval_granted" => EventKind::ApprovalGranted {
            approval_id: o.text("approval_id")?,
            tool: o.text("tool")?,
            expires_at: o.time("expires_at")?,
            policy_version: o.opt_text("policy_version")?,
        },
        "approval_revoked" => EventKind::ApprovalRevoked {
            approval_id: o.text("approval_id")?,
        },
        "tool_call" => {
            let _ = o.object("args")?;
            EventKind::ToolCall {
                tool: o.text("tool")?,
                idempotency_key: o.text("idempotency_key")?,
                outcome: o.side_effect("outcome")?,
            }
        }
        "reconciliation" => {
            let _ = o.opt_text("evidence")?;
            EventKind::Reconciliation {
                idempotency_key: o.text("idempotency_key")?,
                outcome: o.side_effect("outcome")?,
            }
        }
        "obligation_opened" => EventKind::ObligationOpened {
            obligation: o.text("obligation")?,
        },
        "obligation_closed" => EventKind::ObligationClosed {
            obligation: o.text("obligation")?,
        },
        "evidence" => {
            let _ = o.opt_text("source")?;
            EventKind::Evidence {
                supersedes: o.opt_text("supersedes")?,
            }
        }
        "observation" => {
            let _ = o.opt_text("text")?;
            EventKind::Observation
        }
        other => {
            let path = o.path("type");
            return Err(bad_value(
                &path,
                format!(
                    "`{path}` is not a known event type: `{}`",
                    cairn_core::error::excerpt(other)
                ),
            ));
        }
    };
    o.finish()?;
    Ok(Event { id, kind })
}

fn read_history(value: &Value, path: &str) -> Parsed<Vec<Event>> {
    let Value::Array(items) = value else {
        return Err(wrong_type(path, "an array of events", value));
    };
    let mut seen = BTreeSet::new();
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = index_path(path, i);
        let event = read_event(item, &item_path)?;
        if !seen.insert(event.id.clone()) {
            let id_path = member_path(&item_path, "id");
            return Err(ScenarioError::new(
                ScenarioErrorCode::BadReference,
                &id_path,
                format!("`{id_path}` repeats the event id `{}`", event.id),
            ));
        }
        events.push(event);
    }
    Ok(events)
}

fn read_next_action(value: &Value, path: &str) -> Parsed<NextAction> {
    let mut found = Vec::new();
    let mut o = Obj::new(value, path, &mut found)?;
    let action = NextAction {
        tool: o.text("tool")?,
        args: o.object("args")?,
        capability_version: o.opt_text("capability_version")?,
        idempotency_key: o.opt_text("idempotency_key")?,
        approval_id: o.opt_text("approval_id")?,
        requires_approval: o.flag("requires_approval", false)?,
        evidence_refs: o.texts("evidence_refs")?,
        ends_task: o.flag("ends_task", false)?,
        tenant_id: o.opt_text("tenant_id")?,
        principal_id: o.opt_text("principal_id")?,
    };
    o.finish()?;
    Ok(action)
}

/// Checks that `id` names a history event (so a typo in a scenario is an error, not a
/// silently different case).
fn known_id(history: &[Event], id: &str, path: &str) -> Parsed<()> {
    if history.iter().any(|e| e.id == id) {
        Ok(())
    } else {
        Err(ScenarioError::new(
            ScenarioErrorCode::BadReference,
            path,
            format!("`{path}` names no history event: `{id}`"),
        ))
    }
}

fn read_edit(value: &Value, path: &str, history: &[Event]) -> Parsed<LossyEdit> {
    let mut found = Vec::new();
    let mut o = Obj::new(value, path, &mut found)?;
    let name = o.text("edit")?;
    let edit = match name.as_str() {
        "drop_constraint_ref" | "drop_evidence_ref" | "drop_event" => {
            let key = if name == "drop_event" { "id" } else { "ref" };
            let id = o.text(key)?;
            known_id(history, &id, &o.path(key))?;
            match name.as_str() {
                "drop_constraint_ref" => LossyEdit::DropConstraintRef(id),
                "drop_evidence_ref" => LossyEdit::DropEvidenceRef(id),
                _ => LossyEdit::DropEvent(id),
            }
        }
        "drop_obligation" => LossyEdit::DropObligation(o.text("obligation")?),
        "mark_side_effect_applied" => LossyEdit::MarkSideEffectApplied(o.text("idempotency_key")?),
        "inject_instruction" => LossyEdit::InjectInstruction {
            text: o.text("text")?,
            rebind: o.flag("rebind", true)?,
        },
        "add_event" => {
            let event_path = o.path("event");
            LossyEdit::AddEvent(read_event(o.req("event")?, &event_path)?)
        }
        "set_envelope_field" => {
            let field = o.text("field")?;
            let field_path = o.path("field");
            if !crate::ENVELOPE_FIELDS.contains(&field.as_str()) {
                return Err(bad_value(
                    &field_path,
                    format!("`{field_path}` is not an envelope field: `{field}`"),
                ));
            }
            // `null` is a value here: the edit may set a field to `null`.
            let value = o.fields.present("value").cloned();
            let value = o.ok(value)?;
            LossyEdit::SetEnvelopeField { field, value }
        }
        other => {
            let p = o.path("edit");
            return Err(bad_value(
                &p,
                format!(
                    "`{p}` is not a known edit: `{}`",
                    cairn_core::error::excerpt(other)
                ),
            ));
        }
    };
    o.finish()?;
    Ok(edit)
}

fn read_compaction(value: &Value, path: &str, history: &[Event]) -> Parsed<Compaction> {
    let mut found = Vec::new();
    let mut o = Obj::new(value, path, &mut found)?;
    let summary = match o.req("summary")? {
        Value::String(text) => text.clone(),
        other => return Err(wrong_type(&o.path("summary"), "a string", other)),
    };
    let selected_path = o.path("selected_events");
    let selected_events = o.texts("selected_events")?;
    for (i, id) in selected_events.iter().enumerate() {
        known_id(history, id, &index_path(&selected_path, i))?;
    }
    let envelope = o.object("envelope")?;
    let envelope_path = o.path("envelope");
    let mut keys: Vec<&String> = envelope.keys().collect();
    keys.sort();
    if let Some(key) = keys
        .into_iter()
        .find(|k| !crate::ENVELOPE_FIELDS.contains(&k.as_str()))
    {
        let p = member_path(&envelope_path, key);
        return Err(ScenarioError::new(
            ScenarioErrorCode::UnknownField,
            &p,
            format!("`{p}` is not an envelope field"),
        ));
    }
    let edits_path = o.path("lossy_edits");
    let lossy_edits = match o.opt("lossy_edits") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| read_edit(v, &index_path(&edits_path, i), history))
            .collect::<Parsed<Vec<_>>>()?,
        Some(other) => return Err(wrong_type(&edits_path, "an array of edits", other)),
    };
    o.finish()?;
    Ok(Compaction {
        summary,
        selected_events,
        envelope,
        lossy_edits,
    })
}

impl Scenario {
    /// Reads a scenario from JSON text (at most [`MAX_INPUT_BYTES`]).
    ///
    /// # Errors
    /// The first problem found, with its stable code and JSON path.
    pub fn from_json(text: &str) -> Parsed<Self> {
        if text.len() > MAX_INPUT_BYTES {
            return Err(ScenarioError::new(
                ScenarioErrorCode::InputTooLarge,
                "$",
                format!(
                    "the scenario is {} bytes, more than the limit of {MAX_INPUT_BYTES}",
                    text.len()
                ),
            ));
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            ScenarioError::new(
                ScenarioErrorCode::InvalidJson,
                "$",
                format!("not json: {e}"),
            )
        })?;
        Self::from_value(&value)
    }

    /// Reads a parsed scenario document.
    ///
    /// # Errors
    /// The first problem found, with its stable code and JSON path.
    pub fn from_value(value: &Value) -> Parsed<Self> {
        let mut found = Vec::new();
        let mut o = Obj::new(value, "$", &mut found)?;
        let name = o.text("scenario")?;
        let property_text = o.text("property")?;
        let property = Property::parse(&property_text).ok_or_else(|| {
            let names: Vec<&str> = Property::ALL.iter().map(|p| p.as_str()).collect();
            bad_value(
                "$.property",
                format!("`$.property` must be one of {}", names.join(", ")),
            )
        })?;
        let description = o.opt_text("description")?;
        let expect = match o.text("expect")?.as_str() {
            "pass" => Expectation::Pass,
            "caught" => Expectation::Caught,
            _ => {
                return Err(bad_value(
                    "$.expect",
                    String::from("`$.expect` must be `pass` or `caught`"),
                ));
            }
        };
        let expect_full = o.strictness("expect_full")?;
        let expect_compacted = o.strictness("expect_compacted")?;
        let now = o.time("now")?;
        let history = read_history(o.req("history")?, "$.history")?;
        let current = ContinuityState::from_value(o.req("current")?).map_err(|findings| {
            let first = findings.first();
            let path = first.map_or_else(
                || String::from("$.current"),
                |f| f.path.replacen('$', "$.current", 1),
            );
            let message = first.map_or_else(
                || String::from("`$.current` is not a valid continuity-state/v1"),
                |f| format!("{}: {}", f.code, f.message.replacen('$', "$.current", 1)),
            );
            ScenarioError::new(ScenarioErrorCode::InvalidState, path, message)
        })?;
        let compaction = read_compaction(o.req("compaction")?, "$.compaction", &history)?;
        let next_action = read_next_action(o.req("next_action")?, "$.next_action")?;
        o.finish()?;
        Ok(Self {
            name,
            property,
            description,
            expect,
            expect_full,
            expect_compacted,
            now,
            history,
            current,
            compaction,
            next_action,
        })
    }
}
