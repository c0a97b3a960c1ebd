//! The layout of a project, defined once: the folder that marks a project (`.cairn/`, its
//! configuration), the folder outside the working tree where its evidence and secrets live
//! (its *state*), and the search for the nearest project.
//!
//! ```text
//! <project>/.cairn/          configuration, meant to be committed
//!   policies/*.cedar         the policy set
//!   tools.json               the tool catalog
//!   lanes.json               lane declarations (optional)
//!   hooks.json               the hooks' configuration (optional)
//!
//! <cairn home>/projects/<name>-<digest of the project's path>/     the project's state
//!   project.json             which project this is (its root)
//!   cairn.db                 the embedded store (SQLite)
//!   keys/                    signing keys (private, owner-only) and trusted public keys
//!   sessions/                per-session state of the hooks
//!   decisions/               decision snapshots, observations and approvals
//!   hookd.sock               the resident hook server's socket
//! ```
//!
//! The state is kept out of the working tree (issue 34, 3) so that what developers routinely
//! run there — `git clean -fdx`, `git stash -a`, `git checkout -- .`, deleting and cloning the
//! checkout again at the same path — never reaches the ledger or the keys. The Cairn home is
//! `$CAIRN_HOME`, else `$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn` ([`cairn_home`]);
//! `cairn where` prints a project's folders. A project made before this layout — one whose
//! `.cairn/` holds `cairn.db` or `keys/` — keeps its state in `.cairn/` as before.
//!
//! The folder of `cairn serve` holds everything itself (configuration and state), and beside
//! them each tenant's own ([`tenant_dir`]): `tenants/t-<tenant>/decisions/` and
//! `tenants/t-<tenant>/policies/`.

use std::path::{Path, PathBuf};

/// The folder that marks a Cairn project.
pub const PROJECT_DIR: &str = ".cairn";
/// The store file inside it.
pub const STORE_FILE: &str = "cairn.db";
/// The signing keys inside it.
pub const KEYS_DIR: &str = "keys";
/// The policy folder inside it.
pub const POLICIES_DIR: &str = "policies";
/// The tool catalog inside it.
pub const TOOLS_FILE: &str = "tools.json";
/// The lane declarations inside it (optional: without it, no lanes are enforced).
pub const LANES_FILE: &str = "lanes.json";
/// The hooks' own configuration inside it (optional).
pub const CONFIG_FILE: &str = "hooks.json";
/// The folder of per-session state files inside it.
pub const SESSIONS_DIR: &str = "sessions";
/// The folder of the projects' states in the Cairn home.
pub const PROJECTS_DIR: &str = "projects";
/// The file in a project's state folder that names the project.
pub const STATE_MARKER: &str = "project.json";
/// The longest project name kept in a state folder's name (its socket path must stay under
/// the 108 bytes a Unix socket's path may have).
const MAX_STATE_NAME: usize = 24;

/// The Cairn home of this user: `$CAIRN_HOME`, else `$XDG_STATE_HOME/cairn`, else
/// `~/.local/state/cairn`; `None` when none of these is set.
#[must_use]
pub fn cairn_home() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("CAIRN_HOME")
        .or_else(|| var("XDG_STATE_HOME").map(|dir| dir.join("cairn")))
        .or_else(|| var("HOME").map(|dir| dir.join(".local/state/cairn")))
}

/// The state folder of the project at `root` in the Cairn home `home`:
/// `projects/<name>-<16 hex digits of the digest of the project's absolute path>`.
#[must_use]
pub fn state_dir_in(home: &Path, root: &Path) -> PathBuf {
    let root = absolute_root(root);
    let digest = cairn_core::Digest::of(root.as_os_str().as_encoded_bytes());
    let hex = digest.hex();
    let name: String = root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_STATE_NAME)
        .collect();
    let name = name.trim_start_matches('.');
    let name = if name.is_empty() { "project" } else { name };
    home.join(PROJECTS_DIR)
        .join(format!("{name}-{}", hex.get(..16).unwrap_or(&hex)))
}

/// `root` as an absolute path, its links resolved where it exists.
fn absolute_root(root: &Path) -> PathBuf {
    std::fs::canonicalize(root)
        .or_else(|_| std::path::absolute(root))
        .unwrap_or_else(|_| root.to_path_buf())
}

/// The folder of a service's per-tenant files.
pub const TENANTS_DIR: &str = "tenants";

/// The folder of `tenant`'s own files in the service folder `service_dir`:
/// `tenants/t-<tenant>` (the `t-` keeps an id such as `..` a plain name).
#[must_use]
pub fn tenant_dir(service_dir: &Path, tenant: &cairn_core::TenantId) -> PathBuf {
    service_dir
        .join(TENANTS_DIR)
        .join(format!("t-{}", tenant.as_str()))
}

/// The tenant whose folder (in `tenants/`) is named `name`, if it is one ([`tenant_dir`]).
#[must_use]
pub fn tenant_of_dir(name: &str) -> Option<cairn_core::TenantId> {
    name.strip_prefix("t-")
        .and_then(|id| cairn_core::TenantId::new(id).ok())
}

/// A project: its `.cairn/` folder (configuration) and its state folder (evidence and
/// secrets), and the files in each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    root: PathBuf,
    dir: PathBuf,
    state: PathBuf,
}

impl Project {
    /// The project whose `.cairn/` folder is at `root`; its state in this user's Cairn home
    /// ([`cairn_home`]; see [`Project::at_in`]).
    #[must_use]
    pub fn at(root: &Path) -> Self {
        Self::at_in(root, cairn_home().as_deref())
    }

    /// The project whose `.cairn/` folder is at `root`, its state in the Cairn home `home`
    /// — or in `.cairn/` for a project made before that layout, or when there is no home.
    #[must_use]
    pub fn at_in(root: &Path, home: Option<&Path>) -> Self {
        let dir = root.join(PROJECT_DIR);
        let legacy = dir.join(STORE_FILE).exists() || dir.join(KEYS_DIR).exists();
        let state = match home {
            Some(home) if !legacy => state_dir_in(home, root),
            _ => dir.clone(),
        };
        Self {
            root: root.to_path_buf(),
            dir,
            state,
        }
    }

    /// The folder `dir` itself holding what a project holds, configuration and state — the
    /// service's folder (`cairn serve --data DIR`) — with `root` the folder the agents' paths
    /// are judged against (lane scopes, self-protection).
    #[must_use]
    pub fn folder(dir: &Path, root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            dir: dir.to_path_buf(),
            state: dir.to_path_buf(),
        }
    }

    /// The nearest project at or above `start`, if any.
    #[must_use]
    pub fn find(start: &Path) -> Option<Self> {
        Self::find_in(start, cairn_home().as_deref())
    }

    /// The nearest project at or above `start`, its state in the Cairn home `home`.
    #[must_use]
    pub fn find_in(start: &Path, home: Option<&Path>) -> Option<Self> {
        start
            .ancestors()
            .find(|dir| dir.join(PROJECT_DIR).is_dir())
            .map(|root| Self::at_in(root, home))
    }

    /// The project's root (the folder that holds `.cairn/`).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `.cairn/` folder: the configuration.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state folder: the store, the keys, the sessions' and decisions' files.
    #[must_use]
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// Whether the state is kept apart from the configuration (outside the working tree).
    #[must_use]
    pub fn state_is_apart(&self) -> bool {
        self.state != self.dir
    }

    /// Creates the state folder (owner-only) and its `project.json`, if missing.
    ///
    /// # Errors
    /// The folder or the file cannot be written.
    pub fn prepare_state(&self) -> std::io::Result<()> {
        if !self.state_is_apart() {
            return Ok(());
        }
        let marker = self.state.join(STATE_MARKER);
        if marker.is_file() {
            return Ok(());
        }
        crate::files::create_private_dir(&self.state)?;
        let text = serde_json::json!({
            "schema_version": "cairn.project-state/v1",
            "root": absolute_root(&self.root),
        });
        crate::files::replace(&marker, 0o600, format!("{text}\n").as_bytes())
            .map_err(|(_, error)| error)
    }

    /// The default store.
    #[must_use]
    pub fn store_path(&self) -> PathBuf {
        self.state.join(STORE_FILE)
    }

    /// The signing keys.
    #[must_use]
    pub fn keys_dir(&self) -> PathBuf {
        self.state.join(KEYS_DIR)
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
        self.state.join(SESSIONS_DIR)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn the_state_of_a_project_is_named_after_its_path() {
        let home = Path::new("/home/u/.local/state/cairn");
        let a = state_dir_in(home, Path::new("/src/my project"));
        let b = state_dir_in(home, Path::new("/other/my project"));
        assert!(a.starts_with(home.join(PROJECTS_DIR)), "{}", a.display());
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("my_project-"), "{name}");
        assert_ne!(a, b, "two checkouts of one name are two projects");
        assert_eq!(a, state_dir_in(home, Path::new("/src/my project")));
        let long = state_dir_in(home, Path::new(&format!("/{}", "x".repeat(300))));
        assert!(long.file_name().unwrap().len() <= MAX_STATE_NAME + 17);
        let hidden = state_dir_in(home, Path::new("/.."));
        assert!(
            hidden
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("project-")
        );
    }
}
