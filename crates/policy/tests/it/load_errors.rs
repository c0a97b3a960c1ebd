//! Load-time refusals: malformed policies, missing, invalid and duplicate ids, templates and
//! schema-validation failures are errors with a stable code and the location to jump to —
//! never a gate that silently allows.

use crate::common;

use cairn_core::AllowDeny;
use cairn_core::ErrorCode;
use cairn_policy::{Location, PolicyGate, PolicyLoadError, ToolCatalog};
use common::{call, catalog, load_error, sources};

fn at(file: &str, line: usize, column: usize) -> Location {
    Location {
        file: file.to_owned(),
        line,
        column,
    }
}

#[test]
fn a_malformed_policy_is_a_located_parse_error() {
    let good = "@id(\"kb\")\npermit(principal, action == Action::\"kb.search\", resource);\n";
    let bad = "// refunds\n@id(\"ok\")\npermit(principal, action, resource);\n\n@id(\"bad\")\npermit(principal, action, resource)\n  when { context.tenant == };\n";
    let err = load_error(&[("policies/kb.cedar", good), ("policies/support.cedar", bad)]);
    assert_eq!(err.code(), "policy_parse");
    assert_eq!(err.location(), Some(&at("policies/support.cedar", 7, 28)));
    let text = err.to_string();
    assert!(
        text.starts_with("policies/support.cedar:7:28: malformed policy: "),
        "{text}"
    );
}

#[test]
fn a_missing_semicolon_points_into_the_file() {
    let bad = "@id(\"a\")\npermit(principal, action, resource)\n@id(\"b\")\nforbid(principal, action, resource);\n";
    let err = load_error(&[("p.cedar", bad)]);
    assert_eq!(err.code(), "policy_parse");
    assert_eq!(err.location().unwrap().line, 3, "{err}");
}

#[test]
fn a_policy_without_an_id_is_refused_where_it_starts() {
    let text = "@id(\"first\")\npermit(principal, action == Action::\"kb.search\", resource);\n\n// no id below\n   forbid(principal, action, resource);\n";
    let err = load_error(&[("policies/a.cedar", text)]);
    assert_eq!(err.code(), "policy_missing_id");
    assert_eq!(err.location(), Some(&at("policies/a.cedar", 5, 4)));
    assert!(
        err.to_string().starts_with("policies/a.cedar:5:4: "),
        "{err}"
    );

    // Another annotation is not an id.
    let err = load_error(&[(
        "b.cedar",
        "@reason(\"x\") permit(principal, action, resource);",
    )]);
    assert_eq!(err.code(), "policy_missing_id");
}

#[test]
fn empty_long_and_control_character_ids_are_refused() {
    for (text, reason) in [
        (
            "@id(\"\") permit(principal, action, resource);",
            "must not be empty",
        ),
        (
            "@id permit(principal, action, resource);",
            "must not be empty",
        ),
        (
            "@id(\"a\\nb\") permit(principal, action, resource);",
            "control",
        ),
    ] {
        let err = load_error(&[("p.cedar", text)]);
        assert_eq!(err.code(), "policy_invalid_id", "{text}");
        assert!(err.to_string().contains(reason), "{err}");
    }
    let long = format!(
        "@id(\"{}\") permit(principal, action, resource);",
        "x".repeat(257)
    );
    assert_eq!(
        load_error(&[("p.cedar", &long)]).code(),
        "policy_invalid_id"
    );
}

#[test]
fn a_duplicate_id_names_both_places() {
    let a = "@id(\"refund-cap\")\nforbid(principal, action == Action::\"payments.refund\", resource);\n";
    let b = "\n\n@id(\"refund-cap\")\npermit(principal, action, resource);\n";
    let err = load_error(&[("policies/a.cedar", a), ("policies/b.cedar", b)]);
    assert_eq!(err.code(), "policy_duplicate_id");
    match &err {
        PolicyLoadError::DuplicateId {
            id,
            first,
            at: second,
        } => {
            assert_eq!(id, "refund-cap");
            assert_eq!(first, &at("policies/a.cedar", 1, 1));
            assert_eq!(second, &at("policies/b.cedar", 3, 1));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "policies/b.cedar:3:1: duplicate policy id `refund-cap`, first used at policies/a.cedar:1:1"
    );
    // Within one file too.
    let both = format!("{a}{b}");
    assert_eq!(
        load_error(&[("p.cedar", &both)]).code(),
        "policy_duplicate_id"
    );
}

#[test]
fn templates_are_refused() {
    let text = "@id(\"ok\") permit(principal, action, resource);\n@id(\"t\")\npermit(principal == ?principal, action, resource);\n";
    let err = load_error(&[("p.cedar", text)]);
    assert_eq!(err.code(), "policy_template");
    assert_eq!(err.location(), Some(&at("p.cedar", 2, 1)));
}

#[test]
fn a_misspelt_argument_is_refused_at_load() {
    let text = "@id(\"ok\")\npermit(principal, action, resource);\n\n@id(\"refund-cap\")\nforbid(principal, action == Action::\"payments.refund\", resource)\n  when { context.args has amount && context.args.amout > 10000 };\n";
    let err = load_error(&[("policies/payments.cedar", text)]);
    assert_eq!(err.code(), "policy_invalid");
    match &err {
        PolicyLoadError::Invalid {
            at: where_,
            policy_id,
            message,
        } => {
            assert_eq!(policy_id, "refund-cap");
            assert_eq!(where_, &at("policies/payments.cedar", 6, 37));
            assert!(message.contains("amout"), "{message}");
            assert!(message.contains("did you mean `amount`?"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("policies/payments.cedar:6:37: policy `refund-cap` is invalid: ")
    );
}

#[test]
fn other_schema_violations_are_refused_at_load() {
    for (what, text) in [
        (
            "unknown principal attribute",
            "@id(\"p\") permit(principal, action, resource) when { principal.nonexistent == \"x\" };",
        ),
        (
            "string compared to a long",
            "@id(\"p\") permit(principal, action == Action::\"payments.refund\", resource) when { context.args has currency && context.args.currency > 3 };",
        ),
        (
            "undeclared argument field",
            "@id(\"p\") permit(principal, action == Action::\"tickets.read\", resource) when { context.args.secret == \"x\" };",
        ),
        (
            "unguarded optional argument",
            "@id(\"p\") forbid(principal, action == Action::\"payments.refund\", resource) when { context.args.amount > 10 };",
        ),
        (
            "unguarded optional lane",
            "@id(\"p\") permit(principal, action, resource) when { context.lane == \"support\" };",
        ),
        (
            "unknown entity type",
            "@id(\"p\") permit(principal == User::\"alice\", action, resource);",
        ),
        (
            "unknown action",
            "@id(\"p\") permit(principal, action == Action::\"payments.refnud\", resource);",
        ),
        (
            "unknown resource attribute",
            "@id(\"p\") permit(principal, action, resource) when { resource.owner == \"x\" };",
        ),
    ] {
        let err = load_error(&[("policies/p.cedar", text)]);
        assert_eq!(err.code(), "policy_invalid", "{what}: {err}");
        let location = err.location().unwrap();
        assert_eq!(
            (location.file.as_str(), location.line),
            ("policies/p.cedar", 1),
            "{what}"
        );
        assert!(
            location.column > 1,
            "{what}: expected the expression's column, got {err}"
        );
    }
}

#[test]
fn unconstrained_policies_validate_even_with_an_empty_catalog() {
    let text = "@id(\"all\") permit(principal, action, resource);\n@id(\"acme\") permit(principal, action, resource) when { context.tenant == \"acme\" && resource.version like \"1.*\" };\n@id(\"lane\") forbid(principal, action, resource) when { context has lane && context.lane == \"x\" };";
    for catalog in [ToolCatalog::default(), catalog()] {
        let gate = PolicyGate::load(&sources(&[("p.cedar", text)]), &catalog).unwrap();
        assert_eq!(gate.policies().len(), 3);
    }
    // The reserved action gives the checker something to check a typo against.
    let typo =
        "@id(\"acme\") permit(principal, action, resource) when { context.tenat == \"acme\" };";
    let err =
        PolicyGate::load(&sources(&[("p.cedar", typo)]), &ToolCatalog::default()).unwrap_err();
    assert_eq!(err.code(), "policy_invalid");
}

#[test]
fn all_findings_are_reported_in_file_order() {
    let a = "@id(\"x\") permit(principal, action, resource) when { principal.nope };\n";
    let b =
        "permit(principal, action, resource);\n@id(\"x\") permit(principal, action, resource);\n";
    let c = "@id(\"y\") permit(principal, action, resource) when { };\n";
    let errors = PolicyGate::load_with_all_errors(
        &sources(&[("a.cedar", a), ("b.cedar", b), ("c.cedar", c)]),
        &catalog(),
    )
    .unwrap_err();
    let codes: Vec<&str> = errors.iter().map(ErrorCode::code).collect();
    assert!(codes.contains(&"policy_parse"), "{codes:?}");
    assert!(codes.contains(&"policy_missing_id"), "{codes:?}");
    assert!(codes.contains(&"policy_duplicate_id"), "{codes:?}");
    assert!(codes.contains(&"policy_invalid"), "{codes:?}");
    // `load` reports the first of them.
    let first = PolicyGate::load(
        &sources(&[("a.cedar", a), ("b.cedar", b), ("c.cedar", c)]),
        &catalog(),
    )
    .unwrap_err();
    assert_eq!(&first, errors.first().unwrap());
}

#[test]
fn an_empty_policy_set_loads_and_denies_everything() {
    for files in [
        vec![],
        vec![("empty.cedar", ""), ("comments.cedar", "// later\n")],
    ] {
        let gate = PolicyGate::load(&sources(&files), &catalog()).unwrap();
        assert!(gate.policies().is_empty());
        let decision = gate.decide(&call("kb.search", None));
        assert_eq!(decision.decision, AllowDeny::Deny);
        assert!(decision.rule_ids.is_empty());
    }
}

#[test]
fn policies_lists_ids_locations_and_effects_in_source_order() {
    let a = "// header\n\n@id(\"b-rule\")\npermit(principal, action, resource);\n";
    let b = "@id(\"a-rule\") forbid(principal, action == Action::\"kb.search\", resource);\n  @id(\"c-rule\") permit(principal, action, resource);";
    let gate =
        PolicyGate::load(&sources(&[("one.cedar", a), ("two.cedar", b)]), &catalog()).unwrap();
    let listed: Vec<(String, String, String)> = gate
        .policies()
        .iter()
        .map(|p| (p.id.clone(), p.at.to_string(), p.effect.to_string()))
        .collect();
    assert_eq!(
        listed,
        [
            ("b-rule".into(), "one.cedar:3:1".into(), "permit".into()),
            ("a-rule".into(), "two.cedar:1:1".into(), "forbid".into()),
            ("c-rule".into(), "two.cedar:2:3".into(), "permit".into()),
        ]
    );
}

#[test]
fn catalog_errors_have_their_own_code() {
    let err = ToolCatalog::from_json(
        "tools.json",
        r#"{"tools": {"payments.refund": {"args": {"amount": "Integer"}}}}"#,
    )
    .unwrap_err();
    assert_eq!(err.code(), "tool_catalog");
    assert!(
        err.to_string()
            .starts_with("tools.json: tools.\"payments.refund\".args.amount: "),
        "{err}"
    );
}

#[test]
fn a_policy_that_can_never_apply_is_refused() {
    // `has` on an undeclared field is false for every request: a forbid written this way
    // would never fire, so it is refused rather than loaded as dead code.
    for text in [
        "@id(\"p\") forbid(principal, action, resource) when { context.args has secret };",
        "@id(\"p\") forbid(principal, action == Action::\"tickets.read\", resource) when { context.args has amount };",
        "@id(\"p\") permit(principal, action, resource) when { false };",
    ] {
        let err = load_error(&[("p.cedar", text)]);
        assert_eq!(err.code(), "policy_invalid", "{text}");
        assert!(err.to_string().contains("impossible"), "{err}");
    }
}

#[test]
fn bidirectional_control_characters_are_refused() {
    let text = "@id(\"p\") permit(principal, action, resource) when { context.tenant == \"acme\u{202E}\" };";
    assert_eq!(load_error(&[("p.cedar", text)]).code(), "policy_invalid");
}

#[test]
fn a_finding_repeated_for_every_action_is_reported_once() {
    let text =
        "@id(\"p\") permit(principal, action, resource) when { context.lane == \"support\" };";
    let errors =
        PolicyGate::load_with_all_errors(&sources(&[("p.cedar", text)]), &catalog()).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let message = errors.first().unwrap().to_string();
    assert!(message.contains("context has lane"), "{message}");
    assert!(!message.contains("cairn.undeclared"), "{message}");
}

#[test]
fn mixed_script_strings_are_warnings_not_errors() {
    let text = "@id(\"p\") permit(principal, action, resource) when { context.tenant == \"p\u{0430}ypal\" };";
    let gate = PolicyGate::load(&sources(&[("p.cedar", text)]), &catalog()).unwrap();
    let warnings = gate.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings.first().unwrap().policy_id, "p");
}

#[test]
fn an_approval_on_a_forbid_or_one_that_cannot_be_shown_is_refused() {
    for (text, reason) in [
        (
            "@id(\"f\") @approval(\"ask\") forbid(principal, action, resource);",
            "only a `permit` can ask",
        ),
        (
            "@id(\"p\") @approval(\"a\\nb\") permit(principal, action, resource);",
            "control",
        ),
    ] {
        let err = load_error(&[("p.cedar", text)]);
        assert_eq!(err.code(), "policy_invalid_approval", "{text}");
        assert!(err.to_string().contains(reason), "{err}");
        assert_eq!(err.location(), Some(&at("p.cedar", 1, 1)));
    }
    let long = format!(
        "@id(\"p\") @approval(\"{}\") permit(principal, action, resource);",
        "x".repeat(257)
    );
    assert_eq!(
        load_error(&[("p.cedar", &long)]).code(),
        "policy_invalid_approval"
    );
    // Without text, the annotation asks with the default words.
    let gate = PolicyGate::load(
        &sources(&[(
            "p.cedar",
            "@id(\"p\") @approval permit(principal, action, resource);",
        )]),
        &catalog(),
    )
    .unwrap();
    assert_eq!(
        gate.policies()[0].approval.as_deref(),
        Some(cairn_policy::DEFAULT_APPROVAL_REASON)
    );
}
