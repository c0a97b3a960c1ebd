//! Where the service listens (TCP and Unix sockets), how it runs its group commit, and how it
//! shuts down: stop accepting, finish the requests in flight, commit every waiting record.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_runtime::Durability;
use tokio::net::{TcpListener, UnixListener};

use crate::service::Service;

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

    /// Serves `service` until `shutdown` completes, then drains: no new connection is
    /// accepted, requests in flight finish, and every waiting record is committed.
    ///
    /// # Errors
    /// A listener's failure.
    pub async fn run(
        self,
        service: Arc<Service>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
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
        } = self;
        if let Some(metrics) = metrics {
            let scrape = crate::api::metrics_router(Arc::clone(&service));
            served.serve_all(metrics.tcp, metrics.unix, None, &scrape)?;
        }
        let app = crate::api::router(Arc::clone(&service));
        served.serve_all(tcp, unix, tls.as_ref(), &app)?;
        let Listeners {
            mut tasks, sockets, ..
        } = served;
        let flusher = group_commit(Arc::clone(&service), stopped(stop_rx.clone()));
        let flusher = tokio::spawn(flusher);
        tokio::spawn(async move {
            shutdown.await;
            tracing::info!("shutting down: draining requests in flight");
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
        let _ = flusher.await;
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
    /// Serves `app` on `listener` until the stop.
    fn serve<L>(&mut self, listener: L, app: &axum::Router)
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let app = app.clone();
        let mut stop = self.stop.clone();
        self.tasks.spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|stop| *stop).await;
                })
                .await
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

/// How long a live run may go unused before the service lets go of it (it is resumed from
/// the store when used again).
pub const IDLE_RUN: Duration = Duration::from_secs(600);

/// Commits the records of batched runs that nothing else committed within the batch window,
/// and lets go of the runs idle for [`IDLE_RUN`].
async fn group_commit(service: Arc<Service>, stop: impl Future<Output = ()>) {
    let batch = match service.config.durability {
        Durability::Batch { max_delay, .. } => Some(max_delay),
        Durability::Sync => None,
    };
    let period = batch.map_or(Duration::from_secs(1), |delay| {
        (delay / 2).max(Duration::from_millis(1))
    });
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            _ = ticks.tick() => {
                let service = Arc::clone(&service);
                let _ = tokio::task::spawn_blocking(move || {
                    if let Some(delay) = batch {
                        service.flush_waiting(delay);
                    }
                    service.evict_idle(IDLE_RUN);
                })
                .await;
            }
        }
    }
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
