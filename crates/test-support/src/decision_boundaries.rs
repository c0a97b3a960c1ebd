//! Loading and judging one D-5 boundary case of `tests/boundaries/` (see its README),
//! independent of what runs it: the library (`crates/decisions/tests/it/boundaries.rs`) and the CLI both
//! produce a comparison as JSON and hand it to [`Case::assert_comparison`].

use std::fs;
use std::path::{Path, PathBuf};

use cairn_core::{HmacKey, Timestamp};
use cairn_decisions::{
    ApprovedChange, DecisionBook, DecisionKind, Observation, RevisionRef, Snapshot, digest_value,
};
use serde_json::Value;

/// The fixed, public test key the cases' digests are built with.
pub const TEST_KEY_ID: &str = "d5-test";
/// Its secret: public on purpose, these are synthetic values.
pub const TEST_KEY_SECRET: &[u8] = b"cairn-d5-synthetic-boundaries-not-a-secret";

/// The test HMAC key.
pub fn test_key() -> HmacKey {
    HmacKey::new(TEST_KEY_ID, TEST_KEY_SECRET.to_vec()).unwrap()
}

/// The folder of cases (`crates/decisions/tests/boundaries`).
pub fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../decisions/tests/boundaries")
}

/// Every case folder, sorted by name.
pub fn case_dirs() -> Vec<PathBuf> {
    crate::subfolders(&cases_dir())
}

/// One case, loaded.
pub struct Case {
    /// The folder's name.
    pub name: String,
    /// `events.json`.
    pub events: Vec<Value>,
    /// `decisions.json`.
    pub decisions: Value,
    /// `expected.json`.
    pub expected: Value,
}

fn read_json(dir: &Path, file: &str) -> Value {
    let path = dir.join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ts(value: &Value) -> Timestamp {
    value
        .as_str()
        .unwrap_or_else(|| panic!("expected a timestamp, got {value}"))
        .parse()
        .unwrap()
}

fn kind(value: &Value) -> DecisionKind {
    value.as_str().unwrap().parse().unwrap()
}

/// The inputs of `compare`, built from a case's raw values.
pub struct Inputs {
    /// The pre-boundary snapshot.
    pub snapshot: Snapshot,
    /// The post-boundary observations.
    pub observations: Vec<Observation>,
    /// The approvals.
    pub approvals: Vec<ApprovedChange>,
    /// The boundary instant (the `PostCompact` event).
    pub boundary_at: Timestamp,
    /// The comparison's now.
    pub now: Timestamp,
    /// The observation window.
    pub window: jiff::SignedDuration,
}

impl Case {
    /// Loads a case folder.
    pub fn load(dir: &Path) -> Self {
        let events = read_json(dir, "events.json");
        Self {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            events: events.as_array().expect("events.json is an array").clone(),
            decisions: read_json(dir, "decisions.json"),
            expected: read_json(dir, "expected.json"),
        }
    }

    /// The instant of the first event named `name`.
    pub fn event_at(&self, name: &str) -> Option<Timestamp> {
        self.events
            .iter()
            .find(|e| e["hook_event_name"] == name)
            .map(|e| ts(&e["at"]))
    }

    /// The boundary instant: when compaction completed (`PostCompact`, else `SessionStart`
    /// with `source: "compact"`).
    pub fn boundary_at(&self) -> Timestamp {
        self.event_at("PostCompact")
            .or_else(|| {
                self.events
                    .iter()
                    .find(|e| e["hook_event_name"] == "SessionStart" && e["source"] == "compact")
                    .map(|e| ts(&e["at"]))
            })
            .unwrap_or_else(|| panic!("{}: no compaction end in events.json", self.name))
    }

    /// Builds the snapshot (through `DecisionBook::set`), the observations and the approvals
    /// from the raw values, with the test key.
    pub fn inputs(&self) -> Inputs {
        let key = test_key();
        let d = &self.decisions;
        let mut book = DecisionBook::new();
        for item in d["before"]["decisions"].as_array().unwrap() {
            book.set(
                kind(&item["key"]),
                &item["value"],
                item["approval_ref"].as_str(),
                item["source"].as_str(),
                ts(&item["observed_at"]),
                &key,
            )
            .unwrap_or_else(|e| panic!("{}: before: {e}", self.name));
        }
        let snapshot = book
            .snapshot(ts(&d["before"]["taken_at"]))
            .unwrap_or_else(|e| panic!("{}: snapshot: {e}", self.name));
        let mut observations = Vec::new();
        for item in d["after"].as_array().unwrap() {
            let k = kind(&item["key"]);
            let at = ts(&item["observed_at"]);
            let source = item["source"].as_str();
            let observation = match item["status"].as_str().unwrap() {
                "present" => {
                    let revision = u32::try_from(item["revision"].as_u64().unwrap()).unwrap();
                    Observation::of_value(k, &item["value"], revision, at, source, &key)
                }
                "absent" => Observation::absent(k, at, source),
                other => panic!("{}: unknown status `{other}`", self.name),
            };
            observations.push(observation.unwrap_or_else(|e| panic!("{}: after: {e}", self.name)));
        }
        let approvals = d["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| self.approval(item, &snapshot, &key))
            .collect();
        Inputs {
            snapshot,
            observations,
            approvals,
            boundary_at: self.boundary_at(),
            now: ts(&d["now"]),
            window: jiff::SignedDuration::from_secs(d["window_seconds"].as_i64().unwrap()),
        }
    }

    /// An approval: `from_revision` is the snapshot's entry, `to_revision` the value observed
    /// with that revision after the boundary.
    fn approval(&self, item: &Value, snapshot: &Snapshot, key: &HmacKey) -> ApprovedChange {
        let k = kind(&item["key"]);
        let from = snapshot.get(&k).unwrap().revision_ref();
        assert_eq!(
            u64::from(from.revision),
            item["from_revision"].as_u64().unwrap(),
            "{}: from_revision must be the snapshot's",
            self.name
        );
        let to_item = self.decisions["after"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == item["key"] && a["revision"] == item["to_revision"])
            .unwrap_or_else(|| panic!("{}: no observed value for to_revision", self.name));
        let to = RevisionRef {
            revision: u32::try_from(item["to_revision"].as_u64().unwrap()).unwrap(),
            value_digest: digest_value(&k, &to_item["value"], key).unwrap(),
        };
        ApprovedChange::new(
            k,
            from,
            to,
            item["approval_ref"].as_str().unwrap(),
            ts(&item["approved_at"]),
        )
        .unwrap()
    }

    /// Every string in the case's raw values that is long enough and not hex, so that
    /// finding it in a document means a raw value leaked (a digest cannot contain it).
    pub fn raw_strings(&self) -> Vec<String> {
        fn collect(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::String(s)
                    if s.chars().count() >= 6 && !s.chars().all(|c| c.is_ascii_hexdigit()) =>
                {
                    out.push(s.clone());
                }
                Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
                Value::Object(map) => map.values().for_each(|v| collect(v, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for item in self.decisions["before"]["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .chain(self.decisions["after"].as_array().unwrap())
        {
            collect(&item["value"], &mut out);
        }
        out
    }

    /// Checks a comparison, as JSON (from the library or the CLI), against `expected.json`.
    pub fn assert_comparison(&self, comparison: &Value) {
        let want = &self.expected["invariant"];
        for field in [
            "state",
            "determining_key",
            "reason",
            "action",
            "restricts_consequential",
        ] {
            assert_eq!(
                comparison[field], want[field],
                "{}: `{field}` differs; comparison: {comparison:#}",
                self.name
            );
        }
        let got: serde_json::Map<String, Value> = comparison["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["key"].as_str().unwrap().to_owned(), d["state"].clone()))
            .collect();
        assert_eq!(
            Value::Object(got),
            want["decisions"],
            "{}: per-decision states differ",
            self.name
        );
    }
}

/// The trivial event-only rule: a `PreCompact`, then the compaction's end (`PostCompact` or
/// `SessionStart` with `source: "compact"`), then at least one successful tool call and no
/// failing one ⇒ `healthy`; anything else ⇒ `unknown`.
pub fn event_only_verdict(events: &[Value]) -> &'static str {
    let position = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred);
    let Some(pre) = position(&|e| e["hook_event_name"] == "PreCompact") else {
        return "unknown";
    };
    let Some(end) = events.iter().skip(pre).position(|e| {
        e["hook_event_name"] == "PostCompact"
            || (e["hook_event_name"] == "SessionStart" && e["source"] == "compact")
    }) else {
        return "unknown";
    };
    let resumed: Vec<&Value> = events
        .iter()
        .skip(pre + end)
        .filter(|e| e["hook_event_name"] == "PostToolUse")
        .collect();
    let ok = !resumed.is_empty() && resumed.iter().all(|e| e["success"] == true);
    if ok { "healthy" } else { "unknown" }
}
