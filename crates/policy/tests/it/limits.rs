//! Issue 15, item 2: no policy text can overflow the stack. Texts past the limits are
//! refused with `policy_invalid` and their location before Cedar parses them; the deepest
//! texts within the limits load, validate and decide on a thread of `limits::STACK_BYTES`.

use crate::common;

use cairn_core::ErrorCode as _;
use cairn_policy::limits::{MAX_NESTING, MAX_OPERATORS, STACK_BYTES};
use cairn_policy::{PolicyGate, PolicyLoadError};
use common::{call, catalog, sources};
use serde_json::json;

fn permit_when(condition: &str) -> String {
    format!("@id(\"deep\")\npermit(principal, action, resource) when {{ {condition} }};\n")
}

fn load(text: &str) -> Result<PolicyGate, PolicyLoadError> {
    PolicyGate::load(&sources(&[("policies/deep.cedar", text)]), &catalog())
}

/// Runs `work` on a thread with the stack the limits are sized for.
fn on_policy_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(work)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn issue_15_texts_past_the_limits_are_refused_with_their_location() {
    let cases = [
        // The reports' 600 nested parentheses.
        permit_when(&format!("{}true{}", "(".repeat(600), ")".repeat(600))),
        // The reports' 12,800 `&&` terms.
        permit_when(&vec!["true"; 12_800].join(" && ")),
        permit_when(&format!("{}true", "!".repeat(100_000))),
        permit_when(&format!("{}1{}", "[".repeat(5_000), "]".repeat(5_000))),
    ];
    for text in cases {
        // Refused on the test's own (small) thread stack: nothing reached Cedar.
        let err = load(&text).expect_err("refused");
        assert_eq!(err.code(), "policy_invalid", "{err}");
        let at = err.location().expect("located");
        assert_eq!(
            (at.file.as_str(), at.line),
            ("policies/deep.cedar", 2),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("policies/deep.cedar:2:"),
            "{err}"
        );
    }
}

#[test]
fn the_deepest_texts_within_the_limits_load_and_decide() {
    // Three operators a term: `.`, `==` and `&&`.
    let inner = vec!["context.tenant == \"acme\""; MAX_OPERATORS / 3].join(" && ");
    let brackets = MAX_NESTING - 1;
    let cases = [
        // Nesting and operators both at their limits.
        permit_when(&format!(
            "{}{inner}{}",
            "(".repeat(brackets),
            ")".repeat(brackets)
        )),
        permit_when(&vec!["true"; MAX_OPERATORS + 1].join(" && ")),
        permit_when(&(vec!["false"; MAX_OPERATORS].join(" || ") + " || true")),
        permit_when(&vec!["!false"; MAX_OPERATORS / 2].join(" && ")),
        permit_when(&format!(
            "{}true{}",
            "if true then ".repeat(MAX_OPERATORS / 3),
            " else false".repeat(MAX_OPERATORS / 3)
        )),
        permit_when(&format!("{} > 0", vec!["1"; MAX_OPERATORS].join(" + "))),
        permit_when(&{
            let set = format!("{}1{}", "[".repeat(brackets), "]".repeat(brackets));
            format!("{set} == {set}")
        }),
    ];
    for text in cases {
        let allowed = on_policy_stack(move || {
            let gate = load(&text).unwrap_or_else(|err| panic!("{err}"));
            gate.decide(&call("kb.search", Some(&json!({})))).is_allow()
        });
        assert!(allowed);
    }
}

#[test]
fn loading_grows_its_own_stack_on_a_small_thread() {
    let text = permit_when(&format!(
        "{}{}{}",
        "(".repeat(MAX_NESTING - 1),
        vec!["true"; MAX_OPERATORS / 2].join(" && "),
        ")".repeat(MAX_NESTING - 1)
    ));
    let loaded = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || load(&text).map(|gate| gate.policies().len()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(loaded.unwrap(), 1);
}
