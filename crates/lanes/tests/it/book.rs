//! Issue 5 (L-4…L-7) on the library: lane scopes on calls, latest-ruling precedence over a
//! restored view, done-condition promotion, handoffs, nested-scope violations and temporal
//! revalidation.

use cairn_lanes::{
    HANDOFF_SCHEMA_VERSION, Handoff, LaneBook, LaneCall, LaneConfig, LaneEvent, LaneSpec,
    LaneStatus, LaneVerdict, Validity,
};
use serde_json::{Value, json};

const AUTHOR: &str = "agent:author";
const VERIFIER: &str = "agent:verifier";

/// Two lanes in the shape of the published RLC fixture: authoring owns the source and the
/// schema; verification may only run verification tools and is denied both.
fn config() -> Value {
    json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": "authoring",
        "lanes": [
            {"lane_id": "authoring", "owner_ref": AUTHOR, "objective": "change the contract",
             "mutation_scope": {"allowed_refs": ["file:src/*", "file:schema/*"], "denied_refs": []},
             "done_condition": ["evidence:e2e-pass"], "latest_ruling_ref": "event:u-1",
             "source_refs": ["doc:rfc"],
             "validated_against": {"repo_head": "abc123", "policy_version": "sha256:p1", "environment_digest": "sha256:e1"}},
            {"lane_id": "verification", "owner_ref": VERIFIER, "objective": "verify independently",
             "mutation_scope": {"allowed_refs": ["capability:verify"], "denied_refs": ["file:src/*", "file:schema/*"]},
             "done_condition": ["evidence:verified"], "depends_on": ["authoring"]}
        ],
        "tool_bindings": {
            "fs.edit": {"effect_refs": ["file:{path}"]},
            "fs.read": {"effect_refs": []},
            "tests.run": {"effect_refs": ["capability:verify"]}
        }
    })
}

fn book_of(value: &Value) -> LaneBook {
    LaneBook::new(LaneConfig::from_json(&value.to_string()).unwrap())
}

fn check(book: &LaneBook, principal: &str, lane: &str, tool: &str, args: &Value) -> LaneVerdict {
    book.check(&LaneCall {
        principal,
        lane: Some(lane),
        tool,
        args: Some(args),
        current: None,
        resolve: None,
    })
}

/// The verdict on `principal` editing the file `path` in `lane`.
fn edit_in(book: &LaneBook, principal: &str, lane: &str, path: &str) -> LaneVerdict {
    check(book, principal, lane, "fs.edit", &json!({ "path": path }))
}

/// Asserts the rule of each `(principal, lane, path, rule)`: what `book` answers the edit of
/// `path` in `lane` by `principal`.
#[track_caller]
fn assert_edits(book: &LaneBook, cases: &[(&str, &str, &str, &str)]) {
    for &(principal, lane, path, rule) in cases {
        let verdict = edit_in(book, principal, lane, path);
        assert_eq!(rule_of(&verdict), rule, "{path}: {verdict:?}");
    }
}

fn rule_of(verdict: &LaneVerdict) -> &'static str {
    match verdict {
        LaneVerdict::Denied { rule, .. } => rule,
        LaneVerdict::Inside { .. } => "inside",
    }
}

#[test]
fn a_verifier_lane_is_denied_an_edit_the_authoring_lane_is_allowed() {
    let book = book_of(&config());
    let edit = json!({"path": "src/lib.rs"});
    let denied = check(&book, VERIFIER, "verification", "fs.edit", &edit);
    assert_eq!(
        denied,
        LaneVerdict::Denied {
            lane: Some("verification".into()),
            rule: "cairn.lane-scope",
            reason: "`file:src/lib.rs` is denied to lane `verification` by `file:src/*`".into()
        }
    );
    assert_eq!(
        check(&book, AUTHOR, "authoring", "fs.edit", &edit),
        LaneVerdict::Inside {
            lane: "authoring".into(),
            effects: vec!["file:src/lib.rs".into()]
        }
    );
    // Verification tools and reads are what the verifier may do.
    assert_eq!(
        rule_of(&check(
            &book,
            VERIFIER,
            "verification",
            "tests.run",
            &json!({})
        )),
        "inside"
    );
    // A path that climbs out of src/ is not inside `file:src/*`.
    assert_eq!(
        rule_of(&edit_in(&book, AUTHOR, "authoring", "src/../../etc/passwd")),
        "cairn.lane-scope"
    );
    // Unknown effects and strangers fail closed.
    assert_eq!(
        rule_of(&check(&book, AUTHOR, "authoring", "shell.run", &json!({}))),
        "cairn.lane-unbound-tool"
    );
    assert_eq!(
        rule_of(&check(&book, VERIFIER, "authoring", "fs.edit", &edit)),
        "cairn.lane-owner"
    );
    assert_eq!(
        rule_of(&check(&book, AUTHOR, "release", "fs.edit", &edit)),
        "cairn.lane-unknown"
    );
}

fn authoring_as_ruled(denied: &[&str]) -> LaneSpec {
    let mut spec: LaneSpec = serde_json::from_value(config()["lanes"][0].clone()).unwrap();
    spec.mutation_scope.denied_refs = denied.iter().map(|s| (*s).to_owned()).collect();
    spec
}

#[test]
fn the_latest_ruling_outranks_a_restored_view_that_contradicts_it() {
    let mut book = book_of(&config());
    // The user rules that the fallback is not to be touched any more.
    book.apply(&LaneEvent::Ruling {
        ruling_ref: "event:u-7".into(),
        definition: authoring_as_ruled(&["file:src/fallback.rs"]),
    })
    .unwrap();
    // A summary restored after compaction still follows the earlier ruling, which allowed it.
    let restored = vec![json!({
        "lane_id": "authoring", "owner_ref": AUTHOR, "status": "active",
        "latest_ruling_ref": "event:u-1",
        "mutation_scope": {"allowed_refs": ["file:src/*", "file:schema/*"], "denied_refs": []}
    })];
    let findings = book.compare_restored(&restored);
    let codes: Vec<&str> = findings.iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        ["superseded_by_latest_ruling", "restored_scope_differs"]
    );
    assert!(findings[0].message.contains("event:u-7"), "{findings:?}");
    // The gate follows the ruling, not the summary.
    assert_eq!(
        rule_of(&edit_in(&book, AUTHOR, "authoring", "src/fallback.rs")),
        "cairn.lane-scope"
    );
    assert_eq!(book.ruling_ref("authoring"), Some("event:u-7"));
    // A view that agrees with the ruling has nothing to report.
    let agreeing = vec![json!({
        "lane_id": "authoring", "owner_ref": AUTHOR, "status": "active",
        "latest_ruling_ref": "event:u-7",
        "mutation_scope": {"allowed_refs": ["file:src/*", "file:schema/*"], "denied_refs": ["file:src/fallback.rs"]}
    })];
    assert!(book.compare_restored(&agreeing).is_empty());
}

#[test]
fn partial_evidence_never_promotes_a_lane_and_full_evidence_does() {
    let mut value = config();
    value["lanes"][0]["done_condition"] = json!(["evidence:e2e-pass", "evidence:schema-valid"]);
    let mut book = book_of(&value);
    // Component checks pass; the end-to-end artifact does not.
    for (evidence, passed) in [
        ("evidence:unit-a", true),
        ("evidence:schema-valid", true),
        ("evidence:e2e-pass", false),
    ] {
        book.apply(&LaneEvent::Evidence {
            lane_id: "authoring".into(),
            evidence_ref: evidence.into(),
            passed,
        })
        .unwrap();
    }
    assert_eq!(book.status("authoring"), Some(LaneStatus::Active));
    assert_eq!(book.missing_evidence("authoring"), ["evidence:e2e-pass"]);
    let claimed_done = vec![json!({
        "lane_id": "authoring", "owner_ref": AUTHOR, "status": "complete",
        "latest_ruling_ref": "event:u-1"
    })];
    let codes: Vec<&str> = book
        .compare_restored(&claimed_done)
        .iter()
        .map(|f| f.code)
        .collect();
    assert_eq!(codes, ["completion_not_evidenced"]);

    book.apply(&LaneEvent::Evidence {
        lane_id: "authoring".into(),
        evidence_ref: "evidence:e2e-pass".into(),
        passed: true,
    })
    .unwrap();
    assert_eq!(book.status("authoring"), Some(LaneStatus::Complete));
    // A complete lane takes no more calls.
    assert_eq!(
        rule_of(&edit_in(&book, AUTHOR, "authoring", "src/lib.rs")),
        "cairn.lane-closed"
    );
}

#[test]
fn a_handoff_moves_ownership_only_from_the_current_owner_at_the_current_digest() {
    let mut book = book_of(&config());
    let digest = book.lane("authoring").unwrap().digest().to_owned();
    let handoff = |from: &str, digest: &str| {
        LaneEvent::Handoff(Handoff {
            schema_version: HANDOFF_SCHEMA_VERSION.into(),
            lane_id: "authoring".into(),
            from_owner: from.into(),
            to_owner: "agent:author-2".into(),
            lane_digest: digest.into(),
            reason: "shift change".into(),
        })
    };
    assert_eq!(
        book.apply(&handoff("agent:someone", &digest))
            .unwrap_err()
            .code,
        "handoff_wrong_owner"
    );
    assert_eq!(
        book.apply(&handoff(AUTHOR, "sha256:00")).unwrap_err().code,
        "handoff_stale_lane"
    );
    book.apply(&handoff(AUTHOR, &digest)).unwrap();
    assert_eq!(book.owner("authoring"), Some("agent:author-2"));
    let edit = json!({"path": "src/lib.rs"});
    assert_eq!(
        rule_of(&check(&book, AUTHOR, "authoring", "fs.edit", &edit)),
        "cairn.lane-owner"
    );
    assert_eq!(
        rule_of(&check(
            &book,
            "agent:author-2",
            "authoring",
            "fs.edit",
            &edit
        )),
        "inside"
    );
}

#[test]
fn a_nested_lane_must_lie_within_its_parent_when_declared_and_when_ruled() {
    let mut value = config();
    value["lanes"].as_array_mut().unwrap().push(
        json!({"lane_id": "schema-work", "owner_ref": AUTHOR, "objective": "schema only",
            "parent_lane_id": "authoring",
            "mutation_scope": {"allowed_refs": ["file:schema/*"], "denied_refs": []}}),
    );
    let mut book = book_of(&value);

    // Declared outside the parent's scope: refused at load, naming the lane and the ref.
    let mut escaping = value.clone();
    escaping["lanes"][2]["mutation_scope"]["allowed_refs"] =
        json!(["file:schema/*", "file:docs/*"]);
    let err = LaneConfig::from_json(&escaping.to_string()).unwrap_err();
    assert_eq!(err.findings.len(), 1, "{err}");
    assert_eq!(err.findings[0].code, "nested_scope_violation");
    assert!(err.findings[0].message.contains("file:docs/*"), "{err}");

    // Reaching into what the parent denies is a violation too, unless denied here as well.
    let mut parent_denies = value.clone();
    parent_denies["lanes"][0]["mutation_scope"]["denied_refs"] = json!(["file:schema/generated/*"]);
    let err = LaneConfig::from_json(&parent_denies.to_string()).unwrap_err();
    assert_eq!(err.findings[0].code, "nested_scope_violation");
    parent_denies["lanes"][2]["mutation_scope"]["denied_refs"] = json!(["file:schema/generated/*"]);
    assert!(LaneConfig::from_json(&parent_denies.to_string()).is_ok());

    // A ruling that narrows the parent below its child is refused, and changes nothing.
    let before = book.lane("authoring").unwrap().digest().to_owned();
    let mut narrowed = authoring_as_ruled(&[]);
    narrowed.mutation_scope.allowed_refs = vec!["file:src/*".into()];
    let err = book
        .apply(&LaneEvent::Ruling {
            ruling_ref: "event:u-9".into(),
            definition: narrowed,
        })
        .unwrap_err();
    assert_eq!(err.code, "nested_scope_violation");
    assert_eq!(book.lane("authoring").unwrap().digest(), before);
}

#[test]
fn a_change_of_head_policy_or_environment_sends_a_lane_back_to_review_until_revalidated() {
    let mut book = book_of(&config());
    let validated = Validity {
        repo_head: "abc123".into(),
        policy_version: "sha256:p1".into(),
        environment_digest: "sha256:e1".into(),
    };
    let moved = Validity {
        repo_head: "def456".into(),
        ..validated.clone()
    };
    let edit = json!({"path": "src/lib.rs"});
    let call = |book: &LaneBook, current: &Validity| {
        book.check(&LaneCall {
            principal: AUTHOR,
            lane: Some("authoring"),
            tool: "fs.edit",
            args: Some(&edit),
            current: Some(current),
            resolve: None,
        })
    };
    assert_eq!(rule_of(&call(&book, &validated)), "inside");
    let verdict = call(&book, &moved);
    assert_eq!(rule_of(&verdict), "cairn.lane-revalidation-required");
    let LaneVerdict::Denied { reason, .. } = verdict else {
        panic!()
    };
    assert!(reason.contains("repo_head"), "{reason}");
    assert_eq!(book.revalidation_needed("authoring", &moved), ["repo_head"]);

    book.apply(&LaneEvent::Revalidated {
        lane_id: "authoring".into(),
        against: moved.clone(),
    })
    .unwrap();
    assert_eq!(rule_of(&call(&book, &moved)), "inside");
    let policy_changed = Validity {
        policy_version: "sha256:p2".into(),
        ..moved
    };
    assert_eq!(
        book.revalidation_needed("authoring", &policy_changed),
        ["policy_version"]
    );
}

#[test]
fn declaration_files_report_every_finding_with_a_code() {
    let bad = json!({
        "schema_version": "cairn.lanes/v0",
        "active_lane_id": "nowhere",
        "lanes": [
            {"lane_id": "a", "owner_ref": "x", "objective": "o",
             "mutation_scope": {"allowed_refs": ["file:*.rs", "k"], "denied_refs": ["k"]},
             "depends_on": ["a", "ghost"]},
            {"lane_id": "b", "owner_ref": "x", "objective": "o", "parent_lane_id": "ghost",
             "mutation_scope": {"allowed_refs": []}},
            {"lane_id": "b", "owner_ref": "x", "objective": "o",
             "mutation_scope": {"allowed_refs": []}}
        ],
        "tool_bindings": {"fs.edit": {"effect_refs": ["file:{path"]}}
    });
    let err = LaneConfig::from_json(&bad.to_string()).unwrap_err();
    let mut codes: Vec<&str> = err.findings.iter().map(|f| f.code).collect();
    codes.sort_unstable();
    assert_eq!(
        codes,
        [
            "bad_binding",
            "bad_ref_pattern",
            "bad_schema_version",
            "duplicate_lane_id",
            "scope_overlap",
            "unknown_active_lane",
            "unknown_parent",
        ]
    );
    let malformed = LaneConfig::from_json("{\"lanes\": 3}").unwrap_err();
    assert_eq!(malformed.findings[0].code, "lanes_malformed");
    // Relations are checked once every lane parses.
    let mut relations = config();
    relations["lanes"][1]["depends_on"] = json!(["verification", "ghost"]);
    relations["lanes"][1]["parent_lane_id"] = json!("ghost");
    let err = LaneConfig::from_json(&relations.to_string()).unwrap_err();
    let mut codes: Vec<&str> = err.findings.iter().map(|f| f.code).collect();
    codes.sort_unstable();
    assert_eq!(
        codes,
        ["self_dependency", "unknown_dependency", "unknown_parent"]
    );
}

#[test]
fn absolute_and_project_relative_paths_and_scopes_are_judged_alike() {
    // Agents such as Claude Code name files by absolute path; scopes may be written either
    // way. The verifier allows every file but the authoring lane's: an absolute path into
    // `src/` must not slip past its project-relative denial.
    let mut value = config();
    value["lanes"][1]["mutation_scope"]["allowed_refs"] = json!(["capability:verify", "file:*"]);
    value["lanes"][0]["mutation_scope"]["allowed_refs"] =
        json!(["file:/work/app/src/*", "file:schema/*"]);
    let config = LaneConfig::from_json(&value.to_string()).unwrap();
    let mut book = LaneBook::new(config.with_project_root("/work/app"));
    assert_edits(
        &book,
        &[
            (
                VERIFIER,
                "verification",
                "/work/app/src/lib.rs",
                "cairn.lane-scope",
            ),
            (VERIFIER, "verification", "/work/app/notes.md", "inside"),
            // The authoring lane's scope was written with the absolute path; relative and
            // absolute names of its files are both inside, a neighbouring folder is not.
            (AUTHOR, "authoring", "src/lib.rs", "inside"),
            (AUTHOR, "authoring", "/work/app/src/lib.rs", "inside"),
            (
                AUTHOR,
                "authoring",
                "/work/app/docs/../src/lib.rs",
                "inside",
            ),
            (
                AUTHOR,
                "authoring",
                "/work/application/src/x",
                "cairn.lane-scope",
            ),
        ],
    );

    // A lane ruled at run time with an absolute scope is placed in the project too.
    let mut ruled = authoring_as_ruled(&[]);
    ruled.mutation_scope.allowed_refs = vec!["file:/work/app/schema/*".into()];
    book.apply(&LaneEvent::Ruling {
        ruling_ref: "event:u-9".into(),
        definition: ruled,
    })
    .unwrap();
    assert_edits(
        &book,
        &[
            (AUTHOR, "authoring", "schema/v2.json", "inside"),
            (
                AUTHOR,
                "authoring",
                "/work/app/src/lib.rs",
                "cairn.lane-scope",
            ),
        ],
    );
}

#[test]
fn a_tool_list_shows_what_some_call_in_the_active_lane_could_do() {
    let book = book_of(&config());
    // The authoring lane is active: editing depends on the path, reading changes nothing.
    assert!(book.could_admit(AUTHOR, "fs.edit"));
    assert!(book.could_admit(AUTHOR, "fs.read"));
    // Its fixed effect lies outside the lane; a tool without a binding has unknown effects;
    // the verifier owns no call in the authoring lane.
    assert!(!book.could_admit(AUTHOR, "tests.run"));
    assert!(!book.could_admit(AUTHOR, "fs.delete"));
    assert!(!book.could_admit(VERIFIER, "fs.read"));
    // With the verification lane active, running the tests is what it may do.
    let mut verifying = config();
    verifying["active_lane_id"] = json!("verification");
    let book = book_of(&verifying);
    assert!(book.could_admit(VERIFIER, "tests.run"));
    assert!(!book.could_admit(AUTHOR, "tests.run"));
}
