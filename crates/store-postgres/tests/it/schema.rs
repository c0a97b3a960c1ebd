//! The PostgreSQL store's own schema: created once (even by processes racing to create it),
//! with the partition count it was created with, versioned, refused when newer, never created
//! by a reading command.

use cairn_core::ErrorCode;
use cairn_ledger::Store;
use cairn_ledger::store::{OpenMode, RunMeta};
use cairn_store_postgres::{CURRENT_VERSION, Options, PostgresStore};
use cairn_test_support::store_conformance::{append, at, ids, step_of};

use cairn_test_support::postgres::Schemas;

fn count(url: &str, sql: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.query_one(sql, &[]).unwrap().get(0)
}

fn partitions_of(url: &str, table: &str) -> i64 {
    count(
        url,
        &format!("SELECT COUNT(*) FROM pg_inherits WHERE inhparent = to_regclass('{table}')"),
    )
}

#[test]
fn a_store_is_created_once_with_its_partitions_and_migrations_are_idempotent() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let eight = Options {
        partitions: 8,
        ..Options::default()
    };
    let store = PostgresStore::open(&url, OpenMode::CreateIfMissing, &eight).unwrap();
    assert_eq!(store.partitions(), 8);
    assert_eq!(partitions_of(&url, "cairn_records"), 8);
    assert_eq!(partitions_of(&url, "cairn_content"), 8);
    // A later open keeps what the store was created with.
    let three = Options {
        partitions: 3,
        ..Options::default()
    };
    let again = PostgresStore::open(&url, OpenMode::MustExist, &three).unwrap();
    assert_eq!(again.partitions(), 8);
    assert_eq!(
        count(&url, "SELECT version::bigint FROM cairn_schema"),
        i64::from(CURRENT_VERSION)
    );
}

#[test]
fn processes_racing_to_create_one_store_create_it_once() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let opened: Vec<Result<PostgresStore, _>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                scope.spawn(|| {
                    PostgresStore::open(&url, OpenMode::CreateIfMissing, &Options::default())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for result in &opened {
        assert!(result.is_ok(), "{result:?}");
    }
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cairn_schema"), 1);
}

#[test]
fn a_store_written_by_a_newer_cairn_is_refused() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    drop(PostgresStore::open(&url, OpenMode::CreateIfMissing, &Options::default()).unwrap());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!(
            "UPDATE cairn_schema SET version = {}",
            CURRENT_VERSION + 1
        ))
        .unwrap();
    for mode in [OpenMode::MustExist, OpenMode::CreateIfMissing] {
        let err = PostgresStore::open(&url, mode, &Options::default()).unwrap_err();
        assert_eq!(err.code(), "store_schema_too_new", "{err}");
    }
}

#[test]
fn reading_commands_never_create_a_store() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let err = PostgresStore::open(&url, OpenMode::MustExist, &Options::default()).unwrap_err();
    assert_eq!(err.code(), "not_a_store", "{err}");
    assert!(err.to_string().contains("cairn store init"), "{err}");
    assert_eq!(
        count(
            &url,
            "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()"
        ),
        0
    );
}

#[test]
fn runs_are_spread_over_the_hash_partitions() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let url = schemas.url();
    let options = Options {
        partitions: 4,
        ..Options::default()
    };
    let store = PostgresStore::open(&url, OpenMode::CreateIfMissing, &options).unwrap();
    let tenant = ids().0;
    for n in 0..32 {
        let run = format!("run-{n}").parse().unwrap();
        store
            .open_run(&RunMeta {
                tenant_id: tenant.clone(),
                run_id: run,
                task_id: ids().2,
                opened_at: at(0),
            })
            .unwrap();
        let run = format!("run-{n}").parse().unwrap();
        append(&store, &[step_of(&tenant, &run, 0, None, "a")]).unwrap();
    }
    let used = (0..4)
        .filter(|p| count(&url, &format!("SELECT COUNT(*) FROM cairn_records_p{p}")) > 0)
        .count();
    assert!(used >= 3, "32 runs over 4 partitions landed in {used}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cairn_records"), 32);
}

#[test]
fn a_malformed_url_or_partition_count_is_refused_without_the_password() {
    let err = PostgresStore::open(
        "postgres://cairn:s3cret@host:notaport/db",
        OpenMode::CreateIfMissing,
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "invalid_store_location");
    assert!(!err.to_string().contains("s3cret"), "{err}");
    let err = PostgresStore::open(
        "postgres://cairn:s3cret@127.0.0.1/db",
        OpenMode::CreateIfMissing,
        &Options {
            partitions: 0,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), "invalid_store_location");
    assert!(err.to_string().contains("cairn:***@"), "{err}");
}
