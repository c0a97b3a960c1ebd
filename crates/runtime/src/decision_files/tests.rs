//! Unit tests of the decision files: atomic writes, size limits, names, the key file,
//! snapshots with their boundary records, and `compare_now`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

use std::os::unix::fs::PermissionsExt as _;

use super::*;
use cairn_decisions::{ContinuityHealth, DecisionKind, DecisionState, Reason};
use serde_json::json;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn project() -> (tempfile::TempDir, DecisionFiles) {
    let temp = tempfile::tempdir().unwrap();
    let cairn = temp.path().join(".cairn");
    fs::create_dir(&cairn).unwrap();
    let files = DecisionFiles::open(&cairn, cairn.join("keys")).unwrap();
    (temp, files)
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A book with scope, target and constraint set at 09:30.
fn three(files: &DecisionFiles) {
    set_three(files, Some("ticket:T-1"), "2026-03-02T09:30:00Z");
}

/// Sets scope, target and constraint (the same values) with `source` at `when`.
fn set_three(files: &DecisionFiles, source: Option<&str>, when: &str) {
    let key = files.hmac_key().unwrap();
    files
        .update_book(|book| {
            for (kind, value) in [
                (
                    DecisionKind::Scope,
                    json!({"paths": ["secret-scope-path/"]}),
                ),
                (DecisionKind::Target, json!("secret-target-branch")),
                (DecisionKind::Constraint, json!(["secret-no-force-push"])),
            ] {
                book.set(kind, &value, source, Some("test"), at(when), &key)?;
            }
            Ok(())
        })
        .unwrap();
}

fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_project_folder_is_required() {
    let temp = tempfile::tempdir().unwrap();
    let err = DecisionFiles::open(temp.path().join(".cairn"), temp.path()).unwrap_err();
    assert_eq!(err.code(), "no_project");
}

#[test]
fn the_book_round_trips_atomically_and_holds_no_value() {
    let (_temp, files) = project();
    assert!(files.book().unwrap().is_empty());
    three(&files);
    let book = files.book().unwrap();
    assert_eq!(book.len(), 3);
    let text = fs::read_to_string(files.book_path()).unwrap();
    assert!(!text.contains("secret-"), "{text}");
    assert!(temp_files(files.dir()).is_empty());
    // Owner-only whatever the umask (issue 34, 13), like every file of Cairn's.
    assert_eq!(mode_of(&files.book_path()), 0o600);
    // A rewrite replaces the whole file; a stale temporary file of a crashed writer is
    // not read and does not block the next write.
    fs::write(files.dir().join(".book.json.1.0.tmp"), "{half").unwrap();
    files.save_book(&DecisionBook::new()).unwrap();
    assert!(files.book().unwrap().is_empty());
    files.save_book(&book).unwrap();
    assert_eq!(files.book().unwrap(), book);
}

#[test]
fn a_failed_change_writes_nothing() {
    let (_temp, files) = project();
    three(&files);
    let before = fs::read(files.book_path()).unwrap();
    let err = files
        .update_book(|book| {
            book.approve_change(&DecisionKind::Scope, 1, 2, "r", at("2026-03-02T10:00:00Z"))
        })
        .unwrap_err();
    assert_eq!(err.code(), "unknown_revision");
    assert_eq!(fs::read(files.book_path()).unwrap(), before);
}

#[test]
fn concurrent_updates_are_not_lost() {
    let (_temp, files) = project();
    let key = files.hmac_key().unwrap();
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let (files, key) = (&files, &key);
            scope.spawn(move || {
                let kind: DecisionKind = format!("custom_{thread}").parse().unwrap();
                for step in 0..5 {
                    let now =
                        at("2026-03-02T09:30:00Z").saturating_add(SignedDuration::from_secs(step));
                    files
                        .update_book(|book| {
                            book.set(kind.clone(), &json!(step), None, Some("t"), now, key)
                        })
                        .unwrap();
                }
            });
        }
    });
    let book = files.book().unwrap();
    assert_eq!(book.len(), 8);
    assert!(book.current().all(|entry| entry.revision() == 5));
    assert!(temp_files(files.dir()).is_empty());
}

#[test]
fn a_corrupt_book_is_an_error_and_is_never_replaced() {
    let (_temp, files) = project();
    three(&files);
    let path = files.book_path();
    let damaged =
        fs::read_to_string(&path)
            .unwrap()
            .replacen("\"revision\": 1", "\"revision\": 7", 1);
    fs::write(&path, &damaged).unwrap();
    let err = files.book().unwrap_err();
    assert_eq!(err.code(), "corrupt_decision_file");
    assert!(err.to_string().contains("invalid_decision_book"), "{err}");
    let err = files.update_book(|_| Ok(())).unwrap_err();
    assert_eq!(err.code(), "corrupt_decision_file");
    assert_eq!(fs::read_to_string(&path).unwrap(), damaged);
    fs::write(&path, [0xff, 0xfe]).unwrap();
    assert_eq!(files.book().unwrap_err().code(), "corrupt_decision_file");
}

#[test]
fn files_beyond_the_limit_are_refused() {
    let (_temp, files) = project();
    fs::create_dir_all(files.dir()).unwrap();
    fs::write(files.book_path(), " ".repeat(MAX_DOCUMENT_BYTES + 1)).unwrap();
    assert_eq!(files.book().unwrap_err().code(), "decision_file_too_large");
    fs::write(files.dir().join(LATEST_FILE), "x".repeat(5000)).unwrap();
    assert_eq!(
        files.latest().unwrap_err().code(),
        "decision_file_too_large"
    );
}

#[test]
fn snapshot_names_are_file_safe() {
    for good in ["s", "session-42", "0f8e.a_b-C", &"n".repeat(128)] {
        assert!(check_name(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        ".",
        "..",
        ".hidden",
        "a/b",
        "../x",
        "a b",
        "a:b",
        "ü",
        &"n".repeat(129),
    ] {
        assert_eq!(
            check_name(bad).unwrap_err().code(),
            "invalid_snapshot_name",
            "{bad:?}"
        );
    }
    let (_temp, files) = project();
    assert_eq!(
        files.load_snapshot("../book").unwrap_err().code(),
        "invalid_snapshot_name"
    );
    fs::create_dir_all(files.dir()).unwrap();
    fs::write(files.dir().join(LATEST_FILE), "../escape\n").unwrap();
    assert_eq!(files.latest().unwrap_err().code(), "corrupt_decision_file");
}

#[test]
fn the_key_is_created_once_owner_only_and_refused_when_readable() {
    let (_temp, files) = project();
    let key = files.hmac_key().unwrap();
    let path = files.hmac_key_path();
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(mode_of(path.parent().unwrap()), 0o700);
    assert!(
        key.id().starts_with("decisions-") && key.id().len() == 18,
        "{}",
        key.id()
    );
    assert_eq!(files.hmac_key().unwrap().id(), key.id());
    assert!(!format!("{key:?}").contains(fs::read_to_string(&path).unwrap().trim()));
    for mode in [0o644, 0o640, 0o604] {
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        let err = files.hmac_key().unwrap_err();
        assert_eq!(err.code(), "key_file_permissions", "{mode:o}");
    }
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(&path, "not hex\n").unwrap();
    let err = files.hmac_key().unwrap_err();
    assert_eq!(err.code(), "invalid_key_file");
    assert!(!err.to_string().contains("not hex"), "{err}");
}

#[test]
fn snapshots_round_trip_with_their_boundary_and_latest() {
    let (_temp, files) = project();
    three(&files);
    assert_eq!(files.latest().unwrap(), None);
    let snapshot = files
        .book()
        .unwrap()
        .snapshot(at("2026-03-02T09:59:58Z"))
        .unwrap();
    let boundary = at("2026-03-02T10:00:00Z");
    files.save_snapshot("s-1", &snapshot, boundary).unwrap();
    assert_eq!(
        files.load_snapshot("s-1").unwrap(),
        Some((snapshot.clone(), boundary))
    );
    assert_eq!(files.latest().unwrap().as_deref(), Some("s-1"));
    assert_eq!(files.load_snapshot("other").unwrap(), None);
    let text = fs::read_to_string(files.snapshot_path("s-1")).unwrap();
    assert!(!text.contains("secret-"), "{text}");
    let err = files
        .save_snapshot("s-2", &snapshot, at("2026-03-02T09:00:00Z"))
        .unwrap_err();
    assert_eq!(err.code(), "boundary_before_snapshot");
    // A tampered snapshot no longer verifies: corrupt, not silently ignored.
    fs::write(
        files.snapshot_path("s-1"),
        text.replace("09:59:58", "09:59:57"),
    )
    .unwrap();
    assert_eq!(
        files.load_snapshot("s-1").unwrap_err().code(),
        "corrupt_decision_file"
    );
}

#[test]
fn an_interrupted_or_refused_save_means_evidence_missing() {
    let (_temp, files) = project();
    three(&files);
    let book = files.book().unwrap();
    let snapshot = book.snapshot(at("2026-03-02T09:59:58Z")).unwrap();
    files
        .save_snapshot("s", &snapshot, at("2026-03-02T10:00:00Z"))
        .unwrap();
    // The next boundary of the same session could not be snapshotted.
    files
        .record_missing_snapshot("s", at("2026-03-02T11:00:00Z"))
        .unwrap();
    assert_eq!(files.load_snapshot("s").unwrap(), None);
    let now = at("2026-03-02T11:01:00Z");
    let comparison = files
        .compare_now(None, now, SignedDuration::from_mins(10))
        .unwrap();
    assert_eq!(
        comparison.state(),
        ContinuityHealth::ContinuityEvidenceMissing
    );
    assert_eq!(comparison.boundary_at(), at("2026-03-02T11:00:00Z"));
}

#[test]
fn compare_now_observes_the_book() {
    let (_temp, files) = project();
    three(&files);
    let snapshot = files
        .book()
        .unwrap()
        .snapshot(at("2026-03-02T09:59:58Z"))
        .unwrap();
    files
        .save_snapshot("s", &snapshot, at("2026-03-02T10:00:00Z"))
        .unwrap();
    let window = SignedDuration::from_mins(10);
    let now = at("2026-03-02T10:05:00Z");
    // Nothing re-asserted since the boundary: unverified, not fresh.
    let comparison = files.compare_now(Some("s"), now, window).unwrap();
    assert_eq!(comparison.state(), ContinuityHealth::Unverified);
    assert_eq!(comparison.reason(), Reason::ObservationNotFresh);
    // Re-asserted: preserved.
    set_three(&files, None, "2026-03-02T10:01:00Z");
    let comparison = files.compare_now(None, now, window).unwrap();
    assert_eq!(comparison.state(), ContinuityHealth::Preserved);
    // The book lost a decision (replaced by one without it): dropped, with provenance.
    let key = files.hmac_key().unwrap();
    let mut smaller = DecisionBook::new();
    smaller
        .set(
            DecisionKind::Scope,
            &json!({"paths": ["secret-scope-path/"]}),
            None,
            Some("test"),
            at("2026-03-02T10:01:00Z"),
            &key,
        )
        .unwrap();
    files.save_book(&smaller).unwrap();
    let comparison = files.compare_now(None, now, window).unwrap();
    assert_eq!(comparison.state(), ContinuityHealth::Dropped);
    let dropped = comparison.decision(&DecisionKind::Target).unwrap();
    assert_eq!(dropped.state(), DecisionState::Dropped);
    let source = dropped.after().unwrap().source().unwrap();
    assert!(source.starts_with("book:sha256:"), "{source}");
}

/// Issue 16, B10: an unapproved change stays `conflicting` across any number of boundaries —
/// the next boundary's snapshot keeps the old baseline for it — until a person approves it.
#[test]
fn a_boundary_snapshot_never_launders_an_unapproved_change() {
    let (_temp, files) = project();
    three(&files);
    let key = files.hmac_key().unwrap();
    let window = SignedDuration::from_mins(10);
    let boundary = |at_text: &str| {
        let book = files.book().unwrap();
        let snapshot = files
            .boundary_snapshot("cc-s", &book, at(at_text), window)
            .unwrap();
        files.save_snapshot("cc-s", &snapshot, at(at_text)).unwrap();
    };
    boundary("2026-03-02T10:00:00Z");
    // After the first boundary a person changes the scope, without an approval.
    files
        .update_book(|book| {
            book.set(
                DecisionKind::Scope,
                &json!({"paths": ["everything/"]}),
                None,
                Some("cli:decisions-set"),
                at("2026-03-02T10:05:00Z"),
                &key,
            )
            .map(|_| ())
        })
        .unwrap();
    let state = |now: &str| {
        files
            .compare_now(Some("cc-s"), at(now), window)
            .unwrap()
            .state()
    };
    assert_eq!(state("2026-03-02T10:06:00Z"), ContinuityHealth::Conflicting);
    // A second and a third boundary: still conflicting, long after the change was made.
    boundary("2026-03-02T11:00:00Z");
    assert_eq!(state("2026-03-02T11:01:00Z"), ContinuityHealth::Conflicting);
    boundary("2026-03-02T12:00:00Z");
    let comparison = files
        .compare_now(Some("cc-s"), at("2026-03-02T12:30:00Z"), window)
        .unwrap();
    assert_eq!(comparison.state(), ContinuityHealth::Conflicting);
    let scope = comparison.decision(&DecisionKind::Scope).unwrap();
    assert_eq!(scope.state(), DecisionState::Conflicting);
    assert_eq!(scope.before().revision, 1);
    // A person approves revision 1 → 2: the change is approved, and the next boundary's
    // snapshot takes it as the baseline.
    files
        .update_book(|book| {
            book.approve_change(
                &DecisionKind::Scope,
                1,
                2,
                "ticket:PROJ-7",
                at("2026-03-02T12:40:00Z"),
            )
            .map(|_| ())
        })
        .unwrap();
    let scope_state = |now: &str| {
        files
            .compare_now(Some("cc-s"), at(now), window)
            .unwrap()
            .decision(&DecisionKind::Scope)
            .unwrap()
            .state()
    };
    assert_eq!(
        scope_state("2026-03-02T12:41:00Z"),
        DecisionState::ApprovedChange
    );
    boundary("2026-03-02T13:00:00Z");
    let snapshot = files.load_snapshot("cc-s").unwrap().unwrap().0;
    assert_eq!(snapshot.get(&DecisionKind::Scope).unwrap().revision(), 2);
}
