//! The gate a hook puts on the executor's path: the project's Cedar policy gate, preceded by
//! the session's continuity restrictions.
//!
//! While the session is blocked on reconciliation (a side effect of unknown outcome) or its
//! decision invariants are `conflicting`, `dropped` or missing their snapshot, every
//! *consequential* call is denied with a `cairn.hooks.*` rule, whatever the policy says;
//! read-only calls still go to the policy. The executor then adds its own checks (the blocked
//! capability itself, the lane), so every refusal is one recorded intent record naming the
//! rule that refused it.
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

use std::sync::{Arc, OnceLock};

use cairn_core::Digest;
use cairn_runtime::{DenyCause, Gate, GateRequest, GateVerdict};

use crate::config::ToolClasses;

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

/// Why consequential calls are refused for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restriction {
    /// The rule recorded with each refusal.
    pub rule: &'static str,
    /// The stable reason code.
    pub reason: &'static str,
    /// What the model and the user are told, with the command that resolves it.
    pub message: String,
}

/// The rule while a side effect of unknown outcome awaits reconciliation.
pub const RULE_RECONCILIATION: &str = "cairn.hooks.reconciliation-pending";
/// The rule while a decision is `conflicting`.
pub const RULE_CONFLICTING: &str = "cairn.hooks.decision-conflicting";
/// The rule while a decision is `dropped`.
pub const RULE_DROPPED: &str = "cairn.hooks.decision-dropped";
/// The rule while the pre-boundary decision snapshot is missing.
pub const RULE_EVIDENCE_MISSING: &str = "cairn.hooks.continuity-evidence-missing";
/// The rule when the restrictions were never evaluated (a bug: fail closed).
const RULE_UNEVALUATED: &str = "cairn.hooks.restrictions-unevaluated";

/// The project's policy gate behind the session's restrictions.
pub struct HookGate {
    inner: Arc<dyn Gate>,
    tools: ToolClasses,
    restriction: OnceLock<Option<Restriction>>,
    fault: Option<Fault>,
    /// The session's authorization mode is `human_approved`: every consequential call the
    /// policies permit needs a person's approval too.
    human_approved: bool,
}

impl std::fmt::Debug for HookGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookGate")
            .field("restriction", &self.restriction)
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

impl HookGate {
    /// Wraps `inner`. Until [`HookGate::restrict`] is called, every call is denied.
    #[must_use]
    pub fn new(inner: Arc<dyn Gate>, tools: ToolClasses, fault: Option<Fault>) -> Self {
        Self {
            inner,
            tools,
            restriction: OnceLock::new(),
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

    /// Sets the session's restriction (once; later calls are ignored).
    pub fn restrict(&self, restriction: Option<Restriction>) {
        let _ = self.restriction.set(restriction);
    }

    /// Whether `tool` is consequential.
    #[must_use]
    pub fn is_consequential(&self, tool: &str) -> bool {
        self.tools.is_consequential(tool)
    }

    fn deny(&self, rule: &str, cause: DenyCause) -> GateVerdict {
        GateVerdict::built_in_deny(self, rule, cause)
    }
}

impl Gate for HookGate {
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        if let Some(fault) = self.fault {
            fault.strike();
        }
        match self.restriction.get() {
            None => self.deny(
                RULE_UNEVALUATED,
                DenyCause::Fault {
                    reason: "restrictions_unevaluated",
                },
            ),
            Some(Some(restriction)) if self.tools.is_consequential(request.tool) => self.deny(
                restriction.rule,
                DenyCause::Restricted {
                    reason: restriction.reason,
                    message: restriction.message.clone(),
                },
            ),
            Some(_) if self.human_approved && self.tools.is_consequential(request.tool) => {
                cairn_runtime::approvals::with_a_person(self.inner.decide(request))
            }
            Some(_) => self.inner.decide(request),
        }
    }

    fn policy_set_version(&self) -> Option<Digest> {
        self.inner.policy_set_version()
    }
}
