//! Loading and judging one case folder of `tests/cases/`, independent of what runs it: the
//! library (`crates/continuity/tests/it/cases.rs`) and the CLI (`cairn continuity check --envelope E --state S
//! --summary FILE --now T`) both produce a decision as JSON and hand it to
//! [`Case::assert_decision`].
//!
//! A folder holds `envelope.json` (bare or wrapped; it may be invalid on purpose),
//! `state.json` (`continuity-state/v1`), `summary.txt` (used byte for byte) and `case.json`:
//! `{"description", "now", "status", "reason", "findings"?: [{"code", "path"}]}`. When
//! `findings` is given, the decision's findings must be exactly those codes at those paths,
//! in that order.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The folder of cases (`crates/continuity/tests/cases`).
pub fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../continuity/tests/cases")
}

/// Every case folder, sorted by name.
pub fn case_dirs() -> Vec<PathBuf> {
    crate::subfolders(&cases_dir())
}

/// One case, loaded.
pub struct Case {
    /// The folder's name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// `envelope.json`, as text.
    pub envelope: String,
    /// `state.json`, as text.
    pub state: String,
    /// `summary.txt`, as text.
    pub summary: String,
    /// `case.json`.
    pub expect: Value,
}

impl Case {
    /// Loads the folder `dir`.
    pub fn load(dir: &Path) -> Self {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let read = |file: &str| {
            fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"))
        };
        let expect: Value = serde_json::from_str(&read("case.json"))
            .unwrap_or_else(|e| panic!("{name}/case.json: {e}"));
        Self {
            envelope: read("envelope.json"),
            state: read("state.json"),
            summary: read("summary.txt"),
            name: name.clone(),
            dir: dir.to_path_buf(),
            expect,
        }
    }

    /// The instant the case is decided at (RFC 3339 text, any offset).
    pub fn now(&self) -> &str {
        self.expect["now"].as_str().expect("case.json: now")
    }

    /// Paths of the input files, for running the CLI.
    pub fn envelope_path(&self) -> PathBuf {
        self.dir.join("envelope.json")
    }

    /// See [`Case::envelope_path`].
    pub fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    /// See [`Case::envelope_path`].
    pub fn summary_path(&self) -> PathBuf {
        self.dir.join("summary.txt")
    }

    /// Checks a decision, as JSON, against `case.json` and against the invariants every
    /// decision keeps (never authorised; reauthorisation always required; event types follow
    /// the status).
    pub fn assert_decision(&self, got: &Value) {
        let name = &self.name;
        assert_eq!(got["authorized"], Value::Bool(false), "{name}: {got}");
        assert_eq!(
            got["requires_reauthorization"],
            Value::Bool(true),
            "{name}: {got}"
        );
        let status = got["status"].as_str().unwrap_or_default();
        assert_eq!(
            (status, got["reason"].as_str().unwrap_or_default()),
            (
                self.expect["status"].as_str().unwrap(),
                self.expect["reason"].as_str().unwrap()
            ),
            "{name}: {}\n{got:#}",
            self.expect["description"]
        );
        let events = match status {
            "reauthorization_required" => serde_json::json!(["context_rehydration"]),
            "blocked_on_reconciliation" => serde_json::json!([]),
            _ => serde_json::json!(["continuity_validation_failed"]),
        };
        assert_eq!(got["event_types"], events, "{name}: event types");
        if let Some(want) = self.expect.get("findings") {
            let found: Vec<Value> = got["findings"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: no findings in {got}"))
                .iter()
                .map(|f| serde_json::json!({"code": f["code"], "path": f["path"]}))
                .collect();
            assert_eq!(&Value::Array(found), want, "{name}: findings\n{got:#}");
        }
    }
}
