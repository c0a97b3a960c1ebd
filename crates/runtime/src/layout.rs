//! The layout of a project's `.cairn/` folder, defined once: the folder that marks a project,
//! the files Cairn keeps in it, and the search for the nearest project.
//!
//! ```text
//! .cairn/
//!   cairn.db            the embedded store (SQLite)
//!   keys/               signing keys (private, owner-only) and trusted public keys
//!   policies/*.cedar    the policy set
//!   tools.json          the tool catalog
//!   lanes.json          lane declarations (optional)
//!   hooks.json          the hooks' configuration (optional)
//!   sessions/           per-session state of the hooks
//!   decisions/          decision snapshots, observations and approvals
//! ```
//!
//! The folder of `cairn serve` has the same files, and beside them each tenant's own
//! ([`tenant_dir`]): `tenants/t-<tenant>/decisions/` and `tenants/t-<tenant>/policies/`.

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

    /// The folder `dir` itself holding what a `.cairn/` folder holds — the service's folder
    /// (`cairn serve --data DIR`) — with `root` the folder the agents' paths are judged
    /// against (lane scopes, self-protection).
    #[must_use]
    pub fn folder(dir: &Path, root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            dir: dir.to_path_buf(),
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
