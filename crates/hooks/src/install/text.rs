//! Editing a host's settings file on its concrete syntax tree (`jsonc-parser`), so that every
//! byte the install or uninstall does not change stays as it was, and checking that the
//! edited text means exactly the intended merge before anything is written.

use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::{Value, json};

use super::{Settings, events, is_cairn_command, our_handler, shape_error};
use crate::error::HookError;
use crate::host::Host;

fn strict_options() -> ParseOptions {
    ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
    }
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(flag) => CstInputValue::Bool(*flag),
        Value::Number(number) => CstInputValue::Number(number.to_string()),
        Value::String(text) => CstInputValue::String(text.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(members) => CstInputValue::Object(
            members
                .iter()
                .map(|(key, value)| (key.clone(), input(value)))
                .collect(),
        ),
    }
}

fn string_of(node: Option<CstNode>) -> Option<String> {
    node?.as_string_lit()?.decoded_value().ok()
}

/// The handlers (objects) of one group, with their array.
fn handlers_of(group: &CstNode) -> Option<(CstArray, Vec<CstObject>)> {
    let handlers = group.as_object()?.array_value("hooks")?;
    let objects = handlers
        .elements()
        .iter()
        .filter_map(CstNode::as_object)
        .collect();
    Some((handlers, objects))
}

fn command_of(handler: &CstObject) -> Option<String> {
    string_of(handler.get("command")?.value())
}

/// Applies the install to the file's syntax tree, as [`merge`] does to its value.
pub(super) fn merge_text(root: &CstRootNode, host: Host, command: &str) -> Option<()> {
    let top = root.object_value_or_set();
    let hooks = top.object_value_or_create("hooks")?;
    for event in events(host) {
        let groups = hooks.array_value_or_create(event)?;
        let mut present = false;
        for group in groups.elements() {
            let Some((_, handlers)) = handlers_of(&group) else {
                continue;
            };
            for handler in handlers {
                let Some(current) = command_of(&handler) else {
                    continue;
                };
                if is_cairn_command(&current, host) {
                    present = true;
                    if current != command {
                        handler
                            .get("command")?
                            .set_value(CstInputValue::String(command.to_owned()));
                    }
                }
            }
        }
        if !present {
            groups.append(input(
                &json!({"hooks": [our_handler(host, event, command)]}),
            ));
        }
    }
    Some(())
}

/// Applies the uninstall to the file's syntax tree, as [`unmerge`] does to its value.
pub(super) fn unmerge_text(root: &CstRootNode, host: Host, had_hooks: bool) -> Option<()> {
    let top = root.object_value()?;
    let Some(hooks) = top.object_value("hooks") else {
        return Some(());
    };
    let mut removed_any = false;
    for prop in hooks.properties() {
        let Some(groups) = prop.array_value() else {
            continue;
        };
        let mut touched = false;
        for group in groups.elements() {
            let Some((handlers, objects)) = handlers_of(&group) else {
                continue;
            };
            let before = handlers.elements().len();
            for handler in objects {
                if command_of(&handler).is_some_and(|c| is_cairn_command(&c, host)) {
                    handler.remove();
                }
            }
            let after = handlers.elements().len();
            if after != before {
                touched = true;
                if after == 0 {
                    group.remove();
                }
            }
        }
        if touched {
            removed_any = true;
            if groups.elements().is_empty() {
                prop.remove();
            }
        }
    }
    if hooks.properties().is_empty()
        && (removed_any || !had_hooks)
        && let Some(prop) = top.get("hooks")
    {
        prop.remove();
    }
    Some(())
}

/// The new text of `settings` after `edit` on its syntax tree, checked to mean exactly
/// `expected`; an edit that would mean anything else is refused, never written.
pub(super) fn edited(
    settings: Option<&Settings>,
    path: &Path,
    expected: &Value,
    edit: impl FnOnce(&CstRootNode) -> Option<()>,
) -> Result<String, HookError> {
    let text = settings.map_or("{}\n", |s| s.text.as_str());
    let root = CstRootNode::parse(text, &strict_options())
        .map_err(|e| shape_error(path, format!("not strict JSON: {e}")))?;
    edit(&root).ok_or_else(|| shape_error(path, "its `hooks` do not have the hosts' shape"))?;
    let out = root.to_string();
    let means = cairn_core::strict_json::parse_str(&out).ok();
    if means.as_ref() != Some(expected) {
        return Err(shape_error(
            path,
            "Cairn could not edit it without changing something else; add the hooks by hand (see `cairn hooks install --help`)",
        ));
    }
    Ok(out)
}
