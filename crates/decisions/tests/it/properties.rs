//! Properties: formatting never looks like drift (any key order, NFC or NFD spelling gives
//! the same value digest), any change of a string does, and the whole-set state is always
//! the most severe per-decision state.

use crate::common;

use cairn_decisions::{DecisionState, Observation, digest_value};
use common::*;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Strings mixing ASCII with letters that have a decomposed form.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("a"),
            Just("z"),
            Just("/"),
            Just("\u{e9}"),
            Just("\u{fc}"),
            Just("\u{c5}"),
            Just("\u{1e69}"),
        ],
        1..8,
    )
    .prop_map(|parts| parts.concat())
}

fn decompose(s: &str) -> String {
    s.replace('\u{e9}', "e\u{301}")
        .replace('\u{fc}', "u\u{308}")
        .replace('\u{c5}', "A\u{30a}")
        .replace('\u{1e69}', "s\u{323}\u{307}")
}

proptest! {
    #[test]
    fn key_order_and_unicode_form_never_change_the_digest(
        entries in proptest::collection::btree_map("[a-z]{1,6}", text(), 1..6),
    ) {
        let forward: Map<String, Value> =
            entries.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        // serde_json's map sorts keys, so build the other spelling as text in reverse order.
        let reversed_text = format!(
            "{{{}}}",
            entries
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", json!(k), json!(decompose(v))))
                .collect::<Vec<_>>()
                .join(",")
        );
        let reversed: Value = serde_json::from_str(&reversed_text).unwrap();
        let a = digest_value(&scope(), &Value::Object(forward), &key()).unwrap();
        let b = digest_value(&scope(), &reversed, &key()).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn any_change_of_a_value_changes_the_digest(a in text(), b in text()) {
        prop_assume!(decompose(&a) != decompose(&b));
        let da = digest_value(&scope(), &json!({"v": a}), &key()).unwrap();
        let db = digest_value(&scope(), &json!({"v": b}), &key()).unwrap();
        prop_assert_ne!(da, db);
    }

    #[test]
    fn the_set_state_is_the_most_severe_decision_state(
        picks in proptest::collection::vec(0u8..4, 3),
    ) {
        let kinds = [scope(), approval_boundary(), acceptance_test()];
        let mut after = Vec::new();
        for (kind, pick) in kinds.iter().zip(&picks) {
            let v = value(kind);
            match pick {
                0 => after.push(seen(kind.clone(), &v, 1)),
                1 => after.push(seen(kind.clone(), &json!("changed"), 2)),
                2 => after.push(Observation::absent(kind.clone(), t(30), Some("hook:x")).unwrap()),
                _ => {} // never observed: unverified
            }
        }
        let c = judge(&snapshot3(), &after, &[]);
        let worst = c.decisions().iter().map(|d| d.state()).max_by_key(|s| s.rank()).unwrap();
        prop_assert_eq!(c.state(), worst.into());
        let expect = picks.iter().map(|p| match p {
            0 => DecisionState::Preserved,
            1 => DecisionState::Conflicting,
            2 => DecisionState::Dropped,
            _ => DecisionState::Unverified,
        }).max_by_key(|s| s.rank()).unwrap();
        prop_assert_eq!(c.state(), expect.into());
    }
}
