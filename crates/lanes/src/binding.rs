//! The tool capability binding (L-4): which effect refs a call of each tool has, computed from
//! its arguments where they matter (`fs.edit` with `{"path": "src/lib.rs"}` →
//! `file:src/lib.rs`).
//!
//! A binding is a list of templates; `{name}` stands for the string (or integer) argument
//! `name`. Values that go into a `file:` ref are normalised as paths, and an absolute path
//! inside the project is made relative to its root ([`Bindings::with_project_root`]): lane
//! scopes are written for the project (`file:src/*`), while agents such as Claude Code name
//! files by absolute path — without this, such a path would fall outside an authoring lane's
//! allowed refs and, worse, slip past a lane's denied ones. A tool with no binding,
//! or a call missing an argument its template needs, has unknown effects: the gate must deny
//! it (fail closed), never guess.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::refs::{below_root, normalize_path};

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
    fn render(
        &self,
        args: Option<&Value>,
        root: Option<&str>,
        resolve: Option<&dyn Fn(&str) -> String>,
    ) -> Result<String, String> {
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
                        let value = match resolve {
                            Some(resolve) => resolve(&value),
                            None => value,
                        };
                        let path = normalize_path(&value);
                        out.push_str(within_project(&path, root));
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

/// `path` (normalised) relative to the project `root` (normalised, absolute) when it lies
/// below it; otherwise `path` as it is.
fn within_project<'p>(path: &'p str, root: Option<&str>) -> &'p str {
    root.and_then(|root| below_root(path, root)).unwrap_or(path)
}

/// Every tool's effect templates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bindings {
    tools: BTreeMap<String, Vec<EffectTemplate>>,
    /// The project root, normalised, that absolute `file:` paths are made relative to.
    root: Option<String>,
}

impl Bindings {
    /// Binds `tool` to `templates`.
    pub fn insert(&mut self, tool: String, templates: Vec<EffectTemplate>) {
        self.tools.insert(tool, templates);
    }

    /// Whether `tool` has a binding.
    #[must_use]
    pub fn is_bound(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    /// Makes absolute paths below `root` (an absolute path; a relative one is ignored) relative
    /// to it in `file:` refs, so that `/work/app/src/lib.rs` in a project at `/work/app` is
    /// `file:src/lib.rs`, the ref lane scopes are written in. Paths elsewhere stay absolute,
    /// which only a pattern admitting every `file:` ref (`file:*`) matches.
    #[must_use]
    pub fn with_project_root(mut self, root: &str) -> Self {
        let root = normalize_path(root);
        self.root = (root.starts_with('/') && root.len() > 1).then_some(root);
        self
    }

    /// The project root set by [`Bindings::with_project_root`], normalised.
    #[must_use]
    pub fn project_root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// The effect refs of a call of `tool` with `args` (sorted, without duplicates).
    ///
    /// # Errors
    /// [`UnknownEffects`] when they cannot be known.
    pub fn effects(&self, tool: &str, args: Option<&Value>) -> Result<Vec<String>, UnknownEffects> {
        self.effects_resolved(tool, args, None)
    }

    /// As [`Bindings::effects`], with every file path first put through `resolve` (the
    /// runtime resolves symbolic links, so that a path is judged by what it really names).
    ///
    /// # Errors
    /// As [`Bindings::effects`].
    pub fn effects_resolved(
        &self,
        tool: &str,
        args: Option<&Value>,
        resolve: Option<&dyn Fn(&str) -> String>,
    ) -> Result<Vec<String>, UnknownEffects> {
        let templates = self.tools.get(tool).ok_or(UnknownEffects::UnboundTool)?;
        let root = self.root.as_deref();
        let mut refs = templates
            .iter()
            .map(|t| {
                t.render(args, root, resolve)
                    .map_err(UnknownEffects::MissingArgument)
            })
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
    fn absolute_paths_inside_the_project_become_project_relative() {
        let b = bindings().with_project_root("/work/app/");
        let effects = |path: &str| b.effects("fs.edit", Some(&json!({ "path": path })));
        assert_eq!(
            effects("/work/app/src/lib.rs"),
            Ok(vec!["file:src/lib.rs".to_owned()])
        );
        assert_eq!(
            effects("/work/app/./docs/../src/lib.rs"),
            Ok(vec!["file:src/lib.rs".to_owned()])
        );
        // Relative paths are already project-relative; paths outside stay absolute, and a
        // neighbour whose name merely starts like the root is outside.
        assert_eq!(
            effects("src/lib.rs"),
            Ok(vec!["file:src/lib.rs".to_owned()])
        );
        assert_eq!(
            effects("/work/application/x.rs"),
            Ok(vec!["file:/work/application/x.rs".to_owned()])
        );
        assert_eq!(
            effects("/work/app/../other/x.rs"),
            Ok(vec!["file:/work/other/x.rs".to_owned()])
        );
        assert_eq!(effects("/work/app"), Ok(vec!["file:/work/app".to_owned()]));
        // Without a root, or with a relative one, nothing is rewritten.
        for b in [bindings(), bindings().with_project_root("app")] {
            assert_eq!(
                b.effects("fs.edit", Some(&json!({"path": "/work/app/src/lib.rs"}))),
                Ok(vec!["file:/work/app/src/lib.rs".to_owned()])
            );
        }
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
