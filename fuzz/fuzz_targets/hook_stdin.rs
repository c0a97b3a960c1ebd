//! Hook stdin for both hosts: whatever the bytes, the answer exits 0 or 2, and a
//! `PreToolUse` is let through (exit 0) only when the policy allows exactly its argument
//! bytes.

#![no_main]

#[path = "common.rs"]
mod common;

use cairn_hooks::Host;
use cairn_hooks::input::Event;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fixture = &*common::HOOK;
    for host in [Host::ClaudeCode, Host::Codex] {
        let answer = cairn_hooks::handle(host, data, &fixture.env);
        assert!(answer.exit == 0 || answer.exit == 2, "exit {}", answer.exit);
        if answer.exit != 0 {
            continue;
        }
        assert!(!answer.denies, "a deny that exits 0");
        match cairn_hooks::input::parse(host, data) {
            Ok(input) => {
                if let Event::PreToolUse(tool) = &input.event {
                    assert!(
                        common::allows(&fixture.root, &tool.name, tool.input.get().as_bytes()),
                        "let through what the policy does not allow: {} {}",
                        tool.name,
                        tool.input.get()
                    );
                }
            }
            Err(_) => assert!(
                !cairn_hooks::input::blocks_on_failure(data),
                "unreadable input that must block was let through"
            ),
        }
    }
});
