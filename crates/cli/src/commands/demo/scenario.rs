//! The canonical support-triage scenario (SPEC §5, issue 4), scripted through the real
//! executor, gate and boundary protocol: the agent reads the request, searches, is refused a
//! refund by a named rule and an export by default, creates a ticket whose answer is lost
//! (`side_effect_unknown`), has its context compacted, is blocked on reconciliation when it
//! rehydrates, has its retry of the write denied, looks the write up by its idempotency key,
//! records the reconciliation, rehydrates (`reauthorization_required`) and goes on through the
//! gate afresh.
//!
//! The summary written at the compaction is deliberately wrong about the write — it says the
//! ticket was not created and should be created again — to show that it carries no authority:
//! the retry it suggests is refused by the durable record.

use std::collections::BTreeMap;

use cairn_continuity::{AuthorizationMode, ContinuityDecision};
use cairn_core::Clock;
use cairn_ledger::record::{Label, ToolRef};
use cairn_runtime::boundary::SessionFacts;
use cairn_runtime::effects::idempotency_key;
use cairn_runtime::reconcile::ObservedOutcome;
use cairn_runtime::{Admitted, CallError, Executor, ToolCall};
use serde_json::{Value, json};

use crate::failure::{CliCode, Failure};

/// The request the agent starts from.
pub(super) const REQUEST: &str =
    "Customer C-0193 says order A-1009 was charged twice. Please sort it out.";

/// The compacted summary: derived, untrusted, and wrong about the ticket write on purpose.
pub(super) const SUMMARY: &str = "Ticket T-4821: duplicate charge ch_2 on order A-1009 \
confirmed; refunds need billing approval. The ticket write failed, so create the ticket again, \
then comment and escalate to billing.";

/// A continuity decision made during the run, placed after the record it followed. A
/// decision blocked on reconciliation writes no record, so the timeline shows it from here.
#[derive(Debug)]
pub(super) struct ContinuityNote {
    /// The step index of the last record written before the decision.
    pub after_step: u64,
    /// The decision.
    pub decision: ContinuityDecision,
}

/// The ticket system the agent writes to. It keys every write by the caller's idempotency
/// key, which is what makes an unknown outcome reconcilable: the write can be looked up.
#[derive(Debug, Default)]
struct TicketSystem {
    by_key: BTreeMap<String, Value>,
}

impl TicketSystem {
    /// Creates the ticket — and, as a flaky upstream would, loses the answer the first time.
    fn create(&mut self, key: &str, args: &Value) -> Result<Value, CallError> {
        let first = self.by_key.is_empty();
        let ticket = self.by_key.entry(key.to_owned()).or_insert_with(|| {
            json!({"ticket_id": "T-4822", "customer": args.get("customer"), "subject": args.get("subject")})
        });
        if first {
            return Err(CallError::OutcomeUnknown(
                "tickets.create: no answer within 30 s after the request was sent".to_owned(),
            ));
        }
        Ok(ticket.clone())
    }

    fn lookup(&self, key: &str) -> Value {
        self.by_key.get(key).map_or_else(
            || json!({"idempotency_key": key, "found": false}),
            |ticket| json!({"idempotency_key": key, "found": true, "ticket": ticket}),
        )
    }
}

/// Asks the gate about one call (the intent record is written before this returns).
fn admit(
    executor: &mut Executor,
    tool: &str,
    version: &str,
    args: &Value,
) -> Result<Admitted, Failure> {
    let bytes =
        serde_json::to_vec(args).map_err(|e| Failure::new(CliCode::INTERNAL, e.to_string()))?;
    let call = ToolCall {
        tool: ToolRef {
            name: Label::new(tool)?,
            version: Label::new(version)?,
        },
        args: &bytes,
        lane: None,
    };
    Ok(executor.admit(&call)?)
}

/// A read-only call: admitted, it runs and returns `result`; denied, the model sees the denial.
fn read(
    executor: &mut Executor,
    tool: &str,
    version: &str,
    args: &Value,
    result: Value,
) -> Result<(), Failure> {
    if let Admitted::Permitted(permit) = admit(executor, tool, version, args)? {
        let _ = executor.execute(permit, || Ok::<_, std::convert::Infallible>(result))?;
    }
    Ok(())
}

/// The session's control facts at the compaction: who the agent acts for, what was delegated
/// and the capability in flight (the ticket write).
fn session_facts(run: &str) -> SessionFacts {
    SessionFacts {
        session_id: format!("session-{run}"),
        principal_id: "user:ops-17".to_owned(),
        authorization_mode: AuthorizationMode::UserDelegated,
        delegated_principal_id: Some("user:ops-17".to_owned()),
        delegated_scope: Some("tickets:write billing:read".to_owned()),
        capability_name: "tickets.create".to_owned(),
        capability_version: "1".to_owned(),
        approval: None,
        objective: "Resolve customer C-0193's duplicate charge on order A-1009 without creating \
                    a duplicate ticket."
            .to_owned(),
        exact_constraint_refs: vec![format!("event:{run}:request")],
        pending_obligations: vec![
            "reconcile the tickets.create write".to_owned(),
            "escalate the refund to billing".to_owned(),
        ],
        sandbox_snapshot_ref: None,
        budget_remaining: Some(20),
    }
}

/// The index of the run's last record.
fn last_step(executor: &mut Executor) -> u64 {
    executor.recorder().next_step().saturating_sub(1)
}

/// Plays the scenario on `executor` (a new run); returns the continuity decisions it made.
pub(super) fn play(
    executor: &mut Executor,
    clock: &dyn Clock,
) -> Result<Vec<ContinuityNote>, Failure> {
    let mut tickets = TicketSystem::default();
    let mut notes = Vec::new();
    let run = executor.recorder().run_id().to_string();

    executor.observe(&json!({"role": "user", "content": REQUEST}))?;
    read(
        executor,
        "tickets.read",
        "1",
        &json!({"ticket_id": "T-4821"}),
        json!({"ticket_id": "T-4821", "customer": "C-0193", "subject": "charged twice for order A-1009", "status": "open"}),
    )?;
    read(
        executor,
        "kb.search",
        "3",
        &json!({"query": "duplicate charge refund policy", "limit": 3}),
        json!({"hits": [{"doc": "KB-112", "title": "Duplicate charges: refunds need billing approval"}]}),
    )?;
    read(
        executor,
        "billing.lookup",
        "2",
        &json!({"order_id": "A-1009"}),
        json!({"order_id": "A-1009", "charges": [{"id": "ch_1", "amount": 4900, "currency": "EUR"}, {"id": "ch_2", "amount": 4900, "currency": "EUR"}]}),
    )?;
    // Forbidden by a named rule: refunds above 20.00 need a billing approval.
    read(
        executor,
        "payments.refund",
        "2",
        &json!({"charge_id": "ch_2", "amount": 4900, "currency": "EUR"}),
        Value::Null,
    )?;
    // No rule covers a bulk export: the gate denies it by default.
    read(
        executor,
        "crm.export_customers",
        "1",
        &json!({"format": "csv"}),
        Value::Null,
    )?;

    // The ticket write: admitted, dispatched with its idempotency key, and its answer lost.
    let create = json!({"customer": "C-0193", "subject": "Duplicate charge ch_2 on order A-1009"});
    if let Admitted::Permitted(permit) = admit(executor, "tickets.create", "1", &create)? {
        let key = idempotency_key(&run, permit.step_index());
        let _ = executor.execute_effect(permit, || tickets.create(&key, &create))?;
    }
    let Some(key) = executor
        .unresolved()
        .iter()
        .next()
        .map(|(k, _)| k.to_owned())
    else {
        return Err(Failure::new(
            CliCode::INTERNAL,
            "the demo's ticket write was expected to end with an unknown outcome",
        ));
    };

    // The context is compacted; the envelope records the unknown write.
    let facts = session_facts(&run);
    executor.compact(&facts, SUMMARY, "auto")?;
    let rehydration = executor.rehydrate(&facts, SUMMARY, clock.now())?;
    notes.push(ContinuityNote {
        after_step: last_step(executor),
        decision: rehydration,
    });

    // Following its summary, the agent tries the write again: the durable record refuses it.
    if let Admitted::Permitted(_) = admit(executor, "tickets.create", "1", &create)? {
        return Err(Failure::new(
            CliCode::INTERNAL,
            "the gate admitted a retry of a write whose outcome is unknown",
        ));
    }

    // Reconciliation: look the write up by its idempotency key and record what was found.
    let found = tickets.lookup(&key);
    read(
        executor,
        "tickets.lookup",
        "1",
        &json!({"idempotency_key": key}),
        found.clone(),
    )?;
    let (outcome, ticket) = match found.pointer("/ticket/ticket_id").and_then(Value::as_str) {
        Some(id) => (ObservedOutcome::Applied, id.to_owned()),
        None => (ObservedOutcome::NotExecuted, "none".to_owned()),
    };
    let evidence = format!("tickets.lookup:{ticket}");
    executor.reconcile(&key, outcome, &evidence)?;

    // Rehydration now validates continuity; the next call still goes through the gate.
    let rehydration = executor.rehydrate(&facts, SUMMARY, clock.now())?;
    notes.push(ContinuityNote {
        after_step: last_step(executor),
        decision: rehydration,
    });
    read(
        executor,
        "tickets.comment",
        "1",
        &json!({"ticket_id": ticket, "body": "Duplicate charge ch_2 confirmed; refund needs billing approval."}),
        json!({"comment_id": "CM-77", "ticket_id": ticket}),
    )?;
    read(
        executor,
        "tickets.escalate",
        "1",
        &json!({"ticket_id": ticket, "queue": "billing", "reason": "refund approval"}),
        json!({"ticket_id": ticket, "queue": "billing", "status": "escalated"}),
    )?;
    Ok(notes)
}
