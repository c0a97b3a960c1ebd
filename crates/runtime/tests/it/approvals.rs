//! Approvals (SPEC T-4): a call a policy permits only with a person's approval is held with
//! a request bound to the exact action; it runs only once a person approved exactly that,
//! once by default, before the approval expires and while it is not revoked — and never
//! past a forbid, a reconciliation block or another run's approval. Every request, decision,
//! use and expiry is a record of the run's chain, which still verifies.

use crate::common;

use std::sync::Arc;

use cairn_core::{Clock, ErrorCode, FixedClock, RunId, TenantId, Timestamp};
use cairn_ledger::Store as _;
use cairn_ledger::keys::SigningKey;
use cairn_ledger::record::{AllowDeny, RecordKind, TerminationReason};
use cairn_ledger::verify::CheckpointPolicy;
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::approvals::{
    ApprovalBook, ApprovalId, ApprovalState, Approvals, PersonDecision, Waited, rules,
};
use cairn_runtime::{
    Admitted, CallContext, CallError, Denial, DenyCause, Durability, Executor, Gate, Recorder,
    RecorderOptions, RuntimeError,
};
use cairn_store_sqlite::SqliteStore;

const TOOLS: &str = r#"{"tools": {"payments.refund": {"args": {"amount": "Long"}},
                                  "tickets.read": {}}}"#;

const POLICIES: &str = r#"
@id("reads") permit(principal, action == Action::"tickets.read", resource);
@id("refunds")
@approval("refunds are approved by a person")
permit(principal, action == Action::"payments.refund", resource);
@id("no-huge-refunds") forbid(principal, action == Action::"payments.refund", resource)
    when { context.args has amount && context.args.amount > 10000 };
"#;

fn gate(extra: &str) -> Arc<dyn Gate> {
    let catalog = ToolCatalog::from_json("tools.json", TOOLS).unwrap();
    let text = format!("{POLICIES}{extra}");
    Arc::new(PolicyGate::load(&[PolicySource::new("p.cedar", text)], &catalog).unwrap())
}

struct World {
    _dir: tempfile::TempDir,
    store: Arc<SqliteStore>,
    clock: Arc<FixedClock>,
    tenant: TenantId,
    run: RunId,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = common::open(&dir.path().join("a.db"));
        let clock = Arc::new(FixedClock::new(
            "2026-12-05T10:00:00Z".parse::<Timestamp>().unwrap(),
        ));
        let world = Self {
            _dir: dir,
            store,
            clock,
            tenant: "acme".parse().unwrap(),
            run: "run-a".parse().unwrap(),
        };
        Recorder::open(
            world.store.clone(),
            world.clock.clone(),
            (
                world.tenant.clone(),
                "task-a".parse().unwrap(),
                world.run.clone(),
            ),
            options(),
        )
        .unwrap();
        world
    }

    /// An executor on the run as the store has it now (each hook call resumes the run).
    fn executor(&self, gate: &Arc<dyn Gate>) -> Executor {
        let recorder = Recorder::resume(
            self.store.clone(),
            self.clock.clone(),
            &self.tenant,
            &self.run,
            options(),
        )
        .unwrap();
        let rows = self.store_dyn().rows(&self.tenant, &self.run).unwrap();
        Executor::resumed(recorder, &rows, Arc::clone(gate), "agent")
    }

    fn store_dyn(&self) -> Arc<dyn cairn_ledger::Store> {
        self.store.clone()
    }

    fn approvals(&self) -> Approvals {
        Approvals::new(self.store.clone(), self.clock.clone())
    }

    fn refund(&self, gate: &Arc<dyn Gate>, args: &[u8]) -> Admitted {
        self.executor(gate)
            .admit(&common::call("payments.refund", "1", args))
            .unwrap()
    }

    fn book(&self) -> ApprovalBook {
        self.approvals().of_run(&self.tenant, &self.run).unwrap()
    }

    fn decide(&self, id: &str, decision: &PersonDecision) -> Result<(), RuntimeError> {
        self.approvals()
            .decide(
                Some(&self.tenant),
                &ApprovalId::parse(id).unwrap(),
                decision,
                "os:alice",
                Some("looked at the ticket"),
            )
            .map(|_| ())
    }

    fn records(&self) -> Vec<cairn_ledger::record::IntentRecord> {
        self.store
            .rows(&self.tenant, &self.run)
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect()
    }

    fn events(&self) -> Vec<String> {
        self.records()
            .iter()
            .filter_map(|r| r.boundary.as_ref().map(|b| b.event.as_str().to_owned()))
            .filter(|e| e.starts_with("approval_"))
            .collect()
    }

    /// Closes the run and verifies its chain and signed checkpoint.
    fn verify(&self) {
        let key = SigningKey::generate(&mut rand_core::OsRng, "cairn.test").unwrap();
        let trusted = cairn_ledger::keys::TrustedKeys::new(vec![key.verifier_key()]);
        Recorder::resume(
            self.store.clone(),
            self.clock.clone(),
            &self.tenant,
            &self.run,
            options(),
        )
        .unwrap()
        .terminate(TerminationReason::Completed, None, &key)
        .unwrap();
        let report = common::verify_stored(
            self.store.as_ref(),
            (&self.tenant, &self.run),
            &trusted,
            CheckpointPolicy::Required,
        );
        assert!(report.is_intact(), "{report:?}");
    }
}

fn options() -> RecorderOptions {
    RecorderOptions {
        durability: Durability::Sync,
        content_retention: Some(jiff::SignedDuration::from_hours(1)),
    }
}

const APPROVE_ONCE: PersonDecision = PersonDecision::Approve {
    expires_in: jiff::SignedDuration::from_mins(15),
    uses: 1,
};

fn held(admitted: Admitted) -> (Denial, cairn_runtime::ApprovalDenial) {
    let Admitted::Denied(denial) = admitted else {
        panic!("the call was admitted");
    };
    let DenyCause::Approval(approval) = denial.cause.clone() else {
        panic!("not held for a person: {:?}", denial.cause);
    };
    (denial, approval)
}

fn waiting_id(approval: &cairn_runtime::ApprovalDenial) -> String {
    approval
        .waiting
        .as_ref()
        .expect("a request waits")
        .id
        .clone()
}

#[test]
fn a_held_call_runs_once_a_person_approved_exactly_it_and_only_once() {
    let world = World::new();
    let gate = gate("");
    let (denial, approval) = held(world.refund(&gate, br#"{"amount": 120}"#));
    assert_eq!(approval.code, "approval_pending");
    assert_eq!(denial.rule_ids, ["refunds", rules::PENDING]);
    let id = waiting_id(&approval);
    assert!(approval.message.contains(&id), "{}", approval.message);
    assert!(
        approval
            .message
            .contains("refunds are approved by a person")
    );
    // The held step is a refused step; the request names it, the tool and the action.
    let records = world.records();
    let step = &records[denial.receipt.step_index as usize];
    assert_eq!(step.admission.as_ref().unwrap().decision, AllowDeny::Deny);
    let book = world.book();
    let request = &book.iter().next().unwrap().request;
    assert_eq!(request.step, denial.receipt.step_index);
    assert_eq!(request.tool.name.as_str(), "payments.refund");
    assert_eq!(request.policy_set_version, gate.policy_set_version());

    // The identical retry while nobody decided: still held, under the same request.
    let (_, again) = held(world.refund(&gate, br#"{"amount":120}"#));
    assert_eq!(again.code, "approval_pending");
    assert_eq!(
        waiting_id(&again),
        id,
        "whitespace does not make another action"
    );
    assert_eq!(world.book().iter().count(), 1, "no second request");

    world.decide(&id, &APPROVE_ONCE).unwrap();
    let Admitted::Permitted(permit) = world.refund(&gate, br#"{ "amount" : 120 }"#) else {
        panic!("the approved call is admitted");
    };
    assert_eq!(permit.rule_ids(), ["refunds", rules::GRANTED]);
    let records = world.records();
    let used = &records[permit.step_index() as usize - 1];
    let used_event = used.boundary.as_ref().unwrap();
    assert_eq!(used_event.event.as_str(), "approval_used");
    assert_eq!(
        used_event.approval.as_ref().unwrap().step,
        Some(permit.step_index())
    );

    // Single use: the next identical call is held again, with a new request.
    let (denial, used_up) = held(world.refund(&gate, br#"{"amount": 120}"#));
    assert_eq!(used_up.code, "approval_used_up");
    assert_eq!(denial.rule_ids, ["refunds", rules::USED_UP]);
    assert_ne!(waiting_id(&used_up), id);
    assert_eq!(used_up.earlier.as_deref(), Some(id.as_str()));
    assert_eq!(
        world.events(),
        [
            "approval_requested",
            "approval_granted",
            "approval_used",
            "approval_requested"
        ]
    );
    world.verify();
}

#[test]
fn other_arguments_an_expiry_a_refusal_and_a_revocation_each_deny_with_their_own_rule() {
    let world = World::new();
    let gate = gate("");
    let (_, first) = held(world.refund(&gate, br#"{"amount": 120}"#));
    let id = waiting_id(&first);
    let twice = PersonDecision::Approve {
        expires_in: jiff::SignedDuration::from_mins(15),
        uses: 2,
    };
    world.decide(&id, &twice).unwrap();

    // Other arguments: not covered, held under a request of their own.
    let (denial, other) = held(world.refund(&gate, br#"{"amount": 121}"#));
    assert_eq!(other.code, "approval_other_action");
    assert_eq!(denial.rule_ids, ["refunds", rules::OTHER_ACTION]);
    let other_id = waiting_id(&other);

    // Past its expiry the approval is not reused, and its expiry is recorded.
    world.clock.advance_micros(16 * 60 * 1_000_000);
    let (denial, expired) = held(world.refund(&gate, br#"{"amount": 120}"#));
    assert_eq!(expired.code, "approval_expired");
    assert_eq!(denial.rule_ids, ["refunds", rules::EXPIRED]);
    assert!(world.events().contains(&"approval_expired".to_owned()));

    // A refusal is final for that action: no new request.
    world.decide(&other_id, &PersonDecision::Deny).unwrap();
    let requests = world.book().iter().count();
    let (denial, refused) = held(world.refund(&gate, br#"{"amount": 121}"#));
    assert_eq!(refused.code, "approval_refused");
    assert_eq!(denial.rule_ids, ["refunds", rules::REFUSED]);
    assert!(refused.waiting.is_none());
    assert_eq!(world.book().iter().count(), requests);

    // A revoked approval admits nothing more.
    let new_id = waiting_id(&expired);
    world.decide(&new_id, &twice).unwrap();
    world.decide(&new_id, &PersonDecision::Revoke).unwrap();
    let (denial, revoked) = held(world.refund(&gate, br#"{"amount": 120}"#));
    assert_eq!(revoked.code, "approval_revoked");
    assert_eq!(denial.rule_ids, ["refunds", rules::REVOKED]);
    world.verify();
}

#[test]
fn an_approval_never_lifts_a_forbid_a_reconciliation_block_or_another_runs_request() {
    let world = World::new();
    let gate = gate("");
    // A forbid wins over the permit that asks for a person: nothing is requested.
    let Admitted::Denied(denial) = world.refund(&gate, br#"{"amount": 50000}"#) else {
        panic!("forbidden");
    };
    assert_eq!(denial.rule_ids, ["no-huge-refunds"]);
    assert_eq!(denial.reason(), "forbidden");
    assert_eq!(world.book().iter().count(), 0);

    let (_, first) = held(world.refund(&gate, br#"{"amount": 7}"#));
    let id = waiting_id(&first);
    world
        .decide(
            &id,
            &PersonDecision::Approve {
                expires_in: jiff::SignedDuration::from_mins(15),
                uses: 3,
            },
        )
        .unwrap();
    // A run of another tenant cites it: refused as another run's.
    let other = TenantId::new("globex").unwrap();
    let other_run: RunId = "run-b".parse().unwrap();
    let recorder = Recorder::open(
        world.store.clone(),
        world.clock.clone(),
        (other.clone(), "task-b".parse().unwrap(), other_run.clone()),
        options(),
    )
    .unwrap();
    let mut executor = Executor::new(recorder, Arc::clone(&gate), "agent");
    let context = CallContext {
        approval: Some(id.clone()),
        ..CallContext::default()
    };
    let (denial, cited) = held(
        executor
            .admit_with(
                &common::call("payments.refund", "1", br#"{"amount": 7}"#),
                &context,
            )
            .unwrap(),
    );
    assert_eq!(cited.code, "approval_other_run");
    assert_eq!(denial.rule_ids, ["refunds", rules::OTHER_RUN]);
    // And its people cannot find it under their tenant.
    let err = world
        .approvals()
        .decide(
            Some(&other),
            &ApprovalId::parse(&id).unwrap(),
            &PersonDecision::Revoke,
            "os:mallory",
            None,
        )
        .unwrap_err();
    assert_eq!(err.code(), "approval_not_found");

    // The approved call's outcome becomes unknown: the capability is blocked on
    // reconciliation, approval or not.
    let mut executor = world.executor(&gate);
    let Admitted::Permitted(permit) = executor
        .admit(&common::call("payments.refund", "1", br#"{"amount": 7}"#))
        .unwrap()
    else {
        panic!("approved");
    };
    executor
        .execute_effect(permit, || Err(CallError::OutcomeUnknown("timeout".into())))
        .unwrap();
    let Admitted::Denied(denial) = world.refund(&gate, br#"{"amount": 7}"#) else {
        panic!("blocked");
    };
    assert_eq!(denial.reason(), "unresolved_side_effect");
}

#[test]
fn a_changed_policy_set_asks_again() {
    let world = World::new();
    let (_, first) = held(world.refund(&gate(""), br#"{"amount": 5}"#));
    world.decide(&waiting_id(&first), &APPROVE_ONCE).unwrap();
    let changed = gate(
        r#"@id("tickets-too") permit(principal, action == Action::"tickets.read", resource);"#,
    );
    let (denial, again) = held(world.refund(&changed, br#"{"amount": 5}"#));
    assert_eq!(again.code, "approval_policy_changed");
    assert_eq!(denial.rule_ids, ["refunds", rules::POLICY_CHANGED]);
}

#[test]
fn people_get_clear_errors_and_nothing_is_recorded_twice() {
    let world = World::new();
    let gate = gate("");
    let (_, first) = held(world.refund(&gate, br#"{"amount": 9}"#));
    let id = waiting_id(&first);
    let approvals = world.approvals();
    let forged = ApprovalId::parse("apr-000000000000000000000000").unwrap();
    let err = approvals
        .decide(None, &forged, &APPROVE_ONCE, "os:alice", None)
        .unwrap_err();
    assert_eq!(err.code(), "approval_not_found");
    for bad in [&id[..20], "apr-zz", "", "APR-0123456789abcdef01234567"] {
        assert_eq!(
            ApprovalId::parse(bad).unwrap_err().code(),
            "approval_id_invalid"
        );
    }
    let none = PersonDecision::Approve {
        expires_in: jiff::SignedDuration::from_mins(1),
        uses: 0,
    };
    assert_eq!(
        world.decide(&id, &none).unwrap_err().code(),
        "invalid_input"
    );
    assert_eq!(
        world
            .decide(&id, &PersonDecision::Revoke)
            .unwrap_err()
            .code(),
        "approval_state_conflict",
        "nothing to revoke before an approval"
    );

    // Two people decide at once: one wins, the other is told; one decision is recorded.
    let store = world.store.clone();
    let clock = world.clock.clone();
    let tenant = world.tenant.clone();
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = [(PersonDecision::Deny, "os:bob"), (APPROVE_ONCE, "os:alice")]
            .into_iter()
            .map(|(decision, who)| {
                let approvals = Approvals::new(store.clone(), clock.clone());
                let (tenant, id) = (tenant.clone(), ApprovalId::parse(&id).unwrap());
                scope.spawn(move || {
                    approvals
                        .decide(Some(&tenant), &id, &decision, who, None)
                        .map(|_| ())
                        .map_err(|e| e.code().to_owned())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(
        results.contains(&Err("approval_state_conflict".to_owned())),
        "{results:?}"
    );
    let decisions = world
        .events()
        .iter()
        .filter(|e| *e == "approval_granted" || *e == "approval_refused")
        .count();
    assert_eq!(decisions, 1);

    // A replayed decision is refused, and so is one for a closed run.
    assert_eq!(
        world.decide(&id, &PersonDecision::Deny).unwrap_err().code(),
        "approval_state_conflict"
    );
    let (_, second) = held(world.refund(&gate, br#"{"amount": 10}"#));
    let second = waiting_id(&second);
    world.verify();
    assert_eq!(
        world.decide(&second, &APPROVE_ONCE).unwrap_err().code(),
        "approval_run_closed"
    );
    let records = world.records();
    assert!(
        records
            .iter()
            .all(|r| r.kind != RecordKind::Terminal || r.step_index + 1 == records.len() as u64)
    );
}

#[test]
fn a_request_lapses_when_nobody_decides_in_time_and_waiting_sees_a_decision() {
    let world = World::new();
    let gate = gate("");
    let (_, first) = held(world.refund(&gate, br#"{"amount": 3}"#));
    let id = ApprovalId::parse(&waiting_id(&first)).unwrap();
    let approvals = world.approvals();
    assert_eq!(
        approvals
            .wait(
                &world.tenant,
                &world.run,
                &id,
                std::time::Duration::from_millis(150)
            )
            .unwrap(),
        Waited::TimedOut
    );
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            approvals.wait(
                &world.tenant,
                &world.run,
                &id,
                std::time::Duration::from_secs(20),
            )
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        world.decide(id.as_str(), &APPROVE_ONCE).unwrap();
        assert_eq!(
            waiter.join().unwrap().unwrap(),
            Waited::Decided(ApprovalState::Active)
        );
    });

    // A request nobody decides within its time lapses; the identical call asks again.
    let (_, second) = held(world.refund(&gate, br#"{"amount": 4}"#));
    world.clock.advance_micros(61 * 60 * 1_000_000);
    let lapsed = waiting_id(&second);
    assert_eq!(
        world.decide(&lapsed, &APPROVE_ONCE).unwrap_err().code(),
        "approval_state_conflict"
    );
    let (_, third) = held(world.refund(&gate, br#"{"amount": 4}"#));
    assert_ne!(waiting_id(&third), lapsed);
    let _ = world.clock.now();
}

fn session_facts() -> cairn_runtime::boundary::SessionFacts {
    cairn_runtime::boundary::SessionFacts {
        session_id: "s-1".into(),
        principal_id: "agent".into(),
        authorization_mode: cairn_runtime::continuity::AuthorizationMode::PlatformOwned,
        delegated_principal_id: None,
        delegated_scope: None,
        capability_name: "payments.refund".into(),
        capability_version: "1".into(),
        // The runtime reads the approval from the run's records.
        approval: None,
        objective: "refund the customer".into(),
        exact_constraint_refs: Vec::new(),
        pending_obligations: Vec::new(),
        sandbox_snapshot_ref: None,
        budget_remaining: None,
    }
}

#[test]
fn an_approval_carried_across_a_compaction_that_expires_is_not_reused() {
    let world = World::new();
    let gate = gate("");
    let (_, first) = held(world.refund(&gate, br#"{"amount": 250}"#));
    let id = waiting_id(&first);
    world.decide(&id, &APPROVE_ONCE).unwrap();

    // The compaction's envelope carries the approval in force.
    let mut executor = world.executor(&gate);
    let compaction = executor
        .compact(&session_facts(), "the user approved the refund", "auto")
        .unwrap();
    let envelope = compaction.envelope.envelope();
    assert_eq!(envelope.approval_id.as_deref(), Some(id.as_str()));
    assert!(envelope.action_digest.is_some());
    assert!(envelope.approval_expires_at.is_some());

    // Past its expiry, rehydration finds it expired: the decision says so...
    world.clock.advance_micros(20 * 60 * 1_000_000);
    let now = world.clock.now();
    let mut executor = world.executor(&gate);
    let decision = executor
        .rehydrate(&session_facts(), "the user approved the refund", now)
        .unwrap();
    assert_eq!(decision.reason().as_str(), "approval_expired");
    // ...and the retry is denied, whatever the summary says.
    let (denial, expired) = held(world.refund(&gate, br#"{"amount": 250}"#));
    assert_eq!(expired.code, "approval_expired");
    assert_eq!(denial.rule_ids, ["refunds", rules::EXPIRED]);
    world.verify();
}

#[test]
fn an_approval_in_force_across_a_compaction_survives_it_and_admits_the_call() {
    let world = World::new();
    let gate = gate("");
    let (_, first) = held(world.refund(&gate, br#"{"amount": 250}"#));
    world.decide(&waiting_id(&first), &APPROVE_ONCE).unwrap();
    world
        .executor(&gate)
        .compact(&session_facts(), "summary", "auto")
        .unwrap();
    let decision = world
        .executor(&gate)
        .rehydrate(&session_facts(), "summary", world.clock.now())
        .unwrap();
    assert_eq!(decision.reason().as_str(), "continuity_validated");
    let Admitted::Permitted(_) = world.refund(&gate, br#"{"amount": 250}"#) else {
        panic!("the approval in force admits the call after the compaction");
    };
    // A compaction after it was used carries none: nothing is in force.
    let compaction = world
        .executor(&gate)
        .compact(&session_facts(), "summary 2", "auto")
        .unwrap();
    assert_eq!(compaction.envelope.envelope().approval_id, None);
}

#[test]
fn a_run_says_in_its_records_that_its_authorization_mode_is_human_approved() {
    let world = World::new();
    let rows = |world: &World| world.store.rows(&world.tenant, &world.run).unwrap();
    assert!(!cairn_runtime::approvals::is_human_approved(&rows(&world)));
    let mut recorder = Recorder::resume(
        world.store.clone(),
        world.clock.clone(),
        &world.tenant,
        &world.run,
        options(),
    )
    .unwrap();
    recorder
        .record_boundary(
            cairn_runtime::approvals::human_approved_event().unwrap(),
            None,
        )
        .unwrap();
    assert!(cairn_runtime::approvals::is_human_approved(&rows(&world)));
    // A writer resuming the run asks a person for every call the gate permits; what the gate
    // refuses stays refused.
    let mut executor = Executor::resumed(recorder, &rows(&world), gate(""), "agent");
    let (denial, _) = held(
        executor
            .admit(&common::call("tickets.read", "1", b"{}"))
            .unwrap(),
    );
    assert_eq!(
        denial.rule_ids,
        ["reads", rules::HUMAN_APPROVED, rules::PENDING]
    );
    let Admitted::Denied(forbidden) = executor
        .admit(&common::call(
            "payments.refund",
            "1",
            br#"{"amount": 50000}"#,
        ))
        .unwrap()
    else {
        panic!("forbidden")
    };
    assert_eq!(forbidden.reason(), "forbidden");
}
