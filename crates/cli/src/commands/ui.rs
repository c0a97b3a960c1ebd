//! `cairn ui`: the web console for this project's own store, on 127.0.0.1 — the console
//! `cairn serve` serves under `/ui`, without the API, for one person: the one who can read
//! the project's store and keys anyway. A token of the admin role for the store's tenant is
//! made in memory for this run of the command and never shown; the sign-in link printed at
//! start stands for it and works once (as Jupyter's token URL does). The console cannot
//! admit a call: its gate denies everything (agents go through the hooks or `cairn serve`).

use std::sync::Arc;

use cairn_core::{Digest, SystemClock, TenantId};
use cairn_ledger::store::RunFilter;
use cairn_runtime::{Gate, GateRequest, GateVerdict};
use cairn_server::console::{ConsoleOptions, OneTimeLogin};
use cairn_server::tokens::{Role, TokenBook};
use cairn_server::{Listen, Server, Service, ServiceConfig};

use crate::args::UiArgs;
use crate::context::Context;
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;

/// The console admits no call: every call is refused.
struct NoCalls;

impl Gate for NoCalls {
    fn decide(&self, _: &GateRequest<'_>) -> GateVerdict {
        GateVerdict::built_in_deny(
            self,
            "cairn.ui.no-calls",
            cairn_runtime::DenyCause::Fault {
                reason: "console_admits_no_calls",
            },
        )
    }

    fn policy_set_version(&self) -> Option<Digest> {
        None
    }
}

/// Runs `cairn ui`.
pub fn run(ctx: &Context, args: &UiArgs) -> Result<Outcome, Failure> {
    let listen: Listen = args
        .listen
        .parse()
        .map_err(|reason| Failure::new(CliCode::USAGE, format!("`--listen`: {reason}")))?;
    match &listen {
        Listen::Tcp(addr) if addr.ip().is_loopback() => {}
        _ => {
            return Err(Failure::new(
                CliCode::USAGE,
                format!(
                    "`--listen`: `{}` is not a loopback address; `cairn ui` serves this machine only (for a shared console, run `cairn serve` with TLS and people's tokens)",
                    args.listen
                ),
            ));
        }
    }
    let store = ctx.open_existing_store()?;
    let tenant = match &args.tenant {
        Some(text) => text.parse::<TenantId>().map_err(|e| {
            Failure::new(
                cairn_core::CoreError::INVALID_ID,
                format!("`--tenant`: {e}"),
            )
        })?,
        None => latest_tenant(store.as_ref())?,
    };
    let keyring = ctx.keyring()?;
    let signing_key = keyring.active_signing_key()?;
    let trusted = keyring.trusted_keys()?;
    // The project's decisions, when it keeps any (the boundary page compares them).
    let state = ctx.state_dir()?;
    let decisions = match ctx.keys_dir() {
        Ok(keys) if state.is_dir() => Some(cairn_server::DecisionHome {
            dir: state,
            single_project: true,
            keys,
            window: cairn_runtime::restrictions::DECISION_WINDOW,
        }),
        _ => None,
    };
    let now = jiff::Timestamp::now();
    let (tokens, bearer) = TokenBook::single(tenant.clone(), Role::Admin, "cairn ui", now);
    let config = ServiceConfig {
        store,
        gate: Arc::new(NoCalls),
        signing_key,
        trusted,
        tokens,
        durability: cairn_server::Commit::Sync,
        content_retention: None,
        clock: Arc::new(SystemClock),
        max_body_bytes: 64 << 10,
        hooks: None,
        decisions,
        lanes: None,
        policies: None,
        approvals: cairn_server::ApprovalSettings::default(),
        traces: cairn_server::traces::Traces::none(),
    };
    let (link, code) = OneTimeLogin::new(bearer);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .thread_stack_size(cairn_policy::limits::STACK_BYTES)
        .thread_name("cairn-ui")
        .build()
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot start the runtime: {e}")))?;
    let service = Arc::new(Service::new(config));
    let kept = Arc::clone(&service);
    let served = runtime.block_on(async move {
        let server = Server::bind(std::slice::from_ref(&listen), 0o600)
            .await
            .map_err(|e| Failure::new(CliCode::IO, format!("cannot listen on {listen}: {e}")))?
            .console_only()
            .with_console(ConsoleOptions {
                one_time: link,
                ..ConsoleOptions::default()
            });
        let address = server.urls().into_iter().next().unwrap_or_default();
        let url = format!("{address}/ui/login?code={code}");
        eprintln!(
            "Cairn console for tenant `{tenant}` of this project's store:\n\n    {url}\n\nOpen it in a browser on this machine; the link works once. Ctrl-C stops the console."
        );
        if let Some(file) = &args.ready_file {
            cairn_runtime::files::replace(file, 0o600, format!("{url}\n").as_bytes()).map_err(
                |(step, e)| {
                    Failure::new(
                        CliCode::UNWRITABLE_OUTPUT,
                        format!("`--ready-file` {step}: {e}"),
                    )
                },
            )?;
        }
        server
            .run(service, cairn_server::termination_signal())
            .await
            .map_err(|e| Failure::new(CliCode::IO, format!("the console stopped: {e}")))?;
        Ok(Outcome::ok(
            serde_json::json!({"stopped": true, "listened": address}),
            "cairn ui stopped".to_owned(),
        ))
    });
    drop(runtime);
    kept.finish();
    served
}

/// The tenant of the store's most recently active run (`local` for an empty store: the
/// hooks' tenant).
fn latest_tenant(store: &dyn cairn_ledger::Store) -> Result<TenantId, Failure> {
    let runs = store.list_runs(&RunFilter::default())?;
    let latest = runs
        .iter()
        .max_by_key(|run| run.last_recorded_at)
        .map(|run| run.meta.tenant_id.clone());
    match latest {
        Some(tenant) => Ok(tenant),
        None => "local"
            .parse()
            .map_err(|e| Failure::new(CliCode::INTERNAL, format!("the tenant `local`: {e}"))),
    }
}
