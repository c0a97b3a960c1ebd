//! Checks of the workspace's layout that `docs/ARCHITECTURE.md` promises, run as tests
//! (`crates/test-support/tests/it/architecture.rs`):
//!
//! - **no module cycles**: within a crate, no module reaches itself through the modules it
//!   names (`crate::a::…`, `super::b`, or a name the crate root re-exports from a module);
//!   a parent and its own submodules do not count (a module may use its children);
//! - **one integration test binary per crate**: a crate's integration tests live in
//!   `tests/it/` as modules of one binary, because linking is most of the suite's build time;
//! - **dependencies point down**: the workspace crates each crate's manifest names as normal
//!   dependencies ([`workspace_dependencies`]), which the test compares with the map.
//!
//! The scan reads source text, not the compiler's view: comments are dropped and `#[cfg(test)]`
//! blocks at the end of a file are ignored. It is a guard for the layout, not a proof.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace's `crates/` folder.
#[must_use]
pub fn crates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every crate folder under `crates/`, sorted.
#[must_use]
pub fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs = crate::subfolders(&crates_dir());
    dirs.retain(|dir| dir.join("Cargo.toml").is_file());
    dirs
}

/// The workspace crates (`cairn-…`) the manifest of the crate in `crate_dir` names as normal
/// dependencies — `[dependencies]` and `[target.….dependencies]`, not the dev- or build-
/// dependencies.
#[must_use]
pub fn workspace_dependencies(crate_dir: &Path) -> BTreeSet<String> {
    let manifest = fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap_or_default();
    let mut normal = false;
    let mut found = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            normal = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if !normal {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if name.starts_with("cairn-") {
            found.insert(name.to_owned());
        }
    }
    found
}

/// The modules of the crate whose `src/` is `src`, by path (`crate` for the root, `a::b`),
/// with their source text; `src/bin/` is left out (each binary is a crate of its own).
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let Ok(rel) = path.strip_prefix(src) else {
                continue;
            };
            let mut parts: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts
                .last()
                .is_some_and(|last| matches!(last.as_str(), "mod" | "lib" | "main"))
            {
                parts.pop();
            }
            let name = if parts.is_empty() {
                "crate".to_owned()
            } else {
                parts.join("::")
            };
            out.insert(name, fs::read_to_string(&path).unwrap_or_default());
        }
    }
    out
}

/// `text` without `//` comments and without the `#[cfg(test)]` block that ends a file.
fn code_of(text: &str) -> String {
    let text = text.find("#[cfg(test)]").map_or(text, |at| &text[..at]);
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers of a path list after `prefix` (`crate::`, `super::`): `a::b::C` gives
/// `[a, b, C]`; a brace group `{a::X, b}` gives each member's first segment.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(ident) {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for member in group[..end].split(',') {
                let first: String = member.trim().chars().take_while(|c| ident(*c)).collect();
                if !first.is_empty() {
                    out.push(vec![first]);
                }
            }
            continue;
        }
        let path: String = rest
            .chars()
            .take_while(|c| ident(*c) || *c == ':')
            .collect();
        let segments: Vec<String> = path
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if !segments.is_empty() {
            out.push(segments);
        }
    }
    out
}

/// Names the crate root re-exports from one of its modules (`pub use a::{B, C};`).
fn root_reexports(root: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for statement in code_of(root).split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        for name in names
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|n| !n.is_empty())
        {
            out.insert(name.to_owned(), module.trim().to_owned());
        }
    }
    out
}

/// The modules each module of a crate names, parents and children of itself left out.
fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let reexports = mods
        .get("crate")
        .map(|root| root_reexports(root))
        .unwrap_or_default();
    let resolve = |segments: &[String]| -> Option<String> {
        let mut segments = segments.to_vec();
        if let Some(first) = segments.first_mut()
            && !mods.contains_key(first.as_str())
            && let Some(module) = reexports.get(first.as_str())
        {
            first.clone_from(module);
        }
        (1..=segments.len())
            .rev()
            .filter_map(|k| segments.get(..k).map(|prefix| prefix.join("::")))
            .find(|candidate| mods.contains_key(candidate))
    };
    let mut out = BTreeMap::new();
    for (name, text) in mods {
        let code = code_of(text);
        let parent = name.rsplit_once("::").map(|(p, _)| p.to_owned());
        let mut targets = BTreeSet::new();
        for segments in paths_after(&code, "crate::") {
            targets.extend(resolve(&segments));
        }
        for mut segments in paths_after(&code, "super::") {
            if let Some(parent) = &parent {
                segments.insert(0, parent.clone());
                let joined: Vec<String> =
                    segments.join("::").split("::").map(str::to_owned).collect();
                targets.extend(resolve(&joined));
            } else {
                targets.extend(resolve(&segments));
            }
        }
        targets.retain(|t| {
            t != name
                && t != "crate"
                && !name.starts_with(&format!("{t}::"))
                && !t.starts_with(&format!("{name}::"))
        });
        out.insert(name.clone(), targets);
    }
    out
}

/// The module cycles of the crate whose sources are in `src`: each cycle as the path that
/// leads from a module back to itself.
#[must_use]
pub fn module_cycles(src: &Path) -> Vec<Vec<String>> {
    let graph = edges(&modules(src));
    let mut cycles = Vec::new();
    let mut reported: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for start in graph.keys() {
        // Breadth-first from `start`, keeping the path, until `start` is reached again.
        let mut queue = std::collections::VecDeque::from([vec![start.clone()]]);
        let mut seen = BTreeSet::new();
        while let Some(path) = queue.pop_front() {
            let Some(last) = path.last() else { continue };
            for next in graph.get(last).into_iter().flatten() {
                if next == start {
                    let members: BTreeSet<String> = path.iter().cloned().collect();
                    if reported.insert(members) {
                        let mut cycle = path.clone();
                        cycle.push(start.clone());
                        cycles.push(cycle);
                    }
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    queue.push_back(longer);
                }
            }
        }
    }
    cycles
}

/// The integration test files of a crate that would each link a binary of their own:
/// `tests/*.rs` and `tests/*/main.rs` other than `tests/it/main.rs`.
#[must_use]
pub fn extra_test_binaries(crate_dir: &Path) -> Vec<PathBuf> {
    let tests = crate_dir.join("tests");
    let mut out: Vec<PathBuf> = fs::read_dir(&tests)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    (p.is_file() && p.extension().is_some_and(|e| e == "rs"))
                        || (p.is_dir() && p.join("main.rs").is_file() && *p != tests.join("it"))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Every requirement id of the specification (a letter of `CIEPLDT`, a dash, one digit) that
/// a comment of a Rust file under `dir` cites. Ids in string literals are test data (a ticket
/// named like one), and longer ids are not requirement ids.
#[must_use]
pub fn requirement_ids(dir: &Path) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(text) = fs::read_to_string(&path)
            {
                let comments: String = text
                    .lines()
                    .filter_map(|line| line.find("//").map(|at| &line[at..]))
                    .collect::<Vec<_>>()
                    .join("\n");
                let bytes = comments.as_bytes();
                for (at, window) in bytes.windows(3).enumerate() {
                    let [letter, b'-', digit] = *window else {
                        continue;
                    };
                    let before = at.checked_sub(1).and_then(|i| bytes.get(i));
                    let after = bytes.get(at + 3);
                    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
                    if b"CIEPLDT".contains(&letter)
                        && (b'1'..=b'9').contains(&digit)
                        && !before.is_some_and(word)
                        && !after.is_some_and(word)
                    {
                        ids.insert(format!("{}-{}", letter as char, digit as char));
                    }
                }
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn a_cycle_through_a_root_reexport_is_found_and_children_do_not_count() {
        let dir = std::env::temp_dir().join(format!("cairn-arch-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        write(
            &dir,
            "lib.rs",
            "mod a;\nmod b;\nmod c;\npub use b::Thing;\n",
        );
        write(&dir, "a.rs", "use crate::Thing; // b, through the root\n");
        write(&dir, "b.rs", "use crate::{c::X, a};\n");
        write(&dir, "c/mod.rs", "mod inner;\nuse self::inner::Y;\n");
        write(
            &dir,
            "c/inner.rs",
            "use super::Z; // its parent: not a cycle\n",
        );
        let cycles = module_cycles(&dir);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let members: BTreeSet<&str> = cycles[0].iter().map(String::as_str).collect();
        assert_eq!(members, BTreeSet::from(["a", "b"]));
        fs::write(dir.join("a.rs"), "use crate::c::X;\n").unwrap();
        assert!(module_cycles(&dir).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
