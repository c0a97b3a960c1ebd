//! A gate that admits every call, for tests of what happens around the gate (recording,
//! crashes, reconciliation, lanes).

use cairn_core::Digest;
use cairn_ledger::record::Label;
use cairn_runtime::{DenyCause, Gate, GateRequest, GateVerdict};

/// Admits every call under the one rule it names.
#[derive(Debug, Clone, Copy)]
pub struct AllowAll(pub &'static str);

impl Gate for AllowAll {
    fn decide(&self, _: &GateRequest<'_>) -> GateVerdict {
        let version = Digest::of(b"policy-v1");
        match Label::new(self.0) {
            Ok(rule) => GateVerdict::allow(version, vec![rule]),
            // A rule name that is not a label: deny, as a real gate would fail closed.
            Err(_) => GateVerdict::deny(
                version,
                Vec::new(),
                DenyCause::Fault {
                    reason: "invalid_request",
                },
            ),
        }
    }
}
