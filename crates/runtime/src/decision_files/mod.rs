//! The durable home of a project's decisions (SPEC §8): the decision book, the pre-boundary
//! snapshots with the boundary each was taken for, and the HMAC key that digests decision
//! values. The pure rules live in `cairn-decisions`; this module only reads and writes files.
//!
//! Layout, inside the project's `.cairn/` folder and its key directory:
//!
//! ```text
//! .cairn/decisions/book.json               cairn.decision-book/v1 (digests only)
//! .cairn/decisions/snapshots/<name>.json   cairn.decision-snapshot/v1
//! .cairn/decisions/boundaries/<name>.json  cairn.decision-boundary/v1: the boundary instant
//!                                          and the digest of the snapshot taken for it
//! .cairn/decisions/latest                  the name of the last snapshot saved
//! .cairn/decisions/.lock                   serialises read-modify-write of the book
//! <keys>/decisions.hmac                    mode 0600: 32 random bytes as 64 hex digits
//! ```
//!
//! A service answering many tenants (`cairn serve`) keeps one such `decisions/` folder per
//! tenant, under `<service folder>/tenants/t-<tenant>/` ([`DecisionFiles::open_tenant`]).
//!
//! A `<name>` is a session or run id: 1–128 ASCII letters, digits, `.`, `_` or `-`, not
//! starting with `.`.
//!
//! Every file is written atomically (a temporary file in the same folder, `fsync`, `rename`,
//! `fsync` of the folder), so a reader sees the old or the new document, never half of one.
//! Every file is read with a size limit, and a file that does not parse is an error with the
//! stable code `corrupt_decision_file`: it is never silently replaced, because replacing a
//! book would erase the revisions and approvals the comparison depends on.
//!
//! A snapshot is saved boundary record first, snapshot second. A boundary record whose
//! snapshot is missing or has another digest is a snapshot that could not be written (an
//! interrupted save, or [`DecisionFiles::record_missing_snapshot`]): loading it gives no
//! snapshot, and the comparison says `continuity_evidence_missing` (D-4).
//!
//! # Architecture invariants
//!
//! - No raw decision value is ever written: values reach only
//!   [`cairn_decisions::DecisionBook::set`], which digests and drops them.
//! - The HMAC secret is read only from a file no one but the owner can access, and never
//!   appears in a document, a message or `Debug` output.
//!
//! Submodules: [`error`] (the error type and its codes), `disk` (atomic writes, limited
//! reads, the key file).

mod disk;
pub mod error;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use cairn_core::canonical::jcs_digest;
use cairn_core::{Digest, ErrorCode, HmacKey, Timestamp};
use cairn_decisions::{
    Comparison, DecisionBook, DecisionError, DecisionState, MAX_DOCUMENT_BYTES, Observation,
    Snapshot, compare,
};
use jiff::SignedDuration;
use rand_core::RngCore as _;
use serde::{Deserialize, Serialize};

use self::disk::{
    SECRET_LEN, ensure_dir, hex, io_error, load_key_file, read_limited, sync_dir, temp_path,
    write_atomic, write_json, write_new,
};
pub use self::error::DecisionFilesError;

/// The decisions folder inside `.cairn/`.
pub const DECISIONS_DIR: &str = "decisions";
/// The decision book inside the decisions folder.
pub const BOOK_FILE: &str = "book.json";
/// The snapshot folder inside the decisions folder.
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// The boundary record folder inside the decisions folder.
pub const BOUNDARIES_DIR: &str = "boundaries";
/// The file naming the last snapshot saved.
pub const LATEST_FILE: &str = "latest";
/// The lock file that serialises updates of the book.
pub const LOCK_FILE: &str = ".lock";
/// The HMAC key file inside the key directory.
pub const HMAC_KEY_FILE: &str = "decisions.hmac";
/// The boundary record's schema tag.
pub const BOUNDARY_SCHEMA_VERSION: &str = "cairn.decision-boundary/v1";
/// The longest snapshot name accepted.
pub const MAX_NAME_LEN: usize = 128;
/// The largest boundary record or `latest` file read, in bytes.
const MAX_SMALL_FILE_BYTES: usize = 4096;

/// The boundary a snapshot was taken for (`cairn.decision-boundary/v1`).
///
/// ```json
/// {"schema_version": "cairn.decision-boundary/v1", "name": "session-42",
///  "boundary_at": "2026-03-02T10:00:00Z", "snapshot_digest": "sha256:…"}
/// ```
///
/// `snapshot_digest` is `null` when no snapshot could be taken at this boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundaryRecord {
    schema_version: String,
    name: String,
    boundary_at: Timestamp,
    snapshot_digest: Option<Digest>,
}

impl BoundaryRecord {
    /// The snapshot name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The boundary instant.
    #[must_use]
    pub fn boundary_at(&self) -> Timestamp {
        self.boundary_at
    }

    /// The digest of the snapshot taken for this boundary, `None` when none could be taken.
    #[must_use]
    pub fn snapshot_digest(&self) -> Option<Digest> {
        self.snapshot_digest
    }
}

/// A project's decision files (see the module documentation for the layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionFiles {
    dir: PathBuf,
    keys_dir: PathBuf,
}

impl DecisionFiles {
    /// The decision files of the project whose `.cairn/` folder is `project_cairn_dir`, with
    /// the HMAC key in `keys_dir`. Nothing is created until something is written.
    ///
    /// # Errors
    /// [`DecisionFilesError::NoProject`] when `project_cairn_dir` is not a folder.
    pub fn open(
        project_cairn_dir: impl Into<PathBuf>,
        keys_dir: impl Into<PathBuf>,
    ) -> Result<Self, DecisionFilesError> {
        let cairn_dir = project_cairn_dir.into();
        if !cairn_dir.is_dir() {
            return Err(DecisionFilesError::NoProject { dir: cairn_dir });
        }
        Ok(Self {
            dir: cairn_dir.join(DECISIONS_DIR),
            keys_dir: keys_dir.into(),
        })
    }

    /// The decision files of `tenant` in the folder of a service answering many tenants
    /// (`cairn serve`): `<service_dir>/tenants/t-<tenant>/decisions/`, so that each tenant has
    /// a book, snapshots and approvals of its own (the `t-` keeps an id such as `..` a plain
    /// name). The tenant's folder is created (mode 0700) when missing; the HMAC key in
    /// `keys_dir` is the service's.
    ///
    /// # Errors
    /// [`DecisionFilesError::NoProject`] when `service_dir` is not a folder;
    /// [`DecisionFilesError::Io`] when the tenant's folder cannot be created.
    pub fn open_tenant(
        service_dir: &Path,
        tenant: &cairn_core::TenantId,
        keys_dir: impl Into<PathBuf>,
    ) -> Result<Self, DecisionFilesError> {
        if !service_dir.is_dir() {
            return Err(DecisionFilesError::NoProject {
                dir: service_dir.to_path_buf(),
            });
        }
        let home = crate::layout::tenant_dir(service_dir, tenant);
        crate::files::create_private_dir(&home)
            .map_err(|source| io_error("create directory", &home, source))?;
        Self::open(home, keys_dir)
    }

    /// The decisions folder (`.cairn/decisions`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The book file.
    #[must_use]
    pub fn book_path(&self) -> PathBuf {
        self.dir.join(BOOK_FILE)
    }

    /// The HMAC key file.
    #[must_use]
    pub fn hmac_key_path(&self) -> PathBuf {
        self.keys_dir.join(HMAC_KEY_FILE)
    }

    /// The snapshot file of `name` (the name is not checked here).
    #[must_use]
    pub fn snapshot_path(&self, name: &str) -> PathBuf {
        self.dir.join(SNAPSHOTS_DIR).join(format!("{name}.json"))
    }

    /// The boundary record file of `name` (the name is not checked here).
    #[must_use]
    pub fn boundary_path(&self, name: &str) -> PathBuf {
        self.dir.join(BOUNDARIES_DIR).join(format!("{name}.json"))
    }

    /// The decision book; an empty book when none was written yet.
    ///
    /// # Errors
    /// [`DecisionFilesError::Corrupt`], [`DecisionFilesError::TooLarge`],
    /// [`DecisionFilesError::Io`].
    pub fn book(&self) -> Result<DecisionBook, DecisionFilesError> {
        let path = self.book_path();
        match read_limited(&path, MAX_DOCUMENT_BYTES)? {
            None => Ok(DecisionBook::new()),
            Some(text) => DecisionBook::from_json(&text).map_err(|e| corrupt(&path, &e)),
        }
    }

    /// Writes the book atomically, under the book lock. Prefer [`Self::update_book`] for a
    /// read-modify-write: it holds the lock across both, so concurrent writers (hooks of
    /// parallel tool calls) do not lose each other's updates.
    ///
    /// # Errors
    /// [`DecisionFilesError::Io`], or [`DecisionFilesError::Corrupt`] if the book cannot be
    /// serialised.
    pub fn save_book(&self, book: &DecisionBook) -> Result<(), DecisionFilesError> {
        let _lock = self.lock()?;
        self.write_book(book)
    }

    /// Reads the book, applies `change` and writes the book back if it changed, all under
    /// the book lock. Nothing is written when `change` fails.
    ///
    /// # Errors
    /// The error of `change`, and those of [`Self::book`] and [`Self::save_book`].
    pub fn update_book<T>(
        &self,
        change: impl FnOnce(&mut DecisionBook) -> Result<T, DecisionError>,
    ) -> Result<T, DecisionFilesError> {
        let _lock = self.lock()?;
        let before = self.book()?;
        let mut book = before.clone();
        let result = change(&mut book)?;
        if book != before {
            self.write_book(&book)?;
        }
        Ok(result)
    }

    /// The project's HMAC key for decision values, created on first use: 32 bytes from the
    /// operating system's generator in `<keys>/decisions.hmac`, mode 0600 from the first
    /// instant (the key directory is created with mode 0700 if missing). Its id is
    /// `decisions-<first 8 hex digits of SHA-256(secret)>`, so a replaced key file shows as
    /// another key id (`hmac_key_mismatch`), never as changed decisions.
    ///
    /// # Errors
    /// [`DecisionFilesError::KeyFilePermissions`] when group or others can access the file;
    /// [`DecisionFilesError::InvalidKeyFile`]; [`DecisionFilesError::Io`].
    pub fn hmac_key(&self) -> Result<HmacKey, DecisionFilesError> {
        let path = self.hmac_key_path();
        match load_key_file(&path) {
            Err(DecisionFilesError::Io { source, .. })
                if source.kind() == io::ErrorKind::NotFound =>
            {
                self.create_key_file(&path)?;
                load_key_file(&path)
            }
            other => other,
        }
    }

    /// Saves `snapshot` under `name` as taken for the boundary at `boundary_at`, and makes it
    /// the latest. The boundary record is written first (see the module documentation).
    ///
    /// # Errors
    /// [`DecisionFilesError::InvalidName`]; [`DecisionFilesError::BoundaryBeforeSnapshot`]
    /// when `boundary_at` is before the snapshot's `taken_at`; [`DecisionFilesError::Io`].
    pub fn save_snapshot(
        &self,
        name: &str,
        snapshot: &Snapshot,
        boundary_at: Timestamp,
    ) -> Result<(), DecisionFilesError> {
        check_name(name)?;
        if boundary_at < snapshot.taken_at() {
            return Err(DecisionFilesError::BoundaryBeforeSnapshot {
                boundary_at,
                taken_at: snapshot.taken_at(),
            });
        }
        self.write_boundary(name, boundary_at, Some(snapshot.digest()))?;
        write_json(&self.snapshot_path(name), snapshot)?;
        self.set_latest(name)
    }

    /// Records that no snapshot could be taken for the boundary at `boundary_at` (D-4): the
    /// boundary record names no snapshot, so comparing `name` gives
    /// `continuity_evidence_missing` even if an older snapshot of that name exists. It
    /// becomes the latest.
    ///
    /// # Errors
    /// [`DecisionFilesError::InvalidName`], [`DecisionFilesError::Io`].
    pub fn record_missing_snapshot(
        &self,
        name: &str,
        boundary_at: Timestamp,
    ) -> Result<(), DecisionFilesError> {
        check_name(name)?;
        self.write_boundary(name, boundary_at, None)?;
        self.set_latest(name)
    }

    /// A person's snapshot of the book as it is at `now`, for the boundary at `boundary_at`,
    /// saved under `name`. One the book cannot give (fewer than three decisions, say) is
    /// recorded as missing (see [`Self::record_missing_snapshot`]) and its refusal returned,
    /// so that a comparison of `name` says `continuity_evidence_missing` rather than use an
    /// older one (D-4).
    ///
    /// # Errors
    /// [`DecisionFilesError::Decision`] holding the refusal and its findings; those of
    /// [`Self::book`] and [`Self::save_snapshot`].
    pub fn snapshot_book(
        &self,
        name: &str,
        now: Timestamp,
        boundary_at: Timestamp,
    ) -> Result<Snapshot, DecisionFilesError> {
        check_name(name)?;
        match self.book()?.snapshot(now) {
            Ok(snapshot) => {
                self.save_snapshot(name, &snapshot, boundary_at)?;
                Ok(snapshot)
            }
            Err(refused @ DecisionError::SnapshotRefused { .. }) => {
                self.record_missing_snapshot(name, boundary_at)?;
                Err(refused.into())
            }
            Err(other) => Err(other.into()),
        }
    }

    /// The boundary record of `name`, if one was written.
    ///
    /// # Errors
    /// [`DecisionFilesError::InvalidName`], [`DecisionFilesError::Corrupt`] (also when the
    /// record names another snapshot), [`DecisionFilesError::TooLarge`],
    /// [`DecisionFilesError::Io`].
    pub fn boundary(&self, name: &str) -> Result<Option<BoundaryRecord>, DecisionFilesError> {
        check_name(name)?;
        let path = self.boundary_path(name);
        let Some(text) = read_limited(&path, MAX_SMALL_FILE_BYTES)? else {
            return Ok(None);
        };
        let record: BoundaryRecord =
            serde_json::from_str(&text).map_err(|e| DecisionFilesError::Corrupt {
                path: path.clone(),
                reason: format!("not a boundary record: {e}"),
            })?;
        if record.schema_version != BOUNDARY_SCHEMA_VERSION {
            return Err(DecisionFilesError::Corrupt {
                path,
                reason: format!("`$.schema_version`: expected `{BOUNDARY_SCHEMA_VERSION}`"),
            });
        }
        if record.name != name {
            return Err(DecisionFilesError::Corrupt {
                path,
                reason: "`$.name` differs from the file name".to_owned(),
            });
        }
        Ok(Some(record))
    }

    /// The snapshot saved under `name` and the boundary instant it was taken for; `None`
    /// when there is no usable snapshot (never saved, or the last save did not complete —
    /// see the module documentation).
    ///
    /// # Errors
    /// [`DecisionFilesError::InvalidName`]; [`DecisionFilesError::Corrupt`] when a file does
    /// not parse or the snapshot's digest does not verify; [`DecisionFilesError::TooLarge`];
    /// [`DecisionFilesError::Io`].
    pub fn load_snapshot(
        &self,
        name: &str,
    ) -> Result<Option<(Snapshot, Timestamp)>, DecisionFilesError> {
        let Some(boundary) = self.boundary(name)? else {
            return Ok(None);
        };
        let Some(recorded) = boundary.snapshot_digest else {
            return Ok(None);
        };
        let path = self.snapshot_path(name);
        let Some(text) = read_limited(&path, MAX_DOCUMENT_BYTES)? else {
            return Ok(None);
        };
        let snapshot = Snapshot::from_json(&text).map_err(|e| corrupt(&path, &e))?;
        if snapshot.digest() != recorded {
            tracing::warn!(
                snapshot = %path.display(),
                "the boundary record names another snapshot: the last save did not complete"
            );
            return Ok(None);
        }
        Ok(Some((snapshot, boundary.boundary_at)))
    }

    /// The name of the last snapshot saved (or recorded missing), if any.
    ///
    /// # Errors
    /// [`DecisionFilesError::Corrupt`] when the `latest` file does not hold a valid name;
    /// [`DecisionFilesError::TooLarge`]; [`DecisionFilesError::Io`].
    pub fn latest(&self) -> Result<Option<String>, DecisionFilesError> {
        let path = self.dir.join(LATEST_FILE);
        let Some(text) = read_limited(&path, MAX_SMALL_FILE_BYTES)? else {
            return Ok(None);
        };
        let name = text.trim_end().to_owned();
        check_name(&name).map_err(|e| DecisionFilesError::Corrupt {
            path,
            reason: e.to_string(),
        })?;
        Ok(Some(name))
    }

    /// `name` when given (checked), else the latest snapshot's name.
    ///
    /// # Errors
    /// As [`check_name`] and [`Self::latest`].
    pub fn resolve_name(&self, name: Option<&str>) -> Result<Option<String>, DecisionFilesError> {
        match name {
            Some(name) => {
                check_name(name)?;
                Ok(Some(name.to_owned()))
            }
            None => self.latest(),
        }
    }

    /// Compares the snapshot `name` (`None`: the latest) with the current book, at `now`,
    /// with the observation window `window`.
    ///
    /// Each current decision is an observation with its last `observed_at` and its own
    /// `source` (who asserted it: `cli:decisions-set`, `hook:…`), so a decision not set
    /// again since the boundary is not fresh (`unverified`). A decision of the snapshot the
    /// book does not hold is observed absent at `now`, with the provenance
    /// `book:<digest of the book>` (so `dropped`). Approvals come from the book. Without a
    /// usable snapshot the comparison is `continuity_evidence_missing`, at the recorded
    /// boundary instant when there is one, else at `now`.
    ///
    /// # Errors
    /// Those of [`Self::resolve_name`], [`Self::load_snapshot`] and [`Self::book`].
    pub fn compare_now(
        &self,
        name: Option<&str>,
        now: Timestamp,
        window: SignedDuration,
    ) -> Result<Comparison, DecisionFilesError> {
        let book = self.book()?;
        let (snapshot, boundary_at) = self.baseline(name, now)?;
        let after = book_observations(&book, snapshot.as_ref(), now)?;
        if name.is_none() && snapshot.is_none() && self.resolve_name(None)?.is_none() {
            // No boundary was ever snapshotted: nothing restricts yet (issue 34, 6).
            return Ok(cairn_decisions::before_any_boundary(&after, now, window));
        }
        Ok(compare(
            snapshot.as_ref(),
            &after,
            book.approvals(),
            boundary_at,
            now,
            window,
        ))
    }

    /// The snapshot to save under `name` for an automatic boundary (a compaction) at `now`:
    /// the book's current decisions — except that a decision the previous snapshot of `name`
    /// holds and the book has since changed without approval (`conflicting`) or lost
    /// (`dropped`) keeps the previous snapshot's entry. An unapproved change thus stays
    /// `conflicting` across any number of boundaries until a person approves it or restores
    /// the value: a snapshot never launders one. (A person re-establishing the baseline with
    /// `cairn decisions snapshot` takes the book as it is.)
    ///
    /// # Errors
    /// Those of [`Self::book`] and [`Self::load_snapshot`]; [`DecisionFilesError::Decision`]
    /// when the snapshot is refused (3–7 decisions).
    pub fn boundary_snapshot(
        &self,
        name: &str,
        book: &DecisionBook,
        now: Timestamp,
        window: SignedDuration,
    ) -> Result<Snapshot, DecisionFilesError> {
        let mut entries: Vec<_> = book.current().cloned().collect();
        if let Some((previous, boundary_at)) = self.load_snapshot(name)? {
            // As `compare_now` would judge it, on the snapshot and book already read.
            let after = book_observations(book, Some(&previous), now)?;
            let comparison = compare(
                Some(&previous),
                &after,
                book.approvals(),
                boundary_at,
                now,
                window,
            );
            for result in comparison.decisions() {
                let unresolved = matches!(
                    result.state(),
                    DecisionState::Conflicting | DecisionState::Dropped
                );
                if let (true, Some(kept)) = (unresolved, previous.get(result.key())) {
                    entries.retain(|entry| entry.key() != result.key());
                    entries.push(kept.clone());
                }
            }
        }
        Ok(Snapshot::from_entries(entries, now)?)
    }

    /// Compares the snapshot `name` (`None`: the latest) with observations made elsewhere
    /// (a hook, a file), with the book's approvals.
    ///
    /// # Errors
    /// Those of [`Self::resolve_name`], [`Self::load_snapshot`] and [`Self::book`].
    pub fn compare_observations(
        &self,
        name: Option<&str>,
        after: &[Observation],
        now: Timestamp,
        window: SignedDuration,
    ) -> Result<Comparison, DecisionFilesError> {
        let book = self.book()?;
        let (snapshot, boundary_at) = self.baseline(name, now)?;
        Ok(compare(
            snapshot.as_ref(),
            after,
            book.approvals(),
            boundary_at,
            now,
            window,
        ))
    }

    /// The snapshot to compare against and the boundary instant.
    fn baseline(
        &self,
        name: Option<&str>,
        now: Timestamp,
    ) -> Result<(Option<Snapshot>, Timestamp), DecisionFilesError> {
        let Some(name) = self.resolve_name(name)? else {
            return Ok((None, now));
        };
        if let Some((snapshot, boundary_at)) = self.load_snapshot(&name)? {
            return Ok((Some(snapshot), boundary_at));
        }
        let boundary_at = self.boundary(&name)?.map_or(now, |b| b.boundary_at);
        Ok((None, boundary_at))
    }

    fn write_book(&self, book: &DecisionBook) -> Result<(), DecisionFilesError> {
        write_json(&self.book_path(), book)
    }

    fn write_boundary(
        &self,
        name: &str,
        boundary_at: Timestamp,
        snapshot_digest: Option<Digest>,
    ) -> Result<(), DecisionFilesError> {
        let record = BoundaryRecord {
            schema_version: BOUNDARY_SCHEMA_VERSION.to_owned(),
            name: name.to_owned(),
            boundary_at,
            snapshot_digest,
        };
        write_json(&self.boundary_path(name), &record)
    }

    fn set_latest(&self, name: &str) -> Result<(), DecisionFilesError> {
        write_atomic(&self.dir.join(LATEST_FILE), format!("{name}\n").as_bytes())
    }

    /// An exclusive lock on the book, released when the handle is dropped.
    fn lock(&self) -> Result<File, DecisionFilesError> {
        ensure_dir(&self.dir)?;
        let path = self.dir.join(LOCK_FILE);
        crate::files::lock_exclusive(&path).map_err(|(step, source)| io_error(step, &path, source))
    }

    /// Creates the key file unless another process just did: the secret goes to a private
    /// temporary file, which is then hard-linked to the final name (an atomic
    /// create-if-absent), so no reader ever sees a half-written key.
    fn create_key_file(&self, path: &Path) -> Result<(), DecisionFilesError> {
        if !self.keys_dir.is_dir() {
            crate::files::create_private_dir(&self.keys_dir)
                .map_err(|source| io_error("create directory", &self.keys_dir, source))?;
        }
        let mut secret = [0u8; SECRET_LEN];
        rand_core::OsRng
            .try_fill_bytes(&mut secret)
            .map_err(|e| io_error("draw a key for", path, io::Error::other(e.to_string())))?;
        let mut text = hex(&secret);
        text.push('\n');
        let temp = temp_path(path);
        write_new(&temp, 0o600, text.as_bytes())?;
        let linked = fs::hard_link(&temp, path);
        let _ = fs::remove_file(&temp);
        match linked {
            Ok(()) => sync_dir(&self.keys_dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(source) => Err(io_error("create", path, source)),
        }
    }
}

/// The book's current decisions as observations, plus an absent observation at `now` for
/// every decision of `snapshot` the book does not hold.
fn book_observations(
    book: &DecisionBook,
    snapshot: Option<&Snapshot>,
    now: Timestamp,
) -> Result<Vec<Observation>, DecisionFilesError> {
    let mut after = book.observations();
    let Some(snapshot) = snapshot else {
        return Ok(after);
    };
    // What the book itself shows of the baseline's decisions, now: one it no longer holds
    // (absent), and one it holds at another revision than the baseline (a change the book
    // records). Both are facts of the book at `now`, not re-assertions a person has yet to
    // make, so they are fresh — a change recorded before the boundary (a baseline carried
    // over from an earlier snapshot, `boundary_snapshot`) is judged, never left unverified.
    let book_saw: Vec<(&cairn_decisions::entry::DecisionEntry, Option<_>)> = snapshot
        .decisions()
        .iter()
        .filter_map(|entry| match book.get(entry.key()) {
            None => Some((entry, None)),
            Some(current) if current.revision() != entry.revision() => {
                Some((entry, Some(current.revision_ref())))
            }
            Some(_) => None,
        })
        .collect();
    if book_saw.is_empty() {
        return Ok(after);
    }
    let book_digest = jcs_digest(book).map_err(|e| DecisionFilesError::Corrupt {
        path: PathBuf::from(BOOK_FILE),
        reason: format!("cannot canonicalise the book: {e}"),
    })?;
    let source = format!("book:{book_digest}");
    for (entry, current) in book_saw {
        let key = entry.key().clone();
        let observation = match current {
            None => Observation::absent(key, now, Some(&source))?,
            Some(revision) => Observation::of_revision(key, revision, now, Some(&source))?,
        };
        after.retain(|o| o.key() != entry.key());
        after.push(observation);
    }
    Ok(after)
}

/// Checks a snapshot name: 1–128 ASCII letters, digits, `.`, `_` or `-`, not starting with
/// `.` (so it is neither a hidden file nor a path).
///
/// # Errors
/// [`DecisionFilesError::InvalidName`].
pub fn check_name(name: &str) -> Result<(), DecisionFilesError> {
    let reason = if name.is_empty() {
        Some("must not be empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("must be at most 128 characters")
    } else if name.starts_with('.') {
        Some("must not start with `.`")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        Some("only ASCII letters, digits, `.`, `_` and `-` are allowed")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(DecisionFilesError::InvalidName {
            name: name.chars().take(64).collect(),
            reason,
        }),
    }
}

fn corrupt(path: &Path, error: &DecisionError) -> DecisionFilesError {
    DecisionFilesError::Corrupt {
        path: path.to_owned(),
        reason: format!("{} ({})", error, error.code()),
    }
}

#[cfg(test)]
mod tests;
