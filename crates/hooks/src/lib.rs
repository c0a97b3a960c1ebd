//! Cairn as Claude Code, Codex, Gemini CLI and Copilot CLI hooks (SPEC §9.2): `cairn hook
//! claude-code|codex|gemini-cli|copilot-cli` read the host's hook JSON on stdin, put every
//! tool call through the policy gate, lane scope, reconciliation state and decision invariants, write one intent
//! record per call, carry the boundary protocol across compactions, and answer in the host's
//! format. `cairn hooks install` writes the host's settings.
//!
//! A session's run is named after the host and the session:
//!
//! ```
//! use cairn_hooks::{Host, run_base};
//!
//! // Each session is one run, named after the host and the session id.
//! assert_eq!(run_base(Host::ClaudeCode, "0f8e-42"), "cc-0f8e-42");
//! // A session id that is not a clean run id keeps a digest of itself, so ids never collide.
//! let odd = run_base(Host::Codex, "a/b c");
//! assert!(odd.starts_with("codex-a-b-c-") && odd != run_base(Host::Codex, "a-b-c"));
//! ```
//!
//! This is the only crate that knows the hooks' JSON: [`input`] converts it by hand into
//! host-neutral events, [`answer`] renders the answers, [`install`] edits the hosts'
//! settings files. Everything else calls the runtime (`cairn_runtime::Executor`).
//!
//! - [`engine`]: one invocation — [`handle`] parses, finds the project
//!   ([`project::Binding`]: the one the hook names, the session's, or the nearest `.cairn/`
//!   at or above the payload's `cwd`; none: nothing is recorded, a `PreToolUse` is denied
//!   and every other event passes), locks the session, acts and answers; it never panics
//!   and never fails open.
//! - [`session`]: what survives between invocations (`.cairn/sessions/<run>.json`).
//! - [`gate`]: the session's restrictions in front of the project's Cedar gate, and the
//!   test-only fault switch.
//! - [`outcome`]: what a `PostToolUse` says of a call's outcome, read against the shapes
//!   the pinned hosts report (anything else is unknown), and Claude Code's report of a
//!   background task's end.
//! - `tools` and `boundary`: the events (their module docs state the decisions: which
//!   failures are unknown side effects, `Stop` versus `SessionEnd`, the session facts).
//! - [`config`]: `.cairn/hooks.json`, including which tools are consequential.
//! - [`context`]: the context re-injected after a compaction.
//! - [`client`]: what both hook commands do around the call — read stdin by the deadline,
//!   find the project, answer in the host's format with exit 0 or 2 only.
//! - `resident`: the resident hook server (`cairn hooks serve`) and the client side that
//!   `cairn hook` tries first, so a warm process answers instead of a cold one.
//!
//! # Architecture invariants
//!
//! - A `PreToolUse` that cannot be decided is denied with exit 2 — a corrupt store, an
//!   invalid configuration, an unreadable input, a panic. No failure path answers "allow",
//!   and no exit code other than 0 and 2 is ever used (the hosts let a call through on any
//!   other). A deny always exits 2, so exit 0 means the call may run — except as written for
//!   Copilot CLI, which refuses on every other exit code and shows the model a refusal's
//!   reason only for its JSON deny with exit 0 (`Answer::for_host`; exit 2 still when stdout
//!   cannot be written). (The `cairn` binary
//!   adds a supervisor around this crate that holds the same for aborts, stack overflows and
//!   hangs, within a deadline.)
//! - `PreCompact`, `PostCompact`, `SessionStart`, `Stop` and `SessionEnd` are never blocked:
//!   they answer exit 0 whatever happens.
//! - The record is committed (`sync`) before `PreToolUse` answers; the session state is
//!   written after, and only ever refers to what is already durable.
//! - An allowed call is answered with no decision, never with the host's `allow` (unless the
//!   project asks for it): Cairn narrows what the user's own permission settings allow; it
//!   never widens it.
//! - Hook JSON types never leave this crate; records hold no prompt, summary, argument or
//!   observation bytes (those go only to the content store, by digest, with retention).

pub mod answer;
mod boundary;
pub mod client;
pub mod config;
pub mod context;
pub mod engine;
pub mod error;
pub mod gate;
pub mod host;
pub mod input;
pub mod install;
pub mod outcome;
pub mod project;
pub mod protected;
#[cfg(unix)]
pub mod resident;
pub mod session;
mod tools;

pub use answer::Answer;
pub use cairn_runtime::{KeptStores, StoreLocation, StoreOpener};
pub use engine::{Environment, Namespace, handle};
pub use error::HookError;
pub use gate::Fault;
pub use host::{Compaction, Host, run_base};
pub use protected::PROTECTED;
