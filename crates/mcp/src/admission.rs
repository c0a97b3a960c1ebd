//! How the gateway reaches the runtime: one [`Admission`] per MCP session (one run), asked
//! to admit each `tools/call` — decided and recorded before it is forwarded — and told what
//! came of it. The gateway is written once against this trait; [`crate::local`] implements
//! it on a project's own store, and a service client can implement it over `cairn serve`.
//!
//! Every method is synchronous (the runtime is): the gateway calls them on tokio's blocking
//! pool, and treats an error or a panic there as a refusal.

use serde_json::Value;

use crate::error::GatewayError;

/// One `tools/call` as the runtime is asked to admit it.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The upstream server's name.
    pub server: String,
    /// The tool's own name there.
    pub tool: String,
    /// The name the client called (`<server>__<tool>`): what is recorded.
    pub exposed: String,
    /// The upstream server's version (its `serverInfo.version`), recorded as the tool's.
    pub version: String,
    /// The arguments exactly as they will be forwarded (`{}` when the call had none).
    pub args: Vec<u8>,
    /// The host's id of the call (Claude Code's `claudecode/toolUseId`, which its hooks see
    /// too), else the client's JSON-RPC id: what an approval request records.
    pub call_id: String,
    /// The host session the client says it serves (Claude Code's `claudecode/sessionId`):
    /// the gateway's run is then that session's (see [`crate::local`]).
    pub host_session: Option<String>,
}

/// The runtime's answer to a call.
#[derive(Debug)]
pub enum Admit {
    /// Admitted: the intent record is durable; forward the call and settle the ticket.
    Forward(Ticket),
    /// Refused and recorded: never forwarded.
    Refuse(Refusal),
}

/// A refused call, as the client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rules that refused it.
    pub rule_ids: Vec<String>,
    /// The stable reason code.
    pub code: String,
    /// What the model reads next: the rule, why, and what to do.
    pub message: String,
    /// The step that recorded the refusal.
    pub step: Option<u64>,
    /// That record's digest.
    pub digest: Option<String>,
}

/// An admitted call waiting for its outcome: the permit the runtime gave it, or (over a
/// service) the step it was recorded as.
pub struct Ticket {
    /// The step that recorded the call.
    pub step: u64,
    /// That record's digest.
    pub digest: String,
    pub(crate) permit: Option<cairn_runtime::Permit>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl Ticket {
    /// A ticket for the call recorded as `step` with `digest`, holding its permit when the
    /// runtime is local.
    #[must_use]
    pub const fn new(step: u64, digest: String, permit: Option<cairn_runtime::Permit>) -> Self {
        Self {
            step,
            digest,
            permit,
        }
    }
}

/// What came of a forwarded call.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// The upstream answered with a result (a tool's own error, `isError: true`, included:
    /// the tool ran and said so).
    Answered(Value),
    /// The call did not run: it could not be sent (the upstream is gone), or the upstream
    /// asked for input first.
    NotSent(String),
    /// The outcome is unknown: the upstream answered with a protocol error, broke off, or
    /// did not answer in time. The call may have taken effect; its capability is refused
    /// until a person reconciles it.
    Unknown(String),
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The client closed the session.
    Closed,
    /// The gateway is shutting down (a signal), or an upstream it needs is gone.
    Cancelled,
}

/// The runtime as one MCP session reaches it.
pub trait Admission: Send + Sync + 'static {
    /// The run this session writes.
    fn run(&self) -> String;

    /// Decides `call` and records it — committed before this returns — or refuses it.
    ///
    /// # Errors
    /// The call could not be decided or recorded: the gateway refuses it (fail closed).
    fn admit(&self, call: &CallRequest) -> Result<Admit, GatewayError>;

    /// Records what came of the call `ticket` admitted.
    ///
    /// # Errors
    /// The outcome could not be recorded.
    fn settle(&self, ticket: Ticket, outcome: Settled) -> Result<(), GatewayError>;

    /// For each `(server, tool)`, whether some call of it could be admitted now, whatever its
    /// arguments (what `tools/list` shows when refused tools are hidden) — all judged against
    /// one reading of the policies.
    fn admissible(&self, tools: &[(String, String)]) -> Vec<bool>;

    /// Learns the upstreams' tools (exposed name and declared argument fields), so that the
    /// policies can name their arguments.
    ///
    /// # Errors
    /// The policies do not load with them: calls are refused until they do.
    fn learn(&self, tools: &[cairn_runtime::config::LearnedTool]) -> Result<(), GatewayError>;

    /// Closes the run: its terminal record and signed checkpoint.
    ///
    /// # Errors
    /// The run could not be closed (it is found unterminated later).
    fn close(&self, ended: Ended) -> Result<(), GatewayError>;
}
