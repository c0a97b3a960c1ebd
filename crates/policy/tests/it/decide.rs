//! Decisions: the determining rule ids, forbid over permit, the explicit default deny,
//! undeclared tools, declared arguments and lanes in the context, and failing closed on
//! wrongly typed arguments and on forbid policies that cannot be evaluated.

use crate::common;

use cairn_core::AllowDeny;
use cairn_policy::{
    DecisionReason, Effect, GateDecision, GateRequest, PolicyGate, UNDECLARED_TOOL_ACTION,
};
use common::{call, gate};
use serde_json::json;

const SUPPORT: &str = r#"
@id("allow-support")
permit(principal, action in [Action::"tickets.read", Action::"kb.search", Action::"payments.refund"], resource);

@id("refund-cap")
forbid(principal, action == Action::"payments.refund", resource)
when { context.args has amount && context.args.amount > 10000 };

@id("no-old-kb")
forbid(principal, action == Action::"kb.search", resource)
when { resource.version == "0.9" };
"#;

fn assert_decision(
    decision: &GateDecision,
    verdict: AllowDeny,
    rule_ids: &[&str],
    reason: &DecisionReason,
) {
    assert_eq!(decision.decision, verdict, "{decision:?}");
    assert_eq!(decision.rule_ids, rule_ids, "{decision:?}");
    assert_eq!(&decision.reason, reason, "{decision:?}");
}

#[test]
fn a_permit_names_its_rule_and_the_version() {
    let gate = gate(SUPPORT);
    let decision = gate.decide(&call("tickets.read", Some(&json!({"ticket_id": "T-1"}))));
    assert_decision(
        &decision,
        AllowDeny::Allow,
        &["allow-support"],
        &DecisionReason::Permitted,
    );
    assert_eq!(decision.policy_set_version, gate.version());
    assert!(decision.is_allow());
}

#[test]
fn forbid_beats_permit_and_names_the_forbidding_rule() {
    let gate = gate(SUPPORT);
    let big = json!({"amount": 20000, "currency": "EUR"});
    let decision = gate.decide(&call("payments.refund", Some(&big)));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &["refund-cap"],
        &DecisionReason::Forbidden,
    );

    let small = json!({"amount": 500, "currency": "EUR"});
    let decision = gate.decide(&call("payments.refund", Some(&small)));
    assert_decision(
        &decision,
        AllowDeny::Allow,
        &["allow-support"],
        &DecisionReason::Permitted,
    );

    // The boundary: the cap is strictly greater than 10000.
    let edge = json!({"amount": 10000});
    assert!(
        gate.decide(&call("payments.refund", Some(&edge)))
            .is_allow()
    );
}

#[test]
fn several_determining_rules_are_all_named_in_id_order() {
    let gate = gate(&format!(
        "{SUPPORT}\n@id(\"a-refunds-in-eur\") permit(principal, action == Action::\"payments.refund\", resource) when {{ context.args has currency && context.args.currency == \"EUR\" }};\n\
         @id(\"b-huge\") forbid(principal, action == Action::\"payments.refund\", resource) when {{ context.args has amount && context.args.amount > 1000000 }};"
    ));
    let eur = json!({"amount": 5, "currency": "EUR"});
    let decision = gate.decide(&call("payments.refund", Some(&eur)));
    assert_decision(
        &decision,
        AllowDeny::Allow,
        &["a-refunds-in-eur", "allow-support"],
        &DecisionReason::Permitted,
    );
    let huge = json!({"amount": 2000000});
    let decision = gate.decide(&call("payments.refund", Some(&huge)));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &["b-huge", "refund-cap"],
        &DecisionReason::Forbidden,
    );
}

#[test]
fn a_call_no_rule_covers_is_an_explicit_default_deny() {
    let gate =
        gate("@id(\"tickets\") permit(principal, action == Action::\"tickets.read\", resource);");
    let decision = gate.decide(&call("payments.refund", Some(&json!({"amount": 1}))));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &[],
        &DecisionReason::DefaultDeny,
    );
    // An undeclared tool is not covered by an action-constrained permit either.
    let decision = gate.decide(&call("shell.exec", None));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &[],
        &DecisionReason::DefaultDeny,
    );
}

#[test]
fn an_undeclared_tool_is_allowed_by_an_unconstrained_permit() {
    let gate = gate(
        "@id(\"record-everything\") permit(principal, action, resource);\n\
         @id(\"no-rm\") forbid(principal, action, resource) when { resource.name == \"shell.rm\" };",
    );
    let args = json!({"command": "ls", "amount": 99999999});
    let decision = gate.decide(&call("shell.exec", Some(&args)));
    assert_decision(
        &decision,
        AllowDeny::Allow,
        &["record-everything"],
        &DecisionReason::Permitted,
    );
    let decision = gate.decide(&call("shell.rm", None));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &["no-rm"],
        &DecisionReason::Forbidden,
    );
    // Odd names are just names.
    for tool in ["", "Action::\"x\"", "a\"b\\c", "😀", "kb.search "] {
        assert!(gate.decide(&call(tool, None)).is_allow(), "{tool:?}");
    }
}

#[test]
fn the_reserved_action_name_is_never_admitted() {
    let gate = gate("@id(\"all\") permit(principal, action, resource);");
    let decision = gate.decide(&call(UNDECLARED_TOOL_ACTION, None));
    assert_eq!(decision.decision, AllowDeny::Deny);
    assert!(decision.rule_ids.is_empty());
    assert_eq!(decision.reason.code(), "invalid_request");
}

#[test]
fn a_wrongly_typed_declared_argument_denies_naming_the_field() {
    let gate = gate(SUPPORT);
    for args in [
        json!({"amount": "20000"}),
        json!({"amount": 20000.0}),
        json!({"amount": 1.5}),
        json!({"amount": 9_223_372_036_854_775_808_u64}),
        json!({"amount": null}),
        json!({"amount": [20000]}),
        json!({"amount": {"value": 20000}}),
        json!({"amount": true}),
        json!({"amount": 5, "currency": 978}),
    ] {
        let field = if args.get("currency").is_some() {
            "currency"
        } else {
            "amount"
        };
        let decision = gate.decide(&call("payments.refund", Some(&args)));
        assert_decision(
            &decision,
            AllowDeny::Deny,
            &[],
            &DecisionReason::InvalidArguments {
                field: field.to_owned(),
            },
        );
    }
    // Arguments that are not an object, for a tool that declares fields.
    let decision = gate.decide(&call("payments.refund", Some(&json!([1, 2]))));
    assert_eq!(
        decision.reason,
        DecisionReason::InvalidArguments {
            field: "args".into()
        }
    );
    // A tool that declares nothing does not look at its arguments.
    assert!(
        gate.decide(&call("kb.search", Some(&json!("free text"))))
            .is_allow()
    );
    // No arguments, or JSON null, means no declared field is present.
    assert!(gate.decide(&call("payments.refund", None)).is_allow());
    assert!(
        gate.decide(&call("payments.refund", Some(&json!(null))))
            .is_allow()
    );
    // Extremes of the Long range are fine.
    for amount in [i64::MIN, -1, 0, i64::MAX] {
        let args = json!({"amount": amount});
        let decision = gate.decide(&call("payments.refund", Some(&args)));
        assert_eq!(decision.is_allow(), amount <= 10000, "{amount}");
    }
}

#[test]
fn undeclared_fields_never_reach_a_policy() {
    // A policy cannot even be written against an undeclared field: validation refuses it.
    let refused = PolicyGate::load(
        &common::sources(&[(
            "p.cedar",
            "@id(\"p\") forbid(principal, action == Action::\"payments.refund\", resource) when { context.args.note == \"x\" };",
        )]),
        &common::catalog(),
    );
    assert_eq!(
        cairn_core::ErrorCode::code(&refused.unwrap_err()),
        "policy_invalid"
    );
    // And extra fields in a call change nothing.
    let gate = gate(SUPPORT);
    let plain = json!({"amount": 500});
    let noisy = json!({"amount": 500, "note": "password=hunter2", "nested": {"amount": 99999}});
    assert_eq!(
        gate.decide(&call("payments.refund", Some(&plain))),
        gate.decide(&call("payments.refund", Some(&noisy)))
    );
}

#[test]
fn the_lane_flows_into_the_context() {
    let gate = gate(
        "@id(\"support-lane\") permit(principal, action, resource) when { context has lane && context.lane == \"support\" };",
    );
    let mut request = call("kb.search", None);
    assert_eq!(gate.decide(&request).reason, DecisionReason::DefaultDeny);
    request.lane = Some("support");
    assert_decision(
        &gate.decide(&request),
        AllowDeny::Allow,
        &["support-lane"],
        &DecisionReason::Permitted,
    );
    request.lane = Some("billing");
    assert_eq!(gate.decide(&request).reason, DecisionReason::DefaultDeny);
    // Undeclared tools get the lane too.
    request.tool = "shell.exec";
    request.lane = Some("support");
    assert!(gate.decide(&request).is_allow());
}

#[test]
fn principal_tenant_run_task_and_tool_version_flow_into_the_request() {
    let gate = gate(
        "@id(\"bot\") permit(principal == Agent::\"support-bot\", action, resource) when { context.tenant == \"acme\" && context.run == \"r1\" && context.task == \"t1\" };\n\
         @id(\"no-old-kb\") forbid(principal, action == Action::\"kb.search\", resource) when { resource.version == \"0.9\" };",
    );
    let request = call("kb.search", None);
    assert_decision(
        &gate.decide(&request),
        AllowDeny::Allow,
        &["bot"],
        &DecisionReason::Permitted,
    );
    for changed in [
        GateRequest {
            mcp: None,
            principal: "other-bot",
            ..request
        },
        GateRequest {
            mcp: None,
            tenant: "globex",
            ..request
        },
        GateRequest {
            mcp: None,
            run: "r2",
            ..request
        },
        GateRequest {
            mcp: None,
            task: "t2",
            ..request
        },
    ] {
        assert_eq!(gate.decide(&changed).reason, DecisionReason::DefaultDeny);
    }
    let old = GateRequest {
        mcp: None,
        tool_version: "0.9",
        ..request
    };
    assert_decision(
        &gate.decide(&old),
        AllowDeny::Deny,
        &["no-old-kb"],
        &DecisionReason::Forbidden,
    );
}

#[test]
fn a_forbid_that_fails_to_evaluate_denies() {
    // Multiplying a large amount overflows a 64-bit Long: Cedar skips the policy with an error.
    let gate = gate(
        "@id(\"allow\") permit(principal, action, resource);\n\
         @id(\"scaled-cap\") forbid(principal, action == Action::\"payments.refund\", resource) when { context.args has amount && context.args.amount * 1000000000 > 5000000000000 };",
    );
    assert!(
        gate.decide(&call("payments.refund", Some(&json!({"amount": 10}))))
            .is_allow()
    );
    let overflow = json!({"amount": 100_000_000_000_i64});
    let decision = gate.decide(&call("payments.refund", Some(&overflow)));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &["scaled-cap"],
        &DecisionReason::EvaluationError {
            policy_ids: vec!["scaled-cap".into()],
        },
    );
    let explanation = gate.explain(&call("payments.refund", Some(&overflow)));
    assert_eq!(explanation.failed.len(), 1);
    let failure = explanation.failed.first().unwrap();
    assert_eq!(failure.policy.id, "scaled-cap");
    assert!(failure.message.contains("overflow"), "{}", failure.message);
}

#[test]
fn a_permit_that_fails_to_evaluate_just_does_not_permit() {
    let gate = gate(
        "@id(\"scaled\") permit(principal, action == Action::\"payments.refund\", resource) when { context.args has amount && context.args.amount * 1000000000 < 5000000000000 };",
    );
    let overflow = json!({"amount": 100_000_000_000_i64});
    let decision = gate.decide(&call("payments.refund", Some(&overflow)));
    assert_decision(
        &decision,
        AllowDeny::Deny,
        &[],
        &DecisionReason::DefaultDeny,
    );
    let explanation = gate.explain(&call("payments.refund", Some(&overflow)));
    assert_eq!(
        explanation.failed.first().unwrap().policy.effect,
        Effect::Permit
    );
}

#[test]
fn explain_names_the_determining_policies_with_their_locations() {
    let gate = PolicyGate::load(
        &common::sources(&[("policies/support.cedar", SUPPORT)]),
        &common::catalog(),
    )
    .unwrap();
    let big = json!({"amount": 20000});
    let explanation = gate.explain(&call("payments.refund", Some(&big)));
    assert_eq!(
        explanation.decision,
        gate.decide(&call("payments.refund", Some(&big)))
    );
    assert!(explanation.tool_declared);
    let cap = explanation.determining.first().unwrap();
    assert_eq!(
        (cap.id.as_str(), cap.effect),
        ("refund-cap", Effect::Forbid)
    );
    assert_eq!(cap.at.to_string(), "policies/support.cedar:5:1");
    let text = explanation.to_string();
    assert!(
        text.starts_with("deny (forbidden) under policy set sha256:"),
        "{text}"
    );
    assert!(
        text.contains("determining: `refund-cap` (forbid) at policies/support.cedar:5:1"),
        "{text}"
    );

    let unknown = gate.explain(&call("shell.exec", None));
    assert!(!unknown.tool_declared);
    assert!(unknown.determining.is_empty());
    let text = unknown.to_string();
    assert!(text.contains("default deny"), "{text}");
    assert!(text.contains("not in the catalog"), "{text}");

    // It serialises for `--json` output.
    let value = serde_json::to_value(&explanation).unwrap();
    assert_eq!(value["decision"]["decision"], "deny");
    assert_eq!(value["decision"]["reason"]["kind"], "forbidden");
    assert_eq!(value["determining"][0]["at"]["line"], 5);
}

#[test]
fn the_gate_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PolicyGate>();
    let gate = std::sync::Arc::new(gate(SUPPORT));
    let handles: Vec<_> = (0..4)
        .map(|n| {
            let gate = std::sync::Arc::clone(&gate);
            std::thread::spawn(move || {
                let args = json!({"amount": n * 10000});
                gate.decide(&call("payments.refund", Some(&args)))
                    .is_allow()
            })
        })
        .collect();
    let allowed: Vec<bool> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(allowed, [true, true, false, false]);
}

#[test]
fn resource_scopes_work_with_and_without_conditions_on_the_resource() {
    // No condition reads the resource: the gate skips building the `Tool` entity.
    let gate = gate(
        "@id(\"kb-only\") permit(principal, action, resource == Tool::\"kb.search\");\n\
         @id(\"tools\") permit(principal, action, resource in Tool::\"shell.exec\") when { context.tenant == \"acme\" };",
    );
    assert_decision(
        &gate.decide(&call("kb.search", None)),
        AllowDeny::Allow,
        &["kb-only"],
        &DecisionReason::Permitted,
    );
    assert_decision(
        &gate.decide(&call("shell.exec", None)),
        AllowDeny::Allow,
        &["tools"],
        &DecisionReason::Permitted,
    );
    assert_eq!(
        gate.decide(&call("tickets.read", None)).reason,
        DecisionReason::DefaultDeny
    );
    // A condition reads it for one tool only.
    let gate2 = common::gate(
        "@id(\"all\") permit(principal, action, resource);\n\
         @id(\"old\") forbid(principal, action == Action::\"tickets.read\", resource) when { resource is Tool && resource.version like \"0.*\" };",
    );
    let old = GateRequest {
        mcp: None,
        tool_version: "0.5",
        ..call("tickets.read", None)
    };
    assert_decision(
        &gate2.decide(&old),
        AllowDeny::Deny,
        &["old"],
        &DecisionReason::Forbidden,
    );
    let old_kb = GateRequest {
        mcp: None,
        tool_version: "0.5",
        ..call("kb.search", None)
    };
    assert!(gate2.decide(&old_kb).is_allow());
}

#[test]
fn action_lists_and_unconstrained_policies_combine_per_tool() {
    let gate = gate(
        "@id(\"reads\") permit(principal, action in [Action::\"tickets.read\", Action::\"kb.search\"], resource);\n\
         @id(\"refunds\") permit(principal, action == Action::\"payments.refund\", resource);\n\
         @id(\"tenant-freeze\") forbid(principal, action, resource) when { context.tenant == \"frozen\" };",
    );
    for tool in ["tickets.read", "kb.search"] {
        assert_decision(
            &gate.decide(&call(tool, None)),
            AllowDeny::Allow,
            &["reads"],
            &DecisionReason::Permitted,
        );
    }
    assert_decision(
        &gate.decide(&call("payments.refund", None)),
        AllowDeny::Allow,
        &["refunds"],
        &DecisionReason::Permitted,
    );
    assert_eq!(
        gate.decide(&call("shell.exec", None)).reason,
        DecisionReason::DefaultDeny
    );
    for tool in ["tickets.read", "payments.refund", "shell.exec"] {
        let frozen = GateRequest {
            mcp: None,
            tenant: "frozen",
            ..call(tool, None)
        };
        assert_decision(
            &gate.decide(&frozen),
            AllowDeny::Deny,
            &["tenant-freeze"],
            &DecisionReason::Forbidden,
        );
    }
}

const APPROVALS: &str = r#"
@id("support")
permit(principal, action in [Action::"tickets.read", Action::"payments.refund"], resource);

@id("refund-approval")
@approval("refunds over 100 are approved by a person")
permit(principal, action == Action::"payments.refund", resource)
when { context.args has amount && context.args.amount > 100 };

@id("refund-cap")
forbid(principal, action == Action::"payments.refund", resource)
when { context.args has amount && context.args.amount > 10000 };
"#;

#[test]
fn a_permit_marked_approval_asks_for_a_person_and_a_forbid_still_wins() {
    let gate = gate(APPROVALS);
    let info = gate
        .policies()
        .iter()
        .find(|p| p.id == "refund-approval")
        .unwrap();
    assert_eq!(
        info.approval.as_deref(),
        Some("refunds over 100 are approved by a person")
    );
    // Below the threshold only the plain permit applies: allowed.
    let small = gate.decide(&call("payments.refund", Some(&json!({"amount": 50}))));
    assert_decision(
        &small,
        AllowDeny::Allow,
        &["support"],
        &DecisionReason::Permitted,
    );
    // Above it, the asking permit is satisfied too: a deny for approval, by that rule only.
    let large = gate.decide(&call("payments.refund", Some(&json!({"amount": 500}))));
    assert_decision(
        &large,
        AllowDeny::Deny,
        &["refund-approval"],
        &DecisionReason::ApprovalRequired {
            reason: "refunds over 100 are approved by a person".to_owned(),
        },
    );
    assert_eq!(large.reason.code(), "approval_required");
    let explained = gate.explain(&call("payments.refund", Some(&json!({"amount": 500}))));
    assert!(
        explained
            .to_string()
            .contains("permitted only with a person's approval"),
        "{explained}"
    );
    // Past the cap the forbid decides: no person can lift it.
    let huge = gate.decide(&call("payments.refund", Some(&json!({"amount": 50000}))));
    assert_decision(
        &huge,
        AllowDeny::Deny,
        &["refund-cap"],
        &DecisionReason::Forbidden,
    );
    // The annotation is part of the policy set's version.
    let plain = common::gate(&APPROVALS.replace(
        "@approval(\"refunds over 100 are approved by a person\")\n",
        "",
    ));
    assert_ne!(plain.version(), gate.version());
}
