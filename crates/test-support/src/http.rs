//! One plain HTTP/1.1 request over its own loopback connection, as a browser without a
//! browser: for tests and benchmarks that need the raw status, headers and cookies of an
//! answer (the console's sign-in, its one-time link).

use std::io::{Read as _, Write as _};

/// An answer: its status, its head (status line and headers, names lower-cased as the
/// server sent them) and its body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status (0 when the answer had none).
    pub status: u16,
    /// The status line and the headers.
    pub head: String,
    /// The body.
    pub body: String,
}

impl Reply {
    /// The value the answer sets for cookie `name` (`set-cookie: name=value; …`).
    #[must_use]
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.head
            .lines()
            .find_map(|line| line.strip_prefix(&format!("set-cookie: {name}=")))
            .and_then(|value| value.split(';').next())
            .map(str::to_owned)
    }
}

/// `method path` on `host` (`127.0.0.1:PORT`) with `cookie` (a `Cookie` header's value) and a
/// form `body`, over a connection of its own (`Connection: close`).
///
/// # Panics
/// When the connection fails or the answer cannot be read: the test fails.
#[must_use]
pub fn request(
    host: &str,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let mut stream = std::net::TcpStream::connect(host).expect("the server accepts");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("a read timeout");
    let cookie = cookie.map_or_else(String::new, |c| format!("Cookie: {c}\r\n"));
    let form = body.map_or_else(String::new, |b| {
        format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            b.len()
        )
    });
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}{form}Connection: close\r\n\r\n{}",
        body.unwrap_or_default()
    )
    .expect("the request is sent");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("the answer reads");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}
