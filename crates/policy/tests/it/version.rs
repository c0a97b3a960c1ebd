//! The policy-set version changes when, and only when, the policy set (or the catalog)
//! changes in meaning: reformatting, comments, reordering and splitting files leave it alone;
//! every semantic edit moves it.

use crate::common;

use cairn_core::Digest;
use cairn_policy::{PolicyGate, ToolCatalog};
use common::{catalog, sources};

const BASE: &str = r#"@id("allow-tickets")
permit(principal, action == Action::"tickets.read", resource);

@id("refund-cap")
@reason("large refunds need a human")
forbid(principal, action == Action::"payments.refund", resource)
when { context.args has amount && context.args.amount > 10000 };
"#;

fn version(files: &[(&str, &str)]) -> Digest {
    PolicyGate::load(&sources(files), &catalog())
        .unwrap_or_else(|err| panic!("should load: {err}"))
        .version()
}

fn base() -> Digest {
    version(&[("policies/main.cedar", BASE)])
}

#[test]
fn version_is_a_sha256_digest() {
    assert!(base().to_string().starts_with("sha256:"));
    assert_eq!(base(), base());
}

#[test]
fn reformatting_does_not_change_the_version() {
    let reformatted = r#"
// Support agents may read tickets.
@id("allow-tickets") permit(
    principal,
    action == Action::"tickets.read",
    resource
);   // trailing comment
"#;
    let cap = "\n\n   @id(\"refund-cap\")   @reason(\"large refunds need a human\")\n\tforbid (principal, action == Action::\"payments.refund\", resource)\n\twhen {\n\t\tcontext.args has amount\n\t\t&& context.args.amount > 10000 // the cap\n\t};\n";
    let whole = format!("{reformatted}{cap}");
    assert_eq!(version(&[("policies/main.cedar", &whole)]), base());

    // CRLF line endings.
    assert_eq!(
        version(&[("policies/main.cedar", &BASE.replace('\n', "\r\n"))]),
        base()
    );
}

#[test]
fn reordering_and_splitting_files_do_not_change_the_version() {
    let (tickets, cap) = BASE.split_at(BASE.find("@id(\"refund-cap\")").unwrap());
    let reordered = format!("{cap}\n{tickets}");
    assert_eq!(version(&[("policies/main.cedar", &reordered)]), base());
    assert_eq!(
        version(&[("policies/a.cedar", tickets), ("policies/b.cedar", cap)]),
        base()
    );
    assert_eq!(
        version(&[("policies/z.cedar", cap), ("policies/y.cedar", tickets)]),
        base()
    );
    // An extra file with only comments adds no policy.
    assert_eq!(
        version(&[
            ("policies/main.cedar", BASE),
            ("policies/notes.cedar", "// nothing here yet\n")
        ]),
        base()
    );
}

#[test]
fn every_semantic_edit_changes_the_version() {
    // Each edit but the last puts `to` in place of `from` (found once in the text).
    let replacements = [
        ("effect", "permit(principal", "forbid(principal"),
        ("condition constant", "> 10000", "> 10001"),
        ("condition operator", "> 10000", ">= 10000"),
        ("scope", "Action::\"tickets.read\"", "Action::\"kb.search\""),
        (
            "principal scope",
            "permit(principal,",
            "permit(principal == Agent::\"bot\",",
        ),
        ("id", "\"refund-cap\"", "\"refund-limit\""),
        (
            "annotation value",
            "large refunds need a human",
            "large refunds need review",
        ),
        (
            "annotation added",
            "@id(\"allow-tickets\")",
            "@id(\"allow-tickets\") @owner(\"support\")",
        ),
        (
            "condition added",
            "resource);\n\n@id(\"refund-cap\")",
            "resource) when { context.tenant == \"acme\" };\n\n@id(\"refund-cap\")",
        ),
    ];
    let removed = BASE[BASE.find("@id(\"refund-cap\")").unwrap()..].to_owned();
    let edits = replacements
        .iter()
        .map(|&(what, from, to)| (what, BASE.replacen(from, to, 1)))
        .chain([("policy removed", removed)]);
    let mut seen = vec![base()];
    for (what, text) in edits {
        assert_ne!(text, BASE, "edit `{what}` did not change the text");
        let edited = version(&[("policies/main.cedar", &text)]);
        assert!(
            !seen.contains(&edited),
            "edit `{what}` did not give a new version"
        );
        seen.push(edited);
    }
}

#[test]
fn the_catalog_is_part_of_the_version_but_not_its_formatting() {
    let other = ToolCatalog::from_json(
        "tools.json",
        r#"{"tools": {"payments.refund": {"args": {"amount": "Long", "currency": "String", "reason": "String"}},
            "tickets.read": {"args": {"ticket_id": "String"}}, "kb.search": {}}}"#,
    )
    .unwrap();
    let with_other = PolicyGate::load(&sources(&[("p.cedar", BASE)]), &other)
        .unwrap()
        .version();
    assert_ne!(with_other, base());

    let reformatted = ToolCatalog::from_json(
        "tools.json",
        r#"{ "tools" : { "kb.search" : { "args": {} },
              "tickets.read": {"args": {"ticket_id": "String"}},
              "payments.refund": {"args": {"currency": "String", "amount": "Long"}} } }"#,
    )
    .unwrap();
    let with_reformatted = PolicyGate::load(&sources(&[("p.cedar", BASE)]), &reformatted)
        .unwrap()
        .version();
    assert_eq!(with_reformatted, base());
}

#[test]
fn the_empty_set_has_a_stable_version_of_its_own() {
    let empty = PolicyGate::load(&[], &ToolCatalog::default()).unwrap();
    let comments = PolicyGate::load(
        &sources(&[("a.cedar", "// none\n")]),
        &ToolCatalog::default(),
    )
    .unwrap();
    assert_eq!(empty.version(), comments.version());
    assert_ne!(empty.version(), base());
}
