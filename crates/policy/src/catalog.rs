//! The tool catalog (the project's tool declarations) and the Cedar schema generated from it.
//!
//! The catalog is the only way an argument reaches a policy: a tool's declared argument
//! fields, with their declared types, are copied into the Cedar context; everything else in
//! an argument payload (which may hold secrets) stays out of policy evaluation. The catalog
//! is JSON:
//!
//! ```json
//! {"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String"}},
//!            "kb.search": {}}}
//! ```
//!
//! Unknown keys are refused (a typo such as `"arg"` would otherwise silently declare
//! nothing), and every error names the JSON path of the offending value.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{PolicyLoadError, excerpt};

/// The Cedar action every generated schema declares besides the catalog's tools.
///
/// It stands for the request shape of a tool absent from the catalog (the base context with
/// an empty `args` record). Declaring it gives action-unconstrained policies such as
/// `permit(principal, action, resource) when { … };` a request environment to be
/// type-checked against even when the catalog is empty — without it a typo like
/// `context.tenat` would validate vacuously. A catalog may not declare a tool of this name,
/// and the gate denies a call to it.
pub const UNDECLARED_TOOL_ACTION: &str = "cairn.undeclared";

/// The longest tool or argument name accepted, in bytes (the ledger's label limit).
const MAX_NAME_LEN: usize = 256;

/// The declared type of one argument field, as written in the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ArgType {
    /// A JSON string; Cedar `String`.
    String,
    /// A JSON integer in the signed 64-bit range; Cedar `Long`.
    Long,
    /// A JSON `true` or `false`; Cedar `Bool`.
    Bool,
}

impl ArgType {
    /// The name used in the catalog and in the Cedar schema.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::String => "String",
            Self::Long => "Long",
            Self::Bool => "Bool",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "String" => Some(Self::String),
            "Long" => Some(Self::Long),
            "Bool" => Some(Self::Bool),
            _ => None,
        }
    }
}

/// One tool's declaration: the argument fields policies may read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolDecl {
    args: BTreeMap<String, ArgType>,
}

impl ToolDecl {
    /// The declared argument fields and their types, in name order.
    pub fn args(&self) -> impl ExactSizeIterator<Item = (&str, ArgType)> {
        self.args.iter().map(|(name, ty)| (name.as_str(), *ty))
    }

    /// The declared type of argument `name`, if it is declared.
    #[must_use]
    pub fn arg(&self, name: &str) -> Option<ArgType> {
        self.args.get(name).copied()
    }
}

/// The project's tool declarations. [`ToolCatalog::default`] is empty: no tool is declared,
/// so no argument reaches any policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolCatalog {
    tools: BTreeMap<String, ToolDecl>,
}

impl ToolCatalog {
    /// Parses a catalog from JSON text; `name` (the file path) is used in error messages.
    ///
    /// # Errors
    /// [`PolicyLoadError::ToolCatalog`] naming the JSON path of the first offending value:
    /// invalid JSON, an unknown key, a tool or argument name that is empty, over 256 bytes,
    /// has control characters or is the reserved [`UNDECLARED_TOOL_ACTION`], or an argument
    /// type other than `String`, `Long` or `Bool`.
    pub fn from_json(name: &str, text: &str) -> Result<Self, PolicyLoadError> {
        let fail = |path: String, reason: String| PolicyLoadError::ToolCatalog {
            file: name.to_owned(),
            path,
            reason,
        };
        let document: Value = serde_json::from_str(text)
            .map_err(|err| fail(String::new(), format!("invalid json: {err}")))?;
        let root = as_object(&document, "").map_err(|reason| fail(String::new(), reason))?;
        only_keys(root, "", &["tools"]).map_err(|(path, reason)| fail(path, reason))?;
        let tools_value = root
            .get("tools")
            .ok_or_else(|| fail(String::new(), "missing key `tools`".to_owned()))?;
        let tools = as_object(tools_value, "tools").map_err(|r| fail("tools".to_owned(), r))?;
        let mut catalog = Self::default();
        for (tool_name, decl) in tools {
            let path = format!("tools.{}", path_key(tool_name));
            check_name(tool_name, "tool").map_err(|r| fail(path.clone(), r))?;
            let decl = parse_tool(decl, &path).map_err(|(path, reason)| fail(path, reason))?;
            catalog.tools.insert(tool_name.clone(), decl);
        }
        Ok(catalog)
    }

    /// Declares tool `name` with `args` learned elsewhere (the MCP gateway reads them from
    /// an upstream tool's input schema), unless the catalog declares the tool already — a
    /// project's own declaration wins. A tool or argument name the catalog file would refuse
    /// is left out. Returns whether the tool was declared.
    pub fn learn(&mut self, name: &str, args: impl IntoIterator<Item = (String, ArgType)>) -> bool {
        if self.tools.contains_key(name) || check_name(name, "tool").is_err() {
            return false;
        }
        let args = args
            .into_iter()
            .filter(|(arg, _)| check_name(arg, "argument").is_ok())
            .collect();
        self.tools.insert(name.to_owned(), ToolDecl { args });
        true
    }

    /// The declaration of tool `name`, if the catalog declares it.
    #[must_use]
    pub fn tool(&self, name: &str) -> Option<&ToolDecl> {
        self.tools.get(name)
    }

    /// The declared tools, in name order.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = (&str, &ToolDecl)> {
        self.tools.iter().map(|(name, decl)| (name.as_str(), decl))
    }

    /// Whether no tool is declared.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The Cedar schema (Cedar schema syntax, no namespace) policies are validated against:
    /// `entity Agent;` (the principal), `entity Tool = { name: String, version: String };`
    /// (the resource), the reserved [`UNDECLARED_TOOL_ACTION`] and one action per tool whose
    /// context is `{ tenant, run, task, lane?, mcp?: { server, tool }, args: { <declared fields, all optional> } }`.
    #[must_use]
    pub fn cedar_schema(&self) -> String {
        let mut out = String::from(
            "// Generated by cairn-policy from the tool catalog.\n\
             entity Agent;\n\
             entity Tool = { name: String, version: String };\n",
        );
        write_action(&mut out, UNDECLARED_TOOL_ACTION, &ToolDecl::default());
        for (name, decl) in &self.tools {
            write_action(&mut out, name, decl);
        }
        out
    }
}

impl ToolCatalog {
    /// The same schema as [`ToolCatalog::cedar_schema`], in Cedar's JSON schema format: what
    /// the gate loads, because Cedar reads it without its schema-text parser (a grammar whose
    /// lexer is built afresh in every process — a hook process pays for it on every call).
    #[must_use]
    pub fn cedar_schema_json(&self) -> serde_json::Value {
        use serde_json::{Map, Value, json};
        let string = || json!({"type": "String"});
        let mut actions = Map::new();
        let mut action = |name: &str, decl: &ToolDecl| {
            let args: Map<String, Value> = decl
                .args
                .iter()
                .map(|(arg, ty)| {
                    let ty = match ty {
                        ArgType::String => "String",
                        ArgType::Long => "Long",
                        ArgType::Bool => "Boolean",
                    };
                    (arg.clone(), json!({"type": ty, "required": false}))
                })
                .collect();
            actions.insert(
                name.to_owned(),
                json!({"appliesTo": {
                    "principalTypes": ["Agent"],
                    "resourceTypes": ["Tool"],
                    "context": {"type": "Record", "attributes": {
                        "tenant": string(), "run": string(), "task": string(),
                        "lane": {"type": "String", "required": false},
                        "mcp": {"type": "Record", "required": false, "attributes": {
                            "server": string(), "tool": string(),
                        }},
                        "args": {"type": "Record", "attributes": args},
                    }},
                }}),
            );
        };
        action(UNDECLARED_TOOL_ACTION, &ToolDecl::default());
        for (name, decl) in &self.tools {
            action(name, decl);
        }
        json!({"": {
            "entityTypes": {
                "Agent": {},
                "Tool": {"shape": {"type": "Record", "attributes": {
                    "name": string(), "version": string(),
                }}},
            },
            "actions": actions,
        }})
    }
}

fn write_action(out: &mut String, name: &str, decl: &ToolDecl) {
    let mut args = String::new();
    for (index, (arg, ty)) in decl.args.iter().enumerate() {
        let separator = if index == 0 { " " } else { ", " };
        let _ = write!(args, "{separator}{}?: {}", quoted(arg), ty.as_str());
    }
    if !args.is_empty() {
        args.push(' ');
    }
    let _ = write!(
        out,
        "action {} appliesTo {{\n  principal: [Agent],\n  resource: [Tool],\n  \
         context: {{ tenant: String, run: String, task: String, lane?: String, mcp?: {{ server: String, tool: String }}, args: {{{args}}} }}\n}};\n",
        quoted(name)
    );
}

/// A Cedar string literal for `text`. Names never hold control characters (checked when the
/// catalog is parsed), so escaping the quote and the backslash is enough.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        if matches!(ch, '"' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('"');
    out
}

fn parse_tool(decl: &Value, path: &str) -> Result<ToolDecl, (String, String)> {
    let object = as_object(decl, path).map_err(|r| (path.to_owned(), r))?;
    only_keys(object, path, &["args"])?;
    let mut tool = ToolDecl::default();
    let Some(args) = object.get("args") else {
        return Ok(tool);
    };
    let args_path = format!("{path}.args");
    let args = as_object(args, &args_path).map_err(|r| (args_path.clone(), r))?;
    for (arg, ty) in args {
        let arg_path = format!("{args_path}.{}", path_key(arg));
        check_name(arg, "argument").map_err(|r| (arg_path.clone(), r))?;
        let ty = ty.as_str().and_then(ArgType::parse).ok_or_else(|| {
            (
                arg_path.clone(),
                format!(
                    "argument type must be `String`, `Long` or `Bool`, not {}",
                    describe(ty)
                ),
            )
        })?;
        tool.args.insert(arg.clone(), ty);
    }
    Ok(tool)
}

fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, String> {
    value.as_object().ok_or_else(|| {
        let what = if path.is_empty() {
            "the catalog"
        } else {
            "value"
        };
        format!("{what} must be a json object, not {}", describe(value))
    })
}

fn only_keys(
    object: &Map<String, Value>,
    path: &str,
    allowed: &[&str],
) -> Result<(), (String, String)> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => {
            let key_path = if path.is_empty() {
                path_key(key)
            } else {
                format!("{path}.{}", path_key(key))
            };
            let expected: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
            Err((
                key_path,
                format!("unknown key; expected {}", expected.join(" or ")),
            ))
        }
    }
}

fn check_name(name: &str, kind: &str) -> Result<(), String> {
    let reason = if name.is_empty() {
        "must not be empty"
    } else if name.len() > MAX_NAME_LEN {
        "must be at most 256 bytes"
    } else if name.chars().any(char::is_control) {
        "must not contain control characters"
    } else if kind == "tool" && name == UNDECLARED_TOOL_ACTION {
        "is reserved by cairn for tools absent from the catalog"
    } else {
        return Ok(());
    };
    Err(format!("{kind} name `{}` {reason}", excerpt(name)))
}

/// A key as written in a JSON path: bare when it is a plain identifier, otherwise quoted.
fn path_key(key: &str) -> String {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
    if plain {
        key.to_owned()
    } else {
        Value::String(key.to_owned()).to_string()
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::String(text) => format!("`{}`", excerpt(text)),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;
    use cairn_core::ErrorCode;

    fn error(text: &str) -> (String, String) {
        match ToolCatalog::from_json("tools.json", text).unwrap_err() {
            PolicyLoadError::ToolCatalog { path, reason, .. } => (path, reason),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn parses_the_documented_example() {
        let catalog = ToolCatalog::from_json(
            "tools.json",
            r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String"}},
                "tickets.read": {"args": {"ticket_id": "String"}}, "kb.search": {}}}"#,
        )
        .unwrap();
        let refund = catalog.tool("payments.refund").unwrap();
        assert_eq!(refund.arg("amount"), Some(ArgType::Long));
        assert_eq!(refund.arg("currency"), Some(ArgType::String));
        assert_eq!(catalog.tool("kb.search").unwrap().args().len(), 0);
        assert_eq!(catalog.tools().len(), 3);
    }

    /// The gate loads the JSON form; people read the text form. Both must be the same schema:
    /// Cedar prints a schema back as JSON, and the two prints must agree.
    #[test]
    fn the_json_schema_is_the_text_schema() {
        let catalog = ToolCatalog::from_json(
            "tools.json",
            r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String",
                "urgent": "Bool"}}, "kb.search": {}}}"#,
        )
        .unwrap();
        let (from_text, _) =
            cedar_policy::Schema::from_cedarschema_str(&catalog.cedar_schema()).unwrap();
        let from_json = cedar_policy::Schema::from_json_value(catalog.cedar_schema_json()).unwrap();
        let actions = |schema: &cedar_policy::Schema| {
            let mut names: Vec<String> = schema.actions().map(ToString::to_string).collect();
            names.sort();
            names
        };
        assert_eq!(actions(&from_text), actions(&from_json));
        // The text parser leaves primitive names unresolved (`EntityOrCommon` named `String`,
        // `Long`, `Bool`) until the schema is built; resolve them as Cedar does.
        fn resolved(value: serde_json::Value) -> serde_json::Value {
            use serde_json::Value;
            match value {
                Value::Object(map) => {
                    if map.get("type").and_then(Value::as_str) == Some("EntityOrCommon") {
                        let name = match map.get("name").and_then(Value::as_str) {
                            Some("Bool") => "Boolean".to_owned(),
                            Some(other) => other.to_owned(),
                            None => String::new(),
                        };
                        let mut out: serde_json::Map<String, Value> = map
                            .into_iter()
                            .filter(|(k, _)| k != "name" && k != "type")
                            .map(|(k, v)| (k, resolved(v)))
                            .collect();
                        out.insert("type".to_owned(), Value::String(name));
                        return Value::Object(out);
                    }
                    Value::Object(map.into_iter().map(|(k, v)| (k, resolved(v))).collect())
                }
                Value::Array(items) => Value::Array(items.into_iter().map(resolved).collect()),
                other => other,
            }
        }
        let fragment = |text: &str| {
            let (fragment, _) = cedar_policy::SchemaFragment::from_cedarschema_str(text).unwrap();
            resolved(fragment.to_json_value().unwrap())
        };
        let from_json_fragment =
            cedar_policy::SchemaFragment::from_json_value(catalog.cedar_schema_json()).unwrap();
        assert_eq!(
            fragment(&catalog.cedar_schema()),
            from_json_fragment.to_json_value().unwrap()
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        let (path, reason) =
            error(r#"{"tools": {"payments.refund": {"args": {"amount": "Int"}}}}"#);
        assert_eq!(path, "tools.\"payments.refund\".args.amount");
        assert!(reason.contains("`Int`"), "{reason}");
        let (path, _) = error(r#"{"tools": {"kb": {"arg": {}}}}"#);
        assert_eq!(path, "tools.kb.arg");
        let (path, _) = error(r#"{"tool": {}}"#);
        assert_eq!(path, "tool");
        let (path, reason) = error(r#"{}"#);
        assert_eq!(
            (path.as_str(), reason.as_str()),
            ("", "missing key `tools`")
        );
        let (path, _) = error(r#"{"tools": []}"#);
        assert_eq!(path, "tools");
        let (path, _) = error(r#"{"tools": {"kb": {"args": {"": "Long"}}}}"#);
        assert_eq!(path, "tools.kb.args.\"\"");
        let (path, reason) = error(r#"{"tools": {"cairn.undeclared": {}}}"#);
        assert_eq!(path, "tools.\"cairn.undeclared\"");
        assert!(reason.contains("reserved"), "{reason}");
        let (_, reason) = error(r#"{"tools": {"a\u0007": {}}}"#);
        assert!(reason.contains("control"), "{reason}");
        let (path, reason) = error("{\"tools\": ");
        assert_eq!(path, "");
        assert!(reason.starts_with("invalid json"), "{reason}");
        let err = ToolCatalog::from_json("t.json", "[]").unwrap_err();
        assert_eq!(err.code(), "tool_catalog");
    }

    #[test]
    fn schema_quotes_names_and_declares_the_reserved_action() {
        let catalog = ToolCatalog::from_json(
            "tools.json",
            r#"{"tools": {"we\"ird\\tool": {"args": {"a-b": "Bool"}}}}"#,
        )
        .unwrap();
        let schema = catalog.cedar_schema();
        assert!(
            schema.contains("action \"cairn.undeclared\" appliesTo"),
            "{schema}"
        );
        assert!(
            schema.contains("action \"we\\\"ird\\\\tool\" appliesTo"),
            "{schema}"
        );
        assert!(schema.contains("args: { \"a-b\"?: Bool }"), "{schema}");
        let (parsed, _) = cedar_policy::Schema::from_cedarschema_str(&schema).unwrap();
        let actions: Vec<String> = parsed
            .actions()
            .map(|uid| uid.id().unescaped().to_owned())
            .collect();
        assert!(actions.contains(&"we\"ird\\tool".to_owned()), "{actions:?}");
    }
}
