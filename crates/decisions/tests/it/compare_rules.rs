//! Every rule of `compare` and the precedence between them: freshness at and around the
//! boundary instant, provenance, the observation window, absence, changes with and without
//! approvals (including approvals that link the wrong revisions), incomparable digests,
//! contradictory observations, the D-2 precedence and its tie rule, and D-4's missing snapshot.

use crate::common;

use cairn_decisions::{
    CheckOutcome, ContinuityHealth, DecisionKind, DecisionState, Observation, Reason, SafeAction,
    compare,
};
use common::*;
use serde_json::json;

fn state_of(c: &cairn_decisions::Comparison, kind: &DecisionKind) -> (DecisionState, Reason) {
    let d = c.decision(kind).unwrap();
    (d.state(), d.reason())
}

#[test]
fn same_digest_with_a_fresh_observation_is_preserved() {
    let c = judge(&snapshot3(), &fresh_except(&[]), &[]);
    assert_eq!(c.state(), ContinuityHealth::Preserved);
    assert_eq!(c.action(), SafeAction::Continue);
    assert!(!c.restricts_consequential());
    assert_eq!(c.determining_key(), None);
    assert_eq!(c.reason(), Reason::DigestMatches);
    assert_eq!(c.count(DecisionState::Preserved), 3);
    assert_eq!(c.snapshot_digest(), Some(snapshot3().digest()));
}

#[test]
fn an_observation_exactly_at_the_boundary_instant_is_not_fresh() {
    let v = value(&scope());
    let mut after = fresh_except(&[scope()]);
    after.push(Observation::of_value(scope(), &v, 1, boundary(), Some("hook:x"), &key()).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(
        state_of(&c, &scope()),
        (DecisionState::Unverified, Reason::ObservationNotFresh)
    );
    assert_eq!(c.state(), ContinuityHealth::Unverified);
    assert_eq!(c.action(), SafeAction::ReObserve);
    // Re-observe, reported but not blocking.
    assert!(!c.restricts_consequential());

    // One microsecond later it is fresh.
    let mut after = fresh_except(&[scope()]);
    after.push(Observation::of_value(scope(), &v, 1, t_micros(1), Some("hook:x"), &key()).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Preserved);
}

#[test]
fn an_observation_before_the_boundary_is_unverified_even_when_its_value_differs() {
    let changed = json!({"repository": "acme/other"});
    let mut after = fresh_except(&[scope()]);
    after
        .push(Observation::of_value(scope(), &changed, 2, t(-60), Some("hook:x"), &key()).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(
        state_of(&c, &scope()),
        (DecisionState::Unverified, Reason::ObservationNotFresh)
    );
    // The observation it rests on is reported for the operator.
    assert_eq!(
        c.decision(&scope()).unwrap().after().unwrap().observed_at(),
        t(-60)
    );
}

#[test]
fn an_observation_without_provenance_is_unverified() {
    let v = value(&target());
    let snapshot = {
        let mut book = book3();
        book.set(target(), &v, None, Some("cli:set"), t(-1800), &key())
            .unwrap();
        book.snapshot(t(-2)).unwrap()
    };
    let mut after = fresh_except(&[]);
    after.push(Observation::of_value(target(), &v, 1, t(30), None, &key()).unwrap());
    let c = judge(&snapshot, &after, &[]);
    assert_eq!(
        state_of(&c, &target()),
        (DecisionState::Unverified, Reason::NoProvenance)
    );
}

#[test]
fn an_observation_after_now_is_not_evidence() {
    let v = value(&scope());
    let mut after = fresh_except(&[scope()]);
    after.push(Observation::of_value(scope(), &v, 1, t(301), Some("hook:x"), &key()).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(
        state_of(&c, &scope()),
        (DecisionState::Unverified, Reason::ObservationInFuture)
    );
}

#[test]
fn a_decision_never_observed_is_awaiting_then_overdue() {
    let snapshot = snapshot3();
    let after = fresh_except(&[acceptance_test()]);
    let at = |now| compare(Some(&snapshot), &after, &[], boundary(), now, window());
    let within = at(t(599));
    assert_eq!(
        state_of(&within, &acceptance_test()),
        (DecisionState::Unverified, Reason::AwaitingObservation)
    );
    assert_eq!(within.observation_deadline(), t(600));
    // The deadline instant itself is still inside the window.
    assert_eq!(
        state_of(&at(t(600)), &acceptance_test()).1,
        Reason::AwaitingObservation
    );
    let overdue = at(t(601));
    assert_eq!(
        state_of(&overdue, &acceptance_test()),
        (DecisionState::Unverified, Reason::NoObservationWithinWindow)
    );
    assert_eq!(overdue.state(), ContinuityHealth::Unverified);
    assert_eq!(overdue.reason(), Reason::NoObservationWithinWindow);
    // Reported and asking for a re-observation, but not blocking (see
    // `ContinuityHealth::restricts_consequential`).
    assert!(!overdue.restricts_consequential());
}

#[test]
fn no_post_boundary_observation_at_all_is_unverified_not_dropped() {
    let c = compare(Some(&snapshot3()), &[], &[], boundary(), t(3600), window());
    assert_eq!(c.state(), ContinuityHealth::Unverified);
    assert_eq!(c.count(DecisionState::Unverified), 3);
    assert!(
        c.decisions()
            .iter()
            .all(|d| d.reason() == Reason::NoObservationWithinWindow)
    );
}

#[test]
fn a_negative_window_counts_as_zero() {
    let c = compare(
        Some(&snapshot3()),
        &[],
        &[],
        boundary(),
        t(1),
        jiff::SignedDuration::from_secs(-60),
    );
    assert_eq!(c.observation_deadline(), boundary());
    assert_eq!(c.reason(), Reason::NoObservationWithinWindow);
}

#[test]
fn a_fresh_absent_observation_is_dropped() {
    let mut after = fresh_except(&[approval_boundary()]);
    after.push(Observation::absent(approval_boundary(), t(30), Some("hook:x")).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Dropped);
    assert_eq!(c.determining_key(), Some(&approval_boundary()));
    assert_eq!(c.reason(), Reason::AbsentAfterBoundary);
    assert_eq!(c.action(), SafeAction::PauseConsequential);
    assert!(c.restricts_consequential());
    assert_eq!(c.state().outcome(), CheckOutcome::Blocked);
}

#[test]
fn a_change_without_approval_is_conflicting() {
    let changed = json!({"repository": "acme/api", "paths": ["src/", "deploy/"]});
    let mut after = fresh_except(&[scope()]);
    after.push(seen(scope(), &changed, 2));
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Conflicting);
    assert_eq!(c.determining_key(), Some(&scope()));
    assert_eq!(c.reason(), Reason::ChangedWithoutApproval);
    assert_eq!(c.action(), SafeAction::StopAndAsk);
    assert!(c.restricts_consequential());
}

#[test]
fn a_change_with_an_approval_linking_old_and_new_revision_is_approved() {
    let old = value(&acceptance_test());
    let new = json!({"command": "cargo test --all-features"});
    let mut after = fresh_except(&[acceptance_test()]);
    after.push(seen(acceptance_test(), &new, 2));
    let link = approval(&acceptance_test(), (1, &old), (2, &new), "review:PR-1");
    let c = judge(&snapshot3(), &after, &[link]);
    assert_eq!(c.state(), ContinuityHealth::ApprovedChange);
    assert_eq!(c.action(), SafeAction::ContinueWithNewRevision);
    assert!(!c.restricts_consequential());
    let d = c.decision(&acceptance_test()).unwrap();
    assert_eq!(d.reason(), Reason::ApprovedLink);
    assert_eq!(d.approval_refs(), ["review:PR-1"]);
    assert_eq!(c.state().outcome(), CheckOutcome::Pass);
}

#[test]
fn approvals_that_link_the_wrong_revisions_stay_conflicting() {
    let old = value(&acceptance_test());
    let new = json!({"command": "cargo test --all-features"});
    let other = json!({"command": "true"});
    let mut after = fresh_except(&[acceptance_test()]);
    after.push(seen(acceptance_test(), &new, 2));
    let wrong_links = [
        // Links revisions 2 -> 3 while the change is 1 -> 2.
        approval(
            &acceptance_test(),
            (2, &new),
            (3, &other),
            "review:wrong-revisions",
        ),
        // The right revision numbers, but revision 2 approved with another value.
        approval(
            &acceptance_test(),
            (1, &old),
            (2, &other),
            "review:wrong-value",
        ),
        // The right revisions, from a digest that is not the snapshot's.
        approval(
            &acceptance_test(),
            (1, &other),
            (2, &new),
            "review:wrong-origin",
        ),
    ];
    for link in &wrong_links {
        let c = judge(&snapshot3(), &after, std::slice::from_ref(link));
        assert_eq!(
            c.state(),
            ContinuityHealth::Conflicting,
            "{}",
            link.approval_ref()
        );
        assert_eq!(c.reason(), Reason::ApprovalLinksOtherRevisions);
    }
    // An approval of another decision is no approval of this one.
    let elsewhere = approval(&scope(), (1, &value(&scope())), (2, &other), "review:scope");
    let c = judge(&snapshot3(), &after, &[elsewhere]);
    assert_eq!(c.reason(), Reason::ChangedWithoutApproval);
}

#[test]
fn a_chain_of_approvals_links_across_several_revisions() {
    let v1 = value(&acceptance_test());
    let v2 = json!({"command": "cargo test -p a"});
    let v3 = json!({"command": "cargo test -p a -p b"});
    let mut after = fresh_except(&[acceptance_test()]);
    after.push(seen(acceptance_test(), &v3, 3));
    let first = approval(&acceptance_test(), (1, &v1), (2, &v2), "review:1");
    let second = approval(&acceptance_test(), (2, &v2), (3, &v3), "review:2");
    let c = judge(&snapshot3(), &after, &[second.clone(), first.clone()]);
    assert_eq!(c.state(), ContinuityHealth::ApprovedChange);
    assert_eq!(
        c.decision(&acceptance_test()).unwrap().approval_refs(),
        ["review:1", "review:2"]
    );
    // A gap in the chain is a conflict.
    let c = judge(&snapshot3(), &after, &[second]);
    assert_eq!(c.state(), ContinuityHealth::Conflicting);
    let c = judge(&snapshot3(), &after, &[first]);
    assert_eq!(c.state(), ContinuityHealth::Conflicting);
}

#[test]
fn an_approval_recorded_after_now_does_not_count() {
    let old = value(&acceptance_test());
    let new = json!({"command": "cargo test --all-features"});
    let mut after = fresh_except(&[acceptance_test()]);
    after.push(seen(acceptance_test(), &new, 2));
    let late = cairn_decisions::ApprovedChange::new(
        acceptance_test(),
        rev(&acceptance_test(), &old, 1),
        rev(&acceptance_test(), &new, 2),
        "review:later",
        t(301),
    )
    .unwrap();
    let c = judge(&snapshot3(), &after, &[late]);
    assert_eq!(c.state(), ContinuityHealth::Conflicting);
}

#[test]
fn a_digest_under_another_key_is_unverified_not_conflicting() {
    let v = value(&scope());
    let mut after = fresh_except(&[scope()]);
    after.push(Observation::of_value(scope(), &v, 1, t(30), Some("hook:x"), &other_key()).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(
        state_of(&c, &scope()),
        (DecisionState::Unverified, Reason::IncomparableDigest)
    );
}

#[test]
fn contradictory_latest_observations_are_conflicting() {
    let v = value(&scope());
    let mut after = fresh_except(&[]);
    after.push(Observation::absent(scope(), t(30), Some("hook:y")).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(
        state_of(&c, &scope()),
        (
            DecisionState::Conflicting,
            Reason::ContradictoryObservations
        )
    );
    // A later observation settles an earlier disagreement.
    after.push(Observation::of_value(scope(), &v, 1, t(40), Some("hook:z"), &key()).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Preserved);
}

#[test]
fn a_non_evidence_observation_does_not_mask_fresh_evidence() {
    let mut after = fresh_except(&[]);
    // Later, but without provenance: set aside; the fresh one decides.
    after.push(Observation::absent(scope(), t(60), None).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(state_of(&c, &scope()).0, DecisionState::Preserved);
}

#[test]
fn precedence_conflicting_beats_dropped_beats_unverified_beats_approved() {
    let old_at = value(&acceptance_test());
    let new_at = json!({"command": "cargo test --all-features"});
    let changed_scope = json!({"repository": "acme/elsewhere"});
    let at_approval = approval(&acceptance_test(), (1, &old_at), (2, &new_at), "review:1");

    // approved_change + preserved -> approved_change
    let mut after = fresh_except(&[acceptance_test()]);
    after.push(seen(acceptance_test(), &new_at, 2));
    let c = judge(&snapshot3(), &after, std::slice::from_ref(&at_approval));
    assert_eq!(c.state(), ContinuityHealth::ApprovedChange);

    // unverified (approval boundary not observed) + approved_change -> unverified
    let after: Vec<Observation> = after
        .into_iter()
        .filter(|o| o.key() != &approval_boundary())
        .collect();
    let c = judge(&snapshot3(), &after, std::slice::from_ref(&at_approval));
    assert_eq!(c.state(), ContinuityHealth::Unverified);
    assert_eq!(c.determining_key(), Some(&approval_boundary()));

    // dropped approval boundary + unverified acceptance test -> dropped (the tie rule of D-2)
    let after = vec![
        seen(scope(), &value(&scope()), 1),
        Observation::absent(approval_boundary(), t(30), Some("hook:x")).unwrap(),
        Observation::of_value(acceptance_test(), &old_at, 1, t(-5), Some("hook:x"), &key())
            .unwrap(),
    ];
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Dropped);
    assert_eq!(c.determining_key(), Some(&approval_boundary()));
    assert_eq!(
        state_of(&c, &acceptance_test()).0,
        DecisionState::Unverified
    );

    // + a scope conflict -> conflicting, whatever else holds
    let mut after = after;
    after[0] = seen(scope(), &changed_scope, 2);
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Conflicting);
    assert_eq!(c.determining_key(), Some(&scope()));
    assert_eq!(c.action(), SafeAction::StopAndAsk);
}

#[test]
fn among_equal_states_the_more_authoritative_kind_determines() {
    let mut book = book3();
    book.set(
        target(),
        &value(&target()),
        None,
        Some("cli:set"),
        t(-1800),
        &key(),
    )
    .unwrap();
    let snapshot = book.snapshot(t(-2)).unwrap();
    let after = vec![
        Observation::absent(target(), t(30), Some("hook:x")).unwrap(),
        Observation::absent(acceptance_test(), t(30), Some("hook:x")).unwrap(),
        Observation::absent(approval_boundary(), t(30), Some("hook:x")).unwrap(),
        seen(scope(), &value(&scope()), 1),
    ];
    let c = judge(&snapshot, &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Dropped);
    assert_eq!(c.determining_key(), Some(&approval_boundary()));

    let after = vec![
        Observation::absent(target(), t(30), Some("hook:x")).unwrap(),
        Observation::absent(acceptance_test(), t(30), Some("hook:x")).unwrap(),
        seen(approval_boundary(), &value(&approval_boundary()), 1),
        seen(scope(), &value(&scope()), 1),
    ];
    let c = judge(&snapshot, &after, &[]);
    assert_eq!(c.determining_key(), Some(&target()));
}

#[test]
fn without_a_pre_boundary_snapshot_continuity_evidence_is_missing() {
    let after = fresh_except(&[]);
    let c = compare(None, &after, &[], boundary(), t(300), window());
    assert_eq!(c.state(), ContinuityHealth::ContinuityEvidenceMissing);
    assert_eq!(c.reason(), Reason::NoSnapshot);
    assert_eq!(c.action(), SafeAction::ReObserve);
    assert!(c.restricts_consequential());
    assert!(c.decisions().is_empty());
    assert_eq!(c.unmatched_observations().len(), 3);
    assert_eq!(c.state().outcome(), CheckOutcome::ReviewRequired);

    // A snapshot taken after the boundary is no pre-boundary snapshot.
    let late = book3().snapshot(t(10)).unwrap();
    let c = compare(Some(&late), &after, &[], boundary(), t(300), window());
    assert_eq!(c.state(), ContinuityHealth::ContinuityEvidenceMissing);
    assert_eq!(c.reason(), Reason::SnapshotAfterBoundary);
    // A snapshot taken at the boundary instant is still before it.
    let at = book3().snapshot(boundary()).unwrap();
    let c = compare(Some(&at), &after, &[], boundary(), t(300), window());
    assert_eq!(c.state(), ContinuityHealth::Preserved);
}

#[test]
fn observations_of_decisions_outside_the_snapshot_are_reported_only() {
    let mut after = fresh_except(&[]);
    after.push(seen(target(), &value(&target()), 1));
    after.push(Observation::absent(target(), t(10), Some("hook:x")).unwrap());
    let c = judge(&snapshot3(), &after, &[]);
    assert_eq!(c.state(), ContinuityHealth::Preserved);
    assert_eq!(c.unmatched_observations(), [target()]);
}

#[test]
fn each_state_has_its_action_restriction_and_verdict() {
    let table = [
        (
            ContinuityHealth::Preserved,
            SafeAction::Continue,
            false,
            CheckOutcome::Pass,
        ),
        (
            ContinuityHealth::ApprovedChange,
            SafeAction::ContinueWithNewRevision,
            false,
            CheckOutcome::Pass,
        ),
        (
            ContinuityHealth::Unverified,
            SafeAction::ReObserve,
            false,
            CheckOutcome::ReviewRequired,
        ),
        (
            ContinuityHealth::ContinuityEvidenceMissing,
            SafeAction::ReObserve,
            true,
            CheckOutcome::ReviewRequired,
        ),
        (
            ContinuityHealth::Dropped,
            SafeAction::PauseConsequential,
            true,
            CheckOutcome::Blocked,
        ),
        (
            ContinuityHealth::Conflicting,
            SafeAction::StopAndAsk,
            true,
            CheckOutcome::Blocked,
        ),
    ];
    for (state, action, restricts, verdict) in table {
        assert_eq!(state.action(), action, "{state:?}");
        assert_eq!(state.restricts_consequential(), restricts, "{state:?}");
        assert_eq!(state.outcome(), verdict, "{state:?}");
    }
}

#[test]
fn the_comparison_is_deterministic_and_has_a_receipt_digest() {
    let a = judge(&snapshot3(), &fresh_except(&[]), &[]);
    let b = judge(&snapshot3(), &fresh_except(&[]), &[]);
    assert_eq!(a, b);
    assert_eq!(a.receipt_digest().unwrap(), b.receipt_digest().unwrap());
    let mut after = fresh_except(&[]);
    after.reverse();
    assert_eq!(judge(&snapshot3(), &after, &[]), a);
}

#[test]
fn before_any_boundary_nothing_is_compared_and_nothing_restricted() {
    let after = fresh_except(&[]);
    let c = cairn_decisions::before_any_boundary(&after, t(300), window());
    assert_eq!(c.state(), ContinuityHealth::Unverified);
    assert_eq!(c.reason(), Reason::NoBoundaryYet);
    assert!(!c.restricts_consequential());
    assert_eq!(
        c.state().restricts_consequential(),
        c.restricts_consequential()
    );
}
