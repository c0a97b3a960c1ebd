//! The command line, as clap sees it. Parsing only: no behaviour lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Cairn keeps AI agents trustworthy across compaction, resets, restarts and handoffs.
#[derive(Debug, Parser)]
#[command(name = "cairn", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: Global,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `cairn hook …` alone. The hosts start `cairn hook` for every tool call, and building the
/// parser of every command costs about as much as the rest of a call answered by the
/// resident server: when the first argument is `hook`, [`parse`] uses this parser, built from
/// the very same [`Global`] and [`HookArgs`] (a test keeps its help equal to [`Cli`]'s).
#[derive(Debug, Parser)]
#[command(name = "cairn", version, long_about = None, propagate_version = true)]
struct HookCli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: HookOnly,
}

#[derive(Debug, Subcommand)]
enum HookOnly {
    /// Answer one hook call of Claude Code or Codex: reads the host's hook JSON on stdin and
    /// answers in the host's format (run by the host; see `cairn hooks install`).
    Hook(HookArgs),
}

/// Parses the command line `args` (the program name first).
///
/// # Errors
/// clap's error: a usage error, or the help or version asked for.
pub fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    if args.get(1).is_some_and(|first| first == "hook") {
        let HookCli { global, command } = HookCli::try_parse_from(args)?;
        let HookOnly::Hook(hook) = command;
        return Ok(Cli {
            global,
            command: Command::Hook(hook),
        });
    }
    Cli::try_parse_from(args)
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// The store: a SQLite file path, or a PostgreSQL URL (`postgres://user@host/db`; the
    /// tables go in the connection's schema). Default: `.cairn/cairn.db` in the nearest
    /// enclosing directory that has a `.cairn/` folder, else in the current directory.
    #[arg(long, global = true, env = "CAIRN_STORE", value_name = "PATH|URL")]
    pub store: Option<String>,
    /// The key directory (default: `keys/` beside the store file; for a PostgreSQL store,
    /// `.cairn/keys` of the nearest enclosing project, else of the current directory).
    #[arg(long, global = true, env = "CAIRN_KEYS", value_name = "DIR")]
    pub keys: Option<PathBuf>,
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the scripted demonstration on a fresh store and print its timeline.
    Demo(DemoArgs),
    /// Create `.cairn/` here: an observe-first policy set, a tool catalog and a signing key.
    Init(InitArgs),
    /// Check policies and explain decisions.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Decide whether a run may resume after a boundary (never authorises: exit 0 means
    /// reauthorization is required, 4 validation failed, 6 blocked on reconciliation).
    #[command(subcommand)]
    Continuity(ContinuityCommand),
    /// Record the observed outcome of a side effect whose outcome was unknown, unblocking its
    /// capability (SPEC E-5).
    Reconcile(ReconcileArgs),
    /// Decide the calls a policy holds for a person (`@approval`): list what waits, show a
    /// request, approve exactly that call, refuse it, or revoke an approval (SPEC T-4). A
    /// person's command: the agent's hooks refuse it.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Keep the task's decisions (scope, approval boundary, target, acceptance test,
    /// constraint) as keyed digests, snapshot them before a boundary and compare after it
    /// (SPEC §8; compare exits 0 preserved/approved_change, 3 unverified/evidence missing,
    /// 4 dropped/conflicting).
    Decisions(DecisionsArgs),
    /// Activity health and continuity health side by side, never merged (SPEC D-3).
    Status(StatusArgs),
    /// Answer one hook call of Claude Code or Codex: reads the host's hook JSON on stdin and
    /// answers in the host's format (run by the host; see `cairn hooks install`).
    Hook(HookArgs),
    /// Install or remove Cairn's hooks in a Claude Code or Codex project, or answer them from
    /// one resident process (`serve`).
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Validate a VCE 0.1 continuation envelope as the published reference does (exit 0
    /// RESUMABLE, 3 REVIEW_REQUIRED, 4 BLOCKED, 2 malformed input).
    #[command(subcommand)]
    Vce(VceCommand),
    /// Validate an RLC 0.1 responsibility-lane extension as the published reference does
    /// (exit 0 PASSED, 3 REVIEW_REQUIRED, 4 BLOCKED, 2 malformed input).
    #[command(subcommand)]
    Rlc(RlcCommand),
    /// The continuity lab: the canonical support-triage case (compaction after a ticket write
    /// timed out), decided with the durable state you vary (SPEC E-7).
    InspectContinuity(InspectArgs),
    /// Decide each scenario of a folder on its full history and on its compacted path, and
    /// check the compacted path is never less strict (SPEC E-6; exit 4 when a case fails).
    Eval(EvalArgs),
    /// Manage checkpoint signing keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Verify, export, inspect and prove records of the ledger.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// List runs and their lifecycle state.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Delete content whose retention has ended (structural records are kept).
    Gc(GcArgs),
    /// Roll up calls, denials and argument bytes.
    Cost(CostArgs),
    /// Print a published JSON Schema.
    Schema(SchemaArgs),
    /// Create a store, or copy ledgers from one store to another (a SQLite file or a
    /// PostgreSQL URL on either side), verifying every run copied.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Run Cairn as a service: it holds the policies, the signing key and the store of its
    /// folder, and agents reach it over HTTP (TCP or a Unix socket) with a token only.
    Serve(ServeArgs),
    /// Open the web console for this project's store on 127.0.0.1: prints a sign-in link
    /// that works once (the runs, their timelines and boundaries, verification, approvals).
    Ui(UiArgs),
    /// Say which set-up is in force here (local, service client, service host) and what it
    /// protects against; exit 1 when a check fails.
    Doctor(DoctorArgs),
    /// Say where this project's configuration, store and keys are (the store and keys live
    /// outside the working tree, in the Cairn home).
    Where,
    /// Create, list and revoke the service's tokens (each bound to one tenant and one role).
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Put Cairn between an MCP client and its MCP servers: every `tools/call` gated and
    /// recorded before it is forwarded.
    #[command(subcommand)]
    Mcp(McpCommand),
}

/// `cairn ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// The loopback address to serve on (`127.0.0.1:0` picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8470")]
    pub listen: String,
    /// The tenant whose runs are shown (default: the tenant of the store's latest run).
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// Write the sign-in link to this file (mode 0600) once ready, for scripts and tests.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
}

/// `cairn mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve MCP on stdin and stdout in front of the upstream servers of `.cairn/mcp.json`
    /// (or `--server`): each `tools/call` is decided by the project's policies, lanes,
    /// reconciliation state and approvals and recorded before it is forwarded; a refused
    /// call is answered `isError` and never forwarded; everything else passes through.
    /// The session is one run, closed with a signed checkpoint when the client leaves.
    Proxy(McpProxyArgs),
}

/// `cairn mcp proxy`.
#[derive(Debug, Args)]
pub struct McpProxyArgs {
    /// The project whose policies, lanes, store and keys the gateway uses (default: the
    /// nearest enclosing folder with a `.cairn/`).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The gateway's configuration (default: `.cairn/mcp.json` of the project).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// An upstream server, `NAME=COMMAND ARG…` (a child process over stdio, split at spaces)
    /// or `NAME=https://…` (Streamable HTTP); repeatable; replaces the file's servers.
    #[arg(long = "server", value_name = "NAME=COMMAND|URL")]
    pub servers: Vec<String>,
    /// When a call's intent record is durable: `sync` (committed before the call is
    /// forwarded) or `batch` (before the session's next boundary or its end).
    #[arg(long, value_name = "MODE", default_value = "sync")]
    pub durability: String,
    /// The session's id (its run is `mcp-<id>`; default: a random one). A client that
    /// reconnects with the same id continues the same run. Stdio only.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Serve Streamable HTTP at `http://ADDR/mcp` instead of stdio (each client session its
    /// own run), e.g. `127.0.0.1:8471`. With `CAIRN_MCP_HTTP_TOKEN` set, every request must
    /// carry `Authorization: Bearer <it>`; a non-loopback address requires it.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// A `Host` the HTTP listener accepts besides the loopback names (DNS rebinding
    /// protection); repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// An HTTP session with no request for this long ends (its run is closed).
    #[arg(long, value_name = "SECONDS", default_value_t = 1800)]
    pub idle_seconds: u64,
    /// Export traces to this OTLP/HTTP endpoint (`http://collector:4318/v1/traces`): a span
    /// per MCP request after the MCP semantic conventions, with its record's digest; never an
    /// argument or a result.
    #[arg(long, env = "CAIRN_OTLP_TRACES", value_name = "URL")]
    pub otlp_traces: Option<String>,
}

/// `cairn serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The service's folder: `policies/`, `tools.json`, `keys/`, `tokens.json` and, unless
    /// `--store` names another, the SQLite store `cairn.db`. Keep it readable by the
    /// service's user only.
    #[arg(long, env = "CAIRN_DATA", value_name = "DIR")]
    pub data: PathBuf,
    /// Create the folder first (an observe-first policy set, the tool catalog, a signing
    /// key); existing files are kept.
    #[arg(long)]
    pub init: bool,
    /// Create the folder as `--init` does, then exit without serving.
    #[arg(long)]
    pub init_only: bool,
    /// Where to listen: `unix:/run/cairn/cairn.sock` or `127.0.0.1:8470` (repeatable).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8470")]
    pub listen: Vec<String>,
    /// Serve Prometheus metrics (`GET /metrics`) on this address, apart from the API:
    /// `127.0.0.1:9464` or `unix:/run/cairn/metrics.sock` (owner-only). Their labels name
    /// every tenant, so the API's listeners never serve them. Default: not served.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// The Unix socket's permission bits, in octal (the agents' user needs the socket's
    /// group: 660).
    #[arg(long, value_name = "OCTAL", default_value = "660")]
    pub socket_mode: String,
    /// When records become durable: `group` (before the answer; concurrent requests share
    /// one commit), `sync` (each request commits its own before its answer) or `async`
    /// (answered before the commit, which comes within 20 ms: a crash loses the acknowledged
    /// steps of that window).
    #[arg(long, value_name = "MODE", default_value = "group")]
    pub durability: String,
    /// The largest request body accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// The folder the agents' relative paths are judged against in the hook events the
    /// service answers (lane scopes, self-protection), when every agent works in a checkout
    /// at the same place; default: the service's folder.
    #[arg(long, value_name = "DIR")]
    pub agents_root: Option<PathBuf>,
    /// Serve TLS on the TCP listeners with this certificate chain (PEM); clients then use
    /// `https://` (and `CAIRN_SERVER_CA` for a private CA).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Export traces to this OTLP/HTTP endpoint (`http://collector:4318/v1/traces`): a span
    /// per admitted step and per boundary, never an argument.
    #[arg(long, env = "CAIRN_OTLP_TRACES", value_name = "URL")]
    pub otlp_traces: Option<String>,
    /// Print the address(es) listened on to this file once ready (for scripts and tests).
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// The longest a step's admission may hold a call for a person's approval
    /// (`hold_seconds` in the request is capped by it; `0s`: never holds).
    #[arg(long, value_name = "DURATION", default_value = "120s")]
    pub approval_hold_max: String,
    /// How long an approval request waits for a person before it lapses.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub approval_request_ttl: String,
    /// Push every new approval request to this URL: a JSON `POST` whose
    /// `X-Cairn-Signature` is `hmac-sha256:webhook:<hex>`, the HMAC-SHA256 of the body
    /// under the secret of `--approval-webhook-secret-file`.
    #[arg(long, value_name = "URL", requires = "approval_webhook_secret_file")]
    pub approval_webhook: Option<String>,
    /// The webhook's secret (at least 16 bytes; keep the file readable by the service only).
    #[arg(long, value_name = "FILE", requires = "approval_webhook")]
    pub approval_webhook_secret_file: Option<PathBuf>,
}

/// `cairn doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check this service folder (on the service's host) instead of this side's set-up.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
}

/// `cairn tokens …`.
#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Create a token; its secret is printed once and stored nowhere.
    Create {
        /// The service's folder.
        #[arg(long, env = "CAIRN_DATA", value_name = "DIR")]
        data: PathBuf,
        /// The one tenant it acts in.
        #[arg(long, value_name = "TENANT")]
        tenant: String,
        /// `agent`, `investigator`, `approver` or `admin`.
        #[arg(long, value_name = "ROLE")]
        role: String,
        /// Who or what holds it.
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
    },
    /// List the tokens (never their secrets).
    List {
        /// The service's folder.
        #[arg(long, env = "CAIRN_DATA", value_name = "DIR")]
        data: PathBuf,
    },
    /// Revoke a token: a running service refuses it within a second.
    Revoke {
        /// The service's folder.
        #[arg(long, env = "CAIRN_DATA", value_name = "DIR")]
        data: PathBuf,
        /// The token's id.
        #[arg(value_name = "ID")]
        id: String,
    },
}

/// `cairn store …`.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create the store `--store` names (a SQLite file, or the tables of a PostgreSQL store in
    /// the connection's schema); an existing store is migrated and left as it is.
    Init {
        /// How many hash partitions a new PostgreSQL store's record and content tables get.
        #[arg(long, default_value_t = 16, value_name = "N")]
        partitions: u32,
    },
    /// Copy every run from one store to another, each verified before and after; runs the
    /// target has whole are skipped, runs it has in part are completed.
    Copy {
        /// The source store (a path or a URL); it is only read.
        #[arg(long, value_name = "PATH|URL")]
        from: String,
        /// The target store (a path or a URL), created if missing.
        #[arg(long, value_name = "PATH|URL")]
        to: String,
        /// A verifier key file to check checkpoints with (repeatable; default: every key of
        /// the key directory, `--keys` or the source's).
        #[arg(long = "trusted-key", value_name = "FILE")]
        trusted_keys: Vec<PathBuf>,
    },
}

/// `cairn demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Create the demo store in this directory (as `DIR/.cairn/cairn.db`) instead of a new
    /// temporary directory. Ignored when `--store` or `CAIRN_STORE` is given.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `cairn init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Create `.cairn/` in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Where the policy set and tool catalog come from.
#[derive(Debug, Args, Clone)]
pub struct PolicyLocation {
    /// A `.cedar` file or a folder of them (default: `policies/` beside the store).
    #[arg(long, env = "CAIRN_POLICIES", value_name = "PATH")]
    pub policies: Option<PathBuf>,
    /// The tool catalog (default: `tools.json` beside the store, if it exists).
    #[arg(long, env = "CAIRN_TOOLS", value_name = "FILE")]
    pub tools: Option<PathBuf>,
}

/// `cairn policy …`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Load and validate a policy set; print its version and its policies.
    Check {
        /// A `.cedar` file or a folder of them (default: `policies/` beside the store).
        path: Option<PathBuf>,
        /// The tool catalog (default: `tools.json` beside the store, if it exists).
        #[arg(long, env = "CAIRN_TOOLS", value_name = "FILE")]
        tools: Option<PathBuf>,
    },
    /// Decide one call and say which rules determined it and why.
    Explain {
        /// The tool's name.
        #[arg(long)]
        tool: String,
        /// The tool's arguments as JSON.
        #[arg(long, default_value = "{}")]
        args: String,
        /// The active lane.
        #[arg(long)]
        lane: Option<String>,
        /// The tool's version.
        #[arg(long, default_value = "unversioned")]
        tool_version: String,
        /// Who the call acts for.
        #[arg(long, default_value = "agent")]
        principal: String,
        /// Where the policies and catalog come from.
        #[command(flatten)]
        location: PolicyLocation,
    },
}

/// `cairn vce …`.
#[derive(Debug, Subcommand)]
pub enum VceCommand {
    /// Decide a VCE 0.1 envelope (and its restore results): schema, digest, semantic rules,
    /// restore gate.
    ///
    /// Several ENVELOPEs are decided one by one, each with the same `--restore`; `--jsonl`
    /// reads documents from stdin instead. Either way there is one result per document, in
    /// order, and the exit code is the worst of them (2 if any document could not be read).
    Check {
        /// The envelope(s).
        #[arg(
            value_name = "ENVELOPE",
            required_unless_present = "jsonl",
            conflicts_with = "jsonl"
        )]
        envelopes: Vec<PathBuf>,
        /// The restore results (without them the decision is BLOCKED).
        #[arg(long, value_name = "RESULTS")]
        restore: Option<PathBuf>,
        /// Read JSON lines from stdin, each `{"envelope": …, "restore": …}` (`restore` may be
        /// absent), and write one JSON result line per input line.
        #[arg(long)]
        jsonl: bool,
    },
}

/// `cairn rlc …`.
#[derive(Debug, Subcommand)]
pub enum RlcCommand {
    /// Decide an RLC 0.1 extension (and its lane restore results): schema, digests, semantic
    /// rules, restore state.
    ///
    /// Several FILEs are decided one by one, each with the same `--restore` and `--vce`;
    /// `--jsonl` reads documents from stdin instead. Either way there is one result per
    /// document, in order, and the exit code is the worst of them (2 if any document could
    /// not be read).
    Check {
        /// Bare extension(s), or fixtures with `extension` and `restore_results`.
        #[arg(
            value_name = "FILE",
            required_unless_present = "jsonl",
            conflicts_with = "jsonl"
        )]
        files: Vec<PathBuf>,
        /// The lane restore results (instead of those embedded in FILE).
        #[arg(long, value_name = "RESULTS")]
        restore: Option<PathBuf>,
        /// The VCE 0.1 envelope the extension extends (checks event bindings against it).
        #[arg(long, value_name = "ENVELOPE")]
        vce: Option<PathBuf>,
        /// Read JSON lines from stdin, each `{"extension": …, "restore": …, "vce": …}`
        /// (`restore` — or `restore_results` — and `vce` may be absent), and write one JSON
        /// result line per input line.
        #[arg(long)]
        jsonl: bool,
    },
}

/// `cairn continuity …`.
#[derive(Debug, Subcommand)]
pub enum ContinuityCommand {
    /// Compare a continuity envelope with the durable state and the summary (SPEC E-4).
    Check {
        /// The envelope (`continuity-envelope/v1`, bare or wrapped).
        #[arg(long, value_name = "FILE")]
        envelope: PathBuf,
        /// The current durable state: `continuity-state/v1`, or the published reference's flat
        /// state (no `schema_version`; `approval_status`: approved, revoked, pending, expired,
        /// rejected), mapped once onto it.
        #[arg(long, value_name = "FILE")]
        state: PathBuf,
        /// The derived summary whose digest the envelope binds.
        #[arg(long, value_name = "FILE")]
        summary: PathBuf,
        /// The instant to decide at (RFC 3339 with an offset).
        #[arg(long, value_name = "RFC3339")]
        now: String,
    },
}

/// `cairn reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The run.
    #[command(flatten)]
    pub run: RunSelector,
    /// The idempotency key of the call (`<run_id>:<step>`).
    #[arg(long, value_name = "KEY")]
    pub key: String,
    /// What the external system shows: `applied` or `not_executed`.
    #[arg(long, value_name = "OUTCOME")]
    pub outcome: String,
    /// A reference to the evidence (for example the lookup by idempotency key).
    #[arg(long, value_name = "REF")]
    pub evidence: String,
}

/// `cairn approvals …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// The requests waiting for a person, oldest first (`--all`: every request, decided ones
    /// and closed runs' too).
    List {
        /// Every request, not only those waiting.
        #[arg(long)]
        all: bool,
        /// Only this tenant's runs.
        #[arg(long, value_name = "TENANT")]
        tenant: Option<String>,
    },
    /// One request: the held call, its binding and what became of it.
    Show(ApprovalRef),
    /// Approve exactly the held call: it admits the identical call (same tool, version and
    /// arguments) of the same run, under the same policies, `--uses` times until it expires.
    Approve {
        /// The request.
        #[command(flatten)]
        request: ApprovalRef,
        /// How long the approval admits the call (`90s`, `15m`, `2h`).
        #[arg(long, value_name = "DURATION", default_value = "15m")]
        expires_in: String,
        /// How many calls it admits (1: single use).
        #[arg(long, value_name = "N", default_value_t = 1)]
        uses: u64,
        /// Why (kept in the content store; the record binds its digest).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Refuse the held call.
    Deny {
        /// The request.
        #[command(flatten)]
        request: ApprovalRef,
        /// Why (kept in the content store; the record binds its digest).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Revoke an approval: it admits nothing more.
    Revoke {
        /// The request.
        #[command(flatten)]
        request: ApprovalRef,
        /// Why (kept in the content store; the record binds its digest).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
}

/// A request named by a person.
#[derive(Debug, Args)]
pub struct ApprovalRef {
    /// The request's id (`apr-…`, as `cairn approvals list` shows it).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Only this tenant's runs.
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
}

/// `cairn inspect-continuity`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Present a summary that differs from the one the envelope bound (an injected instruction).
    #[arg(long)]
    pub tamper_summary: bool,
    /// The policy version in force now (the envelope recorded `policy-v4`).
    #[arg(long, value_name = "V")]
    pub current_policy_version: Option<String>,
    /// The side-effect state of the ticket write (`not_executed`, `applied`,
    /// `side_effect_unknown`, `partial_side_effect`; aliases `not_started`,
    /// `side_effect_committed`).
    #[arg(long, value_name = "S")]
    pub side_effect_status: Option<String>,
    /// The approval's state now: active, revoked, pending, consumed, denied or expired.
    #[arg(long, value_name = "S")]
    pub approval_status: Option<String>,
    /// Decide at this instant (default: the case's own, 2026-07-21T12:00:00Z).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
}

/// `cairn eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A folder of scenario files (searched recursively for `*.json`), or one scenario file.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `cairn keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Generate an Ed25519 signing key and make it the active one (earlier keys stay trusted).
    Generate {
        /// The key name written into signatures (no spaces or `+`).
        #[arg(long, default_value = "cairn.local")]
        name: String,
    },
    /// List the trusted verifier keys and the active signing key.
    List,
}

/// Which run a command is about.
#[derive(Debug, Args, Clone)]
pub struct RunSelector {
    /// The run id.
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// The tenant, when the same run id exists under several tenants.
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
}

/// `cairn ledger …`.
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Verify chains and signed checkpoints (exit 5 on tamper).
    Verify(VerifyArgs),
    /// Export a run as JSON lines: its records, then its signed checkpoint.
    Export {
        /// The run.
        #[command(flatten)]
        run: RunSelector,
        /// The format (only `jsonl`).
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Show one step for an incident: digests, policy version, lane, retained content.
    Show {
        /// The run.
        #[command(flatten)]
        run: RunSelector,
        /// The step index.
        #[arg(long)]
        step: u64,
    },
    /// Show one compaction: what the durable record carries across it (the envelope the
    /// record binds), the summary the model was given (untrusted), and how the run came back.
    Boundary {
        /// The run.
        #[command(flatten)]
        run: RunSelector,
        /// The step of its `context_compaction` record.
        #[arg(long)]
        step: u64,
    },
    /// Print an inclusion proof of one step against the run's signed checkpoint.
    Prove {
        /// The run.
        #[command(flatten)]
        run: RunSelector,
        /// The step index.
        #[arg(long)]
        step: u64,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Check an inclusion proof offline against a trusted checkpoint.
    VerifyProof {
        /// The proof file (`-` for stdin).
        proof: PathBuf,
        /// Check against this signed checkpoint note instead of the one inside the proof.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
        /// Trust this verifier key file (repeatable); default: the keys directory.
        #[arg(long = "trusted-key", value_name = "FILE")]
        trusted_keys: Vec<PathBuf>,
    },
}

/// `cairn ledger verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Verify one run.
    #[arg(long, value_name = "ID", conflicts_with_all = ["all", "bundle"])]
    pub run: Option<String>,
    /// The tenant of `--run`.
    #[arg(long, value_name = "TENANT", requires = "run")]
    pub tenant: Option<String>,
    /// Verify every run in the store (the default without `--run` or `--bundle`).
    #[arg(long, conflicts_with = "bundle")]
    pub all: bool,
    /// Verify an exported evidence bundle offline instead of the store.
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// Trust this verifier key file (repeatable); default: the keys directory.
    #[arg(long = "trusted-key", value_name = "FILE")]
    pub trusted_keys: Vec<PathBuf>,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// One JSON document per line.
    Jsonl,
}

/// `cairn runs …`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// List runs, oldest first.
    List {
        /// Only runs without a terminal record.
        #[arg(long)]
        unterminated: bool,
        /// Only runs idle for longer than this (`90s`, `15m`, `2h`, `3d`).
        #[arg(long, value_name = "DUR")]
        older_than: Option<String>,
        /// Only this tenant's runs.
        #[arg(long, value_name = "TENANT")]
        tenant: Option<String>,
    },
}

/// `cairn gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Collect as if it were this instant (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
}

/// `cairn cost`.
#[derive(Debug, Args)]
pub struct CostArgs {
    /// The rollup dimension.
    #[arg(long, value_enum, default_value_t = CostBy::Task)]
    pub by: CostBy,
    /// Only this tenant's runs (default: every tenant's).
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
}

/// Cost dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CostBy {
    /// By task id.
    Task,
    /// By tool name.
    Tool,
    /// By tenant.
    Tenant,
    /// By termination reason.
    Termination,
}

/// `cairn schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema.
    #[arg(value_enum, default_value_t = SchemaName::Intent)]
    pub name: SchemaName,
}

/// Published schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaName {
    /// `cairn.intent/v1`.
    Intent,
}

/// The instant a decisions command acts at.
#[derive(Debug, Args, Clone)]
pub struct NowArg {
    /// Act as if it were this instant (RFC 3339 with an offset); default: the system clock.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
}

/// `cairn decisions [--tenant T] …`.
#[derive(Debug, Args)]
pub struct DecisionsArgs {
    /// The tenant whose decisions these are, in the folder of `cairn serve` (`--data`): each
    /// tenant of a service has a book of its own, the one its agents' hook events are compared
    /// against and `/v1/decisions` edits. Without it, the project's own book.
    #[arg(long, global = true, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// The service's folder, with `--tenant` (by default the folder of the store).
    #[arg(long, global = true, value_name = "DIR", requires = "tenant")]
    pub data: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: DecisionsCommand,
}

/// `cairn decisions …`.
#[derive(Debug, Subcommand)]
pub enum DecisionsCommand {
    /// Set (or re-assert) a decision; the value is digested with the project's HMAC key and
    /// never stored or printed.
    Set {
        /// The decision: `scope`, `approval_boundary`, `target`, `acceptance_test`,
        /// `constraint` or a custom `snake_case` kind.
        #[arg(value_name = "KEY")]
        key: String,
        /// The value: a string, or JSON with `--json-value`.
        #[arg(value_name = "VALUE")]
        value: String,
        /// Parse VALUE as JSON instead of taking it as a string.
        #[arg(long)]
        json_value: bool,
        /// The human approval this value was adopted under (an opaque reference such as
        /// `review:PR-42`); a changed value with an approval is an approved change.
        #[arg(long, value_name = "REF")]
        approval: Option<String>,
        /// Who asserts the value (its provenance).
        #[arg(long, value_name = "REF", default_value = "cli:decisions-set")]
        source: String,
        /// When.
        #[command(flatten)]
        at: NowArg,
    },
    /// List the current decisions: keys, revisions, observation times, approvals, digests.
    List,
    /// Snapshot the current decisions (3-7) before a boundary.
    Snapshot {
        /// The snapshot's name (a session or run id: letters, digits, `._-`).
        #[arg(long, value_name = "NAME", default_value = "cli")]
        name: String,
        /// The boundary instant the snapshot is for (default: the snapshot's own time).
        #[arg(long, value_name = "RFC3339")]
        boundary_at: Option<String>,
        /// When.
        #[command(flatten)]
        at: NowArg,
    },
    /// Compare a snapshot with the current decisions (or with observations from a file).
    Compare {
        /// The snapshot's name (default: the latest).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// A JSON array of observations to compare with instead of the current decisions.
        #[arg(long, value_name = "FILE")]
        observations: Option<PathBuf>,
        /// How long after the boundary an observation may take to arrive.
        #[arg(long, value_name = "DUR", default_value = "10m")]
        window: String,
        /// When.
        #[command(flatten)]
        at: NowArg,
    },
    /// Record a human approval linking two revisions of a decision.
    ApproveChange {
        /// The decision.
        #[arg(value_name = "KEY")]
        key: String,
        /// The revision approved from.
        #[arg(long, value_name = "REV")]
        from: u32,
        /// The revision approved to.
        #[arg(long, value_name = "REV")]
        to: u32,
        /// The approval (an opaque reference such as `review:PR-42#approve`).
        #[arg(long, value_name = "REF")]
        approval: String,
        /// When.
        #[command(flatten)]
        at: NowArg,
    },
}

/// What the agent is doing, as the caller sees it (`cairn status --activity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ActivityArg {
    /// Tool calls are succeeding and work is moving.
    Working,
    /// The next step waits for a human.
    #[value(name = "waiting_human", alias = "waiting-human")]
    WaitingHuman,
    /// Nothing is happening.
    Idle,
    /// Tool calls or steps are failing.
    Failing,
}

/// `cairn status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The snapshot to compare against (default: the latest).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Activity health; Cairn does not infer it, so it is `working` unless given.
    #[arg(long, value_enum, default_value_t = ActivityArg::Working)]
    pub activity: ActivityArg,
    /// How long after the boundary an observation may take to arrive.
    #[arg(long, value_name = "DUR", default_value = "10m")]
    pub window: String,
    /// When.
    #[command(flatten)]
    pub at: NowArg,
}

/// The hosts `cairn hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookHost {
    /// Claude Code.
    ClaudeCode,
    /// Codex.
    Codex,
    /// Gemini CLI.
    GeminiCli,
    /// GitHub Copilot CLI.
    CopilotCli,
    /// Cursor.
    Cursor,
    /// OpenCode (through Cairn's plugin).
    Opencode,
}

impl HookHost {
    /// The name on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
            Self::CopilotCli => "copilot-cli",
            Self::Cursor => "cursor",
            Self::Opencode => "opencode",
        }
    }
}

/// `cairn hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The host whose hook JSON arrives on stdin.
    #[arg(value_enum, value_name = "HOST")]
    pub host: HookHost,
    /// The project whose `.cairn/` gates and records the calls, whatever the session's `cwd`
    /// (`cairn hooks install` writes it; Claude Code's `CLAUDE_PROJECT_DIR` is used when it
    /// is not given). A named project without `.cairn/` denies every tool call.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Answer within this long whatever happens inside (a slow policy load, a locked store,
    /// a stuck socket): a tool call not decided by then is denied (`10s` by default; at most
    /// `50s`, under the hosts' hook timeout Cairn installs).
    #[arg(
        long,
        env = "CAIRN_HOOK_DEADLINE",
        value_name = "DURATION",
        default_value = "10s"
    )]
    pub deadline: String,
    /// Internal: answer in this process and print the answer as JSON for the supervising
    /// `cairn hook` process, which enforces the deadline and turns any crash into a deny.
    #[arg(long, hide = true)]
    pub worker: bool,
}

/// `cairn hooks …`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Add Cairn's hooks to the host's project settings (keeping every other setting and
    /// hook) and scaffold `.cairn/` in observe-first mode when it is missing.
    Install(HooksTarget),
    /// Remove exactly the hooks `install` added.
    Uninstall(HooksTarget),
    /// Answer the project's hook calls from one resident process (policies parsed and the
    /// store opened once), until it has been idle for a while; `cairn hook` uses it when it
    /// runs and answers by itself when it does not.
    Serve(HooksServe),
}

/// `cairn hooks serve`.
#[derive(Debug, Args)]
pub struct HooksServe {
    /// The project folder, or any folder inside it (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Exit after this long without a hook call (`90s`, `30m`, `2h`).
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    pub idle: String,
}

/// Which hosts and which project `cairn hooks` works on.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("host").required(true).multiple(true).args(["claude_code", "codex", "gemini_cli", "copilot_cli", "cursor", "opencode"])))]
pub struct HooksTarget {
    /// Claude Code: `.claude/settings.json`.
    #[arg(long)]
    pub claude_code: bool,
    /// Codex: `.codex/hooks.json`.
    #[arg(long)]
    pub codex: bool,
    /// Gemini CLI: `.gemini/settings.json`.
    #[arg(long)]
    pub gemini_cli: bool,
    /// GitHub Copilot CLI: `.github/hooks/cairn.json`.
    #[arg(long)]
    pub copilot_cli: bool,
    /// Cursor: `.cursor/hooks.json`.
    #[arg(long)]
    pub cursor: bool,
    /// OpenCode: Cairn's plugin, `.opencode/plugins/cairn.js`.
    #[arg(long)]
    pub opencode: bool,
    /// The project folder (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use clap::CommandFactory as _;

    use super::*;

    fn argv(line: &str) -> Vec<std::ffi::OsString> {
        line.split(' ').map(Into::into).collect()
    }

    /// What a parse gives, as text: the parsed command line, or the error's kind and text.
    fn outcome(parsed: Result<Cli, clap::Error>) -> String {
        match parsed {
            Ok(cli) => format!("{cli:?}"),
            Err(error) => format!("{:?}: {}", error.kind(), error.render()),
        }
    }

    #[test]
    fn the_hook_parser_answers_as_the_full_one() {
        for line in [
            "cairn hook claude-code",
            "cairn hook codex --project /p --deadline 3s --json",
            "cairn hook claude-code --worker --store s.db --keys k",
            "cairn hook",
            "cairn hook bogus",
            "cairn hook claude-code --bogus",
            "cairn hook --help",
            "cairn hook -h",
            "cairn hook --version",
        ] {
            assert_eq!(
                outcome(parse(argv(line))),
                outcome(Cli::try_parse_from(argv(line))),
                "{line}"
            );
        }
        // The fast path is taken only when `hook` comes first.
        assert!(format!("{:?}", parse(argv("cairn --json hook codex")).unwrap()).contains("Hook("));
    }

    #[test]
    fn the_hook_parser_has_the_full_ones_help() {
        let mut full = Cli::command();
        full.build();
        let mut fast = HookCli::command();
        fast.build();
        let help = |command: &mut clap::Command| {
            command
                .find_subcommand_mut("hook")
                .unwrap()
                .render_long_help()
                .to_string()
        };
        assert_eq!(help(&mut fast), help(&mut full));
    }
}
