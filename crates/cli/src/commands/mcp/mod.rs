//! `cairn mcp proxy`: the MCP gateway on stdin and stdout (or Streamable HTTP), in front of
//! a project's upstream MCP servers (`cairn_mcp`), recording into the project's store or,
//! with `CAIRN_SERVER`, through `cairn serve` (`service`). It writes nothing but MCP on stdout; its own messages go to
//! stderr, which MCP clients keep as the server's log.

use std::sync::Arc;

use cairn_core::{SystemClock, TenantId};
use cairn_mcp::config::{GatewayConfig, parse_server_flag};
use cairn_mcp::{Admission, Ended, LocalSessions, LocalSettings};
use cairn_runtime::Durability;
use cairn_runtime::layout::Project;

use crate::args::{McpCommand, McpProxyArgs};
use crate::context::Context;
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;
use crate::store::OpenStore as _;

mod service;

/// The configuration file of a project's gateway, in its `.cairn/`.
const CONFIG_FILE: &str = "mcp.json";

/// Runs `cairn mcp …`.
pub fn run(ctx: &Context, command: McpCommand) -> Result<Outcome, Failure> {
    match command {
        McpCommand::Proxy(args) => proxy(ctx, &args),
    }
}

fn proxy(ctx: &Context, args: &McpProxyArgs) -> Result<Outcome, Failure> {
    let start = match &args.project {
        Some(dir) => dir.clone(),
        None => crate::context::current_dir()?,
    };
    let project = Project::find(&start).ok_or_else(|| {
        Failure::new(
            CliCode::USAGE,
            format!(
                "no .cairn/ project at or above `{}`: run `cairn init` there, or name it with `--project`",
                start.display()
            ),
        )
    })?;
    let config = load_config(&project, args)?;
    let session = match &args.session {
        Some(session) => session.clone(),
        None => random_session(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Cedar decides on the blocking threads: they need the stack the policy limits are
        // sized for.
        .thread_stack_size(cairn_runtime::limits::STACK_BYTES)
        .thread_name("cairn-mcp")
        .build()
        .map_err(|e| Failure::new(CliCode::INTERNAL, format!("cannot start the runtime: {e}")))?;
    let traces = super::serve::traces(args.otlp_traces.as_deref())?;
    traces.install_global();
    let open = sessions(ctx, args, &project, &config, runtime.handle())?;
    let admission = open(&session)?;
    let root = project.root().to_path_buf();
    let served = if let Some(listen) = &args.listen {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(listen.as_str()))
            .map_err(|e| Failure::new(CliCode::IO, format!("cannot listen on {listen}: {e}")))?;
        if let Ok(address) = listener.local_addr() {
            eprintln!("cairn mcp proxy: serving MCP at http://{address}/mcp");
        }
        let access = http_access(args, &listener)?;
        let idle = std::time::Duration::from_secs(args.idle_seconds.max(1));
        runtime.block_on(async {
            let gateway = cairn_mcp::start(config, &root, admission).await?;
            let kept = gateway.clone();
            let each = move || open(&random_session());
            let served =
                cairn_mcp::serve_http(gateway, each, listener, access, idle, shutdown_signal())
                    .await;
            // The sessions still open when the gateway stops are closed before it exits.
            let _ = tokio::task::spawn_blocking(move || kept.close_all(Ended::Cancelled)).await;
            served
        })
    } else {
        runtime
            .block_on(async {
                let gateway = cairn_mcp::start(config, &root, admission).await?;
                cairn_mcp::serve(
                    gateway,
                    (tokio::io::stdin(), tokio::io::stdout()),
                    shutdown_signal(),
                )
                .await
            })
            .map(|_| ())
    };
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    traces.shutdown();
    served?;
    Ok(Outcome::already_written())
}

/// The environment variable holding the HTTP listener's bearer token.
pub const HTTP_TOKEN_ENV: &str = "CAIRN_MCP_HTTP_TOKEN";

/// The shortest bearer token accepted.
const MIN_TOKEN_BYTES: usize = 16;

/// Who the HTTP listener serves: with `CAIRN_MCP_HTTP_TOKEN` set, only requests bearing it;
/// without it, only a loopback listener (anyone who can reach a wider address could call
/// every upstream tool as the gateway's principal — refused, fail closed).
fn http_access(
    args: &McpProxyArgs,
    listener: &tokio::net::TcpListener,
) -> Result<cairn_mcp::HttpAccess, Failure> {
    let bearer = std::env::var(HTTP_TOKEN_ENV).ok().filter(|t| !t.is_empty());
    if let Some(token) = &bearer
        && (token.len() < MIN_TOKEN_BYTES || token.chars().any(|c| !c.is_ascii_graphic()))
    {
        return Err(Failure::new(
            CliCode::USAGE,
            format!(
                "{HTTP_TOKEN_ENV} must be at least {MIN_TOKEN_BYTES} printable ASCII characters without spaces (e.g. `openssl rand -hex 32`)"
            ),
        ));
    }
    let loopback = listener
        .local_addr()
        .is_ok_and(|address| address.ip().is_loopback());
    if bearer.is_none() && !loopback {
        return Err(Failure::new(
            CliCode::USAGE,
            format!(
                "--listen on a non-loopback address serves every upstream tool to whoever reaches it: set {HTTP_TOKEN_ENV} to a secret (clients then send `Authorization: Bearer <it>`), or listen on 127.0.0.1"
            ),
        ));
    }
    Ok(cairn_mcp::HttpAccess {
        allowed_hosts: args.allow_hosts.clone(),
        bearer,
    })
}

/// Opens each session's way into the runtime: `cairn serve`'s when `CAIRN_SERVER` is set (and
/// no `--store`), else the project's own store.
type Opener =
    Box<dyn Fn(&str) -> Result<Arc<dyn Admission>, cairn_mcp::GatewayError> + Send + Sync>;

fn sessions(
    ctx: &Context,
    args: &McpProxyArgs,
    project: &Project,
    config: &GatewayConfig,
    runtime: &tokio::runtime::Handle,
) -> Result<Opener, Failure> {
    if ctx.explicit_store.is_none()
        && let Some(server) = std::env::var_os("CAIRN_SERVER")
    {
        let (endpoint, token) = crate::context::service_endpoint(&server, "an agent's")?;
        let hold = config.approval_hold;
        let read_only = cairn_runtime::restrictions::ToolClasses::new(
            config.read_only_tools.clone(),
            Vec::new(),
        );
        let runtime = runtime.clone();
        return Ok(Box::new(move |session: &str| {
            Ok(Arc::new(service::ServiceAdmission::new(
                endpoint.clone(),
                token.clone(),
                session,
                (hold, read_only.clone()),
                runtime.clone(),
            )) as Arc<dyn Admission>)
        }));
    }
    let durability = match args.durability.as_str() {
        "sync" => Durability::Sync,
        "batch" => Durability::DEFAULT_BATCH,
        other => {
            return Err(Failure::new(
                CliCode::USAGE,
                format!("`--durability`: `{other}` is not `sync` or `batch`"),
            ));
        }
    };
    let location = match &ctx.explicit_store {
        Some(_) => ctx.store_location()?,
        None => crate::store::StoreLocation::File(project.store_path()),
    };
    project.prepare_state().map_err(|e| {
        Failure::new(
            CliCode::IO,
            format!("cannot prepare `{}`: {e}", project.state().display()),
        )
    })?;
    let store = location.open(cairn_ledger::store::OpenMode::CreateIfMissing)?;
    let settings = LocalSettings {
        tenant: TenantId::new(&config.tenant)?,
        principal: config.principal.clone(),
        durability,
        hold: config.approval_hold,
        keys_dir: ctx.explicit_keys.clone(),
        extra_protected: match &location {
            crate::store::StoreLocation::File(path) if ctx.explicit_store.is_some() => {
                vec![path.clone()]
            }
            _ => Vec::new(),
        },
        read_only_tools: config.read_only_tools.clone(),
    };
    let sessions = LocalSessions::new(project.clone(), store, Arc::new(SystemClock), settings);
    // The runs of sessions whose gateway was killed are closed now (a live one is left).
    match sessions.sweep() {
        Ok(closed) if !closed.is_empty() => {
            let runs: Vec<String> = closed.iter().map(ToString::to_string).collect();
            eprintln!(
                "cairn mcp proxy: closed the runs of sessions whose gateway was gone: {}",
                runs.join(", ")
            );
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "the runs of vanished sessions were not closed"),
    }
    Ok(Box::new(move |session: &str| {
        Ok(Arc::new(sessions.open(session)?) as Arc<dyn Admission>)
    }))
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The gateway's configuration: the project's `mcp.json` (or `--config`), with `--server`
/// flags replacing its servers.
fn load_config(project: &Project, args: &McpProxyArgs) -> Result<GatewayConfig, Failure> {
    let path = args
        .config
        .clone()
        .unwrap_or_else(|| project.dir().join(CONFIG_FILE));
    let mut config = if args.servers.is_empty() || args.config.is_some() {
        if !path.exists() && args.config.is_none() {
            return Err(Failure::new(
                cairn_mcp::GatewayError::CONFIG_INVALID,
                format!(
                    "no upstream MCP server: write `{}` or name one with `--server NAME=COMMAND`",
                    path.display()
                ),
            ));
        }
        GatewayConfig::load(&path)?
    } else if path.exists() {
        // The file's settings, with the flags' servers.
        GatewayConfig::load_settings(&path)?
    } else {
        GatewayConfig::default()
    };
    if !args.servers.is_empty() {
        config.upstreams.clear();
        for flag in &args.servers {
            let upstream = parse_server_flag(flag).map_err(|reason| {
                Failure::new(
                    cairn_mcp::GatewayError::CONFIG_INVALID,
                    format!("`--server`: {reason}"),
                )
            })?;
            if config.upstreams.iter().any(|u| u.name == upstream.name) {
                return Err(Failure::new(
                    cairn_mcp::GatewayError::CONFIG_INVALID,
                    format!("`--server`: the name `{}` is given twice", upstream.name),
                ));
            }
            config.upstreams.push(upstream);
        }
    }
    Ok(config)
}

/// A fresh session id: 16 random hex digits.
fn random_session() -> String {
    use rand_core::RngCore as _;
    let mut bytes = [0_u8; 8];
    rand_core::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
