//! Where the service listens (TCP and Unix sockets), how it serves each connection, how it
//! runs its group commit, and how it shuts down.
//!
//! Every connection is bounded in time: a request's head must arrive within
//! [`HEADER_TIMEOUT`] (and a connection idle between requests is closed after it), a whole
//! request within [`REQUEST_TIMEOUT`] (`api`), so no client — a half-sent request, a slow
//! body, a thousand idle connections — holds the service or its descriptors.
//!
//! On SIGTERM the service first commits every waiting record, then stops accepting, lets the
//! requests in flight finish for at most [`DRAIN_TIMEOUT`] (closing the connections that are
//! left), and commits once more.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};

use crate::service::{Commit, Service};

/// How long a client may take to send a request's head, and how long a connection may stay
/// idle between requests.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the requests in flight may take to finish once the service is stopping; the
/// connections left after it are closed.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// One address to listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address (`127.0.0.1:8470`).
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;

    /// `unix:/run/cairn/cairn.sock`, or a TCP address `host:port`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(
                    "`unix:` needs a socket path, as in `unix:/run/cairn/cairn.sock`".to_owned(),
                );
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        text.parse().map(Self::Tcp).map_err(|e| {
            format!(
                "`{text}` is neither `unix:<path>` nor a TCP address like `127.0.0.1:8470` ({e})"
            )
        })
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "http://{addr}"),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// The service's sockets, bound.
#[derive(Debug)]
pub struct Server {
    tcp: Vec<TcpListener>,
    unix: Vec<(UnixListener, PathBuf)>,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    /// Where `/metrics` is served, apart from the API (nowhere unless given).
    metrics: Option<Box<Server>>,
    /// How the console is served (its `Secure` cookies follow `tls`).
    console: crate::console::ConsoleOptions,
    /// Whether the API (`/v1`) is served beside the console (`cairn ui` serves the console
    /// only).
    api: bool,
}

impl Server {
    /// Binds every address; a Unix socket gets permission bits `socket_mode` (0660: the
    /// service's user and group — give the agents' user that group). A socket file left by a
    /// service that is gone is replaced; one a live service answers on is an error.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(listens: &[Listen], socket_mode: u32) -> std::io::Result<Self> {
        let mut tcp = Vec::new();
        let mut unix = Vec::new();
        for listen in listens {
            match listen {
                Listen::Tcp(addr) => tcp.push(TcpListener::bind(addr).await?),
                Listen::Unix(path) => {
                    if path.exists() {
                        if tokio::net::UnixStream::connect(path).await.is_ok() {
                            return Err(std::io::Error::new(
                                std::io::ErrorKind::AddrInUse,
                                format!("a service already answers on `{}`", path.display()),
                            ));
                        }
                        std::fs::remove_file(path)?;
                    }
                    let listener = UnixListener::bind(path)?;
                    {
                        use std::os::unix::fs::PermissionsExt as _;
                        std::fs::set_permissions(
                            path,
                            std::fs::Permissions::from_mode(socket_mode),
                        )?;
                    }
                    unix.push((listener, path.clone()));
                }
            }
        }
        Ok(Self {
            tcp,
            unix,
            tls: None,
            metrics: None,
            console: crate::console::ConsoleOptions::default(),
            api: true,
        })
    }

    /// Serves `/metrics`, and nothing else, on `listen` (plain HTTP; a Unix socket gets
    /// `socket_mode`). The API's listeners never serve it: its labels name every tenant, so
    /// it goes where only the operators' scraper reaches.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn with_metrics(
        mut self,
        listen: &Listen,
        socket_mode: u32,
    ) -> std::io::Result<Self> {
        self.metrics = Some(Box::new(
            Self::bind(std::slice::from_ref(listen), socket_mode).await?,
        ));
        Ok(self)
    }

    /// Where `/metrics` is served, if anywhere.
    #[must_use]
    pub fn metrics_address(&self) -> Option<Listen> {
        self.metrics
            .as_ref()
            .and_then(|metrics| metrics.addresses().into_iter().next())
    }

    /// Serves the console with `options` (its idle time, a one-time sign-in link).
    #[must_use]
    pub fn with_console(mut self, options: crate::console::ConsoleOptions) -> Self {
        self.console = options;
        self
    }

    /// Serves the console only, not the API (`cairn ui`).
    #[must_use]
    pub fn console_only(mut self) -> Self {
        self.api = false;
        self
    }

    /// Serves TLS with `config` on the TCP listeners (Unix sockets stay plain: their file
    /// permissions are their guard).
    #[must_use]
    pub fn with_tls(mut self, config: std::sync::Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Where it listens, as a client's `CAIRN_SERVER` names it (`https://…` under TLS).
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        self.addresses()
            .iter()
            .map(|listen| match (listen, &self.tls) {
                (Listen::Tcp(addr), Some(_)) => format!("https://{addr}"),
                (other, _) => other.to_string(),
            })
            .collect()
    }

    /// Where it listens, as clients name it (`http://127.0.0.1:PORT`, `unix:/path`).
    #[must_use]
    pub fn addresses(&self) -> Vec<Listen> {
        let tcp = self
            .tcp
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .map(Listen::Tcp);
        let unix = self.unix.iter().map(|(_, path)| Listen::Unix(path.clone()));
        tcp.chain(unix).collect()
    }

    /// Serves `service` until `shutdown` completes, then drains: every waiting record is
    /// committed first, no new connection is accepted, requests in flight finish (for at most
    /// [`DRAIN_TIMEOUT`]), and every record they wrote is committed.
    ///
    /// # Errors
    /// A listener's failure.
    pub async fn run(
        self,
        service: Arc<Service>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut served = Listeners {
            tasks: tokio::task::JoinSet::new(),
            stop: stop_rx.clone(),
            sockets: Vec::new(),
        };
        let Self {
            tcp,
            unix,
            tls,
            metrics,
            console,
            api,
        } = self;
        if let Some(metrics) = metrics {
            let scrape = crate::api::metrics_router(Arc::clone(&service));
            served.serve_all(metrics.tcp, metrics.unix, None, &scrape)?;
        }
        let console = crate::console::router(
            Arc::clone(&service),
            crate::console::ConsoleOptions {
                tls: tls.is_some(),
                ..console
            },
        );
        let app = if api {
            crate::api::router(Arc::clone(&service)).merge(console)
        } else {
            console
        };
        served.serve_all(tcp, unix, tls.as_ref(), &app)?;
        let Listeners {
            mut tasks, sockets, ..
        } = served;
        let committer = tokio::spawn(commit_loop(Arc::clone(&service), stop_rx.clone()));
        let stopping = Arc::clone(&service);
        tokio::spawn(async move {
            shutdown.await;
            // What waits is committed before anything else: a supervisor's SIGKILL may follow.
            let first = Arc::clone(&stopping);
            let _ = tokio::task::spawn_blocking(move || first.flush_waiting(Duration::ZERO)).await;
            tracing::info!(
                "shutting down: every waiting record committed; draining requests in flight"
            );
            let _ = stop_tx.send(true);
        });
        let mut result = Ok(());
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = Err(e),
                Err(e) => result = Err(std::io::Error::other(e)),
            }
        }
        let _ = committer.await;
        service.stop_committing();
        let drained = Arc::clone(&service);
        let _ = tokio::task::spawn_blocking(move || {
            drained.flush_waiting(Duration::ZERO);
        })
        .await;
        for path in sockets {
            let _ = std::fs::remove_file(path);
        }
        tracing::info!("stopped: every admitted record committed");
        result
    }
}

/// The tasks serving the listeners, stopped together, and the Unix sockets to remove after.
struct Listeners {
    tasks: tokio::task::JoinSet<std::io::Result<()>>,
    stop: tokio::sync::watch::Receiver<bool>,
    sockets: Vec<PathBuf>,
}

impl Listeners {
    /// Serves `app` on `listener` until the stop, each connection on a task of its own with
    /// the timeouts of [`serve_connection`]; then waits for the connections for at most
    /// [`DRAIN_TIMEOUT`] and closes those left.
    fn serve<L>(&mut self, mut listener: L, app: &axum::Router)
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let app = app.clone();
        let mut stop = self.stop.clone();
        self.tasks.spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    () = stopped(&mut stop) => break,
                    (io, _) = listener.accept() => {
                        connections.spawn(serve_connection(io, app.clone(), stop.clone()));
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
            drop(listener);
            let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
                while connections.join_next().await.is_some() {}
            })
            .await;
            if drained.is_err() {
                tracing::warn!(
                    left = connections.len(),
                    "requests still in flight after the drain timeout: their connections are closed"
                );
                connections.abort_all();
            }
            Ok(())
        });
    }

    /// Serves `app` on `tcp` (TLS with `tls` when given) and on `unix`.
    fn serve_all(
        &mut self,
        tcp: Vec<TcpListener>,
        unix: Vec<(UnixListener, PathBuf)>,
        tls: Option<&Arc<rustls::ServerConfig>>,
        app: &axum::Router,
    ) -> std::io::Result<()> {
        for listener in tcp {
            match tls {
                Some(config) => {
                    self.serve(
                        crate::tls::TlsListener::new(listener, Arc::clone(config))?,
                        app,
                    );
                }
                None => self.serve(listener, app),
            }
        }
        for (listener, path) in unix {
            self.sockets.push(path);
            self.serve(listener, app);
        }
        Ok(())
    }
}

/// Serves one connection (HTTP/1.1) until it closes, the client is too slow, or the service
/// stops: a request's head must arrive within [`HEADER_TIMEOUT`], which also closes a
/// connection idle that long between requests; at the stop, the request in flight finishes
/// and the connection closes.
async fn serve_connection<I>(io: I, app: axum::Router, mut stop: tokio::sync::watch::Receiver<bool>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper_util::service::TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = stopped(&mut stop) => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Completes once the service is stopping.
async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// How long a live run may go unused before the service lets go of it (it is resumed from
/// the store when used again).
pub const IDLE_RUN: Duration = Duration::from_secs(600);

/// Commits the service's records as its durability says, until the stop, and lets go of the
/// runs idle for [`IDLE_RUN`]:
///
/// - `group`: the group committer, on a thread of its own ([`Service::commit_rounds`]);
/// - `async`: every half window, the records that waited a whole window;
/// - `sync`: nothing to commit here (each request commits its own).
async fn commit_loop(service: Arc<Service>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let committer = (service.durability() == Commit::Group).then(|| {
        let committing = Arc::clone(&service);
        std::thread::Builder::new()
            .name("cairn-commit".to_owned())
            .spawn(move || committing.commit_rounds())
    });
    let period = match service.durability() {
        Commit::Async { window } => (window / 2).max(Duration::from_millis(1)),
        Commit::Group | Commit::Sync => Duration::from_secs(1),
    };
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            _ = ticks.tick() => {
                let service = Arc::clone(&service);
                let _ = tokio::task::spawn_blocking(move || {
                    if let Commit::Async { window } = service.durability() {
                        service.flush_waiting(window);
                    }
                    service.evict_idle(IDLE_RUN);
                })
                .await;
            }
        }
    }
    // The requests still in flight are drained with the committer running; it stops with the
    // last of them (`Server::run` ends it).
    drop(committer);
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn termination_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
