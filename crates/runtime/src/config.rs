//! A project's policy set, tool catalog and lanes on disk (`.cairn/policies/*.cedar`,
//! `.cairn/tools.json`, `.cairn/lanes.json`), read into the pure policy gate and lane book,
//! and the gate's adapter to the executor.

use std::path::{Path, PathBuf};

use cairn_ledger::record::{AllowDeny, Label};
use cairn_policy::{GateRequest, PolicyGate, PolicySource, ToolCatalog};

use crate::error::RuntimeError;
use crate::verdict::{DenyCause, Gate, GateVerdict};

/// The largest policy or catalog file read.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// The text of a policy, catalog or lanes file, read whole up to 4 MiB.
///
/// # Errors
/// [`RuntimeError::Io`] when it cannot be read, is larger, or is not UTF-8.
pub fn read_text(path: &Path) -> Result<String, RuntimeError> {
    let io = |e: std::io::Error| RuntimeError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE_BYTES {
        return Err(RuntimeError::Io {
            path: path.to_path_buf(),
            reason: format!("{len} bytes is more than the {MAX_FILE_BYTES}-byte limit"),
        });
    }
    std::fs::read_to_string(path).map_err(io)
}

/// The policy texts at `path`: the file itself, or every `*.cedar` file of the folder (not
/// recursive), in name order so the same folder always loads the same way.
///
/// # Errors
/// [`RuntimeError::Io`] when the path cannot be read or a folder holds no `.cedar` file.
pub fn read_policy_sources(path: &Path) -> Result<Vec<PolicySource>, RuntimeError> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|e| RuntimeError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|p| p.extension().is_some_and(|ext| ext == "cedar") && p.is_file())
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(RuntimeError::Io {
                path: path.to_path_buf(),
                reason: "the folder has no .cedar policy file".to_owned(),
            });
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    files
        .into_iter()
        .map(|file| {
            Ok(PolicySource {
                text: read_text(&file)?,
                name: file.display().to_string(),
            })
        })
        .collect()
}

/// The tool catalog at `path`, or an empty one when there is none.
///
/// # Errors
/// [`RuntimeError::Io`] or the catalog's own parse error.
pub fn read_tool_catalog(path: Option<&Path>) -> Result<ToolCatalog, RuntimeError> {
    let text = path.map(read_text).transpose()?;
    parse_tool_catalog(path, text.as_deref())
}

/// The catalog `text` read from `path` (both `None`: the empty catalog).
fn parse_tool_catalog(
    path: Option<&Path>,
    text: Option<&str>,
) -> Result<ToolCatalog, RuntimeError> {
    match (path, text) {
        (Some(path), Some(text)) => Ok(ToolCatalog::from_json(&path.display().to_string(), text)?),
        _ => Ok(ToolCatalog::default()),
    }
}

/// Loads and validates the policy set at `policies` against the catalog at `tools`.
///
/// # Errors
/// Any read, parse or validation failure: a gate is never built from a policy set that did
/// not load completely.
pub fn load_gate(policies: &Path, tools: Option<&Path>) -> Result<PolicyGate, RuntimeError> {
    let sources = read_policy_sources(policies)?;
    let catalog = read_tool_catalog(tools)?;
    Ok(PolicyGate::load(&sources, &catalog)?)
}

/// A tool declaration learned outside the catalog file (the MCP gateway reads it from an
/// upstream tool's input schema): the tool's name and its argument fields.
pub type LearnedTool = (String, Vec<(String, cairn_policy::ArgType)>);

pub use cairn_policy::ArgType;

/// A policy gate kept between calls, so that a long-lived process (the resident hook server)
/// has Cedar parse and validate a policy set once, not once per tool call; a short-lived one
/// simply loads through an empty cache.
///
/// Every [`GateCache::load`] still reads the policy files and the catalog from disk and
/// compares their digest with the cached one, so an edited policy takes effect on the very
/// next call, exactly as it would in a fresh process; only an unchanged set is reused.
#[derive(Debug, Default)]
pub struct GateCache {
    cached: std::sync::Mutex<Option<(cairn_core::Digest, std::sync::Arc<PolicyGate>)>>,
}

impl GateCache {
    /// The gate for the policy set at `policies` and the catalog at `tools`: the cached one
    /// when the files are byte for byte the ones it was built from, else a fresh
    /// [`load_gate`] (which then replaces it).
    ///
    /// # Errors
    /// As [`load_gate`]; a failed load leaves nothing cached.
    pub fn load(
        &self,
        policies: &Path,
        tools: Option<&Path>,
    ) -> Result<std::sync::Arc<PolicyGate>, RuntimeError> {
        self.load_learning(policies, tools, &[])
    }

    /// [`GateCache::load`] with `learned` declarations added where the catalog is silent
    /// (a project's own declaration wins, see `ToolCatalog::learn`); the learned tools are part of what the cached gate was
    /// built from.
    ///
    /// # Errors
    /// As [`load_gate`]; a failed load leaves nothing cached.
    pub fn load_learning(
        &self,
        policies: &Path,
        tools: Option<&Path>,
        learned: &[LearnedTool],
    ) -> Result<std::sync::Arc<PolicyGate>, RuntimeError> {
        let sources = read_policy_sources(policies)?;
        let catalog_text = tools.map(read_text).transpose()?;
        let key = sources_digest(&sources, tools, catalog_text.as_deref(), learned);
        let mut cached = self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((digest, gate)) = cached.as_ref()
            && *digest == key
        {
            return Ok(std::sync::Arc::clone(gate));
        }
        *cached = None;
        let mut catalog = parse_tool_catalog(tools, catalog_text.as_deref())?;
        for (name, args) in learned {
            catalog.learn(name, args.iter().cloned());
        }
        let gate = std::sync::Arc::new(PolicyGate::load(&sources, &catalog)?);
        *cached = Some((key, std::sync::Arc::clone(&gate)));
        Ok(gate)
    }
}

/// A digest of everything a gate is built from: each source's name and text and the
/// catalog's path and text, each length-prefixed so no two inputs share a preimage.
fn sources_digest(
    sources: &[PolicySource],
    tools: Option<&Path>,
    catalog: Option<&str>,
    learned: &[LearnedTool],
) -> cairn_core::Digest {
    let mut preimage = Vec::new();
    let mut field = |bytes: &[u8]| {
        preimage.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        preimage.extend_from_slice(bytes);
    };
    for source in sources {
        field(source.name.as_bytes());
        field(source.text.as_bytes());
    }
    let tools = tools.map(|p| p.display().to_string()).unwrap_or_default();
    field(tools.as_bytes());
    field(catalog.unwrap_or_default().as_bytes());
    for (name, args) in learned {
        field(name.as_bytes());
        for (arg, ty) in args {
            field(arg.as_bytes());
            field(ty.as_str().as_bytes());
        }
    }
    cairn_core::Digest::of(&preimage)
}

/// The lanes declared at `path`, when the file exists, for the project at `root`: absolute
/// file paths below `root`, in tool arguments and in the lanes' `file:` scopes, are judged as
/// the project-relative paths they name.
///
/// # Errors
/// [`RuntimeError::Io`] when it exists but cannot be read; [`RuntimeError::InvalidInput`]
/// naming every finding when it does not validate. A lane file that does not load is never
/// ignored: the caller must refuse to run rather than run without the lanes.
pub fn load_lanes(path: &Path, root: &Path) -> Result<Option<cairn_lanes::LaneBook>, RuntimeError> {
    if !path.exists() {
        return Ok(None);
    }
    let text = read_text(path)?;
    let config =
        cairn_lanes::LaneConfig::from_json(&text).map_err(|e| RuntimeError::InvalidInput {
            field: "lanes",
            reason: format!("`{}`: {e}", path.display()),
        })?;
    // A relative root (a host that sent `cwd: "."`) is made absolute against the process's
    // working directory, and resolved as file paths in calls are (`crate::protect`), so that
    // paths below it are recognised however they are spelled.
    let root = crate::protect::resolve(
        &std::env::current_dir().unwrap_or_default(),
        &root.to_string_lossy(),
    );
    let config = config.with_project_root(&root.to_string_lossy());
    Ok(Some(cairn_lanes::LaneBook::new(config)))
}

impl Gate for PolicyGate {
    fn policy_set_version(&self) -> Option<cairn_core::Digest> {
        Some(self.version())
    }

    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        verdict(PolicyGate::decide(self, request))
    }

    fn could_allow(&self, tool: &str, principal: &str) -> bool {
        self.could_permit(tool, principal)
    }
}

/// The gate's decision as the executor records it.
fn verdict(decision: cairn_policy::GateDecision) -> GateVerdict {
    let version = decision.policy_set_version;
    let rule_ids: Result<Vec<Label>, _> = decision.rule_ids.iter().map(Label::new).collect();
    match (rule_ids, decision.decision) {
        (Ok(rule_ids), AllowDeny::Allow) => GateVerdict::allow(version, rule_ids),
        (Ok(rule_ids), AllowDeny::Deny) => {
            let cause = match decision.reason {
                cairn_policy::DecisionReason::ApprovalRequired { reason } => {
                    DenyCause::ApprovalRequired { reason }
                }
                other => DenyCause::Policy {
                    reason: other.code(),
                },
            };
            GateVerdict::deny(version, rule_ids, cause)
        }
        // A rule id that cannot be recorded: fail closed.
        (Err(_), _) => GateVerdict::deny(
            version,
            Vec::new(),
            DenyCause::Fault {
                reason: "unrecordable_rule_id",
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_gate_cache_reuses_an_unchanged_set_and_reloads_an_edited_one() {
        let dir = tempfile::tempdir().unwrap();
        let policies = dir.path().join("policies");
        std::fs::create_dir(&policies).unwrap();
        let file = policies.join("a.cedar");
        std::fs::write(
            &file,
            "@id(\"all\")\npermit(principal, action, resource);\n",
        )
        .unwrap();
        let cache = GateCache::default();
        let first = cache.load(&policies, None).unwrap();
        let same = cache.load(&policies, None).unwrap();
        assert!(Arc::ptr_eq(&first, &same), "an unchanged set is reused");

        std::fs::write(
            &file,
            "@id(\"none\")\nforbid(principal, action, resource);\n",
        )
        .unwrap();
        let edited = cache.load(&policies, None).unwrap();
        assert!(!Arc::ptr_eq(&first, &edited));
        assert_ne!(first.version(), edited.version());
        assert_eq!(
            edited.version(),
            load_gate(&policies, None).unwrap().version()
        );

        // A set that no longer loads is an error, and nothing stale is served after it.
        std::fs::write(&file, "forbid(principal, action, resource").unwrap();
        assert!(cache.load(&policies, None).is_err());
        std::fs::write(
            &file,
            "@id(\"none\")\nforbid(principal, action, resource);\n",
        )
        .unwrap();
        let back = cache.load(&policies, None).unwrap();
        assert!(
            !Arc::ptr_eq(&edited, &back),
            "the failed load dropped the cached gate"
        );
        assert_eq!(back.version(), edited.version());
    }
}
