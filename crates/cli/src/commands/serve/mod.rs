//! `cairn serve`: the service over the folder `--data` — its policies, key, tokens and store —
//! until SIGTERM or SIGINT, then drained (requests in flight finish, every waiting record is
//! committed).

mod hooks;
mod policies;

use std::sync::Arc;

use cairn_core::SystemClock;
use cairn_ledger::store::OpenMode;
use cairn_runtime::keyring::Keyring;
use cairn_runtime::layout::{KEYS_DIR, LANES_FILE, POLICIES_DIR, STORE_FILE, TOOLS_FILE};
use cairn_server::tokens::TokenBook;
use cairn_server::{Listen, Server, Service, ServiceConfig};

use crate::args::ServeArgs;
use crate::context::Context;
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;
use crate::store::{OpenStore as _, StoreLocation};

/// The token file of a service folder.
pub const TOKENS_FILE: &str = "tokens.json";

/// Runs `cairn serve`.
pub fn run(ctx: &Context, args: &ServeArgs) -> Result<Outcome, Failure> {
    if args.init || args.init_only {
        let made = super::init::scaffold_folder(args.data.clone())?;
        if args.init_only {
            return Ok(Outcome::ok(
                serde_json::json!({
                    "data": made.project,
                    "created": made.created,
                    "kept": made.kept,
                    "policy_set_version": made.policy_set_version,
                    "signing_key": made.signing_key,
                }),
                format!(
                    "service folder {} ready (observe-first policies, signing key {}); next: `cairn tokens create --data {} --tenant T --role agent`",
                    made.project.display(),
                    made.signing_key,
                    made.project.display()
                ),
            ));
        }
    }
    if !args.data.is_dir() {
        return Err(Failure::new(
            cairn_runtime::RuntimeError::INVALID_INPUT,
            format!(
                "the service folder `{}` does not exist (create it with `cairn serve --init --data {}`)",
                args.data.display(),
                args.data.display()
            ),
        ));
    }
    let listens = args
        .listen
        .iter()
        .map(|text| {
            text.parse::<Listen>()
                .map_err(|reason| Failure::new(CliCode::USAGE, format!("`--listen`: {reason}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let metrics_listen = args
        .metrics_listen
        .as_deref()
        .map(|text| {
            text.parse::<Listen>().map_err(|reason| {
                Failure::new(CliCode::USAGE, format!("`--metrics-listen`: {reason}"))
            })
        })
        .transpose()?;
    let socket_mode = u32::from_str_radix(&args.socket_mode, 8).map_err(|_| {
        Failure::new(
            CliCode::USAGE,
            format!(
                "`--socket-mode`: `{}` is not octal permission bits like 660",
                args.socket_mode
            ),
        )
    })?;
    let (config, gate) = configure(ctx, args)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(cairn_server::tls::server_config(cert, key).map_err(
            |reason| {
                Failure::new(
                    CliCode::USAGE,
                    format!("`--tls-cert`/`--tls-key`: {reason}"),
                )
            },
        )?),
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Cedar decides on these threads: they need the stack the policy limits are sized for.
        .thread_stack_size(cairn_policy::limits::STACK_BYTES)
        .max_blocking_threads(64)
        .thread_name("cairn-serve")
        .build()
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot start the runtime: {e}")))?;
    raise_descriptor_limit();
    let service = Arc::new(Service::new(config));
    // The service (its store among it) is dropped after the runtime: a PostgreSQL store's
    // connections close with a runtime of their own, which cannot start inside this one.
    let kept = Arc::clone(&service);
    let served = runtime.block_on(async move {
        let server = Server::bind(&listens, socket_mode).await.map_err(|e| {
            Failure::new(
                CliCode::IO,
                format!("cannot listen on {}: {e}", args.listen.join(", ")),
            )
        })?;
        let server = match tls {
            Some(config) => server.with_tls(config),
            None => server,
        };
        let server = match &metrics_listen {
            Some(listen) => server.with_metrics(listen, 0o600).await.map_err(|e| {
                Failure::new(
                    CliCode::IO,
                    format!("cannot serve metrics on {listen}: {e}"),
                )
            })?,
            None => server,
        };
        let addresses = server.urls();
        for address in &addresses {
            tracing::info!(%address, "cairn serve listening");
        }
        if let Some(address) = server.metrics_address() {
            tracing::info!(%address, "cairn serve metrics");
        }
        policies::reload_on_hangup(gate);
        if let Some(file) = &args.ready_file {
            cairn_runtime::files::replace(
                file,
                0o644,
                format!("{}\n", addresses.join("\n")).as_bytes(),
            )
            .map_err(|(step, e)| {
                Failure::new(
                    CliCode::UNWRITABLE_OUTPUT,
                    format!("`--ready-file` {step}: {e}"),
                )
            })?;
        }
        server
            .run(service, cairn_server::termination_signal())
            .await
            .map_err(|e| Failure::new(CliCode::IO, format!("the service stopped: {e}")))?;
        Ok(Outcome::ok(
            serde_json::json!({"stopped": true, "listened": addresses}),
            "cairn serve stopped; every admitted record is committed".to_owned(),
        ))
    });
    drop(runtime);
    // Every span waiting for export is sent before the process ends.
    kept.finish();
    drop(kept);
    served
}

/// The service's configuration from its folder (and `--store` / `--keys` when given), and
/// its policy set, which SIGHUP reloads.
fn configure(
    ctx: &Context,
    args: &ServeArgs,
) -> Result<(ServiceConfig, policies::PolicySets), Failure> {
    let data = args.data.as_path();
    let location = match &ctx.explicit_store {
        Some(text) => crate::store::parse_location(text)?,
        None => StoreLocation::File(data.join(STORE_FILE)),
    };
    let store = location.open_for_service(OpenMode::CreateIfMissing)?;
    let keys = ctx
        .explicit_keys
        .clone()
        .unwrap_or_else(|| data.join(KEYS_DIR));
    let root = args.agents_root.as_deref().unwrap_or(data);
    let sets = policies::PolicySets::load(
        data.to_path_buf(),
        data.join(POLICIES_DIR),
        data.join(TOOLS_FILE),
    )?;
    let hooks =
        hooks::ServiceHooks::new(data, root, keys.clone(), Arc::clone(&store), sets.clone());
    let decisions = cairn_server::DecisionHome {
        dir: data.to_path_buf(),
        single_project: false,
        keys: keys.clone(),
        window: hooks.decision_window()?,
    };
    let keyring = Keyring::open(keys);
    let signing_key = keyring.active_signing_key()?;
    let trusted = keyring.trusted_keys()?;
    let tokens = TokenBook::load(data.join(TOKENS_FILE)).map_err(|e| Failure::from_error(&e))?;
    let config = ServiceConfig {
        store,
        gate: sets.service_gate(),
        signing_key,
        trusted,
        tokens,
        durability: args.durability.parse().map_err(|reason: String| {
            Failure::new(CliCode::USAGE, format!("`--durability`: {reason}"))
        })?,
        content_retention: Some(jiff::SignedDuration::from_hours(24 * 7)),
        clock: Arc::new(SystemClock),
        max_body_bytes: args.max_body,
        hooks: Some(Arc::new(hooks)),
        decisions: Some(decisions),
        lanes: Some(cairn_server::LanesFile {
            path: data.join(LANES_FILE),
            root: root.to_path_buf(),
        }),
        policies: Some(Arc::new(sets.clone())),
        approvals: approval_settings(args)?,
        traces: traces(args.otlp_traces.as_deref())?,
    };
    Ok((config, sets))
}

/// How the service holds calls for people, from `--approval-*`.
fn approval_settings(args: &ServeArgs) -> Result<cairn_server::ApprovalSettings, Failure> {
    let duration = |flag: &'static str, text: &str| crate::input::parse_duration(flag, text);
    let max_hold = duration("--approval-hold-max", &args.approval_hold_max)?;
    let max_hold = std::time::Duration::try_from(max_hold).unwrap_or_default();
    if max_hold > std::time::Duration::from_secs(600) {
        return Err(Failure::new(
            CliCode::USAGE,
            "`--approval-hold-max` is at most 10m: a client waits that long for its answer",
        ));
    }
    let request_ttl = duration("--approval-request-ttl", &args.approval_request_ttl)?;
    if request_ttl.is_zero() {
        return Err(Failure::new(
            CliCode::USAGE,
            "`--approval-request-ttl` must be longer than 0s",
        ));
    }
    let webhook = match (&args.approval_webhook, &args.approval_webhook_secret_file) {
        (Some(url), Some(file)) => {
            let secret = std::fs::read(file).map_err(|e| {
                Failure::new(
                    CliCode::USAGE,
                    format!("`--approval-webhook-secret-file` `{}`: {e}", file.display()),
                )
            })?;
            let secret = secret.trim_ascii().to_vec();
            Some(cairn_server::Webhook::new(url, &secret).map_err(|reason| {
                Failure::new(CliCode::USAGE, format!("`--approval-webhook`: {reason}"))
            })?)
        }
        _ => None,
    };
    Ok(cairn_server::ApprovalSettings {
        max_hold,
        request_ttl: Some(request_ttl),
        webhook,
    })
}

/// Raises this process's soft limit of open descriptors to its hard limit: each connection
/// holds one, and the soft limit a service starts with is often 1,024 (the hard limit is
/// what the operator allows, `LimitNOFILE=` in the systemd unit). Idle connections are closed
/// after `listen::HEADER_TIMEOUT` besides. Best effort: the limit stays as it was if it
/// cannot be raised.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let before = limit.current;
        limit.current = limit.maximum;
        if setrlimit(Resource::Nofile, limit).is_ok() {
            tracing::debug!(?before, after = ?limit.maximum, "open-descriptor limit raised");
        }
    }
}

/// The traces `--otlp-traces` asks for: exported to that OTLP/HTTP endpoint, or none.
pub(crate) fn traces(url: Option<&str>) -> Result<cairn_server::traces::Traces, Failure> {
    match url {
        Some(url) => cairn_server::traces::Traces::otlp(url)
            .map_err(|reason| Failure::new(CliCode::USAGE, format!("`--otlp-traces`: {reason}"))),
        None => Ok(cairn_server::traces::Traces::none()),
    }
}
