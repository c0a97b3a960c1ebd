//! Where a hook's project lives: the nearest directory at or above the session's working
//! directory that has a `.cairn/` folder, and the files Cairn keeps in it.

use std::path::{Path, PathBuf};

use cairn_runtime::project::{LANES_FILE, POLICIES_DIR, TOOLS_FILE};

use crate::error::HookError;

/// The folder that marks a Cairn project.
pub const PROJECT_DIR: &str = ".cairn";
/// The store file inside it.
pub const STORE_FILE: &str = "cairn.db";
/// The hooks' own configuration inside it (optional).
pub const CONFIG_FILE: &str = "hooks.json";
/// The folder of per-session state files inside it.
pub const SESSIONS_DIR: &str = "sessions";
/// The signing keys inside it.
pub const KEYS_DIR: &str = "keys";

/// A project's `.cairn/` folder and the files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    root: PathBuf,
    dir: PathBuf,
}

impl Project {
    /// The project whose `.cairn/` folder is at `root`.
    #[must_use]
    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            dir: root.join(PROJECT_DIR),
        }
    }

    /// The nearest project at or above `start`, if any.
    #[must_use]
    pub fn find(start: &Path) -> Option<Self> {
        start
            .ancestors()
            .find(|dir| dir.join(PROJECT_DIR).is_dir())
            .map(Self::at)
    }

    /// The project's root (the folder that holds `.cairn/`).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `.cairn/` folder.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The default store.
    #[must_use]
    pub fn store_path(&self) -> PathBuf {
        self.dir.join(STORE_FILE)
    }

    /// The signing keys.
    #[must_use]
    pub fn keys_dir(&self) -> PathBuf {
        self.dir.join(KEYS_DIR)
    }

    /// The policy folder.
    #[must_use]
    pub fn policies(&self) -> PathBuf {
        self.dir.join(POLICIES_DIR)
    }

    /// The tool catalog, when the project has one (a path that exists but is not a readable
    /// file is returned too, so that reading it fails loudly).
    #[must_use]
    pub fn tools(&self) -> Option<PathBuf> {
        let path = self.dir.join(TOOLS_FILE);
        path.exists().then_some(path)
    }

    /// The lane declarations (optional).
    #[must_use]
    pub fn lanes(&self) -> PathBuf {
        self.dir.join(LANES_FILE)
    }

    /// The hooks' configuration (optional).
    #[must_use]
    pub fn config(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// The per-session state folder.
    #[must_use]
    pub fn sessions(&self) -> PathBuf {
        self.dir.join(SESSIONS_DIR)
    }
}

/// Where a hook call's project comes from, in order: the project the hook command names
/// (`cairn hook HOST --project DIR`, which `cairn hooks install` writes, or Claude Code's
/// `CLAUDE_PROJECT_DIR`), then the project the session is already bound to (the session
/// index), then the nearest `.cairn/` at or above the payload's `cwd`.
///
/// A session is bound to the project it started in: the first project a session is seen in
/// is written to the session index, and every later call of the session is gated and
/// recorded there, wherever the agent's `cwd` goes (Claude Code moves `cwd` when the agent
/// changes directory).
#[derive(Debug, Clone, Default)]
pub struct Binding {
    /// The project the hook command names.
    pub explicit: Option<PathBuf>,
    /// The folder of the session index (`$CAIRN_HOME/sessions`, by default under the user's
    /// state folder); `None` keeps no index.
    pub index: Option<PathBuf>,
}

impl Binding {
    /// The project of a call of `host`'s session `session_id` made at `cwd`.
    ///
    /// # Errors
    /// [`HookError::ProjectMissing`] when the named or bound project has no `.cairn/`: a
    /// `PreToolUse` is then denied, never let through unrecorded.
    pub fn resolve(
        &self,
        host: crate::Host,
        session_id: &str,
        cwd: Option<&Path>,
    ) -> Result<Option<Project>, HookError> {
        if let Some(dir) = &self.explicit {
            return existing(dir, "named by the hook command").map(Some);
        }
        if let Some(dir) = self.bound(host, session_id) {
            return existing(&dir, "the session started there").map(Some);
        }
        let start = cwd
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(Project::find(&start))
    }

    /// The project of the hook call `stdin` of `host`, if the call can be read that far and
    /// its project exists (only `session_id` and `cwd` are read); the session is bound to it
    /// ([`Binding::remember`]) here, as the process that answers would bind it — a resident
    /// server, which answers for its own project only, keeps no index.
    #[must_use]
    pub fn project_of(&self, host: crate::Host, stdin: &[u8]) -> Option<Project> {
        #[derive(serde::Deserialize)]
        struct Peek {
            cwd: Option<String>,
            session_id: Option<String>,
        }
        let peek: Peek = serde_json::from_slice(stdin).ok()?;
        let session = peek.session_id.unwrap_or_default();
        let project = self
            .resolve(host, &session, peek.cwd.as_deref().map(Path::new))
            .ok()
            .flatten()?;
        if !session.is_empty() {
            self.remember(host, &session, &project);
        }
        Some(project)
    }

    /// Binds `host`'s session `session_id` to `project` unless it is bound already. Best
    /// effort: without an index a session is still found by its hook command or its `cwd`.
    pub fn remember(&self, host: crate::Host, session_id: &str, project: &Project) {
        let Some(file) = self.index_file(host, session_id) else {
            return;
        };
        if file.exists() {
            return;
        }
        let root =
            std::path::absolute(project.root()).unwrap_or_else(|_| project.root().to_path_buf());
        if let Some(dir) = file.parent()
            && std::fs::create_dir_all(dir).is_ok()
        {
            let mut text = root.to_string_lossy().into_owned();
            text.push('\n');
            let _ = crate::session::write_private(&file, text.as_bytes());
        }
    }

    fn bound(&self, host: crate::Host, session_id: &str) -> Option<PathBuf> {
        let file = self.index_file(host, session_id)?;
        let text = std::fs::read_to_string(file).ok()?;
        let root = text.trim_end_matches('\n');
        (!root.is_empty()).then(|| PathBuf::from(root))
    }

    fn index_file(&self, host: crate::Host, session_id: &str) -> Option<PathBuf> {
        let dir = self.index.as_ref()?;
        Some(dir.join(crate::engine::run_base(host, session_id)))
    }
}

fn existing(dir: &Path, how: &'static str) -> Result<Project, HookError> {
    if dir.as_os_str().is_empty() || !dir.join(PROJECT_DIR).is_dir() {
        return Err(HookError::ProjectMissing {
            dir: dir.to_path_buf(),
            how,
        });
    }
    Ok(Project::at(dir))
}
