//! `cairn init`: scaffolds `.cairn/` in observe-first mode — a policy set that allows and
//! records everything (with commented examples of tighter rules), a tool catalog declaring
//! the hosts' built-in tools, an example of lanes (`lanes.example.json`, not read until
//! copied to `lanes.json`), and, in the project's state folder outside the working tree
//! (`cairn where`), a checkpoint signing key. Existing files are never overwritten.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cairn_runtime::keyring::{Keyring, KeyringError};
use cairn_runtime::layout::{Project, TOOLS_FILE};

use crate::args::InitArgs;
use crate::context::{Context, PROJECT_DIR};
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;

/// The starter policy set.
pub const STARTER_POLICY: &str = include_str!("../../templates/starter.cedar");
/// The starter tool catalog.
pub const STARTER_TOOLS: &str = include_str!("../../templates/tools.json");
/// An example of lanes for Claude Code and Codex, under a name Cairn does not read: copied
/// to `lanes.json`, it puts the project's calls on lanes.
pub const LANES_EXAMPLE: &str = include_str!("../../templates/lanes.example.json");
/// The example's file name inside `.cairn/`.
pub const LANES_EXAMPLE_FILE: &str = "lanes.example.json";

/// Writes `text` to `path` unless it exists; says which happened.
fn write_new(path: &Path, text: &str) -> Result<bool, Failure> {
    if path.exists() {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::new(
                CliCode::UNWRITABLE_OUTPUT,
                format!("cannot create `{}`: {e}", parent.display()),
            )
        })?;
    }
    std::fs::write(path, text).map_err(|e| {
        Failure::new(
            CliCode::UNWRITABLE_OUTPUT,
            format!("cannot write `{}`: {e}", path.display()),
        )
    })?;
    Ok(true)
}

/// What [`scaffold`] found and made.
pub(crate) struct Scaffold {
    /// The `.cairn/` folder.
    pub project: PathBuf,
    /// The state folder (the store and keys), outside the working tree.
    pub state: PathBuf,
    /// Files it created.
    pub created: Vec<PathBuf>,
    /// Files that were there already.
    pub kept: Vec<PathBuf>,
    /// The starter (or existing) policy file.
    pub policy_file: PathBuf,
    /// The version of the policy set that loads from it.
    pub policy_set_version: cairn_core::Digest,
    /// The signing key's id.
    pub signing_key: String,
}

/// Runs `cairn init`.
pub fn run(_ctx: &Context, args: &InitArgs) -> Result<Outcome, Failure> {
    let base = match &args.dir {
        Some(dir) => dir.clone(),
        None => crate::context::current_dir()?,
    };
    let Scaffold {
        project,
        created,
        kept,
        policy_file,
        policy_set_version,
        signing_key,
        state,
    } = scaffold(&base)?;
    let mut human = format!(
        "initialised {} (observe-first: every call allowed and recorded)\n  the store and keys live in {} (outside the working tree: `cairn where`)\n",
        project.display(),
        state.display()
    );
    for path in &created {
        let _ = writeln!(human, "  created  {}", path.display());
    }
    for path in &kept {
        let _ = writeln!(human, "  kept     {} (already there)", path.display());
    }
    let _ = writeln!(human, "  policy set version  {policy_set_version}");
    let _ = writeln!(human, "  signing key         {signing_key}");
    let _ = writeln!(
        human,
        "\nnext: edit {} and run `cairn policy check`",
        policy_file.display()
    );
    Ok(Outcome::ok(
        serde_json::json!({
            "project": project,
            "state": state,
            "created": created,
            "kept": kept,
            "policy_set_version": policy_set_version,
            "signing_key": signing_key,
        }),
        human,
    ))
}

/// Makes the project's folders owner-only (0700) — `.cairn/` and its state folder — and
/// the store, with its side files, owner-only (0600): they hold the retained raw arguments
/// and observations. Creates the state folder if missing, and fixes a project created before
/// Cairn created them so.
pub(crate) fn restrict_project(project: &Project) -> Result<(), Failure> {
    let io = |path: &Path, e: std::io::Error| {
        Failure::new(
            CliCode::IO,
            format!("cannot prepare `{}`: {e}", path.display()),
        )
    };
    project
        .prepare_state()
        .map_err(|e| io(project.state(), e))?;
    #[cfg(unix)]
    for dir in [project.dir(), project.state()] {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io(dir, e))?;
    }
    cairn_store_sqlite::SqliteStore::restrict_to_owner(&project.store_path())
        .map_err(|e| Failure::from_error(&e))
}

/// Scaffolds `.cairn/` in `base` in observe-first mode (also used by `cairn hooks install`),
/// and the project's state folder outside the working tree (its signing key): existing files
/// are kept, missing ones created, and the policy set must load.
pub(crate) fn scaffold(base: &Path) -> Result<Scaffold, Failure> {
    let dir = base.join(PROJECT_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::new(
            CliCode::UNWRITABLE_OUTPUT,
            format!("cannot create `{}`: {e}", dir.display()),
        )
    })?;
    scaffold_project(&Project::at(base))
}

/// Scaffolds the folder `dir` itself, configuration and state together (the service's
/// folder).
pub(crate) fn scaffold_folder(dir: PathBuf) -> Result<Scaffold, Failure> {
    scaffold_project(&Project::folder(&dir, &dir))
}

/// Scaffolds `project`: its configuration in its folder, its key in its state.
fn scaffold_project(project: &Project) -> Result<Scaffold, Failure> {
    let policy_file = project.policies().join("starter.cedar");
    let tools_file = project.dir().join(TOOLS_FILE);
    let mut created: Vec<PathBuf> = Vec::new();
    let mut kept: Vec<PathBuf> = Vec::new();
    let lanes_example = project.dir().join(LANES_EXAMPLE_FILE);
    for (path, text) in [
        (&policy_file, STARTER_POLICY),
        (&tools_file, STARTER_TOOLS),
        (&lanes_example, LANES_EXAMPLE),
    ] {
        if write_new(path, text)? {
            created.push(path.clone());
        } else {
            kept.push(path.clone());
        }
    }
    restrict_project(project)?;
    let keyring = Keyring::open(project.keys_dir());
    let key = match keyring.active_signing_key() {
        Ok(key) => key.verifier_key(),
        Err(KeyringError::NoSigningKey { .. }) => {
            let generated = keyring.generate(&mut rand_core::OsRng, "cairn.local")?;
            created.push(generated.private_key_path);
            created.push(generated.verifier_key_path);
            generated.verifier_key
        }
        Err(e) => return Err(e.into()),
    };
    // The gate must load what we just wrote; a broken starter set would be a Cairn bug.
    let gate = cairn_runtime::config::load_gate(&project.policies(), Some(&tools_file))?;
    Ok(Scaffold {
        project: project.dir().to_path_buf(),
        state: project.state().to_path_buf(),
        created,
        kept,
        policy_file,
        policy_set_version: gate.version(),
        signing_key: key.id_label().to_string(),
    })
}
