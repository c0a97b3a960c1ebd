//! What every command needs: the resolved store and key directory, the output mode, and
//! progress bars that appear only on a terminal.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{RunId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::keys::TrustedKeys;
use cairn_ledger::store::OpenMode;
use cairn_ledger::store::RunInfo;
use cairn_runtime::keyring::Keyring;
use cairn_runtime::layout::Project;
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{Global, RunSelector};
use crate::failure::{CliCode, Failure};
use crate::store::OpenStore as _;
pub use crate::store::StoreLocation;

pub use cairn_runtime::layout::{KEYS_DIR, PROJECT_DIR, STORE_FILE};

/// Resolved global options.
#[derive(Debug)]
pub struct Context {
    /// `--store` / `CAIRN_STORE`, if given.
    pub explicit_store: Option<String>,
    /// `--keys` / `CAIRN_KEYS`, if given.
    pub explicit_keys: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
}

impl Context {
    /// From the parsed global options.
    pub fn new(global: &Global) -> Self {
        Self {
            explicit_store: global.store.clone(),
            explicit_keys: global.keys.clone(),
            json: global.json,
        }
    }

    /// The store: explicit (a file path or a `postgres://` URL), else the store of the
    /// nearest enclosing project (in its state folder, see `cairn where`), else
    /// `.cairn/cairn.db` in the current directory (SPEC §9.1).
    pub fn store_location(&self) -> Result<StoreLocation, Failure> {
        match &self.explicit_store {
            Some(text) => crate::store::parse_location(text),
            None => Ok(StoreLocation::File(default_store_path(&current_dir()?))),
        }
    }

    /// Whether the store location was chosen explicitly or by an enclosing project.
    pub fn has_configured_store(&self) -> bool {
        self.explicit_store.is_some()
            || std::env::current_dir().is_ok_and(|cwd| find_project(&cwd).is_some())
    }

    /// Opens the store for reading commands: it must exist.
    pub fn open_existing_store(&self) -> Result<Arc<dyn Store>, Failure> {
        self.store_location()?.open(OpenMode::MustExist)
    }

    /// The configuration folder that goes with the store — its policies and tool catalog
    /// (see [`Context::cairn_dir_for`]).
    pub fn cairn_dir(&self) -> Result<PathBuf, Failure> {
        self.cairn_dir_for(&self.store_location()?)
    }

    /// The configuration folder that goes with the store at `location`: the folder of a
    /// store file given explicitly; else the nearest enclosing project's `.cairn/`, else
    /// `.cairn/` in the current directory.
    pub fn cairn_dir_for(&self, location: &StoreLocation) -> Result<PathBuf, Failure> {
        match location {
            StoreLocation::File(path) if self.explicit_store.is_some() => Ok(parent_of(path)),
            _ => Ok(self.project_here()?.dir().to_path_buf()),
        }
    }

    /// The state folder that goes with the store — its keys and decision files (see
    /// [`Context::state_dir_for`]).
    pub fn state_dir(&self) -> Result<PathBuf, Failure> {
        self.state_dir_for(&self.store_location()?)
    }

    /// The state folder that goes with the store at `location`: the folder of a store file
    /// (the project's state folder, for its own store); for a database store, the nearest
    /// enclosing project's state folder, else `.cairn/` in the current directory.
    pub fn state_dir_for(&self, location: &StoreLocation) -> Result<PathBuf, Failure> {
        match location {
            StoreLocation::File(path) => Ok(parent_of(path)),
            StoreLocation::Postgres(_) | StoreLocation::Open(_) => {
                Ok(self.project_here()?.state().to_path_buf())
            }
        }
    }

    /// The nearest enclosing project, else a project in the current directory.
    fn project_here(&self) -> Result<Project, Failure> {
        let cwd = current_dir()?;
        Ok(Project::find(&cwd).unwrap_or_else(|| Project::at(&cwd)))
    }

    /// The key directory: explicit, else `keys/` in [`Context::state_dir`].
    pub fn keys_dir(&self) -> Result<PathBuf, Failure> {
        self.keys_dir_for(&self.store_location()?)
    }

    /// The key directory for the store at `location`: explicit, else `keys/` in its state
    /// folder.
    pub fn keys_dir_for(&self, location: &StoreLocation) -> Result<PathBuf, Failure> {
        match &self.explicit_keys {
            Some(dir) => Ok(dir.clone()),
            None => Ok(self.state_dir_for(location)?.join(KEYS_DIR)),
        }
    }

    /// The keyring for the resolved store.
    pub fn keyring(&self) -> Result<Keyring, Failure> {
        Ok(Keyring::open(self.keys_dir()?))
    }

    /// Trusted verifier keys: the given files, or every key of the keyring.
    pub fn trusted_keys(&self, files: &[PathBuf]) -> Result<TrustedKeys, Failure> {
        if files.is_empty() {
            return Ok(self.keyring()?.trusted_keys()?);
        }
        let mut keys = Vec::new();
        for file in files {
            // The path came from the command line: any failure to use it is invalid input.
            let key = Keyring::load_verifier_key_file(file)
                .map_err(|e| Failure::about_named_file(&e, format!("`--trusted-key`: {e}")))?;
            keys.push(key);
        }
        Ok(TrustedKeys::new(keys))
    }

    /// A progress bar on stderr when it is a terminal and output is for people; hidden
    /// otherwise, so pipes and JSON consumers never see control sequences.
    pub fn progress(&self, len: u64, what: &str) -> ProgressBar {
        if self.json || !std::io::stderr().is_terminal() || len < 2 {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(len);
        if let Ok(style) =
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_owned());
        bar
    }
}

/// The service `CAIRN_SERVER` names and the token of `CAIRN_TOKEN` — `who` says whose token
/// the command needs, when it is missing.
///
/// # Errors
/// A malformed address, or `CAIRN_SERVER` without `CAIRN_TOKEN`.
pub fn service_endpoint(
    server: &std::ffi::OsStr,
    who: &str,
) -> Result<(cairn_server::client::Endpoint, String), Failure> {
    let endpoint = server
        .to_str()
        .unwrap_or_default()
        .parse()
        .map_err(|e: cairn_server::client::ClientError| Failure::from_error(&e))?;
    let token = std::env::var("CAIRN_TOKEN").map_err(|_| {
        Failure::new(
            CliCode::USAGE,
            format!("`CAIRN_SERVER` is set: give the token in `CAIRN_TOKEN` ({who})"),
        )
    })?;
    Ok((endpoint, token))
}

/// The current directory, or why it cannot be read.
pub fn current_dir() -> Result<PathBuf, Failure> {
    std::env::current_dir().map_err(|e| {
        Failure::new(
            CliCode::IO,
            format!("cannot read the current directory: {e}"),
        )
    })
}

/// The folder a store file is in (`.` for a bare file name).
fn parent_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The nearest directory at or above `start` that has a `.cairn/` folder.
pub fn find_project(start: &Path) -> Option<PathBuf> {
    Project::find(start).map(|project| project.root().to_path_buf())
}

/// The store of the nearest project (in its state folder), else `.cairn/cairn.db` in `cwd`.
pub fn default_store_path(cwd: &Path) -> PathBuf {
    Project::find(cwd).map_or_else(
        || cwd.join(PROJECT_DIR).join(STORE_FILE),
        |project| project.store_path(),
    )
}

/// Parses identifiers given on the command line, naming the flag on error.
pub fn parse_id<K: cairn_core::ids::IdKind>(
    flag: &str,
    text: &str,
) -> Result<cairn_core::Id<K>, Failure> {
    cairn_core::Id::<K>::new(text).map_err(|e| {
        Failure::new(
            cairn_core::CoreError::INVALID_ID,
            format!("`--{flag}`: {e}"),
        )
    })
}

/// Finds the run a selector names, across tenants when no tenant is given.
pub fn resolve_run(store: &dyn Store, selector: &RunSelector) -> Result<RunInfo, Failure> {
    let run: RunId = parse_id("run", &selector.run)?;
    let found = match &selector.tenant {
        Some(tenant) => {
            let tenant: TenantId = parse_id("tenant", tenant)?;
            store.run(&tenant, &run)?.into_iter().collect()
        }
        None => store.find_runs(&run)?,
    };
    match found.len() {
        0 => Err(Failure::new(
            cairn_ledger::StoreError::RUN_NOT_FOUND,
            format!("no run `{run}` in this store (see `cairn runs list`)"),
        )),
        1 => found
            .into_iter()
            .next()
            .ok_or_else(|| Failure::new(CliCode::INTERNAL, "run vanished")),
        _ => Err(Failure::new(
            CliCode::AMBIGUOUS_RUN,
            format!("run `{run}` exists under several tenants; pass `--tenant`"),
        )),
    }
}

/// `step_not_found` for step `step` of the run `info` describes.
pub fn no_step(info: &RunInfo, step: u64) -> Failure {
    Failure::new(
        crate::failure::CliCode::STEP_NOT_FOUND,
        format!(
            "run `{}/{}` has no step {step} (it has {} records)",
            info.meta.tenant_id, info.meta.run_id, info.records
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_store_is_the_nearest_enclosing_projects() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(default_store_path(&nested), nested.join(".cairn/cairn.db"));
        std::fs::create_dir_all(root.path().join("a/.cairn/keys")).unwrap();
        // A project made before its state moved out of the working tree keeps it there.
        assert_eq!(
            default_store_path(&nested),
            root.path().join("a/.cairn/cairn.db")
        );
        std::fs::remove_dir(root.path().join("a/.cairn/keys")).unwrap();
        assert_eq!(
            default_store_path(&nested),
            Project::at(&root.path().join("a")).store_path()
        );
    }

    #[test]
    fn a_database_store_keeps_its_keys_in_the_projects_state() {
        let ctx = Context {
            explicit_store: Some("postgres://cairn:s3cret@db/ledger".to_owned()),
            explicit_keys: None,
            json: false,
        };
        let location = ctx.store_location().unwrap();
        assert!(matches!(location, StoreLocation::Postgres(_)));
        let cwd = std::env::current_dir().unwrap();
        let project = Project::find(&cwd).unwrap_or_else(|| Project::at(&cwd));
        assert_eq!(ctx.keys_dir().unwrap(), project.keys_dir());
        assert_eq!(ctx.cairn_dir().unwrap(), project.dir());
    }
}
