//! Copying runs between stores (`cairn_ledger::copy`, behind `cairn store copy`): a laptop
//! ledger moves to PostgreSQL and back byte for byte, verified; an interrupted copy is
//! completed; a tampered run or another run under the same id is never written over.

use cairn_core::{Digest, ErrorCode};
use cairn_ledger::Store;
use cairn_ledger::checkpoint::{Checkpoint, sign};
use cairn_ledger::copy::{CopyError, copy_run};
use cairn_ledger::keys::{SigningKey, TrustedKeys};
use cairn_ledger::merkle::{leaf_hash, root};
use cairn_ledger::record::{BoundaryEvent, IntentRecord, Label, SealedRecord};
use cairn_ledger::store::{Commit, ContentItem, EnvelopeItem, OpenMode, RunFilter, RunMeta};
use cairn_store_postgres::{Options, PostgresStore};
use cairn_store_sqlite::SqliteStore;
use cairn_test_support::postgres::Schemas;
use cairn_test_support::store_conformance::{append, at, ids, records_of, sealed, step};

/// A closed run in `store`: steps with their arguments kept, a boundary saving an envelope,
/// more steps, the terminal record and a checkpoint signed by `key`.
fn closed_run(store: &dyn Store, key: &SigningKey) -> Vec<IntentRecord> {
    let (tenant_id, run_id, task_id) = ids();
    store
        .open_run(&RunMeta {
            tenant_id: tenant_id.clone(),
            run_id: run_id.clone(),
            task_id,
            opened_at: at(0),
        })
        .unwrap();
    let mut records: Vec<IntentRecord> = Vec::new();
    let next = |records: &[IntentRecord], tool: &str| {
        step(records.len() as u64, records.last().map(|r| r.digest), tool)
    };
    for tool in ["a.read", "b.write", "deny.this"] {
        let record = next(&records, tool);
        let content = ContentItem {
            digest: Digest::of(tool.as_bytes()),
            bytes: tool.as_bytes().to_vec(),
            stored_at: at(1),
            expires_at: at(500),
        };
        store
            .append(&Commit {
                records: &sealed(std::slice::from_ref(&record)),
                content: &[content],
                ..Commit::default()
            })
            .unwrap();
        records.push(record);
    }
    let boundary = IntentRecord::seal(
        cairn_ledger::record::RecordDraft {
            tenant_id: tenant_id.clone(),
            run_id: run_id.clone(),
            task_id: ids().2,
            event: cairn_ledger::record::DraftEvent::Boundary(BoundaryEvent::new(
                Label::new("compact").unwrap(),
            )),
            lane_id: None,
            observation_digest: None,
            recorded_at: at(100),
        },
        records.len() as u64,
        records.last().map(|r| r.digest),
    )
    .unwrap();
    store
        .append(&Commit {
            records: &sealed(std::slice::from_ref(&boundary)),
            envelope: Some(EnvelopeItem {
                envelope_id: "env-1",
                supersedes: None,
                body: "{\"envelope\":1}",
            }),
            ..Commit::default()
        })
        .unwrap();
    records.push(boundary);
    for _ in 0..600 {
        let record = next(&records, "bulk.step");
        append(store, std::slice::from_ref(&record)).unwrap();
        records.push(record);
    }
    let terminal = IntentRecord::seal(
        cairn_ledger::record::RecordDraft {
            tenant_id: tenant_id.clone(),
            run_id: run_id.clone(),
            task_id: ids().2,
            event: cairn_ledger::record::DraftEvent::Terminal(cairn_ledger::record::Termination {
                reason: cairn_ledger::record::TerminationReason::Completed,
                detail: None,
            }),
            lane_id: None,
            observation_digest: None,
            recorded_at: at(599),
        },
        records.len() as u64,
        records.last().map(|r| r.digest),
    )
    .unwrap();
    records.push(terminal.clone());
    let leaves: Vec<_> = records
        .iter()
        .map(|r| leaf_hash(r.digest.as_bytes()))
        .collect();
    let checkpoint = Checkpoint {
        origin: Checkpoint::origin_for(&tenant_id, &run_id),
        size: leaves.len() as u64,
        root: root(&leaves),
    };
    let signed = sign(&checkpoint, key).unwrap();
    store
        .append(&Commit {
            records: &[SealedRecord::from_record(terminal).unwrap()],
            checkpoint_note: Some(signed.note()),
            ..Commit::default()
        })
        .unwrap();
    records
}

fn key() -> (SigningKey, TrustedKeys) {
    let key = SigningKey::generate(&mut rand_core::OsRng, "cairn.test").unwrap();
    let trusted = TrustedKeys::new(vec![key.verifier_key()]);
    (key, trusted)
}

fn sqlite(dir: &tempfile::TempDir, name: &str) -> SqliteStore {
    SqliteStore::open(dir.path().join(name), OpenMode::CreateIfMissing).unwrap()
}

fn postgres(schemas: &Schemas) -> PostgresStore {
    PostgresStore::open(
        &schemas.url(),
        OpenMode::CreateIfMissing,
        &Options::default(),
    )
    .unwrap()
}

/// A closed run in a SQLite file, the key it was signed with trusted.
struct Laptop {
    dir: tempfile::TempDir,
    trusted: TrustedKeys,
    laptop: SqliteStore,
    records: Vec<IntentRecord>,
}

impl Laptop {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (key, trusted) = key();
        let laptop = sqlite(&dir, "laptop.db");
        let records = closed_run(&laptop, &key);
        Self {
            dir,
            trusted,
            laptop,
            records,
        }
    }
}

fn the_run(store: &dyn Store) -> cairn_ledger::store::RunInfo {
    store.run(&ids().0, &ids().1).unwrap().unwrap()
}

#[test]
fn a_laptop_ledger_moves_to_postgres_and_back_byte_for_byte() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let Laptop {
        dir,
        trusted,
        laptop,
        records,
    } = Laptop::new();
    let shared = postgres(&schemas);
    let copied = copy_run(&laptop, &shared, &the_run(&laptop), &trusted).unwrap();
    assert_eq!(copied.records, records.len() as u64);
    assert_eq!(
        (copied.already, copied.content, copied.envelopes),
        (0, 3, 1)
    );
    // Again: nothing to do.
    let again = copy_run(&laptop, &shared, &the_run(&laptop), &trusted).unwrap();
    assert_eq!((again.records, again.already), (0, records.len() as u64));
    // And back into a new file: the same run, record for record.
    let back = sqlite(&dir, "back.db");
    copy_run(&shared, &back, &the_run(&shared), &trusted).unwrap();
    let (tenant, run, _) = ids();
    for store in [&shared as &dyn Store, &back] {
        let rows = records_of(store, &tenant, &run);
        assert_eq!(rows, records);
        assert_eq!(
            store.checkpoint(&tenant, &run).unwrap(),
            laptop.checkpoint(&tenant, &run).unwrap()
        );
        assert_eq!(
            store.envelopes(&tenant, &run).unwrap(),
            laptop.envelopes(&tenant, &run).unwrap()
        );
        assert_eq!(
            store.content(&Digest::of(b"b.write")).unwrap(),
            laptop.content(&Digest::of(b"b.write")).unwrap()
        );
        assert_eq!(the_run(store), the_run(&laptop));
    }
}

#[test]
fn an_interrupted_copy_is_completed_from_where_it_stopped() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    // The folder lives as long as the test: the SQLite file is in it.
    let Laptop {
        dir: _dir,
        trusted,
        laptop,
        records,
    } = Laptop::new();
    let shared = postgres(&schemas);
    // A copy that stopped after its first commits: the target has the start of the run.
    shared.open_run(&the_run(&laptop).meta).unwrap();
    append(&shared, &records[..3]).unwrap();
    let copied = copy_run(&laptop, &shared, &the_run(&laptop), &trusted).unwrap();
    assert_eq!(copied.already, 3);
    assert_eq!(copied.records, records.len() as u64 - 3);
    assert_eq!(
        shared.digests(&ids().0, &ids().1).unwrap().len(),
        records.len()
    );
}

#[test]
fn a_tampered_run_or_another_run_under_the_id_is_never_written_over() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (key, trusted) = key();
    let shared = postgres(&schemas);
    closed_run(&shared, &key);
    shared
        .execute_raw("UPDATE cairn_records SET body = replace(body, 'a.read', 'a.rEad') WHERE step_index = 0")
        .unwrap();
    let target = sqlite(&dir, "target.db");
    let err = copy_run(&shared, &target, &the_run(&shared), &trusted).unwrap_err();
    assert!(matches!(err, CopyError::SourceNotIntact(_)), "{err:?}");
    assert_eq!(err.code(), "copy_source_not_intact");
    assert!(target.list_runs(&RunFilter::default()).unwrap().is_empty());

    // Another run under the same id in the target stays as it is.
    let laptop = sqlite(&dir, "laptop.db");
    closed_run(&laptop, &key);
    let other = sqlite(&dir, "other.db");
    other.open_run(&the_run(&laptop).meta).unwrap();
    append(&other, &[step(0, None, "something.else")]).unwrap();
    let err = copy_run(&laptop, &other, &the_run(&laptop), &trusted).unwrap_err();
    assert_eq!(err.code(), "copy_target_differs", "{err}");
    assert_eq!(the_run(&other).records, 1);
}
