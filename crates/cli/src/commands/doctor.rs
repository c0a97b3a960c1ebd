//! `cairn doctor`: which set-up is in force here, and what it protects against.
//!
//! - **Service client** (`CAIRN_SERVER` set): the hooks send every event to `cairn serve`;
//!   the doctor checks the service answers and the token is accepted, and tells whether the
//!   service runs as another OS user (a Unix socket owned by another user), as this user
//!   (no separation), or elsewhere (TCP: another host or container).
//! - **Service host** (`--data DIR`): the service's folder — readable by its owner only, the
//!   key and the token file present.
//! - **Local** (a `.cairn/` project here): policies, key and store are files of this user.
//!
//! Exit 0 when every check passes, 1 when one fails.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use cairn_server::client::{Endpoint, send_blocking};
use serde_json::{Value, json};

use crate::args::DoctorArgs;
use crate::context::find_project;
use crate::failure::{Failure, exit};
use crate::output::Outcome;

/// One check and what it found.
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
}

/// Runs `cairn doctor`.
pub fn run(args: &DoctorArgs) -> Result<Outcome, Failure> {
    let mut checks = Vec::new();
    let (setup, protects, exposes) = if let Some(data) = &args.data {
        service_host(data, &mut checks)
    } else if let Some(server) = std::env::var_os("CAIRN_SERVER") {
        service_client(&server.to_string_lossy(), &mut checks)
    } else {
        local(&mut checks)
    };
    let ok = checks.iter().all(|c| c.ok);
    let mut human = format!("set-up: {setup}\n");
    for check in &checks {
        let _ = writeln!(
            human,
            "  [{}] {}: {}",
            if check.ok { "ok" } else { "FAIL" },
            check.name,
            check.detail
        );
    }
    let _ = writeln!(human, "protects against:");
    for line in &protects {
        let _ = writeln!(human, "  - {line}");
    }
    let _ = writeln!(human, "does not protect against:");
    for line in &exposes {
        let _ = writeln!(human, "  - {line}");
    }
    let json = json!({
        "setup": setup,
        "ok": ok,
        "checks": checks.iter().map(|c| json!({"name": c.name, "ok": c.ok, "detail": c.detail})).collect::<Vec<Value>>(),
        "protects_against": protects,
        "does_not_protect_against": exposes,
    });
    let mut outcome = Outcome::ok(json, human);
    if !ok {
        outcome.exit = exit::INTERNAL;
    }
    Ok(outcome)
}

type Findings = (&'static str, Vec<String>, Vec<String>);

fn service_client(server: &str, checks: &mut Vec<Check>) -> Findings {
    let endpoint = match server.parse::<Endpoint>() {
        Ok(endpoint) => endpoint,
        Err(e) => {
            checks.push(Check {
                name: "CAIRN_SERVER",
                ok: false,
                detail: e.to_string(),
            });
            return (
                "service client (misconfigured)",
                Vec::new(),
                vec![
                    "anything: every tool call is denied until CAIRN_SERVER names the service"
                        .to_owned(),
                ],
            );
        }
    };
    let deadline = Duration::from_secs(5);
    let health = send_blocking(&endpoint, "GET", "/healthz", None, None, deadline);
    checks.push(Check {
        name: "service answers",
        ok: matches!(&health, Ok(a) if a.status == 200),
        detail: match &health {
            Ok(answer) => format!("{endpoint} answered {}", answer.status),
            Err(e) => e.to_string(),
        },
    });
    let token = std::env::var("CAIRN_TOKEN").unwrap_or_default();
    let accepted = if token.is_empty() {
        Err("CAIRN_TOKEN is not set".to_owned())
    } else {
        send_blocking(&endpoint, "GET", "/v1/runs", Some(&token), None, deadline)
            .map_err(|e| e.to_string())
            .and_then(|answer| match answer.status {
                200 => Ok(()),
                status => Err(format!(
                    "the service answered {status} ({})",
                    answer.error("code").unwrap_or_else(|| "no code".to_owned())
                )),
            })
    };
    checks.push(Check {
        name: "token accepted",
        ok: accepted.is_ok(),
        detail: accepted
            .err()
            .unwrap_or_else(|| "an agent token of the service".to_owned()),
    });
    let (setup, separated) = match &endpoint {
        Endpoint::Unix(path) => match socket_owner(path) {
            Some(owner) if owner != current_uid() => {
                ("service on this host, as another OS user", true)
            }
            Some(_) => (
                "service on this host, as this same user (no separation)",
                false,
            ),
            None => ("service on this host (socket owner unknown)", false),
        },
        Endpoint::Tcp(_) => (
            "service over plain TCP (another host or container; the token crosses the network in clear: use https://)",
            true,
        ),
        Endpoint::Https { .. } => ("service over TLS (another host or container)", true),
    };
    let mut protects = vec![
        "a tool call that is not decided: every call is decided and recorded by the service before it runs, and denied when the service cannot answer".to_owned(),
        "policies, keys or a store edited on this side: nothing here is read".to_owned(),
    ];
    let mut exposes = vec![
        "another program running as this user: it holds the same token and can write into this agent's own runs (never read them, nor reach other runs or tenants)".to_owned(),
        "tool calls made outside the hooks (a program the agent started that acts on its own)".to_owned(),
    ];
    if separated {
        protects.push("the agent's own shell reading or changing the service's policies, signing key or records: they belong to another user or host".to_owned());
    } else {
        exposes.push("the agent's own shell: the service runs as this user, so its folder is within the agent's reach; run it as its own user (docs/guide/deploy-systemd.md)".to_owned());
    }
    (setup, protects, exposes)
}

fn service_host(data: &Path, checks: &mut Vec<Check>) -> Findings {
    let mode = std::fs::metadata(data).ok().map(|m| mode_of(&m));
    checks.push(Check {
        name: "folder owner-only",
        ok: mode.is_some_and(|m| m & 0o077 == 0),
        detail: match mode {
            Some(m) => format!("{} has mode {m:o}", data.display()),
            None => format!("{} does not exist or cannot be read", data.display()),
        },
    });
    let keys = data.join(crate::context::KEYS_DIR);
    let private: Vec<(std::path::PathBuf, u32)> = std::fs::read_dir(&keys)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "key"))
                .filter_map(|path| std::fs::metadata(&path).ok().map(|m| (path, mode_of(&m))))
                .collect()
        })
        .unwrap_or_default();
    checks.push(Check {
        name: "signing keys owner-only",
        ok: !private.is_empty() && private.iter().all(|(_, mode)| mode & 0o077 == 0),
        detail: if private.is_empty() {
            format!("no private key in {}", keys.display())
        } else {
            private
                .iter()
                .map(|(path, mode)| format!("{} (mode {mode:o})", path.display()))
                .collect::<Vec<_>>()
                .join(", ")
        },
    });
    let tokens = data.join(super::serve::TOKENS_FILE);
    let meta = std::fs::metadata(&tokens).ok();
    checks.push(Check {
        name: "token file owner-only",
        ok: meta.as_ref().is_some_and(|m| mode_of(m) & 0o077 == 0),
        detail: match meta {
            Some(m) => format!("{} (mode {:o})", tokens.display(), mode_of(&m)),
            None => format!(
                "{} is missing: create a token with `cairn tokens create`",
                tokens.display()
            ),
        },
    });
    (
        "service host",
        vec![
            "agents of other users reading or changing the policies, the key or the store, when the folder is its owner's only and the agents hold tokens only".to_owned(),
        ],
        vec!["a person or program running as the service's user, or as root".to_owned()],
    )
}

fn local(checks: &mut Vec<Check>) -> Findings {
    let project = std::env::current_dir()
        .ok()
        .and_then(|cwd| find_project(&cwd));
    checks.push(Check {
        name: "project",
        ok: project.is_some(),
        detail: project.as_ref().map_or_else(
            || "no .cairn/ here or above: run `cairn init`, or set CAIRN_SERVER".to_owned(),
            |p| format!("{}", p.join(crate::context::PROJECT_DIR).display()),
        ),
    });
    (
        "local (policies, key and store are files of this user)",
        vec![
            "mistakes and summaries: every call is decided and recorded before it runs; a tool call that touches .cairn/ is denied (self-protection)".to_owned(),
        ],
        vec![
            "an agent that edits .cairn/ through a shell the gate did not see: the files are its own user's; run `cairn serve` as another user for a wall (docs/guide/deploy-systemd.md)".to_owned(),
        ],
    )
}

fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o777
}

fn socket_owner(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| m.uid())
}

fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}
