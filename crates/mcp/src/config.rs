//! The gateway's configuration: `.cairn/mcp.json`, or the same upstreams given as flags.
//!
//! ```json
//! {
//!   "schema_version": "cairn.mcp/v1",
//!   "tenant_id": "local",
//!   "principal": "mcp-agent",
//!   "tools_list": "hide",
//!   "call_timeout_seconds": 120,
//!   "approval_hold_seconds": 0,
//!   "max_message_bytes": 16777216,
//!   "read_only_tools": ["fs__read_*", "fs__list_directory"],
//!   "servers": {
//!     "fs":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!              "env": { "LOG": "1" }, "cwd": "." },
//!     "web": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer …" } }
//!   }
//! }
//! ```
//!
//! Every key but `servers` is optional. Unknown keys are refused (a typo would otherwise
//! configure nothing), and every error names the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::GatewayError;
use crate::names::check_server_name;

/// The schema version of `.cairn/mcp.json`.
pub const SCHEMA_VERSION: &str = "cairn.mcp/v1";

/// The largest configuration file read.
const MAX_BYTES: u64 = 1 << 20;

/// How long a forwarded call may take by default before its outcome is unknown.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest a held call may wait for a person in flight.
pub const MAX_HOLD: Duration = Duration::from_secs(600);

/// What `tools/list` shows of the tools the policies and the active lane refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsList {
    /// Only tools a call could be admitted to (the default): a model is not shown tools it
    /// may never use.
    #[default]
    Hide,
    /// Every upstream tool; a refused one is denied when called.
    Show,
}

/// How an upstream server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it (on top of the gateway's own).
        env: BTreeMap<String, String>,
        /// Its working folder (relative to the project), when not the gateway's.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL (`http://` or `https://`).
        url: String,
        /// Headers sent with every request (an `Authorization` among them).
        headers: BTreeMap<String, String>,
    },
}

/// One upstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its name: the prefix of its tools' names (`<name>__<tool>`).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
}

/// The gateway's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The tenant runs are recorded under.
    pub tenant: String,
    /// Who the calls are made as (the policies' principal, `Agent::"<principal>"`).
    pub principal: String,
    /// What `tools/list` shows.
    pub tools_list: ToolsList,
    /// How long a forwarded call may take before its outcome is unknown.
    pub call_timeout: Duration,
    /// How long a call held for a person's approval waits in flight (zero: refused at once
    /// with the request's id, and admitted when made again after a person approved it).
    pub approval_hold: Duration,
    /// The largest message a client may send, in bytes.
    pub max_message_bytes: usize,
    /// Exposed tool names (or prefixes ending in `*`) that only read: every other tool is
    /// consequential, so it is refused while a continuity restriction holds (an unknown
    /// outcome awaiting reconciliation, a decision conflicting or dropped).
    pub read_only_tools: Vec<String>,
    /// The upstream servers, in name order.
    pub upstreams: Vec<Upstream>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            tenant: "local".to_owned(),
            principal: "mcp-agent".to_owned(),
            tools_list: ToolsList::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            approval_hold: Duration::ZERO,
            max_message_bytes: crate::framing::MAX_MESSAGE_BYTES,
            read_only_tools: Vec::new(),
            upstreams: Vec::new(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    schema_version: Option<String>,
    tenant_id: Option<String>,
    principal: Option<String>,
    tools_list: Option<ToolsList>,
    call_timeout_seconds: Option<u64>,
    approval_hold_seconds: Option<u64>,
    max_message_bytes: Option<usize>,
    #[serde(default)]
    read_only_tools: Vec<String>,
    #[serde(default)]
    servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl GatewayConfig {
    /// Reads the configuration at `path`.
    ///
    /// # Errors
    /// [`GatewayError::Config`] naming the field when it cannot be read or is invalid.
    pub fn load(path: &Path) -> Result<Self, GatewayError> {
        Self::load_with(path, true)
    }

    /// Reads the settings at `path` whose servers are given another way (`--server`): the
    /// file may name none, and its own are replaced.
    ///
    /// # Errors
    /// As [`GatewayConfig::load`].
    pub fn load_settings(path: &Path) -> Result<Self, GatewayError> {
        Self::load_with(path, false)
    }

    fn load_with(path: &Path, servers: bool) -> Result<Self, GatewayError> {
        let fail = |reason: String| GatewayError::Config {
            path: path.to_path_buf(),
            reason,
        };
        let len = std::fs::metadata(path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        if len > MAX_BYTES {
            return Err(fail(format!(
                "{len} bytes is more than the {MAX_BYTES}-byte limit"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        Self::parse(&text, servers).map_err(fail)
    }

    /// Reads the configuration from JSON `text`.
    ///
    /// # Errors
    /// What is wrong, naming the field.
    pub fn from_json(text: &str) -> Result<Self, String> {
        Self::parse(text, true)
    }

    /// Reads `text`, which must name at least one server when `servers`.
    fn parse(text: &str, servers: bool) -> Result<Self, String> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if let Some(version) = &raw.schema_version
            && version != SCHEMA_VERSION
        {
            return Err(format!(
                "`schema_version`: `{version}` is not `{SCHEMA_VERSION}`"
            ));
        }
        let mut config = Self::default();
        if let Some(tenant) = raw.tenant_id {
            cairn_core::TenantId::new(&tenant).map_err(|e| format!("`tenant_id`: {e}"))?;
            config.tenant = tenant;
        }
        if let Some(principal) = raw.principal {
            if principal.is_empty() || principal.chars().any(char::is_control) {
                return Err(
                    "`principal`: must be a non-empty name without control characters".to_owned(),
                );
            }
            config.principal = principal;
        }
        config.tools_list = raw.tools_list.unwrap_or_default();
        if let Some(secs) = raw.call_timeout_seconds {
            if secs == 0 || secs > 86_400 {
                return Err(format!(
                    "`call_timeout_seconds`: {secs} is not between 1 and 86400"
                ));
            }
            config.call_timeout = Duration::from_secs(secs);
        }
        if let Some(secs) = raw.approval_hold_seconds {
            let hold = Duration::from_secs(secs);
            if hold > MAX_HOLD {
                return Err(format!(
                    "`approval_hold_seconds`: {secs} is more than {}",
                    MAX_HOLD.as_secs()
                ));
            }
            config.approval_hold = hold;
        }
        if let Some(bytes) = raw.max_message_bytes {
            if !(1024..=(256 << 20)).contains(&bytes) {
                return Err(format!(
                    "`max_message_bytes`: {bytes} is not between 1024 and {}",
                    256 << 20
                ));
            }
            config.max_message_bytes = bytes;
        }
        for (i, pattern) in raw.read_only_tools.iter().enumerate() {
            if !cairn_runtime::restrictions::ToolClasses::pattern_is_valid(pattern) {
                return Err(format!(
                    "`read_only_tools[{i}]`: `{pattern}` is not a tool name or a prefix ending in `*`"
                ));
            }
        }
        config.read_only_tools = raw.read_only_tools;
        if servers && raw.servers.is_empty() {
            return Err("`servers`: name at least one upstream server".to_owned());
        }
        for (name, server) in raw.servers {
            let upstream = server
                .into_upstream(&name)
                .map_err(|reason| format!("`servers.{name}`: {reason}"))?;
            config.upstreams.push(upstream);
        }
        Ok(config)
    }
}

impl RawServer {
    fn into_upstream(self, name: &str) -> Result<Upstream, String> {
        check_server_name(name)?;
        let transport = match (self.command, self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    return Err("`headers` belong to a `url` server".to_owned());
                }
                if command.is_empty() {
                    return Err("`command` is empty".to_owned());
                }
                Transport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                    cwd: self.cwd,
                }
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err("`args`, `env` and `cwd` belong to a `command` server".to_owned());
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("`url`: `{url}` is not an http:// or https:// URL"));
                }
                for (header, value) in &self.headers {
                    if header.is_empty()
                        || !header.bytes().all(|b| b.is_ascii_graphic() && b != b':')
                        || value.chars().any(|c| c.is_control() && c != '\t')
                    {
                        return Err(format!("`headers.{header}`: not a valid HTTP header"));
                    }
                }
                Transport::Http {
                    url,
                    headers: self.headers,
                }
            }
            (Some(_), Some(_)) => return Err("give `command` or `url`, not both".to_owned()),
            (None, None) => {
                return Err(
                    "give `command` (a child process) or `url` (Streamable HTTP)".to_owned(),
                );
            }
        };
        Ok(Upstream {
            name: name.to_owned(),
            transport,
        })
    }
}

/// An upstream given as a flag: `NAME=COMMAND ARG…` (split at spaces) or `NAME=http(s)://URL`.
///
/// # Errors
/// What is wrong with it.
pub fn parse_server_flag(text: &str) -> Result<Upstream, String> {
    let (name, target) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: give NAME=COMMAND or NAME=URL"))?;
    check_server_name(name)?;
    let transport = if target.starts_with("http://") || target.starts_with("https://") {
        Transport::Http {
            url: target.to_owned(),
            headers: BTreeMap::new(),
        }
    } else {
        let mut words = target.split_whitespace().map(ToOwned::to_owned);
        let command = words
            .next()
            .ok_or_else(|| format!("`{text}`: the command is empty"))?;
        Transport::Stdio {
            command,
            args: words.collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    };
    Ok(Upstream {
        name: name.to_owned(),
        transport,
    })
}

#[cfg(test)]
mod tests {
    //! The configuration file's shapes and the errors that name the offending field.
    use super::*;

    #[test]
    fn a_full_configuration_reads() {
        let config = GatewayConfig::from_json(
            r#"{"schema_version": "cairn.mcp/v1", "tenant_id": "acme", "tools_list": "show",
                "call_timeout_seconds": 5, "approval_hold_seconds": 30,
                "servers": {"fs": {"command": "node", "args": ["fs.js"]},
                            "web": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer t"}}}}"#,
        )
        .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(config.tenant, "acme");
        assert_eq!(config.tools_list, ToolsList::Show);
        assert_eq!(config.call_timeout, Duration::from_secs(5));
        assert_eq!(config.approval_hold, Duration::from_secs(30));
        assert_eq!(config.upstreams.len(), 2);
        assert_eq!(
            config.upstreams.first().map(|u| u.name.as_str()),
            Some("fs")
        );
    }

    #[test]
    fn every_error_names_its_field() {
        for (text, field) in [
            (r#"{"servers": {}}"#, "`servers`"),
            (
                r#"{"servers": {"a__b": {"command": "x"}}}"#,
                "`servers.a__b`",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "url": "http://y"}}}"#,
                "`servers.a`",
            ),
            (r#"{"servers": {"a": {"url": "ftp://y"}}}"#, "`url`"),
            (
                r#"{"servers": {"a": {"command": "x"}}, "tenant": "t"}"#,
                "tenant",
            ),
            (
                r#"{"servers": {"a": {"command": "x"}}, "call_timeout_seconds": 0}"#,
                "`call_timeout_seconds`",
            ),
            (
                r#"{"servers": {"a": {"command": "x"}}, "schema_version": "v9"}"#,
                "`schema_version`",
            ),
            (
                r#"{"servers": {"a": {"url": "http://y", "headers": {"A\nB": "c"}}}}"#,
                "`headers.",
            ),
        ] {
            let error = GatewayConfig::from_json(text).err().unwrap_or_default();
            assert!(error.contains(field), "{text}: {error}");
        }
    }

    #[test]
    fn a_server_flag_is_a_command_or_a_url() {
        let stdio =
            parse_server_flag("fs=node server.js /tmp").unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            stdio.transport,
            Transport::Stdio {
                command: "node".to_owned(),
                args: vec!["server.js".to_owned(), "/tmp".to_owned()],
                env: BTreeMap::new(),
                cwd: None
            }
        );
        let http =
            parse_server_flag("web=http://127.0.0.1:1/mcp").unwrap_or_else(|e| unreachable!("{e}"));
        assert!(matches!(http.transport, Transport::Http { .. }));
        assert!(parse_server_flag("nothing").is_err());
        assert!(parse_server_flag("bad name=x").is_err());
    }
}
