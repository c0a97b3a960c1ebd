//! Effect references and the patterns lane scopes are written in.
//!
//! An effect ref names what a call changes: `file:src/lib.rs`, `capability:verify`,
//! `artifact:rfc`. A pattern is either an exact ref or a prefix ending in `*` (`file:src/*`;
//! `**` means the same): a prefix matches every ref that starts with it, across `/`. Keeping
//! wildcards to a final `*` makes "is this scope inside that one" decidable exactly, which
//! nested lanes need (L-7).

use std::fmt;

/// A pattern of effect refs: exact, or a prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RefPattern {
    text: String,
    stem: String,
    prefix: bool,
}

impl RefPattern {
    /// Parses `text`.
    ///
    /// # Errors
    /// A message when `text` is empty, has control characters, or has a `*` anywhere but at
    /// its end.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Err("an effect ref pattern must not be empty".to_owned());
        }
        if text.chars().any(char::is_control) {
            return Err(format!("`{text}` has control characters"));
        }
        let stem = text.trim_end_matches('*');
        if stem.contains('*') {
            return Err(format!(
                "`{text}`: `*` may only end a pattern (a prefix such as `file:src/*`)"
            ));
        }
        Ok(Self {
            text: text.to_owned(),
            stem: stem.to_owned(),
            prefix: stem.len() != text.len(),
        })
    }

    /// The pattern as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `effect` is matched.
    #[must_use]
    pub fn matches(&self, effect: &str) -> bool {
        if self.prefix {
            effect.starts_with(&self.stem)
        } else {
            effect == self.stem
        }
    }

    /// This pattern for the project at `root` (normalised, absolute): a `file:` pattern
    /// written with an absolute path below `root` becomes the project-relative one
    /// (`file:/work/app/src/*` → `file:src/*`), the form `file:` effect refs of paths below
    /// `root` take (see [`crate::binding::Bindings::with_project_root`]). Any other pattern
    /// is kept.
    #[must_use]
    pub fn within_project(&self, root: &str) -> Self {
        self.text
            .strip_prefix("file:")
            .and_then(|path| below_root(path, root))
            .and_then(|rest| Self::parse(&format!("file:{rest}")).ok())
            .unwrap_or_else(|| self.clone())
    }

    /// Whether every ref `other` matches is matched by `self`.
    #[must_use]
    pub fn covers(&self, other: &Self) -> bool {
        match (self.prefix, other.prefix) {
            (true, _) => other.stem.starts_with(&self.stem),
            (false, false) => self.stem == other.stem,
            (false, true) => false,
        }
    }

    /// Whether some ref is matched by both.
    #[must_use]
    pub fn overlaps(&self, other: &Self) -> bool {
        match (self.prefix, other.prefix) {
            (false, false) => self.stem == other.stem,
            (true, false) => other.stem.starts_with(&self.stem),
            (false, true) => self.stem.starts_with(&other.stem),
            (true, true) => {
                self.stem.starts_with(&other.stem) || other.stem.starts_with(&self.stem)
            }
        }
    }
}

impl fmt::Display for RefPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The part of `path` below the directory `root` (both normalised), when `path` lies below
/// it: `/work/app/src/x` below `/work/app` is `src/x`; `/work/application` is not below it.
pub(crate) fn below_root<'p>(path: &'p str, root: &str) -> Option<&'p str> {
    path.strip_prefix(root)
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|rest| !rest.is_empty())
}

/// A path as it goes into a `file:` effect ref: separators made `/`, `.` segments dropped and
/// `..` resolved lexically, so that `src/./a/../lib.rs` and `src/lib.rs` are the same ref.
/// A path that climbs above its start keeps its leading `..`, which only a pattern admitting
/// every `file:` ref (`file:*`) matches.
#[must_use]
pub fn normalize_path(path: &str) -> String {
    let unified = path.replace('\\', "/");
    let absolute = unified.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in unified.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn p(text: &str) -> RefPattern {
        RefPattern::parse(text).unwrap()
    }

    #[test]
    fn prefixes_match_what_starts_with_them_and_exact_refs_only_themselves() {
        assert!(p("file:src/*").matches("file:src/a/b.rs"));
        assert!(p("file:src/**").matches("file:src/lib.rs"));
        assert!(!p("file:src/*").matches("file:tests/a.rs"));
        assert!(p("capability:verify").matches("capability:verify"));
        assert!(!p("capability:verify").matches("capability:verify-all"));
    }

    #[test]
    fn a_star_inside_a_pattern_is_refused() {
        assert!(RefPattern::parse("file:*.rs").is_err());
        assert!(RefPattern::parse(" ").is_err());
    }

    #[test]
    fn coverage_and_overlap_are_exact() {
        assert!(p("file:*").covers(&p("file:src/*")));
        assert!(p("file:src/*").covers(&p("file:src/lib.rs")));
        assert!(!p("file:src/*").covers(&p("file:*")));
        assert!(!p("file:src/lib.rs").covers(&p("file:src/*")));
        assert!(p("file:src/*").overlaps(&p("file:src/secret/*")));
        assert!(p("file:src/secret/*").overlaps(&p("file:src/*")));
        assert!(!p("file:src/*").overlaps(&p("file:docs/*")));
    }

    #[test]
    fn paths_are_normalised_lexically() {
        assert_eq!(normalize_path("src/./a/../lib.rs"), "src/lib.rs");
        assert_eq!(normalize_path("src\\lib.rs"), "src/lib.rs");
        assert_eq!(normalize_path("../outside.rs"), "../outside.rs");
        assert_eq!(normalize_path("src/../../x"), "../x");
        assert_eq!(normalize_path("/repo/src/../lib.rs"), "/repo/lib.rs");
        assert_eq!(normalize_path("/../etc"), "/etc");
    }
}
