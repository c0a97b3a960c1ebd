//! `cairn tokens create|list|revoke`: the service's tokens, edited in its folder's
//! `tokens.json` (a running service picks the change up within a second).

use std::fmt::Write as _;

use cairn_server::tokens::{Role, TokenEntry, TokenFileEditor};

use crate::args::TokensCommand;
use crate::context::parse_id;
use crate::failure::Failure;
use crate::output::Outcome;

use super::serve::TOKENS_FILE;

/// Runs `cairn tokens …`.
pub fn run(command: TokensCommand) -> Result<Outcome, Failure> {
    let now = jiff::Timestamp::now();
    match command {
        TokensCommand::Create {
            data,
            tenant,
            role,
            label,
        } => {
            let tenant = parse_id::<cairn_core::ids::Tenant>("tenant", &tenant)?;
            let role: Role = role.parse().map_err(|e| Failure::from_error(&e))?;
            let made = TokenFileEditor::new(data.join(TOKENS_FILE))
                .create(tenant, role, label, now)
                .map_err(|e| Failure::from_error(&e))?;
            Ok(Outcome::ok(
                serde_json::json!({"token": made.token, "entry": view(&made.entry)}),
                format!(
                    "{}\n(token {} of tenant `{}`, role {}; shown once, stored only as its digest)",
                    made.token,
                    made.entry.id,
                    made.entry.tenant,
                    made.entry.role.as_str()
                ),
            ))
        }
        TokensCommand::List { data } => {
            let tokens = TokenFileEditor::new(data.join(TOKENS_FILE))
                .list()
                .map_err(|e| Failure::from_error(&e))?;
            let mut human = String::new();
            for entry in &tokens {
                let _ = writeln!(
                    human,
                    "{}  {:<12} {:<12} {}{}",
                    entry.id,
                    entry.tenant,
                    entry.role.as_str(),
                    entry.label.as_deref().unwrap_or("-"),
                    entry
                        .revoked_at
                        .as_deref()
                        .map(|at| format!("  (revoked {at})"))
                        .unwrap_or_default()
                );
            }
            if tokens.is_empty() {
                human.push_str("no tokens\n");
            }
            Ok(Outcome::ok(
                serde_json::Value::Array(tokens.iter().map(view).collect()),
                human,
            ))
        }
        TokensCommand::Revoke { data, id } => {
            let entry = TokenFileEditor::new(data.join(TOKENS_FILE))
                .revoke(&id, None, now)
                .map_err(|e| Failure::from_error(&e))?;
            Ok(Outcome::ok(
                view(&entry),
                format!("revoked token {} of tenant `{}`", entry.id, entry.tenant),
            ))
        }
    }
}

/// A token as printed: never its digest.
fn view(entry: &TokenEntry) -> serde_json::Value {
    serde_json::json!({
        "id": entry.id,
        "tenant": entry.tenant,
        "role": entry.role,
        "label": entry.label,
        "created_at": entry.created_at,
        "revoked_at": entry.revoked_at,
    })
}
