//! The gate a hook puts on the executor's path: the project's Cedar policy gate, with the
//! session's authorization mode and the test-only faults. (The session's continuity
//! restrictions — a side effect awaiting reconciliation, decisions conflicting or dropped
//! after a compaction — are the executor's: [`cairn_runtime::restrictions`], set by
//! `pre_tool_use` before each call.)
//!
//! In a session whose authorization mode is `human_approved`, every consequential call the
//! policies permit needs a person's approval as well (`cairn.human-approved`): the executor
//! holds it until a person approves exactly it, as for a permit marked `@approval`.
//!
//! # Test-only fault switch
//!
//! `CAIRN_FAULT` makes `decide` fail in one of the ways a process can: `gate-panic`
//! ([`Fault::GatePanic`]) panics, `gate-overflow` overflows the stack, `gate-hang` never
//! returns, and the binary adds the faults that end the process (`gate-abort`, `gate-exit`:
//! [`Fault::GateEndsProcess`] runs the function it hands over; library code never ends the
//! process itself) — to prove that each answers a deny (exit 2) within the deadline. A fault
//! can only ever make a call fail closed: it never allows anything.

use std::sync::Arc;

use cairn_core::Digest;
use cairn_runtime::{Gate, GateRequest, GateVerdict};

use cairn_runtime::restrictions::ToolClasses;

/// Faults a test can inject into a hook process.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// The gate panics while deciding.
    GatePanic,
    /// The gate overflows its thread's stack.
    GateOverflow,
    /// The gate never returns.
    GateHang,
    /// The gate ends the process the way the binary's function does (it aborts, or exits
    /// with status 1).
    GateEndsProcess(fn()),
}

impl Fault {
    /// Parses the `CAIRN_FAULT` values a library can carry out (`gate-panic`,
    /// `gate-overflow`, `gate-hang`); anything else is no fault here.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "gate-panic" => Some(Self::GatePanic),
            "gate-overflow" => Some(Self::GateOverflow),
            "gate-hang" => Some(Self::GateHang),
            _ => None,
        }
    }

    #[expect(
        clippy::panic,
        reason = "the test-only fault switch exists to prove that a panic in the gate fails closed"
    )]
    fn strike(self) {
        match self {
            Self::GatePanic => panic!("injected fault: the gate panicked (CAIRN_FAULT=gate-panic)"),
            Self::GateOverflow => {
                std::hint::black_box(overflow(std::hint::black_box(1)));
            }
            Self::GateEndsProcess(end) => end(),
            Self::GateHang => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
        }
    }
}

/// Recurses until the stack is gone (for [`Fault::GateOverflow`]); the condition is never
/// true, but the compiler cannot know it.
fn overflow(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if std::hint::black_box(depth) == u64::MAX {
        return 0;
    }
    overflow(depth + 1).wrapping_add(frame.iter().sum::<u64>())
}

/// The project's policy gate, as a hook session decides with it.
pub struct HookGate {
    inner: Arc<dyn Gate>,
    tools: ToolClasses,
    fault: Option<Fault>,
    /// The session's authorization mode is `human_approved`: every consequential call the
    /// policies permit needs a person's approval too.
    human_approved: bool,
}

impl std::fmt::Debug for HookGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookGate")
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

impl HookGate {
    /// Wraps `inner`.
    #[must_use]
    pub fn new(inner: Arc<dyn Gate>, tools: ToolClasses, fault: Option<Fault>) -> Self {
        Self {
            inner,
            tools,
            fault,
            human_approved: false,
        }
    }

    /// Asks a person for every consequential call the policies permit (the session's
    /// authorization mode is `human_approved`).
    #[must_use]
    pub const fn with_a_person_for_every_call(mut self) -> Self {
        self.human_approved = true;
        self
    }

    /// Whether `tool` is consequential.
    #[must_use]
    pub fn is_consequential(&self, tool: &str) -> bool {
        self.tools.is_consequential(tool)
    }
}

impl Gate for HookGate {
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        if let Some(fault) = self.fault {
            fault.strike();
        }
        if self.human_approved && self.tools.is_consequential(request.tool) {
            cairn_runtime::approvals::with_a_person(self.inner.decide(request))
        } else {
            self.inner.decide(request)
        }
    }

    fn policy_set_version(&self) -> Option<Digest> {
        self.inner.policy_set_version()
    }
}
