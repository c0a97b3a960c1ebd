//! TLS for the service's TCP listeners (`--tls-cert`, `--tls-key`) and for the clients that
//! reach it at an `https://` address: rustls on ring, no system TLS library. A client trusts
//! the CA file `CAIRN_SERVER_CA` names, when set (pinning the service's own CA), else the
//! system's roots.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// How long a client may take over its TLS handshake before it is dropped.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Handshakes finished and waiting to be served.
const QUEUE: usize = 256;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server side: the certificate chain and key in PEM files.
///
/// # Errors
/// A file that does not read or does not hold a certificate or a key, as text.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect)
        .map_err(|e| format!("`{}`: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("`{}` holds no certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("`{}`: {e}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(config))
}

/// The client side: the CA in `ca` (PEM) when given, else the system's roots.
///
/// # Errors
/// A CA file that does not read, as text.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(file) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
                .and_then(Iterator::collect)
                .map_err(|e| format!("CA file `{}`: {e}", file.display()))?;
            for cert in certs {
                roots.add(cert).map_err(|e| e.to_string())?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Connects to `host:port` over TLS, checking the certificate names `host` and chains to
/// `ca` (else to the system's roots).
///
/// # Errors
/// Connection, name or handshake failures, as text.
pub async fn connect(
    host_port: &str,
    ca: Option<&Path>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let host = host_port
        .rsplit_once(':')
        .map_or(host_port, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let name = rustls::pki_types::ServerName::try_from(host).map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(host_port)
        .await
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    TlsConnector::from(client_config(ca)?)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())
}

/// A TCP listener that serves TLS: handshakes run side by side (a slow client holds no one
/// else up) and are dropped past `HANDSHAKE`.
pub struct TlsListener {
    local: std::net::SocketAddr,
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, std::net::SocketAddr)>,
}

impl TlsListener {
    /// Serves TLS with `config` on `listener`.
    ///
    /// # Errors
    /// The listener's address cannot be read.
    pub fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (send, ready) = tokio::sync::mpsc::channel(QUEUE);
        tokio::spawn(async move {
            loop {
                // The server stopped taking connections: the socket is closed with this task.
                let accepted = tokio::select! {
                    () = send.closed() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((stream, addr)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let handed = send.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await
                    {
                        let _ = handed.send((tls, addr)).await;
                    }
                });
            }
        });
        Ok(Self { local, ready })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The acceptor task is gone: nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
