//! A small HTTP/1.1 client of the service, over TCP or a Unix socket alike: what a thin
//! client (a hook, a test, a script's helper) needs to send one request with a token and a
//! deadline.

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// Where the service is: `unix:/run/cairn/cairn.sock` or `http://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `host:port` over TCP.
    Tcp(String),
    /// `host:port` over TLS (the certificate must name `host`), trusting the CA in `ca` (PEM),
    /// else the system's roots.
    Https {
        /// `host:port`.
        host: String,
        /// The CA file (`CAIRN_SERVER_CA` when parsed).
        ca: Option<PathBuf>,
    },
    /// A Unix socket.
    Unix(PathBuf),
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The endpoint text is not one the client understands.
    #[error(
        "`{0}` is not a service address (`unix:/path/to/cairn.sock`, `http://host:port` or `https://host[:port]`)"
    )]
    Endpoint(String),
    /// No connection, a broken one, or a malformed answer.
    #[error("the service at {endpoint} did not answer: {reason}")]
    Transport {
        /// Where.
        endpoint: String,
        /// What happened.
        reason: String,
    },
    /// No answer within the deadline.
    #[error("the service at {0} did not answer within the deadline")]
    Timeout(String),
}

cairn_core::error_codes! {
    ClientError {
        /// `CAIRN_SERVER` is not an address the client understands.
        ENDPOINT_INVALID = Invalid("service_endpoint_invalid");
        /// The service could not be reached, or broke the connection.
        UNREACHABLE = Unavailable("service_unreachable");
        /// The service did not answer in time.
        TIMEOUT = Unavailable("service_timeout");
    }
}

impl cairn_core::ErrorCode for ClientError {
    fn error_code(&self) -> cairn_core::Code {
        match self {
            Self::Endpoint(_) => Self::ENDPOINT_INVALID,
            Self::Transport { .. } => Self::UNREACHABLE,
            Self::Timeout(_) => Self::TIMEOUT,
        }
    }
}

impl std::str::FromStr for Endpoint {
    type Err = ClientError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(path) = text.strip_prefix("unix:") {
            if !path.is_empty() {
                return Ok(Self::Unix(PathBuf::from(path)));
            }
        } else if let Some(rest) = text.strip_prefix("http://") {
            let host = rest.trim_end_matches('/');
            if !host.is_empty() && !host.contains('/') {
                return Ok(Self::Tcp(host.to_owned()));
            }
        } else if let Some(rest) = text.strip_prefix("https://") {
            let host = rest.trim_end_matches('/');
            if !host.is_empty() && !host.contains('/') {
                let with_port = if host
                    .rsplit_once(':')
                    .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
                {
                    host.to_owned()
                } else {
                    format!("{host}:443")
                };
                return Ok(Self::Https {
                    host: with_port,
                    ca: std::env::var_os("CAIRN_SERVER_CA").map(PathBuf::from),
                });
            }
        }
        Err(ClientError::Endpoint(text.to_owned()))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(host) => write!(f, "http://{host}"),
            Self::Https { host, .. } => write!(f, "https://{host}"),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// An answer: its status and body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON (`Null` when it is not).
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The error's field `name` (`code`, `message`, `field`), for an error answer.
    #[must_use]
    pub fn error(&self, name: &str) -> Option<String> {
        self.json()
            .get("error")
            .and_then(|error| error.get(name))
            .and_then(|value| value.as_str())
            .map(str::to_owned)
    }
}

/// Sends one request and reads the whole answer within `deadline`.
///
/// # Errors
/// [`ClientError`].
pub async fn send(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
    deadline: Duration,
) -> Result<Answer, ClientError> {
    send_with_headers(endpoint, method, path, token, &[], body, deadline).await
}

/// [`send`] with more request headers (a webhook's signature).
///
/// # Errors
/// [`ClientError`].
pub async fn send_with_headers(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, String)],
    body: Option<Vec<u8>>,
    deadline: Duration,
) -> Result<Answer, ClientError> {
    tokio::time::timeout(
        deadline,
        exchange(endpoint, method, path, token, headers, body),
    )
    .await
    .map_err(|_| ClientError::Timeout(endpoint.to_string()))?
}

async fn exchange(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, String)],
    body: Option<Vec<u8>>,
) -> Result<Answer, ClientError> {
    let transport = |reason: &dyn std::fmt::Display| transport(endpoint, reason);
    let host = match endpoint {
        Endpoint::Tcp(host) | Endpoint::Https { host, .. } => host.clone(),
        Endpoint::Unix(_) => "localhost".to_owned(),
    };
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, host);
    if let Some(token) = token {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if body.is_some() {
        request = request.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| transport(&e))?;
    let response = match endpoint {
        Endpoint::Tcp(host) => {
            let stream = tokio::net::TcpStream::connect(host.as_str())
                .await
                .map_err(|e| transport(&e))?;
            let _ = stream.set_nodelay(true);
            round_trip(TokioIo::new(stream), request).await
        }
        Endpoint::Unix(path) => {
            let stream = tokio::net::UnixStream::connect(path)
                .await
                .map_err(|e| transport(&e))?;
            round_trip(TokioIo::new(stream), request).await
        }
        Endpoint::Https { host, ca } => {
            let stream = crate::tls::connect(host, ca.as_deref())
                .await
                .map_err(|e| transport(&e))?;
            round_trip(TokioIo::new(stream), request).await
        }
    }
    .map_err(|e| transport(&e))?;
    Ok(response)
}

fn transport(endpoint: &Endpoint, reason: &dyn std::fmt::Display) -> ClientError {
    ClientError::Transport {
        endpoint: endpoint.to_string(),
        reason: reason.to_string(),
    }
}

async fn round_trip<T>(
    io: TokioIo<T>,
    request: hyper::Request<Full<Bytes>>,
) -> Result<Answer, hyper::Error>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes().to_vec();
    driver.abort();
    Ok(Answer { status, body })
}

/// [`send`] from synchronous code, on a runtime of its own for the one request.
///
/// # Errors
/// [`ClientError`].
pub fn send_blocking(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
    deadline: Duration,
) -> Result<Answer, ClientError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| transport(endpoint, &e))?;
    runtime.block_on(send(endpoint, method, path, token, body, deadline))
}
