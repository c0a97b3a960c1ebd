//! Bearer tokens: each bound to one tenant with one role, kept only as a digest.
//!
//! A token reads `cairn_<id>_<secret>`: the id (12 hex digits) finds its entry, and the
//! secret's SHA-256 digest is compared with the stored one in constant time. The book is a
//! JSON file of the service's folder (`tokens.json`, owner-only), written atomically by
//! `cairn tokens create|revoke` and re-read by a running service when it changes, so a
//! revocation takes effect within [`RELOAD_EVERY`] without a restart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use cairn_core::{Code, ErrorCode, TenantId};
use rand_core::{OsRng, RngCore as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use utoipa::ToSchema;

/// How often a running service looks whether the token file changed.
pub const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// The largest token file read.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// What a token may do. Roles do not nest across tenants: every role is confined to its
/// token's tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Opens runs and, in the runs it opened, admits calls, reports outcomes and
    /// observations, marks boundaries and closes the run. Reads nothing else.
    Agent,
    /// Reads, verifies and exports every run of its tenant, and reconciles unknown side
    /// effects (a person who looked at the external system).
    Investigator,
    /// Decides the tenant's approval requests (calls a policy holds for a person), reads
    /// them and the tenant's run summaries; verifies, exports and changes nothing else.
    Approver,
    /// Everything an investigator does, decides approvals, and manages the tenant's tokens.
    Admin,
}

impl Role {
    /// Its name in the API and the CLI.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Investigator => "investigator",
            Self::Approver => "approver",
            Self::Admin => "admin",
        }
    }

    /// Whether this role reads and verifies the tenant's runs.
    #[must_use]
    pub const fn investigates(self) -> bool {
        matches!(self, Self::Investigator | Self::Admin)
    }

    /// Whether this role decides the tenant's approval requests.
    #[must_use]
    pub const fn approves(self) -> bool {
        matches!(self, Self::Approver | Self::Admin)
    }
}

impl std::str::FromStr for Role {
    type Err = TokenError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "agent" => Ok(Self::Agent),
            "investigator" => Ok(Self::Investigator),
            "approver" => Ok(Self::Approver),
            "admin" => Ok(Self::Admin),
            other => Err(TokenError::InvalidRole(other.to_owned())),
        }
    }
}

/// One token as stored: never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenEntry {
    /// The public part (`cairn_<id>_…`), also the prefix of the runs an agent token opens.
    pub id: String,
    /// The one tenant it acts in.
    #[schema(value_type = String)]
    pub tenant: TenantId,
    /// What it may do.
    pub role: Role,
    /// `sha256:<hex>` of the secret.
    pub digest: String,
    /// A note for people (who or what holds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it was revoked (RFC 3339); a revoked token authenticates nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    tokens: Vec<TokenEntry>,
}

/// Who a request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's id.
    pub token_id: String,
    /// Its tenant.
    pub tenant: TenantId,
    /// Its role.
    pub role: Role,
}

impl Caller {
    /// Who the caller acts as, in the records, the gate and the lanes — on every path, the
    /// steps API and the hook events alike: `<role>:<token id>`.
    #[must_use]
    pub fn principal(&self) -> String {
        format!("{}:{}", self.role.as_str(), self.token_id)
    }
}

/// Failures of the token book.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token file cannot be read or written.
    #[error("token file `{}`: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A role name that is not `agent`, `investigator` or `admin`.
    #[error("unknown role `{0}` (expected agent, investigator, approver or admin)")]
    InvalidRole(String),
    /// No token with that id.
    #[error("no token `{0}`")]
    NotFound(String),
    /// The service folder the token file would be in does not exist.
    #[error(
        "the service folder `{}` does not exist: create it with `cairn serve --init-only --data {}`",
        folder.display(),
        folder.display()
    )]
    FolderMissing {
        /// The folder.
        folder: PathBuf,
    },
}

cairn_core::error_codes! {
    TokenError {
        /// The token file is unreadable, malformed or cannot be written.
        TOKEN_FILE = Internal("token_file");
        /// A role name that does not exist.
        INVALID_ROLE = Invalid("invalid_role");
        /// No token with that id.
        NOT_FOUND = NotFound("token_not_found");
        /// The service folder (`--data`) does not exist.
        FOLDER_MISSING = Invalid("service_folder_missing");
    }
}

impl ErrorCode for TokenError {
    fn error_code(&self) -> Code {
        match self {
            Self::File { .. } => Self::TOKEN_FILE,
            Self::InvalidRole(_) => Self::INVALID_ROLE,
            Self::NotFound(_) => Self::NOT_FOUND,
            Self::FolderMissing { .. } => Self::FOLDER_MISSING,
        }
    }
}

/// A token just created: the secret is shown once and never stored.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// The whole bearer token (`cairn_<id>_<secret>`).
    pub token: String,
    /// Its stored entry.
    pub entry: TokenEntry,
}

impl NewToken {
    /// A new token for `tenant` with `role`: a random id and secret.
    fn fresh(tenant: TenantId, role: Role, label: Option<String>, now: jiff::Timestamp) -> Self {
        let mut id_bytes = [0_u8; 6];
        OsRng.fill_bytes(&mut id_bytes);
        let mut secret_bytes = [0_u8; 32];
        OsRng.fill_bytes(&mut secret_bytes);
        let id = hex::encode(id_bytes);
        let secret = hex::encode(secret_bytes);
        let entry = TokenEntry {
            id: id.clone(),
            tenant,
            role,
            digest: digest_of(&secret),
            label,
            created_at: now.to_string(),
            revoked_at: None,
        };
        Self {
            token: format!("cairn_{id}_{secret}"),
            entry,
        }
    }
}

fn digest_of(secret: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(secret.as_bytes())))
}

/// The token file at `path`: read, changed and written back atomically.
#[derive(Debug)]
pub struct TokenFileEditor {
    path: PathBuf,
}

impl TokenFileEditor {
    /// The token file at `path` (it need not exist yet).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    fn error(&self, reason: impl std::fmt::Display) -> TokenError {
        TokenError::File {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// The file's tokens (none while it does not exist), once its folder is known to exist:
    /// a mistyped `--data` is an error, not an empty token book.
    fn read(&self) -> Result<TokenFile, TokenError> {
        self.folder_exists()?;
        read_file(&self.path)
    }

    fn folder_exists(&self) -> Result<(), TokenError> {
        match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => Err(TokenError::FolderMissing {
                folder: dir.to_path_buf(),
            }),
            _ => Ok(()),
        }
    }

    /// An exclusive lock on the file's updates (`tokens.json.lock` beside it), once its folder
    /// is known to exist, held from the read to the write of a change, so that two writers — two `cairn tokens` commands, or
    /// one beside the service's `POST /v1/tokens` — never lose each other's tokens. Released
    /// when the handle is dropped.
    fn lock_updates(&self) -> Result<std::fs::File, TokenError> {
        self.folder_exists()?;
        let mut path = self.path.clone().into_os_string();
        path.push(".lock");
        cairn_runtime::files::lock_exclusive(Path::new(&path))
            .map_err(|(step, e)| self.error(format!("its lock file: {step}: {e}")))
    }

    fn write(&self, file: &TokenFile) -> Result<(), TokenError> {
        let text = serde_json::to_string_pretty(file).map_err(|e| self.error(e))?;
        cairn_runtime::files::replace(&self.path, 0o600, text.as_bytes())
            .map_err(|(step, e)| self.error(format!("{step}: {e}")))
    }

    /// Creates a token for `tenant` with `role`.
    ///
    /// # Errors
    /// [`TokenError::FolderMissing`] when the file's folder does not exist;
    /// [`TokenError::File`] when the file cannot be read or written.
    pub fn create(
        &self,
        tenant: TenantId,
        role: Role,
        label: Option<String>,
        now: jiff::Timestamp,
    ) -> Result<NewToken, TokenError> {
        let _updating = self.lock_updates()?;
        let mut file = read_file(&self.path)?;
        let made = NewToken::fresh(tenant, role, label, now);
        file.tokens.push(made.entry.clone());
        self.write(&file)?;
        Ok(made)
    }

    /// Every token, revoked ones included.
    ///
    /// # Errors
    /// [`TokenError::FolderMissing`]; [`TokenError::File`] when the file cannot be read.
    pub fn list(&self) -> Result<Vec<TokenEntry>, TokenError> {
        Ok(self.read()?.tokens)
    }

    /// Revokes the token `id` (of `tenant`, when given: an admin revokes only its own
    /// tenant's tokens). Revoking a revoked token changes nothing.
    ///
    /// # Errors
    /// [`TokenError::NotFound`]; [`TokenError::FolderMissing`]; [`TokenError::File`].
    pub fn revoke(
        &self,
        id: &str,
        tenant: Option<&TenantId>,
        now: jiff::Timestamp,
    ) -> Result<TokenEntry, TokenError> {
        let _updating = self.lock_updates()?;
        let mut file = read_file(&self.path)?;
        let entry = file
            .tokens
            .iter_mut()
            .find(|t| t.id == id && tenant.is_none_or(|tenant| &t.tenant == tenant))
            .ok_or_else(|| TokenError::NotFound(id.to_owned()))?;
        if entry.revoked_at.is_none() {
            entry.revoked_at = Some(now.to_string());
        }
        let revoked = entry.clone();
        self.write(&file)?;
        Ok(revoked)
    }
}

fn read_file(path: &Path) -> Result<TokenFile, TokenError> {
    let error = |reason: String| TokenError::File {
        path: path.to_path_buf(),
        reason,
    };
    let len = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokenFile::default()),
        Err(e) => return Err(error(e.to_string())),
    };
    if len > MAX_FILE_BYTES {
        return Err(error(format!(
            "{len} bytes is more than the {MAX_FILE_BYTES}-byte limit"
        )));
    }
    let text = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    serde_json::from_slice(&text).map_err(|e| error(e.to_string()))
}

/// The tokens a running service accepts, re-read when the file changes.
#[derive(Debug)]
pub struct TokenBook {
    path: PathBuf,
    state: Mutex<Loaded>,
    /// Held in memory only, never re-read ([`TokenBook::single`]).
    fixed: bool,
}

#[derive(Debug)]
struct Loaded {
    by_id: HashMap<String, TokenEntry>,
    stamp: Option<(SystemTime, u64)>,
    checked: Instant,
}

/// A digest compared when the id is unknown, so that an unknown id costs what a known one does.
const DECOY_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

impl TokenBook {
    /// Loads the token file at `path` (none yet: no token is accepted).
    ///
    /// # Errors
    /// [`TokenError::File`] when it exists and cannot be read.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, TokenError> {
        let path = path.into();
        let (by_id, stamp) = Self::read(&path)?;
        Ok(Self {
            path,
            state: Mutex::new(Loaded {
                by_id,
                stamp,
                checked: Instant::now(),
            }),
            fixed: false,
        })
    }

    /// A book of one token for `tenant` with `role`, held in memory only (no file: `cairn ui`
    /// signs its one person in with it); the book and the whole bearer token. Its editor
    /// writes nowhere: creating or revoking tokens through it fails.
    #[must_use]
    pub fn single(
        tenant: TenantId,
        role: Role,
        label: &str,
        now: jiff::Timestamp,
    ) -> (Self, String) {
        let made = NewToken::fresh(tenant, role, Some(label.to_owned()), now);
        let book = Self {
            path: PathBuf::new(),
            state: Mutex::new(Loaded {
                by_id: HashMap::from([(made.entry.id.clone(), made.entry)]),
                stamp: None,
                checked: Instant::now(),
            }),
            fixed: true,
        };
        (book, made.token)
    }

    #[allow(clippy::type_complexity)]
    fn read(
        path: &Path,
    ) -> Result<(HashMap<String, TokenEntry>, Option<(SystemTime, u64)>), TokenError> {
        let stamp = stamp_of(path);
        let file = read_file(path)?;
        let by_id = file
            .tokens
            .into_iter()
            .map(|entry| (entry.id.clone(), entry))
            .collect();
        Ok((by_id, stamp))
    }

    /// The editor of the book's file.
    #[must_use]
    pub fn editor(&self) -> TokenFileEditor {
        TokenFileEditor::new(self.path.clone())
    }

    /// The caller `bearer` authenticates, or `None` for a malformed, unknown or revoked token
    /// (not said which). A token created while the service runs is accepted at once; a
    /// revocation within [`RELOAD_EVERY`]. When the file changed and no longer reads, every token is refused
    /// until it reads again (fail closed).
    pub fn authenticate(&self, bearer: &str) -> Option<Caller> {
        let (id, secret) = bearer
            .strip_prefix("cairn_")
            .and_then(|rest| rest.split_once('_'))
            .unwrap_or(("", ""));
        let presented = digest_of(secret);
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The file is looked at again when a second has passed (a revocation), or at once
        // for an id the book does not know (a token just created); a look is one `stat`.
        if !self.fixed && (state.checked.elapsed() >= RELOAD_EVERY || !state.by_id.contains_key(id))
        {
            state.checked = Instant::now();
            let stamp = stamp_of(&self.path);
            if stamp != state.stamp {
                match Self::read(&self.path) {
                    Ok((by_id, stamp)) => {
                        state.by_id = by_id;
                        state.stamp = stamp;
                    }
                    Err(error) => {
                        tracing::error!(code = error.code(), %error, "token file unreadable: every token is refused");
                        state.by_id.clear();
                        state.stamp = None;
                    }
                }
            }
        }
        let entry = state.by_id.get(id);
        let expected = entry.map_or(DECOY_DIGEST, |e| e.digest.as_str());
        let matches: bool = presented.as_bytes().ct_eq(expected.as_bytes()).into();
        let entry = entry.filter(|e| matches && !secret.is_empty() && e.revoked_at.is_none())?;
        Some(Caller {
            token_id: entry.id.clone(),
            tenant: entry.tenant.clone(),
            role: entry.role,
        })
    }
}

fn stamp_of(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::UNIX_EPOCH
    }

    #[test]
    fn a_created_token_authenticates_and_only_its_digest_is_stored() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tokens.json");
        let editor = TokenFileEditor::new(&path);
        let tenant: TenantId = "acme".parse().expect("tenant");
        let made = editor
            .create(tenant.clone(), Role::Agent, None, now())
            .expect("created");
        let text = std::fs::read_to_string(&path).expect("file");
        let secret = made.token.rsplit('_').next().expect("secret");
        assert!(!text.contains(secret), "the secret is not stored");
        let book = TokenBook::load(&path).expect("book");
        let caller = book.authenticate(&made.token).expect("authenticates");
        assert_eq!(caller.tenant, tenant);
        assert_eq!(caller.role, Role::Agent);
        // One wrong character of the secret, a wrong id, an empty secret: refused.
        let mut wrong = made.token.clone();
        let last = wrong.pop().expect("char");
        wrong.push(if last == '0' { '1' } else { '0' });
        assert!(book.authenticate(&wrong).is_none());
        assert!(
            book.authenticate(&format!("cairn_{}_", made.entry.id))
                .is_none()
        );
        assert!(book.authenticate("cairn_000000000000_00").is_none());
        assert!(book.authenticate("").is_none());
    }

    #[test]
    fn a_revoked_token_is_refused_by_a_running_book() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tokens.json");
        let editor = TokenFileEditor::new(&path);
        let made = editor
            .create("acme".parse().expect("tenant"), Role::Admin, None, now())
            .expect("created");
        let book = TokenBook::load(&path).expect("book");
        assert!(book.authenticate(&made.token).is_some());
        editor.revoke(&made.entry.id, None, now()).expect("revoked");
        book.state.lock().expect("lock").checked -= RELOAD_EVERY;
        assert!(book.authenticate(&made.token).is_none());
    }

    #[test]
    fn a_token_file_that_stops_reading_refuses_every_token() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tokens.json");
        let made = TokenFileEditor::new(&path)
            .create("acme".parse().expect("tenant"), Role::Admin, None, now())
            .expect("created");
        let book = TokenBook::load(&path).expect("book");
        std::fs::write(&path, b"{ not json").expect("garbled");
        book.state.lock().expect("lock").checked -= RELOAD_EVERY;
        assert!(book.authenticate(&made.token).is_none());
    }

    #[test]
    fn tokens_created_and_revoked_at_once_by_several_writers_are_all_kept() {
        // `cairn tokens create` in two terminals, or the CLI beside the service's own
        // `POST /v1/tokens`: every token whose secret was printed must stay in the file.
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tokens.json");
        let first = TokenFileEditor::new(&path)
            .create("acme".parse().expect("tenant"), Role::Admin, None, now())
            .expect("created");
        let writers: Vec<_> = (0..6)
            .map(|w| {
                let path = path.clone();
                let revoke = first.entry.id.clone();
                std::thread::spawn(move || {
                    let editor = TokenFileEditor::new(&path);
                    let mut made = Vec::new();
                    for i in 0..15 {
                        if w == 0 && i == 7 {
                            editor.revoke(&revoke, None, now()).expect("revoked");
                        }
                        let token = editor
                            .create("acme".parse().expect("tenant"), Role::Agent, None, now())
                            .expect("created");
                        made.push(token.token);
                    }
                    made
                })
            })
            .collect();
        let made: Vec<String> = writers
            .into_iter()
            .flat_map(|w| w.join().expect("writer"))
            .collect();
        let book = TokenBook::load(&path).expect("book");
        let lost = made
            .iter()
            .filter(|t| book.authenticate(t).is_none())
            .count();
        assert_eq!(lost, 0, "{lost} of {} created tokens were lost", made.len());
        assert!(
            book.authenticate(&first.token).is_none(),
            "the revocation was kept too"
        );
    }
}
