//! `decide` never panics, whatever the call carries, and its answers are internally
//! consistent: an allow always names a permit, a default deny never names anything, and
//! `explain` agrees with `decide`.

use crate::common;

use cairn_core::AllowDeny;
use cairn_policy::{Arguments, DecisionReason, GateRequest, PolicyGate};
use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

const POLICIES: &str = r#"
@id("allow-all") permit(principal, action, resource);
@id("refund-cap") forbid(principal, action == Action::"payments.refund", resource)
  when { context.args has amount && context.args.amount > 10000 };
@id("scaled") forbid(principal, action == Action::"payments.refund", resource)
  when { context.args has amount && context.args.amount * 4 < -1000 };
@id("eur-only") forbid(principal, action == Action::"payments.refund", resource)
  when { context.args has currency && context.args.currency != "EUR" };
@id("lane") forbid(principal, action, resource) when { context has lane && context.lane like "*blocked*" };
@id("ticket") permit(principal, action == Action::"tickets.read", resource)
  when { context.args has ticket_id && context.args.ticket_id like "T-*" };
"#;

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("amount".to_owned()),
        Just("currency".to_owned()),
        Just("ticket_id".to_owned()),
        "[a-z_]{0,8}",
        any::<String>(),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|x| Number::from_f64(x).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("EUR".to_owned()),
            Just("T-1".to_owned()),
            any::<String>()
        ]
        .prop_map(Value::String),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("payments.refund".to_owned()),
        Just("tickets.read".to_owned()),
        Just("kb.search".to_owned()),
        Just("cairn.undeclared".to_owned()),
        any::<String>(),
    ]
}

static GATE: LazyLock<PolicyGate> = LazyLock::new(|| {
    PolicyGate::load(
        &common::sources(&[("p.cedar", POLICIES)]),
        &common::catalog(),
    )
    .unwrap()
});

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn decide_never_panics_and_stays_consistent(
        tool in tool(),
        args in prop::option::of(json()),
        principal in any::<String>(),
        tenant in any::<String>(),
        lane in prop::option::of(prop_oneof![Just("blocked".to_owned()), any::<String>()]),
        version in any::<String>(),
    ) {
        let gate = &*GATE;
        let text = args.as_ref().map(ToString::to_string).unwrap_or_default();
        let args = Arguments::read(text.as_bytes()).unwrap();
        let call = GateRequest {
            mcp: None,
            tenant: &tenant,
            principal: &principal,
            run: "r",
            task: "t",
            lane: lane.as_deref(),
            tool: &tool,
            tool_version: &version,
            args: &args,
        };
        let decision = gate.decide(&call);
        prop_assert_eq!(decision.policy_set_version, gate.version());
        match (&decision.decision, &decision.reason) {
            (AllowDeny::Allow, DecisionReason::Permitted)
            | (AllowDeny::Deny, DecisionReason::Forbidden | DecisionReason::EvaluationError { .. }) => {
                prop_assert!(!decision.rule_ids.is_empty());
            }
            (
                AllowDeny::Deny,
                DecisionReason::DefaultDeny
                | DecisionReason::InvalidArguments { .. }
                | DecisionReason::InvalidRequest { .. },
            ) => prop_assert!(decision.rule_ids.is_empty()),
            (verdict, reason) => prop_assert!(false, "inconsistent {verdict:?} / {reason:?}"),
        }
        let mut sorted = decision.rule_ids.clone();
        sorted.sort();
        prop_assert_eq!(&sorted, &decision.rule_ids);
        prop_assert_eq!(gate.explain(&call).decision, decision);
    }
}
