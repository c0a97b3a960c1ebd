//! What the multi-process tests' writers share: one allowed step of a tool, recorded.

use cairn_core::Digest;
use cairn_ledger::record::{Admission, AllowDeny, Label, ToolRef};
use cairn_runtime::{Receipt, Recorder, ToolCall};

/// Records an allowed call of `tool` with `args`, under the rule `allow.all`.
pub fn allowed_step(recorder: &mut Recorder, tool: &str, args: &str) -> Receipt {
    recorder
        .record_step(
            &ToolCall {
                tool: ToolRef {
                    name: Label::new(tool).unwrap(),
                    version: Label::new("1").unwrap(),
                },
                args: args.as_bytes(),
                lane: None,
            },
            Admission {
                decision: AllowDeny::Allow,
                policy_set_version: Digest::of(b"policy"),
                rule_ids: vec![Label::new("allow.all").unwrap()],
            },
        )
        .unwrap()
}
