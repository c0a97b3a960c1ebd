//! The decision book: revisions, re-observation, normalisation equivalence (formatting is not
//! drift), approvals, the 3–7 bound at snapshot time, the errors' stable codes, and the
//! realistic flow set → snapshot → boundary → re-assert → compare.

use crate::common;

use cairn_core::ErrorCode;
use cairn_decisions::{
    Comparison, ContinuityHealth, CustomKind, DecisionBook, DecisionKind, DecisionState, Reason,
    SetOutcome, Snapshot, compare,
};
use common::*;
use serde_json::{Value, json};

fn custom(id: &str) -> DecisionKind {
    DecisionKind::Other(CustomKind::new(id).unwrap())
}

/// Sets `kind` to `value`, with no approval, from `source` at `t(at)`.
fn set_at(
    book: &mut DecisionBook,
    kind: DecisionKind,
    value: &Value,
    source: &str,
    at: i64,
) -> SetOutcome {
    book.set(kind, value, None, Some(source), t(at), &key())
        .unwrap()
}

/// Sets `kind` to `value` with the approval `approval_ref`, from `cli:set` at `t(at)`.
fn set_approved(
    book: &mut DecisionBook,
    kind: DecisionKind,
    value: &Value,
    approval_ref: &str,
    at: i64,
) -> SetOutcome {
    book.set(
        kind,
        value,
        Some(approval_ref),
        Some("cli:set"),
        t(at),
        &key(),
    )
    .unwrap()
}

/// `compare` of the book's observations and approvals against `snapshot`, a minute after the
/// boundary.
fn compare_a_minute_after(snapshot: &Snapshot, book: &DecisionBook) -> Comparison {
    compare(
        Some(snapshot),
        &book.observations(),
        book.approvals(),
        boundary(),
        t(60),
        window(),
    )
}

#[test]
fn set_creates_reobserves_and_revises() {
    let mut book = DecisionBook::new();
    let v1 = json!({"branch": "main"});
    let created = set_at(&mut book, target(), &v1, "cli:set", 0);
    assert!(matches!(created, SetOutcome::Created { .. }));
    assert_eq!(created.entry().revision(), 1);
    assert!(created.entry().value_digest().is_keyed());
    assert!(
        created
            .entry()
            .value_digest()
            .digest()
            .starts_with("hmac-sha256:test-1:")
    );
    assert_eq!(
        created.entry().value_digest().normalizer(),
        "cairn-normalize/v1"
    );

    let again = set_at(&mut book, target(), &v1, "hook:again", 10);
    assert!(matches!(again, SetOutcome::Reobserved { .. }));
    assert_eq!(again.entry().revision(), 1);
    assert_eq!(again.entry().observed_at(), t(10));
    assert_eq!(again.entry().source(), Some("hook:again"));

    let v2 = json!({"branch": "release"});
    let revised = set_at(&mut book, target(), &v2, "cli:set", 20);
    let SetOutcome::Revised {
        entry,
        previous_revision,
        approval,
    } = &revised
    else {
        panic!("{revised:?}")
    };
    assert_eq!((entry.revision(), *previous_revision), (2, 1));
    assert!(approval.is_none());
    assert_eq!(book.history(&target()).len(), 2);
    assert_eq!(book.get(&target()).unwrap().revision(), 2);
    assert!(book.approvals().is_empty());

    // With an approval reference, the change is linked at once.
    let v3 = json!({"branch": "release-2"});
    let linked = set_approved(&mut book, target(), &v3, "review:PR-9", 30);
    let SetOutcome::Revised { approval, .. } = &linked else {
        panic!("{linked:?}")
    };
    let approval = approval.as_ref().unwrap();
    assert_eq!((approval.from().revision, approval.to().revision), (2, 3));
    assert_eq!(approval.approval_ref(), "review:PR-9");
    assert_eq!(book.approvals().len(), 1);
    assert_eq!(linked.entry().approval_ref(), Some("review:PR-9"));

    let outcome = serde_json::to_value(&linked).unwrap();
    assert_eq!(outcome["outcome"], "revised");
    assert_eq!(outcome["previous_revision"], 2);
}

#[test]
fn formatting_changes_are_not_drift() {
    let mut book = DecisionBook::new();
    let composed = json!({"queue": "Z\u{fc}rich", "paths": ["caf\u{e9}/", "b/"], "limit": null});
    let reordered_nfd =
        json!({"limit": null, "paths": ["cafe\u{301}/", "b/"], "queue": "Zu\u{308}rich"});
    assert_ne!(
        serde_json::to_string(&composed).unwrap(),
        serde_json::to_string(&reordered_nfd).unwrap()
    );
    set_at(&mut book, scope(), &composed, "cli:set", 0);
    let again = set_at(&mut book, scope(), &reordered_nfd, "cli:set", 1);
    assert!(matches!(again, SetOutcome::Reobserved { .. }), "{again:?}");

    // ... but null is not the same as an absent field, and array order is meaning.
    let without_limit = json!({"paths": ["caf\u{e9}/", "b/"], "queue": "Z\u{fc}rich"});
    let outcome = set_at(&mut book, scope(), &without_limit, "cli:set", 2);
    assert!(matches!(outcome, SetOutcome::Revised { .. }));
    let swapped = json!({"paths": ["b/", "caf\u{e9}/"], "queue": "Z\u{fc}rich"});
    let outcome = set_at(&mut book, scope(), &swapped, "cli:set", 3);
    assert!(matches!(outcome, SetOutcome::Revised { .. }));
}

#[test]
fn a_reformatted_reassertion_compares_as_preserved() {
    let mut book = DecisionBook::new();
    let decisions = [
        (scope(), json!({"repo": "acme/web", "paths": ["docs/"]})),
        (target(), json!({"branch": "docs/\u{e9}t\u{e9}"})),
        (
            acceptance_test(),
            json!({"cmd": "make docs", "strict": true}),
        ),
    ];
    for (kind, v) in &decisions {
        set_at(&mut book, kind.clone(), v, "cli:set", -100);
    }
    let snapshot = book.snapshot(t(-1)).unwrap();
    let reasserted = [
        (scope(), json!({"paths": ["docs/"], "repo": "acme/web"})),
        (target(), json!({"branch": "docs/e\u{301}te\u{301}"})),
        (
            acceptance_test(),
            json!({"strict": true, "cmd": "make docs"}),
        ),
    ];
    for (kind, v) in &reasserted {
        let outcome = set_at(&mut book, kind.clone(), v, "hook:session-start", 30);
        assert!(matches!(outcome, SetOutcome::Reobserved { .. }));
    }
    let c = compare_a_minute_after(&snapshot, &book);
    assert_eq!(c.state(), ContinuityHealth::Preserved);
}

#[test]
fn the_realistic_flow_set_snapshot_reassert_compare() {
    let mut book = book3();
    let snapshot = book.snapshot(t(-2)).unwrap();
    // After the boundary: scope re-asserted, acceptance test changed with approval,
    // approval boundary not re-asserted.
    set_at(
        &mut book,
        scope(),
        &value(&scope()),
        "hook:session-start",
        30,
    );
    let new = json!({"command": "cargo test --workspace"});
    set_at(&mut book, acceptance_test(), &new, "cli:set", 40);

    let c = compare_a_minute_after(&snapshot, &book);
    assert_eq!(c.state(), ContinuityHealth::Conflicting);
    assert_eq!(c.determining_key(), Some(&acceptance_test()));

    book.approve_change(&acceptance_test(), 1, 2, "review:PR-77", t(50))
        .unwrap();
    let c = compare_a_minute_after(&snapshot, &book);
    assert_eq!(c.state(), ContinuityHealth::Unverified);
    assert_eq!(c.determining_key(), Some(&approval_boundary()));
    assert_eq!(c.reason(), Reason::ObservationNotFresh);
    assert_eq!(
        c.decision(&acceptance_test()).unwrap().state(),
        DecisionState::ApprovedChange
    );

    set_at(
        &mut book,
        approval_boundary(),
        &value(&approval_boundary()),
        "hook:session-start",
        55,
    );
    let c = compare_a_minute_after(&snapshot, &book);
    assert_eq!(c.state(), ContinuityHealth::ApprovedChange);
}

#[test]
fn approve_change_checks_the_revisions() {
    let mut book = book3();
    let v1 = value(&acceptance_test());
    let v2 = json!({"command": "b"});
    set_at(&mut book, acceptance_test(), &v2, "cli:set", 1);
    set_at(&mut book, acceptance_test(), &v1, "cli:set", 2);
    assert_eq!(book.get(&acceptance_test()).unwrap().revision(), 3);

    let code = |r: Result<_, cairn_decisions::DecisionError>| r.unwrap_err().code();
    assert_eq!(
        code(book.approve_change(&target(), 1, 2, "review:x", t(3))),
        "unknown_decision"
    );
    assert_eq!(
        code(book.approve_change(&acceptance_test(), 1, 4, "review:x", t(3))),
        "unknown_revision"
    );
    assert_eq!(
        code(book.approve_change(&acceptance_test(), 0, 2, "review:x", t(3))),
        "unknown_revision"
    );
    assert_eq!(
        code(book.approve_change(&acceptance_test(), 2, 1, "review:x", t(3))),
        "approval_not_forward"
    );
    assert_eq!(
        code(book.approve_change(&acceptance_test(), 2, 2, "review:x", t(3))),
        "approval_not_forward"
    );
    // Revision 3 has revision 1's value again: no change between them to approve.
    assert_eq!(
        code(book.approve_change(&acceptance_test(), 1, 3, "review:x", t(3))),
        "approval_without_change"
    );
    assert_eq!(
        code(book.approve_change(&acceptance_test(), 1, 2, "/home/alice/approval.txt", t(3))),
        "invalid_ref"
    );
    let approval = book
        .approve_change(&acceptance_test(), 1, 2, "review:ok", t(3))
        .unwrap();
    assert_eq!(approval.approved_at(), t(3));
    book.approve_change(&acceptance_test(), 1, 2, "review:ok", t(4))
        .unwrap();
    assert_eq!(book.approvals().len(), 1, "the same approval is kept once");
}

#[test]
fn set_refuses_what_would_corrupt_the_history() {
    let mut book = book3();
    let v = value(&scope());
    let err = book
        .set(
            scope(),
            &json!({"x": 1}),
            None,
            Some("cli:set"),
            t(0),
            &other_key(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "hmac_key_mismatch");
    let err = book
        .set(scope(), &v, None, Some("cli:set"), t(-3600), &key())
        .unwrap_err();
    assert_eq!(err.code(), "observed_at_regressed");
    let err = book
        .set(
            scope(),
            &v,
            None,
            Some("/Users/alice/project"),
            t(0),
            &key(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_ref");
    let err = book
        .set(scope(), &v, Some(""), Some("cli:set"), t(0), &key())
        .unwrap_err();
    assert_eq!(err.code(), "invalid_ref");
    let colliding = json!({"caf\u{e9}": 1, "cafe\u{301}": 2});
    let err = book
        .set(target(), &colliding, None, Some("cli:set"), t(0), &key())
        .unwrap_err();
    assert_eq!(err.code(), "decision_value_not_normalizable");
    assert!(
        book.get(&target()).is_none(),
        "a refused set writes nothing"
    );
    assert_eq!(book.history(&scope()).len(), 1);
}

#[test]
fn snapshots_hold_three_to_seven_decisions() {
    let kinds: Vec<DecisionKind> = vec![
        scope(),
        approval_boundary(),
        target(),
        acceptance_test(),
        DecisionKind::Constraint,
        custom("no_force_push"),
        custom("data_residency"),
        custom("budget"),
    ];
    let mut book = DecisionBook::new();
    for (count, kind) in kinds.iter().enumerate() {
        let v = json!({"n": count});
        set_at(&mut book, kind.clone(), &v, "cli:set", -10);
        let result = book.snapshot(t(-1));
        let n = count + 1;
        match n {
            3..=7 => assert_eq!(result.unwrap().decisions().len(), n),
            _ => {
                let err = result.unwrap_err();
                assert_eq!(err.code(), "snapshot_refused");
                let want = if n < 3 {
                    "too_few_decisions"
                } else {
                    "too_many_decisions"
                };
                let codes: Vec<&str> = err.findings().iter().map(|f| f.code).collect();
                assert_eq!(codes, [want], "{n}");
                assert!(err.to_string().contains(want), "{err}");
            }
        }
    }
    // An empty book gets the same finding, not a panic.
    let err = DecisionBook::new().snapshot(t(0)).unwrap_err();
    assert_eq!(err.findings()[0].code, "too_few_decisions");
}

#[test]
fn a_snapshot_reports_every_finding() {
    let mut book = DecisionBook::new();
    set_at(&mut book, scope(), &json!(1), "cli:set", 10);
    set_at(&mut book, target(), &json!(2), "cli:set", 20);
    let err = book.snapshot(t(0)).unwrap_err();
    let codes: Vec<&str> = err.findings().iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        [
            "too_few_decisions",
            "observed_after_snapshot",
            "observed_after_snapshot"
        ]
    );
}

#[test]
fn the_book_round_trips_and_holds_no_raw_value() {
    let canary = "CANARY-sk_live_51Hx9zSecretValue";
    let mut book = book3();
    set_at(
        &mut book,
        target(),
        &json!({"token_hint": canary}),
        "cli:set",
        0,
    );
    set_approved(&mut book, target(), &json!({"branch": "x"}), "review:1", 1);
    let text = serde_json::to_string_pretty(&book).unwrap();
    assert!(!text.contains("CANARY"), "{text}");
    assert!(!text.contains("decisions test key"), "{text}");
    let back = DecisionBook::from_json(&text).unwrap();
    assert_eq!(back, book);
    let via_serde: DecisionBook = serde_json::from_str(&text).unwrap();
    assert_eq!(via_serde, book);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["schema_version"], "cairn.decision-book/v1");
    assert_eq!(json["decisions"].as_array().unwrap().len(), 5);
    assert_eq!(json["approvals"].as_array().unwrap().len(), 1);
}

#[test]
fn a_tampered_book_is_refused_with_the_path() {
    let mut book = book3();
    set_approved(&mut book, scope(), &json!("other"), "review:1", 0);
    let good: Value = serde_json::to_value(&book).unwrap();
    let refuse = |edit: &dyn Fn(&mut Value), code: &str, path: &str| {
        let mut doc = good.clone();
        edit(&mut doc);
        let err = DecisionBook::from_json(&doc.to_string()).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(path), "{err} should name {path}");
    };
    // The entries are sorted by key then revision: [acceptance_test, approval_boundary,
    // scope r1, scope r2].
    refuse(
        &|d| d["decisions"][3]["revision"] = json!(3),
        "invalid_decision_book",
        "$.decisions[3].revision",
    );
    refuse(
        &|d| d["decisions"][3]["value_digest"] = d["decisions"][2]["value_digest"].clone(),
        "invalid_decision_book",
        "$.decisions[3].value_digest",
    );
    refuse(
        &|d| {
            d["decisions"][0]["value_digest"]["digest"] =
                json!(format!("sha256:{}", "a".repeat(64)));
        },
        "unkeyed_decision_digest",
        "$.decisions[0].value_digest",
    );
    refuse(
        &|d| d["decisions"][1]["source"] = json!("/home/alice/.claude/transcript.jsonl"),
        "invalid_ref",
        "source",
    );
    refuse(
        &|d| d["approvals"][0]["to"]["value_digest"] = d["decisions"][0]["value_digest"].clone(),
        "invalid_decision_book",
        "$.approvals[0].to.value_digest",
    );
    refuse(
        &|d| d["approvals"][0]["to"]["revision"] = json!(5),
        "invalid_decision_book",
        "$.approvals[0].to",
    );
    refuse(&|d| d["extra"] = json!(1), "invalid_decision_book", "$");
    refuse(
        &|d| d["schema_version"] = json!("cairn.decision-book/v2"),
        "invalid_decision_book",
        "$.schema_version",
    );
    refuse(
        &|d| d["decisions"][0]["value"] = json!("raw"),
        "invalid_decision_book",
        "$.decisions[0]",
    );
}
