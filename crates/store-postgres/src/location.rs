//! A PostgreSQL store's location: a `postgres://` URL, checked, printed without its password,
//! and turned into the connection settings the store runs with.

use std::time::Duration;

use cairn_ledger::StoreError;

/// Whether `text` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
#[must_use]
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// `url` with its password replaced by `***`, both where a URL carries one (`user:pw@host`)
/// and as a `password=` parameter: the only form of a store URL Cairn prints, logs or puts in
/// an error.
#[must_use]
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

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

/// The connection settings for `url`: the URL's own, with Cairn's session settings put first
/// (so the URL's `options` can still change them): commits wait for the server's durable
/// write (`synchronous_commit=on`), and no statement outlives the statement timeout.
pub(crate) fn config(url: &str, options: &Options) -> Result<postgres::Config, StoreError> {
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
    // The parser's message may quote the text it stopped at: name the URL only redacted.
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e: postgres::Error| invalid(without(&e.to_string(), url)))?;
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
    Ok(config)
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
    fn a_bad_url_is_named_without_its_password() {
        let error = config("postgres://u:s3cret@host:notaport/db", &Options::default())
            .unwrap_err()
            .to_string();
        assert!(!error.contains("s3cret"), "{error}");
        assert!(error.contains("postgres://u:***@host"), "{error}");
    }
}
