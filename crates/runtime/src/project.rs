//! A project's policy set, tool catalog and lanes on disk (`.cairn/policies/*.cedar`,
//! `.cairn/tools.json`, `.cairn/lanes.json`), read into the pure policy gate and lane book,
//! and the gate's adapter to the executor.

use std::path::{Path, PathBuf};

use cairn_ledger::record::{Admission, Decision, Label};
use cairn_policy::{GateRequest, PolicyGate, PolicySource, ToolCatalog, Verdict};

use crate::error::RuntimeError;
use crate::executor::{Gate, GateVerdict};

/// The policy folder inside `.cairn/`.
pub const POLICIES_DIR: &str = "policies";
/// The tool catalog inside `.cairn/`.
pub const TOOLS_FILE: &str = "tools.json";
/// The lane declarations inside `.cairn/` (optional: without it, no lanes are enforced).
pub const LANES_FILE: &str = "lanes.json";
/// The largest policy or catalog file read.
const MAX_FILE_BYTES: u64 = 4 << 20;

fn read_text(path: &Path) -> Result<String, RuntimeError> {
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
    match path {
        None => Ok(ToolCatalog::default()),
        Some(path) => {
            let text = read_text(path)?;
            Ok(ToolCatalog::from_json(&path.display().to_string(), &text)?)
        }
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

/// The lanes declared at `path`, when the file exists.
///
/// # Errors
/// [`RuntimeError::Io`] when it exists but cannot be read; [`RuntimeError::InvalidInput`]
/// naming every finding when it does not validate. A lane file that does not load is never
/// ignored: the caller must refuse to run rather than run without the lanes.
pub fn load_lanes(path: &Path) -> Result<Option<cairn_lanes::LaneBook>, RuntimeError> {
    if !path.exists() {
        return Ok(None);
    }
    let text = read_text(path)?;
    let config =
        cairn_lanes::LaneConfig::from_json(&text).map_err(|e| RuntimeError::InvalidInput {
            field: "lanes",
            reason: format!("`{}`: {e}", path.display()),
        })?;
    Ok(Some(cairn_lanes::LaneBook::new(config)))
}

impl Gate for PolicyGate {
    fn policy_set_version(&self) -> Option<cairn_core::Digest> {
        Some(self.version())
    }

    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        let decision = PolicyGate::decide(self, request);
        let rule_ids: Result<Vec<Label>, _> = decision.rule_ids.iter().map(Label::new).collect();
        match rule_ids {
            Ok(rule_ids) => GateVerdict {
                admission: Admission {
                    decision: match decision.decision {
                        Verdict::Allow => Decision::Allow,
                        Verdict::Deny => Decision::Deny,
                    },
                    policy_set_version: decision.policy_set_version,
                    rule_ids,
                },
                reason: decision.reason.code(),
            },
            // A rule id that cannot be recorded: fail closed.
            Err(_) => GateVerdict {
                admission: Admission {
                    decision: Decision::Deny,
                    policy_set_version: decision.policy_set_version,
                    rule_ids: Vec::new(),
                },
                reason: "unrecordable_rule_id",
            },
        }
    }
}
