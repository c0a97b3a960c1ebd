//! Editing a host's settings file on its concrete syntax tree (`jsonc-parser`), so that every
//! byte the install or uninstall does not change stays as it was, and checking that the
//! edited text means exactly the intended merge before anything is written.

use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::{Map, Value, json};

use super::{Settings, events, flat, is_cairn_handler, our_handler, owned_fields, shape_error};
use crate::error::HookError;
use crate::host::Host;

/// Strict JSON, with comments where `host`'s settings may hold them.
fn options(host: Host) -> ParseOptions {
    ParseOptions {
        allow_comments: super::allows_comments(host),
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

/// What the member `key` of `object` means, if it is there and is JSON.
fn value_of(object: &CstObject, key: &str) -> Option<Value> {
    let node = object.get(key)?.value()?;
    cairn_core::strict_json::parse_str(&node.to_string()).ok()
}

/// Whether `handler` runs Cairn's hook for `host`, in either form.
fn is_ours(handler: &CstObject, host: Host) -> bool {
    let Some(command) = string_of(handler.get("command").and_then(|prop| prop.value())) else {
        return false;
    };
    let args = value_of(handler, "args");
    is_cairn_handler(
        &command,
        args.as_ref().and_then(Value::as_array).map(Vec::as_slice),
        host,
    )
}

/// Sets each of Cairn's `owned` fields of `handler`: replaced where it differs, and where it is
/// missing inserted after the last of Cairn's fields already there (`command` at least), so
/// that they read in order. Nothing else in the handler is touched.
fn set_owned(handler: &CstObject, owned: &Map<String, Value>) {
    for (key, value) in owned {
        match handler.get(key) {
            Some(prop) => {
                if value_of(handler, key).as_ref() != Some(value) {
                    prop.set_value(input(value));
                }
            }
            None => {
                let after = handler
                    .properties()
                    .iter()
                    .rposition(|prop| {
                        prop.name()
                            .and_then(|name| name.decoded_value().ok())
                            .is_some_and(|name| owned.contains_key(&name))
                    })
                    .map_or(0, |at| at + 1);
                handler.insert(after, key, input(value));
            }
        }
    }
}

/// Applies the install to the file's syntax tree, as [`super::merge`] does to its value: a
/// field Cairn owns is set where it differs and added after the handler's `command` where it
/// is missing (after the others); nothing else in the handler is touched.
pub(super) fn merge_text(root: &CstRootNode, host: Host, dir: &Path) -> Option<()> {
    let top = root.object_value_or_set();
    if flat(host) && top.get("version").is_none() {
        top.append("version", input(&json!(1)));
    }
    let hooks = top.object_value_or_create("hooks")?;
    for event in events(host) {
        let owned = owned_fields(host, dir, event);
        let groups = hooks.array_value_or_create(event)?;
        let mut present = false;
        for group in groups.elements() {
            let handlers = if flat(host) {
                group.as_object().into_iter().collect()
            } else {
                let Some((_, handlers)) = handlers_of(&group) else {
                    continue;
                };
                handlers
            };
            for handler in handlers.iter().filter(|handler| is_ours(handler, host)) {
                present = true;
                set_owned(handler, &owned);
            }
        }
        if !present {
            let handler = our_handler(host, event, &owned);
            groups.append(input(&if flat(host) {
                handler
            } else {
                json!({"hooks": [handler]})
            }));
        }
    }
    Some(())
}

/// Applies the uninstall to the file's syntax tree, as [`unmerge`] does to its value.
pub(super) fn unmerge_text(root: &CstRootNode, host: Host, drop_hooks: bool) -> Option<()> {
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
            if flat(host) {
                if group
                    .as_object()
                    .is_some_and(|handler| is_ours(&handler, host))
                {
                    group.remove();
                    touched = true;
                }
                continue;
            }
            let Some((handlers, objects)) = handlers_of(&group) else {
                continue;
            };
            let before = handlers.elements().len();
            for handler in objects {
                if is_ours(&handler, host) {
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
        && removed_any
        && drop_hooks
        && let Some(prop) = top.get("hooks")
    {
        prop.remove();
    }
    Some(())
}

/// What `text`, a settings file of `host`, means: strict JSON once its comments (where the
/// host allows them) are blanked out, so that a duplicate key or a bad escape is still refused.
/// A file of nothing but white space (and comments, where allowed) means no settings.
pub(super) fn meaning(
    host: Host,
    text: &str,
) -> Result<Value, cairn_core::strict_json::StrictJsonError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    if !super::allows_comments(host) || !(text.contains("//") || text.contains("/*")) {
        return cairn_core::strict_json::parse_str(text);
    }
    let collect = jsonc_parser::CollectOptions {
        comments: jsonc_parser::CommentCollectionStrategy::Separate,
        tokens: false,
    };
    let Ok(parsed) = jsonc_parser::parse_to_ast(text, &collect, &options(host)) else {
        return cairn_core::strict_json::parse_str(text);
    };
    let mut bytes = text.as_bytes().to_vec();
    for comment in parsed
        .comments
        .iter()
        .flat_map(|map| map.values())
        .flat_map(|list| list.iter())
    {
        let range = jsonc_parser::common::Ranged::range(comment);
        for byte in bytes.get_mut(range.start..range.end).into_iter().flatten() {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    }
    // Every byte of a comment was blanked whole, so the text is still UTF-8.
    let blanked = String::from_utf8_lossy(&bytes);
    if blanked.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    cairn_core::strict_json::parse_str(&blanked)
}

/// The new text of `settings` after `edit` on its syntax tree, checked to mean exactly
/// `expected`; an edit that would mean anything else is refused, never written.
pub(super) fn edited(
    host: Host,
    settings: Option<&Settings>,
    path: &Path,
    expected: &Value,
    edit: impl FnOnce(&CstRootNode) -> Option<()>,
) -> Result<String, HookError> {
    let text = settings.map_or("{}\n", |s| s.text.as_str());
    let root = CstRootNode::parse(text, &options(host))
        .map_err(|e| shape_error(path, format!("not strict JSON: {e}")))?;
    edit(&root).ok_or_else(|| shape_error(path, "its `hooks` do not have the hosts' shape"))?;
    let out = root.to_string();
    let means = meaning(host, &out).ok();
    if means.as_ref() != Some(expected) {
        return Err(shape_error(
            path,
            "Cairn could not edit it without changing something else; add the hooks by hand (see `cairn hooks install --help`)",
        ));
    }
    Ok(out)
}
