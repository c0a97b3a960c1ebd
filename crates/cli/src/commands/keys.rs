//! `cairn keys`: generate the Ed25519 key that signs checkpoints, list trusted keys.

use std::fmt::Write as _;

use crate::args::KeysCommand;
use crate::context::Context;
use crate::failure::Failure;
use crate::output::Outcome;

/// Runs `cairn keys …`.
pub fn run(ctx: &Context, command: KeysCommand) -> Result<Outcome, Failure> {
    let keyring = ctx.keyring()?;
    match command {
        KeysCommand::Generate { name } => {
            let generated = keyring.generate(&mut rand_core::OsRng, &name)?;
            Ok(Outcome::ok(
                serde_json::json!({
                    "verifier_key": generated.verifier_key.to_string(),
                    "private_key_path": generated.private_key_path,
                    "verifier_key_path": generated.verifier_key_path,
                }),
                format!(
                    "generated signing key {}+{:08x} (now active)\n  private key  {} (mode 0600; keep it secret)\n  verifier key {}\n  {}\n",
                    generated.verifier_key.name(),
                    generated.verifier_key.key_id(),
                    generated.private_key_path.display(),
                    generated.verifier_key_path.display(),
                    generated.verifier_key
                ),
            ))
        }
        KeysCommand::List => {
            let trusted = keyring.trusted_keys()?;
            let active = keyring
                .active_signing_key()
                .ok()
                .map(|k| k.verifier_key().to_string());
            let keys: Vec<String> = trusted.iter().map(ToString::to_string).collect();
            let mut human = format!("keys in {}\n", keyring.dir().display());
            for key in &keys {
                let marker = if active.as_deref() == Some(key.as_str()) {
                    "* "
                } else {
                    "  "
                };
                let _ = writeln!(human, "{marker}{key}");
            }
            Ok(Outcome::ok(
                serde_json::json!({ "dir": keyring.dir(), "trusted": keys, "active": active }),
                human,
            ))
        }
    }
}
