//! A gate that admits every call, for tests of what happens around the gate (recording,
//! crashes, reconciliation, lanes).

use cairn_core::{AllowDeny, Digest};
use cairn_ledger::record::{Admission, Label};
use cairn_runtime::{Gate, GateRequest, GateVerdict};

/// Admits every call under the one rule it names.
#[derive(Debug, Clone, Copy)]
pub struct AllowAll(pub &'static str);

impl Gate for AllowAll {
    fn decide(&self, _: &GateRequest<'_>) -> GateVerdict {
        match Label::new(self.0) {
            Ok(rule) => GateVerdict {
                admission: Admission {
                    decision: AllowDeny::Allow,
                    policy_set_version: Digest::of(b"policy-v1"),
                    rule_ids: vec![rule],
                },
                reason: "permitted",
            },
            // A rule name that is not a label: deny, as a real gate would fail closed.
            Err(_) => GateVerdict {
                admission: Admission {
                    decision: AllowDeny::Deny,
                    policy_set_version: Digest::of(b"policy-v1"),
                    rule_ids: Vec::new(),
                },
                reason: "invalid_request",
            },
        }
    }
}
