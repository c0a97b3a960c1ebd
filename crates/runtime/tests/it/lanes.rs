//! Issue 5 (L-4, L-7) on the executor with a real SQLite store: a verifier lane is denied an
//! edit the authoring lane is admitted, each record naming its lane; lane events are recorded;
//! a handoff is accepted only when a trusted key signed it.

use crate::common;
use cairn_test_support::gates::AllowAll;

use std::sync::Arc;

use cairn_lanes::{HANDOFF_SCHEMA_VERSION, Handoff, LaneBook, LaneConfig, LaneEvent};
use cairn_ledger::Store;
use cairn_ledger::keys::TrustedKeys;
use cairn_ledger::record::{AllowDeny, IntentRecord};
use cairn_runtime::lanes::sign_handoff;
use cairn_runtime::{
    Admitted, DenyCause, Durability, Executor, Recorder, RecorderOptions, ToolCall,
};
use cairn_store_sqlite::SqliteStore;
use serde_json::json;

const AUTHOR: &str = "agent:author";
const VERIFIER: &str = "agent:verifier";

fn lanes(active: &str) -> LaneBook {
    let config = json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": active,
        "lanes": [
            {"lane_id": "authoring", "owner_ref": AUTHOR, "objective": "change the contract",
             "mutation_scope": {"allowed_refs": ["file:src/*"], "denied_refs": []},
             "done_condition": ["evidence:e2e-pass"]},
            {"lane_id": "verification", "owner_ref": VERIFIER, "objective": "verify independently",
             "mutation_scope": {"allowed_refs": ["capability:verify"], "denied_refs": ["file:src/*"]}}
        ],
        "tool_bindings": {
            "fs.edit": {"effect_refs": ["file:{path}"]},
            "tests.run": {"effect_refs": ["capability:verify"]}
        }
    });
    LaneBook::new(LaneConfig::from_json(&config.to_string()).unwrap())
}

fn executor(store: Arc<SqliteStore>, run: &str, principal: &str, active: &str) -> Executor {
    let recorder = common::sync_recorder(store, "task-l", run);
    Executor::new(recorder, Arc::new(AllowAll("allow-all")), principal).with_lanes(lanes(active))
}

fn call<'a>(tool: &str, args: &'a [u8]) -> ToolCall<'a> {
    common::call(tool, "1", args)
}

fn records(store: &SqliteStore, run: &str) -> Vec<IntentRecord> {
    store
        .rows(&"acme".parse().unwrap(), &run.parse().unwrap())
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_verifier_lane_is_denied_the_edit_the_authoring_lane_is_admitted_and_records_name_the_lane() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("lanes.db"));
    let edit = br#"{"path": "src/lib.rs"}"#;

    let mut verifier = executor(store.clone(), "run-verify", VERIFIER, "verification");
    let Admitted::Permitted(permit) = verifier.admit(&call("tests.run", b"{}")).unwrap() else {
        panic!("the verifier may run verification tools")
    };
    let _ = verifier.execute(permit, || Ok::<_, String>(json!({"passed": 12})));
    let Admitted::Denied(denial) = verifier.admit(&call("fs.edit", edit)).unwrap() else {
        panic!("the verifier must not edit the authoring lane's source")
    };
    assert_eq!(denial.rule_ids, ["cairn.lane-scope"]);
    assert!(
        matches!(
            denial.cause,
            DenyCause::Lane {
                unbound_tool: false,
                ..
            }
        ),
        "{denial:?}"
    );
    let denial_step = denial.receipt.step_index;
    drop(verifier);

    let mut author = executor(store.clone(), "run-author", AUTHOR, "authoring");
    let Admitted::Permitted(permit) = author.admit(&call("fs.edit", edit)).unwrap() else {
        panic!("the authoring lane may edit its source")
    };
    let _ = author.execute(permit, || Ok::<_, String>(json!({"written": true})));
    drop(author);

    let verify = records(&store, "run-verify");
    let denied = &verify[usize::try_from(denial_step).unwrap()];
    assert_eq!(
        denied.lane_id.as_ref().map(|l| l.as_str()),
        Some("verification")
    );
    let admission = denied.admission.as_ref().unwrap();
    assert_eq!(admission.decision, AllowDeny::Deny);
    assert_eq!(admission.rule_ids[0].as_str(), "cairn.lane-scope");
    assert!(
        verify
            .iter()
            .all(|r| r.lane_id.as_ref().map(|l| l.as_str()) == Some("verification")),
        "every record of the verifier's run names its lane"
    );
    let authored = records(&store, "run-author");
    assert_eq!(
        authored[0].lane_id.as_ref().map(|l| l.as_str()),
        Some("authoring"),
        "a call naming no lane is made, and recorded, in the active lane"
    );
    assert_eq!(
        authored[0].admission.as_ref().unwrap().decision,
        AllowDeny::Allow
    );
}

#[test]
fn lane_events_are_recorded_against_their_lane_and_refused_events_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("events.db"));
    let mut author = executor(store.clone(), "run-events", AUTHOR, "authoring");
    author
        .record_lane_event(&LaneEvent::Evidence {
            lane_id: "authoring".into(),
            evidence_ref: "evidence:e2e-pass".into(),
            passed: true,
        })
        .unwrap();
    assert_eq!(
        author.lanes().unwrap().status("authoring"),
        Some(cairn_lanes::LaneStatus::Complete)
    );
    let err = author
        .record_lane_event(&LaneEvent::Evidence {
            lane_id: "release".into(),
            evidence_ref: "evidence:x".into(),
            passed: true,
        })
        .unwrap_err();
    assert!(err.to_string().contains("release"), "{err}");
    drop(author);
    let rows = records(&store, "run-events");
    assert_eq!(rows.len(), 1, "the refused event wrote nothing");
    let boundary = rows[0].boundary.as_ref().unwrap();
    assert_eq!(boundary.event.as_str(), "lane_evidence");
    assert_eq!(boundary.reason.as_ref().unwrap().as_str(), "passed");
    assert_eq!(rows[0].lane_id.as_ref().unwrap().as_str(), "authoring");
}

#[test]
fn a_handoff_is_accepted_only_when_a_trusted_key_signed_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("handoff.db"));
    let mut author = executor(store.clone(), "run-handoff", AUTHOR, "authoring");
    let handoff = Handoff {
        schema_version: HANDOFF_SCHEMA_VERSION.into(),
        lane_id: "authoring".into(),
        from_owner: AUTHOR.into(),
        to_owner: "agent:author-2".into(),
        lane_digest: author
            .lanes()
            .unwrap()
            .lane("authoring")
            .unwrap()
            .digest()
            .to_owned(),
        reason: "shift change".into(),
    };
    let (key, trusted) = common::key();
    let (stranger, _) = common::key();
    let note = sign_handoff(&key, &handoff).unwrap();

    // Signed by a key nobody trusts, or altered after signing: refused, nothing recorded.
    let forged = sign_handoff(&stranger, &handoff).unwrap();
    assert!(author.accept_handoff(&forged, &trusted).is_err());
    let altered = note.replace("agent:author-2", "agent:mallory");
    assert!(author.accept_handoff(&altered, &trusted).is_err());
    assert!(
        author
            .accept_handoff(&note, &TrustedKeys::new(Vec::new()))
            .is_err()
    );
    assert_eq!(author.lanes().unwrap().owner("authoring"), Some(AUTHOR));

    author.accept_handoff(&note, &trusted).unwrap();
    assert_eq!(
        author.lanes().unwrap().owner("authoring"),
        Some("agent:author-2")
    );
    // The old owner's calls in the lane are refused from now on.
    let edit = br#"{"path": "src/lib.rs"}"#;
    let Admitted::Denied(denial) = author.admit(&call("fs.edit", edit)).unwrap() else {
        panic!("the lane was handed over")
    };
    assert_eq!(denial.rule_ids, ["cairn.lane-owner"]);
    drop(author);
    let rows = records(&store, "run-handoff");
    let boundary = rows[0].boundary.as_ref().unwrap();
    assert_eq!(boundary.event.as_str(), "lane_handoff");
    assert_eq!(
        boundary.lane_digest,
        Some(cairn_core::Digest::of(handoff.signed_text().as_bytes()))
    );

    // After a restart the handoff still holds: it is replayed from its record.
    let (mut again, book) = resumed(store.clone(), "run-handoff", "agent:author-2");
    let rows_now = store
        .rows(&"acme".parse().unwrap(), &"run-handoff".parse().unwrap())
        .unwrap();
    assert!(again.adopt_lanes(book, &rows_now).unwrap().is_empty());
    assert_eq!(
        again.lanes().unwrap().owner("authoring"),
        Some("agent:author-2")
    );
}

#[test]
fn a_project_lane_file_loads_is_optional_and_never_ignored_when_broken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(cairn_runtime::layout::LANES_FILE);
    assert!(
        cairn_runtime::config::load_lanes(&path, dir.path())
            .unwrap()
            .is_none(),
        "no file, no lanes"
    );
    std::fs::write(
        &path,
        json!({"schema_version": "cairn.lanes/v1", "lanes": [
            {"lane_id": "a", "owner_ref": "x", "objective": "o",
             "mutation_scope": {"allowed_refs": ["file:*.rs"]}}]})
        .to_string(),
    )
    .unwrap();
    let err = cairn_runtime::config::load_lanes(&path, dir.path()).unwrap_err();
    assert!(
        err.to_string().contains("bad_ref_pattern") && err.to_string().contains("lanes.json"),
        "{err}"
    );
    std::fs::write(&path, "{").unwrap();
    assert!(cairn_runtime::config::load_lanes(&path, dir.path()).is_err());
}

#[test]
fn a_project_lane_file_judges_absolute_paths_below_the_root_as_project_relative() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(cairn_runtime::layout::LANES_FILE);
    std::fs::write(
        &path,
        json!({"schema_version": "cairn.lanes/v1", "active_lane_id": "wide", "lanes": [
            {"lane_id": "wide", "owner_ref": "agent:a", "objective": "o",
             "mutation_scope": {"allowed_refs": ["file:*"], "denied_refs": ["file:src/*"]}}],
            "tool_bindings": {"Edit": {"effect_refs": ["file:{file_path}"]}}})
        .to_string(),
    )
    .unwrap();
    let edit = |book: &LaneBook, file: &std::path::Path| {
        let args = json!({"file_path": file.to_str().unwrap()});
        book.check(&cairn_lanes::LaneCall {
            principal: "agent:a",
            lane: None,
            tool: "Edit",
            args: Some(&args),
            current: None,
            resolve: None,
        })
    };
    // The root as given, and a relative root (a host's `cwd: "."`) taken from the working
    // directory: either way the absolute path of a denied file is denied.
    let cwd = std::env::current_dir().unwrap();
    for (root, file) in [
        (dir.path().to_path_buf(), dir.path().join("src/lib.rs")),
        (std::path::PathBuf::from("."), cwd.join("src/lib.rs")),
    ] {
        let book = cairn_runtime::config::load_lanes(&path, &root)
            .unwrap()
            .unwrap();
        let verdict = edit(&book, &file);
        assert!(
            matches!(&verdict, cairn_lanes::LaneVerdict::Denied { reason, .. } if reason.contains("`file:src/lib.rs` is denied")),
            "{}: {verdict:?}",
            root.display()
        );
    }
}

/// The run's writer after a restart, and the project's lanes as declared.
fn resumed(store: Arc<SqliteStore>, run: &str, principal: &str) -> (Executor, LaneBook) {
    let (tenant, run_id): (cairn_core::TenantId, cairn_core::RunId) =
        ("acme".parse().unwrap(), run.parse().unwrap());
    let rows = store.rows(&tenant, &run_id).unwrap();
    let recorder = Recorder::resume(
        store.clone(),
        Arc::new(cairn_core::SystemClock),
        &tenant,
        &run_id,
        RecorderOptions {
            durability: Durability::Sync,
            content_retention: None,
        },
    )
    .unwrap();
    let executor = Executor::resumed(recorder, &rows, Arc::new(AllowAll("allow-all")), principal);
    (executor, lanes("authoring"))
}

#[test]
fn after_a_restart_lane_state_is_rebuilt_from_records_and_unruled_changes_are_held() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("restart.db"));
    let recorder = common::sync_recorder(store.clone(), "task-l", "run-restart");
    let mut first = Executor::new(recorder, Arc::new(AllowAll("allow-all")), AUTHOR);
    assert!(
        first
            .adopt_lanes(lanes("authoring"), &[])
            .unwrap()
            .is_empty()
    );
    first
        .record_lane_event(&LaneEvent::Evidence {
            lane_id: "authoring".into(),
            evidence_ref: "evidence:e2e-pass".into(),
            passed: true,
        })
        .unwrap();
    drop(first);
    let rows = records(&store, "run-restart");
    let events: Vec<&str> = rows
        .iter()
        .map(|r| r.boundary.as_ref().unwrap().event.as_str())
        .collect();
    assert_eq!(events, ["lane_ruling", "lane_ruling", "lane_evidence"]);

    // Restart with the same declarations: the evidence is replayed (the lane is complete),
    // and nothing new is ruled.
    let (mut again, book) = resumed(store.clone(), "run-restart", AUTHOR);
    let rows_now = store
        .rows(&"acme".parse().unwrap(), &"run-restart".parse().unwrap())
        .unwrap();
    assert!(again.adopt_lanes(book, &rows_now).unwrap().is_empty());
    assert_eq!(
        again.lanes().unwrap().status("authoring"),
        Some(cairn_lanes::LaneStatus::Complete)
    );
    drop(again);
    assert_eq!(records(&store, "run-restart").len(), 3);

    // Restart after someone widened the verification lane on disk without a new ruling: the
    // lane is held for review and its calls are denied.
    let (mut held, _) = resumed(store.clone(), "run-restart", VERIFIER);
    let mut widened = json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": "verification",
        "lanes": [
            {"lane_id": "authoring", "owner_ref": AUTHOR, "objective": "change the contract",
             "mutation_scope": {"allowed_refs": ["file:src/*"], "denied_refs": []},
             "done_condition": ["evidence:e2e-pass"]},
            {"lane_id": "verification", "owner_ref": VERIFIER, "objective": "verify independently",
             "mutation_scope": {"allowed_refs": ["capability:verify", "file:src/*"], "denied_refs": []}}
        ],
        "tool_bindings": {"fs.edit": {"effect_refs": ["file:{path}"]},
                          "tests.run": {"effect_refs": ["capability:verify"]}}
    });
    let book = LaneBook::new(LaneConfig::from_json(&widened.to_string()).unwrap());
    let rows_now = store
        .rows(&"acme".parse().unwrap(), &"run-restart".parse().unwrap())
        .unwrap();
    assert_eq!(held.adopt_lanes(book, &rows_now).unwrap(), ["verification"]);
    let Admitted::Denied(denial) = held.admit(&call("tests.run", b"{}")).unwrap() else {
        panic!("a lane changed without a ruling takes no calls")
    };
    assert_eq!(denial.rule_ids, ["cairn.lane-review-required"]);
    drop(held);

    // The same change with a new ruling is recorded and takes effect.
    widened["lanes"][1]["latest_ruling_ref"] = json!("event:u-8");
    let (mut ruled, _) = resumed(store.clone(), "run-restart", VERIFIER);
    let book = LaneBook::new(LaneConfig::from_json(&widened.to_string()).unwrap());
    let rows_now = store
        .rows(&"acme".parse().unwrap(), &"run-restart".parse().unwrap())
        .unwrap();
    assert!(ruled.adopt_lanes(book, &rows_now).unwrap().is_empty());
    assert!(matches!(
        ruled
            .admit(&call("fs.edit", br#"{"path": "src/a.rs"}"#))
            .unwrap(),
        Admitted::Permitted(_)
    ));
    drop(ruled);
    let last_ruling = records(&store, "run-restart")
        .into_iter()
        .rev()
        .find(|r| {
            r.boundary
                .as_ref()
                .is_some_and(|b| b.event.as_str() == "lane_ruling")
        })
        .unwrap();
    assert_eq!(last_ruling.lane_id.unwrap().as_str(), "verification");
    assert_eq!(
        last_ruling.boundary.unwrap().evidence_ref.unwrap().as_str(),
        "event:u-8"
    );
}

/// Every call needs a person (as in a `human_approved` session).
struct AsksAPerson;

impl cairn_runtime::Gate for AsksAPerson {
    fn decide(&self, _: &cairn_runtime::GateRequest<'_>) -> cairn_runtime::GateVerdict {
        cairn_runtime::approvals::with_a_person(cairn_runtime::GateVerdict::allow(
            cairn_core::Digest::of(b"policy-v1"),
            vec![common::label("allow-all")],
        ))
    }
}

#[test]
fn a_call_outside_the_lane_is_refused_before_any_person_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(&dir.path().join("lanes.db"));
    let edit = br#"{"path": "src/lib.rs"}"#;
    let recorder = common::sync_recorder(store.clone(), "task-l", "run-verify");
    let mut verifier =
        Executor::new(recorder, Arc::new(AsksAPerson), VERIFIER).with_lanes(lanes("verification"));
    let Admitted::Denied(denial) = verifier.admit(&call("fs.edit", edit)).unwrap() else {
        panic!("outside the lane")
    };
    assert_eq!(denial.reason(), "outside_lane");
    let requested = records(&store, "run-verify")
        .iter()
        .filter(|r| {
            r.boundary
                .as_ref()
                .is_some_and(|b| b.event.as_str() == "approval_requested")
        })
        .count();
    assert_eq!(
        requested, 0,
        "nobody is asked to approve what the lane refuses"
    );

    let recorder = common::sync_recorder(store.clone(), "task-l", "run-author");
    let mut author =
        Executor::new(recorder, Arc::new(AsksAPerson), AUTHOR).with_lanes(lanes("authoring"));
    let Admitted::Denied(held) = author.admit(&call("fs.edit", edit)).unwrap() else {
        panic!("held for a person")
    };
    assert_eq!(held.reason(), "approval_pending");
}
