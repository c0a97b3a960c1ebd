//! Which project a hook call belongs to: the project the hook command names, the one the
//! session is bound to, or the nearest `.cairn/` at or above its working directory (the
//! folder's layout is `cairn_runtime::layout`).

use std::path::{Path, PathBuf};

pub use cairn_runtime::layout::{PROJECT_DIR, Project};

use crate::error::HookError;

/// Where a hook call's project comes from, in order: the project the hook command names
/// (`cairn hook HOST --project DIR`, which `cairn hooks install` writes, or Claude Code's
/// `CLAUDE_PROJECT_DIR`), then the project the session is already bound to (the session
/// index), then the nearest `.cairn/` at or above the payload's `cwd`.
///
/// A session is bound to the project it started in: the first project a session is seen in
/// is written to the session index. The binding is trusted only for a call whose `cwd` lies
/// in that project (issue 34, 7): a call that says it runs elsewhere — another checkout with a
/// reused session id, a copied transcript, an agent that changed directory out of the
/// project — is decided where it says it runs, when a project is there, and otherwise refused
/// ([`HookError::SessionElsewhere`]) rather than recorded in a project it does not run in.
/// Hooks installed by `cairn hooks install` name their project and never use the index.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    /// The project every call belongs to, whatever the call says (the service's folder, when
    /// the hooks are answered by `cairn serve`).
    pub fixed: Option<Project>,
    /// The project the hook command names.
    pub explicit: Option<PathBuf>,
    /// The folder of the session index (`$CAIRN_HOME/sessions`, by default under the user's
    /// state folder); `None` keeps no index.
    pub index: Option<PathBuf>,
    /// The Cairn home the projects' state folders are in, when the process fixes it (a test
    /// or a fuzz target answering calls in-process); `None`: this user's
    /// (`cairn_runtime::layout::cairn_home`).
    pub home: Option<PathBuf>,
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
        if let Some(project) = &self.fixed {
            return Ok(Some(project.clone()));
        }
        if let Some(dir) = &self.explicit {
            return self.existing(dir, "named by the hook command").map(Some);
        }
        let start = cwd
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        let here = Project::find_in(&start, self.home().as_deref());
        if let Some(dir) = self.bound(host, session_id) {
            let bound = self.existing(&dir, "the session started there")?;
            let inside = cwd.is_none_or(|cwd| within(cwd, bound.root()));
            return match (inside, here) {
                (true, _) => Ok(Some(bound)),
                (false, Some(here)) => Ok(Some(here)),
                (false, None) => Err(HookError::SessionElsewhere {
                    session: session_id.to_owned(),
                    bound: bound.root().to_path_buf(),
                    cwd: start,
                }),
            };
        }
        Ok(here)
    }

    /// The Cairn home of the projects' state.
    fn home(&self) -> Option<PathBuf> {
        self.home.clone().or_else(cairn_runtime::layout::cairn_home)
    }

    /// The project at `dir`, which must have a `.cairn/` folder.
    fn existing(&self, dir: &Path, how: &'static str) -> Result<Project, HookError> {
        if dir.as_os_str().is_empty() || !dir.join(PROJECT_DIR).is_dir() {
            return Err(HookError::ProjectMissing {
                dir: dir.to_path_buf(),
                how,
            });
        }
        Ok(Project::at_in(dir, self.home().as_deref()))
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
        Some(dir.join(crate::host::run_base(host, session_id)))
    }
}

/// Whether `path` lies in the folder `root` (both made absolute, their links resolved where
/// they exist).
fn within(path: &Path, root: &Path) -> bool {
    let real = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    real(path).starts_with(real(root))
}
