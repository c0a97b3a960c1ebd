//! A PostgreSQL store's location: a `postgres://` URL, checked, printed without its password,
//! and turned into the connection settings the store runs with.

use std::time::Duration;

use cairn_ledger::StoreError;

pub use cairn_ledger::location::{is_postgres_url, redact};

/// How a store connects and how long it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// How many hash partitions the record and content tables get when the store is created
    /// (a later open keeps what the store was created with).
    pub partitions: u32,
    /// The most connections the store keeps open at once.
    pub pool_size: u32,
    /// How long connecting may take, unless the URL says (`connect_timeout`). A hook's
    /// deadline is longer, so an unreachable server is an answer, not a hung hook.
    pub connect_timeout: Duration,
    /// The longest a statement may run (or wait for a lock) before the server cancels it.
    pub statement_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            partitions: 16,
            pool_size: 4,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(10),
        }
    }
}

/// The most partitions a store may be created with.
pub const MAX_PARTITIONS: u32 = 1024;

/// How a store's connections are protected, from the URL's `sslmode` (and `sslrootcert`).
///
/// Cairn connects in the clear (`sslmode` absent or `disable`, for a server on the same host or
/// network) or with TLS that authenticates the server (`sslmode=verify-full`: the certificate
/// must chain to `sslrootcert`, a PEM file, or else to the machine's trusted roots, and name
/// the host). The modes that encrypt without checking who answers (`prefer`, `require`,
/// `allow`, and `verify-ca`, which does not check the name) are refused: a ledger that anyone
/// on the path can impersonate is not evidence.
pub(crate) enum Tls {
    /// No TLS.
    Off,
    /// TLS, the server authenticated by this configuration.
    VerifyFull(tokio_postgres_rustls::MakeRustlsConnect),
}

/// Takes `sslmode` and `sslrootcert` out of `url` (the driver knows neither `verify-full` nor
/// `sslrootcert`) and says how to connect.
fn tls_of(url: &str) -> Result<(String, Tls), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), Tls::Off));
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for param in query.split('&') {
        match param.split_once('=') {
            Some(("sslmode", value)) => mode = Some(value.to_owned()),
            Some(("sslrootcert", value)) => root = Some(percent_decoded(value)),
            _ => kept.push(param),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    match mode.as_deref() {
        None | Some("disable") => match root {
            Some(_) => Err(String::from(
                "`sslrootcert` is only used with `sslmode=verify-full`",
            )),
            None => Ok((rest, Tls::Off)),
        },
        Some("verify-full") => Ok((rest, Tls::VerifyFull(connector(root.as_deref())?))),
        Some(other @ ("prefer" | "require" | "allow" | "verify-ca")) => Err(format!(
            "`sslmode={other}` does not check that the server is the one named; use `sslmode=verify-full` (with `sslrootcert=PATH` for a private CA) or `sslmode=disable`"
        )),
        Some(other) => Err(format!(
            "unknown `sslmode={}`: use `verify-full` or `disable`",
            cairn_core::error::excerpt(other)
        )),
    }
}

/// `%XX` escapes decoded (a path in a URL).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (byte, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A TLS connector that trusts the certificates of `root` (a PEM file), or the machine's.
fn connector(root: Option<&str>) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("`sslrootcert` `{path}` cannot be read: {e}"))?;
            for cert in certs {
                let cert = cert.map_err(|e| format!("`sslrootcert` `{path}`: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("`sslrootcert` `{path}`: {e}"))?;
            }
            if roots.is_empty() {
                return Err(format!("`sslrootcert` `{path}` holds no certificate"));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(String::from(
                    "no trusted root certificates on this machine: give the server's CA with `sslrootcert=PATH`",
                ));
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// The connection settings for `url`: the URL's own, with Cairn's session settings put first
/// (so the URL's `options` can still change them): commits wait for the server's durable
/// write (`synchronous_commit=on`), and no statement outlives the statement timeout. With
/// them, how the connections are protected ([`Tls`]).
pub(crate) fn config(url: &str, options: &Options) -> Result<(postgres::Config, Tls), StoreError> {
    let invalid = |reason: String| StoreError::InvalidLocation {
        location: redact(url),
        reason,
    };
    if !is_postgres_url(url) {
        return Err(invalid(String::from(
            "a PostgreSQL store is a `postgres://` or `postgresql://` URL",
        )));
    }
    if options.partitions == 0 || options.partitions > MAX_PARTITIONS {
        return Err(invalid(format!(
            "the partition count must be 1 to {MAX_PARTITIONS}, not {}",
            options.partitions
        )));
    }
    let (rest, tls) = tls_of(url).map_err(&invalid)?;
    // The parser's message may quote the text it stopped at: name the URL only redacted.
    let mut config: postgres::Config = rest
        .parse()
        .map_err(|e: postgres::Error| invalid(without(&e.to_string(), url)))?;
    if matches!(tls, Tls::VerifyFull(_)) {
        config.ssl_mode(postgres::config::SslMode::Require);
    }
    let ours = format!(
        "-c synchronous_commit=on -c statement_timeout={}",
        options.statement_timeout.as_millis().max(1)
    );
    let merged = match config.get_options() {
        Some(theirs) if !theirs.is_empty() => format!("{ours} {theirs}"),
        _ => ours,
    };
    config.options(&merged);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(options.connect_timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("cairn");
    }
    Ok((config, tls))
}

/// `message` with any copy of `url` in it replaced by its redacted form.
pub(crate) fn without(message: &str, url: &str) -> String {
    message.replace(url, &redact(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_survive_redaction() {
        assert_eq!(
            redact("postgres://cairn:s3cret@db.example:5432/ledger"),
            "postgres://cairn:***@db.example:5432/ledger"
        );
        assert_eq!(
            redact("postgresql://db/ledger?user=cairn&password=s3cret&sslmode=disable"),
            "postgresql://db/ledger?user=cairn&password=***&sslmode=disable"
        );
        assert_eq!(
            redact("postgres://cairn@127.0.0.1/test"),
            "postgres://cairn@127.0.0.1/test"
        );
        // An `@` inside the password does not leak its tail.
        assert_eq!(
            redact("postgres://u:p@ss@host/db"),
            "postgres://u:***@host/db"
        );
    }

    #[test]
    fn only_tls_that_authenticates_the_server_is_accepted() {
        let options = Options::default();
        for mode in ["require", "prefer", "allow", "verify-ca", "bogus"] {
            let error = config(
                &format!("postgres://u:s3cret@db/x?sslmode={mode}"),
                &options,
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
            assert!(error.contains("verify-full"), "{mode}: {error}");
            assert!(!error.contains("s3cret"), "{error}");
        }
        let (_, tls) = config("postgres://db/x?sslmode=disable&user=u", &options).unwrap();
        assert!(matches!(tls, Tls::Off));
        let missing = config(
            "postgres://db/x?sslmode=verify-full&sslrootcert=%2Fnowhere%2Fca.pem",
            &options,
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(missing.contains("/nowhere/ca.pem"), "{missing}");
        let stray = config("postgres://db/x?sslrootcert=/ca.pem", &options);
        assert!(stray.is_err());
    }

    #[test]
    fn a_bad_url_is_named_without_its_password() {
        let error = config("postgres://u:s3cret@host:notaport/db", &Options::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!error.contains("s3cret"), "{error}");
        assert!(error.contains("postgres://u:***@host"), "{error}");
    }
}
