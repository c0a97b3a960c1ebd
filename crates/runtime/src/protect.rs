//! The project's own guard: what an agent's tool call may never touch, and how a file path
//! in a call is judged — by where it really leads, not by how it is spelled.
//!
//! # `cairn.self-protection`
//!
//! Cairn runs as the agent's own user, so the files that configure it are files the agent
//! can reach: the policies, `tools.json`, `lanes.json`, `hooks.json`, the keys, the store and
//! the session state (all of `.cairn/`), and what the edges name in [`Protected`] — the hooks
//! hand over their hosts' hook settings (`.claude/settings.json`, `.codex/hooks.json`, …) and
//! the commands only a person runs (`cairn_hooks::PROTECTED`). A call that
//! could change them would let the agent switch its own gate off, so the executor refuses,
//! with the built-in rule [`SELF_PROTECTION_RULE`] that no policy can override:
//!
//! - a call with a path argument ([`PATH_ARGS`], or the files a patch names) that resolves
//!   into a protected path — read or write, since the keys and the store are in there too;
//! - a call with a shell command argument ([`COMMAND_ARGS`]) whose text names a protected
//!   path (`.cairn` as a path component in any letter case, the hosts' settings files, the
//!   project's state folder, the configured store or keys) or runs one of the person-only
//!   commands the edges name (for the hooks: `cairn reconcile`, `cairn decisions
//!   set|approve-change|snapshot`, `cairn keys …`, `cairn hooks install|uninstall`, `cairn
//!   init`). Approvals and reconciliations are a person's, never the agent's;
//! - a shell command that would remove or revert Cairn's files without naming them (issue 34,
//!   3; [`sweeping_command`]): `git clean --force` of the whole tree (untracked and, with
//!   `-x`, ignored files: an uncommitted `.cairn/` and hook settings go with them), `git
//!   stash --include-untracked` / `--all`, `git checkout -- .`, `git checkout --force`, `git
//!   restore .`, `git reset --hard`, and `rm -r` of the project root or a folder above it
//!   (`rm -rf .`, `rm -rf ..`, `rm -rf *`).
//!
//! The command check is a conservative text match — a tripwire, not a sandbox: a command
//! that builds a path out of pieces (`.ca""irn`, `c=.cai; rm -rf ${c}rn`), a script written
//! first and run later, or a hard link made beforehand gets past it. The ledger and the keys
//! are out of the working tree anyway (`crate::layout`), so what these commands reach is
//! the configuration, which a person restores with `git` or `cairn hooks install`. Only the separate-user service (`cairn serve`)
//! puts these files out of the agent's reach; until then this rule catches the direct
//! attempts, and each attempt is recorded.
//!
//! # Paths by resolution
//!
//! [`resolve`] walks a path component by component against the file system, following
//! every symbolic link it meets (dangling ones included, at most [`MAX_LINK_HOPS`] in all),
//! so `src/link/evil.txt` with `src/link → /outside` is judged as `/outside/evil.txt`, and
//! `..` after a link climbs from the link's target, as the kernel does. Components that do
//! not exist yet are taken as written. The lanes judge `file:` refs from resolved paths too.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::layout::PROJECT_DIR;

/// The built-in rule that refuses calls touching Cairn's own configuration.
pub const SELF_PROTECTION_RULE: &str = "cairn.self-protection";

/// Argument names taken as file paths, in any tool.
pub const PATH_ARGS: &[&str] = &[
    "file_path",
    "filepath",
    "filePath",
    "absolute_path",
    "path",
    "dir_path",
    "notebook_path",
    "file",
    "filename",
    "target",
    "target_file",
    "destination",
    "dest",
    "source",
    "dir",
    "directory",
    "cwd",
    "workdir",
    "old_path",
    "new_path",
    "paths",
    "files",
];

/// Argument names taken as shell command text, in any tool (a string, or an array of
/// strings such as Codex's `["bash", "-lc", "…"]`).
pub const COMMAND_ARGS: &[&str] = &["command", "cmd", "script", "shell_command"];

/// Argument names taken as a patch (Codex's `apply_patch`), whose file headers are paths.
const PATCH_ARGS: &[&str] = &["patch", "input"];

/// How many symbolic links one resolution follows at most (as Linux's `MAXSYMLINKS`).
pub const MAX_LINK_HOPS: u32 = 40;

/// The program whose commands are a person's: Cairn's own CLI.
pub const PERSON_PROGRAM: &str = "cairn";

/// [`PERSON_PROGRAM`]'s global options that take a value.
pub const PERSON_PROGRAM_OPTIONS: &[&str] = &["--store", "--keys"];

/// The `cairn` commands only a person runs — deciding approvals and reconciliations, keys,
/// set-up and task decisions — which every edge hands self-protection (see [`Protected`]).
pub const PERSON_COMMANDS: &[&[&str]] = &[
    &["reconcile"],
    &["approvals"],
    &["keys"],
    &["init"],
    &["decisions", "set"],
    &["decisions", "approve-change"],
    &["decisions", "snapshot"],
    &["hooks", "install"],
    &["hooks", "uninstall"],
];

/// What a project's guard protects besides Cairn's own `.cairn/` and the folders it is
/// given: the files of the hosts' hook settings, and the commands only a person runs. The
/// edges that know them say what they are (the hooks know the hosts, and the commands they
/// tell people to run); the runtime knows no host and no command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protected {
    /// Files, relative to the project root, no call may touch (a host's hook settings).
    pub files: &'static [&'static str],
    /// Text that names those files in a command (`.claude/settings` covers both of Claude
    /// Code's).
    pub file_text: &'static [&'static str],
    /// The program whose commands are a person's (`cairn`), by its file name.
    pub program: &'static str,
    /// Its global options that take a value, skipped when finding the subcommand.
    pub program_options: &'static [&'static str],
    /// Its commands only a person runs, each as its words: one word covers every action of
    /// the command (`reconcile`), two only that action (`decisions set`).
    pub person_commands: &'static [&'static [&'static str]],
}

impl Protected {
    /// Nothing but `.cairn/` and the given folders (a library user's guard).
    pub const NOTHING_ELSE: Self = Self {
        files: &[],
        file_text: &[],
        program: "",
        program_options: &[],
        person_commands: &[],
    };
}

/// A project's guard: its root (resolved) and the paths no tool call may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectGuard {
    root: PathBuf,
    protected: Vec<PathBuf>,
    /// Protected locations outside the project, as text to look for in commands.
    outside: Vec<String>,
    /// Whether the project's file system ignores letter case (`.CAIRN` is `.cairn`).
    case_insensitive: bool,
    /// The hosts' files and the person's commands.
    also: Protected,
}

impl ProjectGuard {
    /// The guard of the project at `root`: its `.cairn/`, `extra` (a store or key folder
    /// configured elsewhere) and what `also` names.
    #[must_use]
    pub fn new(root: &Path, extra: &[PathBuf], also: Protected) -> Self {
        let root = resolve(
            &std::env::current_dir().unwrap_or_default(),
            &root.to_string_lossy(),
        );
        let mut protected = vec![root.join(PROJECT_DIR)];
        protected.extend(also.files.iter().map(|file| resolve_below(&root, file)));
        let mut outside = Vec::new();
        for path in extra {
            let resolved = resolve_below(&root, &path.to_string_lossy());
            if !resolved.starts_with(root.join(PROJECT_DIR)) {
                outside.push(path.to_string_lossy().into_owned());
                outside.push(resolved.to_string_lossy().into_owned());
                protected.push(resolved);
            }
        }
        outside.retain(|text| !text.is_empty());
        let case_insensitive = same_file(
            &root.join(PROJECT_DIR),
            &root.join(PROJECT_DIR.to_ascii_uppercase()),
        );
        Self {
            root,
            protected,
            outside,
            case_insensitive,
            also,
        }
    }

    /// The project root, resolved.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `raw` (absolute, or relative to the project root) resolved as [`resolve`] does.
    #[must_use]
    pub fn resolve(&self, raw: &str) -> PathBuf {
        resolve_below(&self.root, raw)
    }

    /// Why the call with `args` must be refused, if it must.
    #[must_use]
    pub fn refusal(&self, args: &Value) -> Option<String> {
        let Value::Object(members) = args else {
            return None;
        };
        for (name, value) in members {
            let name = name.as_str();
            if PATH_ARGS.contains(&name) {
                for raw in strings(value) {
                    if let Some(reason) = self.path_refusal(raw) {
                        return Some(reason);
                    }
                }
            }
            if COMMAND_ARGS.contains(&name) {
                let text = strings(value).collect::<Vec<_>>().join(" ");
                if let Some(reason) = self.command_refusal(&text) {
                    return Some(reason);
                }
            }
            if PATCH_ARGS.contains(&name)
                && let Some(patch) = value.as_str()
            {
                for raw in patch_paths(patch) {
                    if let Some(reason) = self.path_refusal(raw) {
                        return Some(reason);
                    }
                }
            }
        }
        None
    }

    fn path_refusal(&self, raw: &str) -> Option<String> {
        let resolved = self.resolve(raw);
        let folded = |path: &Path| PathBuf::from(path.to_string_lossy().to_lowercase());
        let hit = self.protected.iter().find(|protected| {
            resolved.starts_with(protected)
                || (self.case_insensitive && folded(&resolved).starts_with(folded(protected)))
        })?;
        Some(format!(
            "`{raw}` resolves to `{}`, inside `{}`, which holds Cairn's own policies, keys, store or the host's hook settings",
            resolved.display(),
            hit.display()
        ))
    }

    fn command_refusal(&self, text: &str) -> Option<String> {
        if names_cairn_folder(text) {
            return Some(
                "the command names `.cairn`, which holds Cairn's own policies, keys and store"
                    .to_owned(),
            );
        }
        if let Some(file) = self
            .also
            .file_text
            .iter()
            .copied()
            .chain(self.outside.iter().map(String::as_str))
            .find(|needle| text.contains(needle))
        {
            return Some(format!(
                "the command names `{file}`, part of Cairn's configuration or the host's hook settings"
            ));
        }
        if let Some(command) = sweeping_command(text, &self.root) {
            return Some(format!(
                "`{command}` would remove or revert Cairn's configuration or the host's hook settings without naming them (clean, stash or reset the paths you mean instead)"
            ));
        }
        person_command(text, &self.also).map(|command| {
            format!(
                "`{command}` is a person's command (approvals, reconciliations, keys and hook settings are not the agent's to change)"
            )
        })
    }
}

/// The strings of a value: itself, or the strings of an array.
fn strings(value: &Value) -> Box<dyn Iterator<Item = &str> + '_> {
    match value {
        Value::String(text) => Box::new(std::iter::once(text.as_str())),
        Value::Array(items) => Box::new(items.iter().filter_map(Value::as_str)),
        _ => Box::new(std::iter::empty()),
    }
}

/// The files a patch in Codex's `apply_patch` format names.
fn patch_paths(patch: &str) -> impl Iterator<Item = &str> {
    patch.lines().filter_map(|line| {
        [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|header| line.strip_prefix(header))
        .map(str::trim)
    })
}

/// Whether `a` and `b` are the same existing file (one reached under two spellings).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether `text` has `.cairn` as a path component, in any letter case (a file system that
/// ignores case reads `.CAIRN` as `.cairn`): not preceded by a name character, and followed
/// by the end, `/`, or anything that cannot continue a file name.
fn names_cairn_folder(text: &str) -> bool {
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
    let text = text.to_ascii_lowercase();
    text.match_indices(PROJECT_DIR).any(|(at, needle)| {
        let before = text.get(..at).and_then(|s| s.chars().next_back());
        let after = text.get(at + needle.len()..).and_then(|s| s.chars().next());
        !before.is_some_and(name_char) && !after.is_some_and(name_char)
    })
}

/// The words of each simple command in `text` (split at `;`, `&`, `|`, newlines and
/// parentheses; quotes dropped), without leading variable assignments and the wrappers that
/// run the rest as a command (`sudo`, `env`, `command`, `exec`, `nohup`, `time`).
fn simple_commands(text: &str) -> Vec<Vec<&str>> {
    text.split([';', '&', '|', '\n', '(', ')', '`'])
        .map(|part| {
            let words: Vec<&str> = part
                .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\''))
                .filter(|word| !word.is_empty())
                .collect();
            let skip = words
                .iter()
                .take_while(|word| {
                    word.contains('=')
                        || matches!(
                            **word,
                            "sudo" | "env" | "command" | "exec" | "nohup" | "time"
                        )
                })
                .count();
            words.into_iter().skip(skip).collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// The first command in `text` that would remove or revert files of the whole working tree
/// of the project at `root` — its untracked or ignored files (where an uncommitted `.cairn/`
/// and hook settings are), or its uncommitted changes — without naming them (issue 34, 3).
#[must_use]
pub fn sweeping_command(text: &str, root: &Path) -> Option<String> {
    simple_commands(text).into_iter().find_map(|words| {
        let program = words.first()?.rsplit('/').next()?;
        let swept = match program {
            "git" => sweeping_git(words.get(1..)?),
            "rm" => removes_above(words.get(1..)?, root),
            _ => false,
        };
        swept.then(|| words.join(" "))
    })
}

/// Whether `git ARGS` cleans, stashes or resets the whole working tree.
fn sweeping_git(args: &[&str]) -> bool {
    // Global options come before the subcommand; `-C` and `-c` take a value.
    let mut rest = args.iter().copied();
    let sub = loop {
        match rest.next() {
            Some("-C" | "-c") => {
                rest.next();
            }
            Some(word) if word.starts_with('-') => {}
            Some(word) => break word,
            None => return false,
        }
    };
    let args: Vec<&str> = rest.collect();
    let short = |flag: char| {
        args.iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(flag))
    };
    let long = |flag: &str| args.contains(&flag);
    let whole_tree = |paths: &[&str]| {
        paths.is_empty()
            || paths
                .iter()
                .any(|p| matches!(*p, "." | "./" | ":/" | "*" | "/"))
    };
    let operands: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    match sub {
        "clean" => (short('f') || long("--force")) && whole_tree(&operands),
        "stash" => short('u') || short('a') || long("--include-untracked") || long("--all"),
        "checkout" => {
            let after_dashes: Vec<&str> = args
                .iter()
                .skip_while(|a| **a != "--")
                .skip(1)
                .copied()
                .collect();
            short('f')
                || long("--force")
                || (args.contains(&"--") && whole_tree(&after_dashes))
                || operands.iter().any(|p| matches!(*p, "." | ":/"))
        }
        "restore" => operands
            .iter()
            .any(|p| matches!(*p, "." | "./" | ":/" | "*")),
        "reset" => long("--hard"),
        _ => false,
    }
}

/// Whether `rm ARGS` removes, recursively, the project at `root` or a folder above it
/// (`.`, `..`, `*`, `~`, the root's own path).
fn removes_above(args: &[&str], root: &Path) -> bool {
    let recursive = args.iter().any(|a| {
        *a == "--recursive"
            || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R']))
    });
    recursive
        && args.iter().filter(|a| !a.starts_with('-')).any(|target| {
            let target = target.trim_end_matches('/');
            let everything = matches!(target, "" | "*" | "./*" | ".*" | "./.*" | "$HOME")
                || target.starts_with('~');
            if everything {
                return true;
            }
            root.starts_with(resolve_below(root, target))
        })
}

/// The first of `also`'s person-only commands in `text`, if any.
fn person_command(text: &str, also: &Protected) -> Option<String> {
    if also.program.is_empty() {
        return None;
    }
    let words: Vec<&str> = text
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '`' | '"' | '\'')
        })
        .filter(|word| !word.is_empty())
        .collect();
    for (at, word) in words.iter().enumerate() {
        let program = word.rsplit('/').next().unwrap_or(word);
        if program != also.program {
            continue;
        }
        // The subcommand: the first words that are not global options (or their values).
        let mut rest = words.iter().skip(at + 1);
        let mut sub = Vec::new();
        while let Some(next) = rest.next() {
            if also.program_options.contains(next) {
                rest.next();
            } else if next.starts_with('-') {
                continue;
            } else {
                sub.push(*next);
                if sub.len() == 2 {
                    break;
                }
            }
        }
        let refused = also.person_commands.iter().any(|command| {
            sub.get(..command.len())
                .is_some_and(|head| head == *command)
        });
        if refused {
            return Some(format!("{} {}", also.program, sub.join(" ")));
        }
    }
    None
}

/// `raw` — absolute, or relative to `base` — resolved against the file system: each
/// component in turn, following symbolic links (dangling ones too, [`MAX_LINK_HOPS`] in
/// all), `..` taken from where the path really is; components that do not exist are kept as
/// written.
#[must_use]
pub fn resolve(base: &Path, raw: &str) -> PathBuf {
    let raw = Path::new(raw);
    let joined = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        base.join(raw)
    };
    walk(PathBuf::new(), &joined, &mut 0)
}

/// [`resolve`] for a `base` that is already resolved: a relative `raw` is walked from
/// there, without looking at the components of `base` again.
fn resolve_below(base: &Path, raw: &str) -> PathBuf {
    let raw = Path::new(raw);
    if raw.is_absolute() {
        walk(PathBuf::new(), raw, &mut 0)
    } else {
        walk(base.to_path_buf(), raw, &mut 0)
    }
}

/// `path` walked from `current` (already resolved), following links as [`resolve`] says.
fn walk(mut current: PathBuf, path: &Path, hops: &mut u32) -> PathBuf {
    // How deep the walk is below a component that does not exist: nothing there is a link,
    // so nothing there is looked up.
    let mut missing = 0_usize;
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                current.push(component.as_os_str());
                missing = 0;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                current.pop();
                missing = missing.saturating_sub(1);
            }
            Component::Normal(name) if missing > 0 => {
                current.push(name);
                missing += 1;
            }
            Component::Normal(name) => {
                let next = current.join(name);
                let meta = std::fs::symlink_metadata(&next);
                if meta
                    .as_ref()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
                {
                    current = next;
                    missing = 1;
                    continue;
                }
                let link = meta.is_ok_and(|meta| meta.file_type().is_symlink());
                match (link && *hops < MAX_LINK_HOPS)
                    .then(|| std::fs::read_link(&next).ok())
                    .flatten()
                {
                    Some(target) => {
                        *hops += 1;
                        // A relative target is walked from the link's folder, resolved.
                        let from = if target.is_absolute() {
                            PathBuf::new()
                        } else {
                            current.clone()
                        };
                        current = walk(from, &target, hops);
                    }
                    None => current = next,
                }
            }
        }
    }
    current
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use serde_json::json;

    use super::*;

    /// An edge's file (the hooks hand over the hosts' settings files; their own tests judge
    /// the real list, `cairn_hooks::PROTECTED`).
    const EDGE: Protected = Protected {
        files: &[".claude/settings.json"],
        ..Protected::NOTHING_ELSE
    };

    #[test]
    fn a_guard_given_nothing_else_knows_no_host_and_no_command() {
        let guard = ProjectGuard::new(
            Path::new("/nonexistent/project"),
            &[],
            Protected::NOTHING_ELSE,
        );
        assert_eq!(
            guard.refusal(&json!({"command": "cairn reconcile --run r"})),
            None
        );
        assert_eq!(
            guard.refusal(&json!({"file_path": ".codex/hooks.json"})),
            None
        );
        assert!(
            guard
                .refusal(&json!({"file_path": ".cairn/policies/p.cedar"}))
                .is_some()
        );
    }

    #[test]
    fn commands_that_sweep_the_working_tree_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("build")).unwrap();
        let guard = ProjectGuard::new(&root, &[], EDGE);
        let up = format!("rm -rf {}", dir.path().display());
        for refused in [
            "git clean -fdx",
            "git clean -f -d -X",
            "cd src && git clean --force -d .",
            "git -C . clean -xfd :/",
            "git stash -u",
            "git stash push --include-untracked -m wip",
            "git stash --all",
            "git checkout -- .",
            "git checkout -f main",
            "git restore .",
            "git reset --hard HEAD~1",
            "rm -rf build/ ..",
            "rm -rf .",
            "rm -fr *",
            "rm -r ~",
            "sudo rm -rf ./",
            up.as_str(),
            "true && FOO=1 git clean -fdx",
            "mv .CAIRN/policies x",
        ] {
            assert!(
                guard.refusal(&json!({"command": refused})).is_some(),
                "{refused}"
            );
        }
        for allowed in [
            "git clean -n",
            "git clean -fdx build/",
            "git stash",
            "git stash pop",
            "git checkout -- src/main.rs",
            "git checkout main",
            "git restore src/lib.rs",
            "git reset --soft HEAD~1",
            "rm -rf build target/debug",
            "rm -rf build/*.o",
            "rm -f .",
            "cargo clean",
        ] {
            assert_eq!(
                guard.refusal(&json!({"command": allowed})),
                None,
                "{allowed}"
            );
        }
    }

    #[test]
    fn file_paths_into_the_configuration_are_refused_however_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".cairn/policies")).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::os::unix::fs::symlink(root.join(".cairn"), root.join("docs/config")).unwrap();
        let guard = ProjectGuard::new(root, &[], EDGE);
        for path in [
            ".cairn/policies/allow.cedar".to_owned(),
            root.join(".cairn/tools.json").display().to_string(),
            "src/../.cairn/lanes.json".to_owned(),
            "docs/config/policies/x.cedar".to_owned(),
            ".claude/settings.json".to_owned(),
        ] {
            assert!(
                guard.refusal(&json!({"file_path": path})).is_some(),
                "{path}"
            );
        }
        assert_eq!(guard.refusal(&json!({"file_path": "docs/readme.md"})), None);
        // Each host's name for a file argument: Gemini CLI's `absolute_path` and `dir_path`,
        // OpenCode's `filePath`, Copilot CLI's `path`.
        for key in ["absolute_path", "dir_path", "filePath", "path"] {
            assert!(
                guard
                    .refusal(&json!({ key: ".cairn/policies/allow.cedar" }))
                    .is_some(),
                "{key}"
            );
        }
        // On a case-sensitive file system `.Cairn` is another folder…
        assert_eq!(
            guard.refusal(&json!({"file_path": ".Cairn/policies/x.cedar"})),
            None
        );
        // … where the file system ignores case (here: `.CAIRN` reaches `.cairn`), it is not.
        std::os::unix::fs::symlink(root.join(".cairn"), root.join(".CAIRN")).unwrap();
        let folding = ProjectGuard::new(root, &[], EDGE);
        assert!(
            folding
                .refusal(&json!({"file_path": ".Cairn/policies/x.cedar"}))
                .is_some()
        );
        let patch = "*** Begin Patch\n*** Update File: .cairn/hooks.json\n@@\n*** End Patch";
        assert!(guard.refusal(&json!({"input": patch})).is_some());
    }

    #[test]
    fn resolution_follows_links_and_climbs_from_their_targets() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(Path::new("/"), &dir.path().display().to_string());
        let outside = root.join("outside");
        std::fs::create_dir_all(root.join("project/src")).unwrap();
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::os::unix::fs::symlink(outside.join("deep"), root.join("project/src/link")).unwrap();
        std::os::unix::fs::symlink("../../outside/deep", root.join("project/src/relative"))
            .unwrap();
        std::os::unix::fs::symlink(
            outside.join("missing.txt"),
            root.join("project/src/dangling"),
        )
        .unwrap();
        std::os::unix::fs::symlink(root.join("project/loop"), root.join("project/loop")).unwrap();
        let project = root.join("project");
        let absolute = outside.join("deep/../x").display().to_string();
        let cases = [
            ("src/link/evil.txt", outside.join("deep/evil.txt")),
            ("src/relative/evil.txt", outside.join("deep/evil.txt")),
            // `..` after a link leaves from the link's target, as the kernel does.
            ("src/link/../x", outside.join("x")),
            ("src/relative/../x", outside.join("x")),
            ("../outside/deep", outside.join("deep")),
            // Below a missing folder nothing is a link; back out of it, links count again.
            (
                "nope/deeper/../../src/link/evil.txt",
                outside.join("deep/evil.txt"),
            ),
            ("nope/src/link/x", project.join("nope/src/link/x")),
            ("src/dangling", outside.join("missing.txt")),
            ("src/new/./a.rs", project.join("src/new/a.rs")),
            (absolute.as_str(), outside.join("x")),
        ];
        // From any base, and from a base already resolved (the guard's root): the same.
        for resolve in [resolve, resolve_below] {
            for (raw, expected) in &cases {
                assert_eq!(&resolve(&project, raw), expected, "{raw}");
            }
            // A loop ends after the hop limit instead of running forever.
            let _ = resolve(&project, "loop/x");
        }
    }
}
