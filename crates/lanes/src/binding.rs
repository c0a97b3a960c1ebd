//! The tool capability binding (L-4): which effect refs a call of each tool has, computed from
//! its arguments where they matter (`fs.edit` with `{"path": "src/lib.rs"}` →
//! `file:src/lib.rs`).
//!
//! A binding is a list of templates; `{name}` stands for the string (or integer) argument
//! `name`. Values that go into a `file:` ref are normalised as paths. A tool with no binding,
//! or a call missing an argument its template needs, has unknown effects: the gate must deny
//! it (fail closed), never guess.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::refs::normalize_path;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Arg(String),
}

/// An effect-ref template such as `file:{path}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectTemplate {
    pieces: Vec<Piece>,
    file: bool,
}

impl EffectTemplate {
    /// Parses `text`.
    ///
    /// # Errors
    /// A message for an empty template, an unclosed or empty `{}` or a nested `{`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Err("an effect template must not be empty".to_owned());
        }
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let (before, after) = rest.split_at(open);
            if !before.is_empty() {
                pieces.push(Piece::Text(before.to_owned()));
            }
            let after = after.get(1..).unwrap_or_default();
            let Some(close) = after.find('}') else {
                return Err(format!("`{text}`: `{{` is never closed"));
            };
            let (name, tail) = after.split_at(close);
            if name.is_empty() || name.contains('{') {
                return Err(format!("`{text}`: `{{{name}}}` does not name an argument"));
            }
            pieces.push(Piece::Arg(name.to_owned()));
            rest = tail.get(1..).unwrap_or_default();
        }
        if rest.contains('}') {
            return Err(format!("`{text}`: `}}` without `{{`"));
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self {
            pieces,
            file: text.starts_with("file:"),
        })
    }

    /// The effect ref for a call with `args`.
    ///
    /// # Errors
    /// The name of the argument that is missing or neither a string nor an integer.
    fn render(&self, args: Option<&Value>) -> Result<String, String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Arg(name) => {
                    let value = match args.and_then(|a| a.get(name)) {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                        _ => return Err(name.clone()),
                    };
                    if self.file {
                        out.push_str(&normalize_path(&value));
                    } else {
                        out.push_str(&value);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Why a call's effects are unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownEffects {
    /// The tool has no binding.
    UnboundTool,
    /// An argument a template needs is missing or not a string or integer.
    MissingArgument(String),
}

/// Every tool's effect templates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bindings(BTreeMap<String, Vec<EffectTemplate>>);

impl Bindings {
    /// Binds `tool` to `templates`.
    pub fn insert(&mut self, tool: String, templates: Vec<EffectTemplate>) {
        self.0.insert(tool, templates);
    }

    /// The effect refs of a call of `tool` with `args` (sorted, without duplicates).
    ///
    /// # Errors
    /// [`UnknownEffects`] when they cannot be known.
    pub fn effects(&self, tool: &str, args: Option<&Value>) -> Result<Vec<String>, UnknownEffects> {
        let templates = self.0.get(tool).ok_or(UnknownEffects::UnboundTool)?;
        let mut refs = templates
            .iter()
            .map(|t| t.render(args).map_err(UnknownEffects::MissingArgument))
            .collect::<Result<Vec<_>, _>>()?;
        refs.sort();
        refs.dedup();
        Ok(refs)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use serde_json::json;

    use super::*;

    fn bindings() -> Bindings {
        let mut b = Bindings::default();
        b.insert(
            "fs.edit".into(),
            vec![EffectTemplate::parse("file:{path}").unwrap()],
        );
        b.insert(
            "tests.run".into(),
            vec![EffectTemplate::parse("capability:verify").unwrap()],
        );
        b.insert("fs.read".into(), Vec::new());
        b
    }

    #[test]
    fn arguments_fill_templates_and_file_paths_are_normalised() {
        let b = bindings();
        assert_eq!(
            b.effects("fs.edit", Some(&json!({"path": "src/./x/../lib.rs"}))),
            Ok(vec!["file:src/lib.rs".to_owned()])
        );
        assert_eq!(
            b.effects("tests.run", None),
            Ok(vec!["capability:verify".to_owned()])
        );
        assert_eq!(b.effects("fs.read", None), Ok(Vec::new()));
    }

    #[test]
    fn unknown_effects_are_reported_not_guessed() {
        let b = bindings();
        assert_eq!(
            b.effects("shell.run", None),
            Err(UnknownEffects::UnboundTool)
        );
        assert_eq!(
            b.effects("fs.edit", Some(&json!({"path": ["a"]}))),
            Err(UnknownEffects::MissingArgument("path".into()))
        );
        assert_eq!(
            b.effects("fs.edit", None),
            Err(UnknownEffects::MissingArgument("path".into()))
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        for bad in ["", "file:{path", "file:{}", "file:path}", "file:{a{b}"] {
            assert!(EffectTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
