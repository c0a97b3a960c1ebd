//! A record's digest preimage is RFC 8785: the fast writer agrees byte for byte with the
//! reference canonicaliser on random records of every kind, including non-ASCII labels,
//! every boundary field and integers past 2^53 (which take the reference path).

use cairn_core::canonical::jcs;
use cairn_core::{Digest, Timestamp};
use cairn_ledger::record::{
    Admission, AllowDeny, ApprovalEvent, ArgsRef, BoundaryEvent, DraftEvent, EventRange,
    IntentRecord, Label, RecordDraft, Termination, TerminationReason, ToolRef,
};
use proptest::prelude::*;

fn label() -> impl Strategy<Value = Label> {
    "[a-zA-Z0-9 ._:/\u{e9}\u{4e2d}\u{1f600}\"\\\\-]{1,20}".prop_map(|s| Label::new(s).unwrap())
}

fn opt<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(s)
}

fn digest() -> impl Strategy<Value = Digest> {
    any::<[u8; 32]>().prop_map(Digest::from_bytes)
}

/// An approval's part of a boundary, every optional field present or not, integers past
/// 2^53 included.
fn approval() -> impl Strategy<Value = ApprovalEvent> {
    (
        digest(),
        (opt(label()), opt(label()), opt(label()), label()),
        opt(digest()),
        opt(any::<u64>()),
        opt((label(), label())),
        opt(any::<u64>()),
        opt(any::<i64>()),
    )
        .prop_map(
            |(action_digest, (approver, call_id, nonce, id), policy, step, tool, uses, at)| {
                ApprovalEvent {
                    action_digest,
                    approver,
                    call_id,
                    expires_at: at.and_then(|micros| {
                        Timestamp::from_unix_micros(micros.rem_euclid(4_000_000_000_000_000)).ok()
                    }),
                    id,
                    nonce,
                    policy_set_version: policy,
                    step: step.map(|s| s >> (s % 20)),
                    tool: tool.map(|(name, version)| ToolRef { name, version }),
                    uses,
                }
            },
        )
}

fn event() -> impl Strategy<Value = DraftEvent> {
    let step = (
        label(),
        label(),
        digest(),
        any::<u64>(),
        any::<bool>(),
        digest(),
        prop::collection::vec(label(), 0..4),
        opt(label()),
    )
        .prop_map(
            |(name, version, d, size, allow, policy, rules, agent)| DraftEvent::Step {
                tool: ToolRef { name, version },
                args: ArgsRef {
                    digest: d,
                    size: size >> (size % 20),
                },
                admission: Admission {
                    decision: if allow {
                        AllowDeny::Allow
                    } else {
                        AllowDeny::Deny
                    },
                    policy_set_version: policy,
                    rule_ids: rules,
                },
                // Present or left out, the record's canonical form is the reference's.
                agent,
            },
        );
    let boundary = (
        label(),
        (
            opt(label()),
            opt(label()),
            opt(label()),
            opt(label()),
            opt(label()),
            opt(label()),
            opt(label()),
        ),
        opt((any::<u64>(), any::<u64>())),
        opt(digest()),
        prop::collection::vec(label(), 0..3),
        opt(digest()),
        opt(approval().prop_map(Box::new)),
    )
        .prop_map(
            |(
                event,
                (trigger, envelope, supersedes, reason, key, status, evidence),
                range,
                summary,
                preserved,
                envelope_digest,
                approval,
            )| {
                DraftEvent::Boundary(BoundaryEvent {
                    approval,
                    envelope_id: envelope,
                    envelope_digest,
                    event,
                    evidence_ref: evidence,
                    idempotency_key: key,
                    // Any digest exercises the field's place in the canonical form.
                    lane_digest: summary,
                    preserved,
                    reason,
                    side_effect_status: status,
                    source_event_range: range.map(|(first, last)| EventRange { first, last }),
                    summary_digest: summary,
                    supersedes_envelope_id: supersedes,
                    trigger,
                })
            },
        );
    let terminal = (0..6usize, opt(label())).prop_map(|(r, detail)| {
        DraftEvent::Terminal(Termination {
            detail,
            reason: TerminationReason::ALL[r],
        })
    });
    prop_oneof![step, boundary, terminal]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_preimage_is_the_reference_rfc8785_form(
        event in event(),
        step in prop_oneof![0..1000u64, any::<u64>()],
        lane in opt("[a-z0-9-]{1,12}"),
        observation in opt(digest()),
        prev in digest(),
        micros in 0i64..4_000_000_000_000_000,
    ) {
        let draft = RecordDraft {
            tenant_id: "acme".parse().unwrap(),
            run_id: "run-1".parse().unwrap(),
            task_id: "task-1".parse().unwrap(),
            event,
            lane_id: lane.map(|l| l.parse().unwrap()),
            observation_digest: observation,
            recorded_at: Timestamp::from_unix_micros(micros).unwrap(),
        };
        let prev = (step > 0).then_some(prev);
        let record = IntentRecord::seal(draft, step, prev).unwrap();
        let mut value = serde_json::to_value(&record).unwrap();
        value.as_object_mut().unwrap().remove("digest");
        // A record without an acting subagent has no `agent` key at all: the same bytes as
        // before the field existed.
        prop_assert_eq!(value.get("agent").is_some(), record.agent.is_some());
        let reference = jcs(&value).unwrap();
        prop_assert_eq!(record.preimage_bytes().unwrap(), reference.clone());
        prop_assert_eq!(record.digest, Digest::of(&reference));
    }
}
