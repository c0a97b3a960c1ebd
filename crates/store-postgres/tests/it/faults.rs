//! Faults fail closed, each with its stable code: a server that does not answer, a read-only
//! server, a statement past its timeout, a connection lost in the middle of a commit. None
//! leaves a half-written commit, and none prints a password.

use std::time::Duration;

use cairn_core::ErrorCode;
use cairn_ledger::Store;
use cairn_ledger::store::OpenMode;
use cairn_store_postgres::{Options, PostgresStore};
use cairn_test_support::store_conformance::{append, at, ids, step};

use cairn_test_support::postgres::Schemas;

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn opened(schemas: &Schemas, options: &Options) -> (String, PostgresStore) {
    let url = schemas.url();
    (url.clone(), opened_at(&url, options))
}

/// The store at `url`, with the default run opened.
fn opened_at(url: &str, options: &Options) -> PostgresStore {
    let store = PostgresStore::open(url, OpenMode::CreateIfMissing, options).unwrap();
    let (tenant_id, run_id, task_id) = ids();
    store
        .open_run(&cairn_ledger::store::RunMeta {
            tenant_id,
            run_id,
            task_id,
            opened_at: at(0),
        })
        .unwrap();
    store
}

#[test]
fn a_server_that_does_not_answer_is_unavailable_and_the_password_stays_hidden() {
    let url = format!("postgres://cairn:s3cret@127.0.0.1:{}/test", closed_port());
    let options = Options {
        connect_timeout: Duration::from_millis(500),
        ..Options::default()
    };
    let err = PostgresStore::open(&url, OpenMode::CreateIfMissing, &options).unwrap_err();
    assert_eq!(err.code(), "store_unavailable", "{err}");
    let text = err.to_string();
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.contains("cairn:***@127.0.0.1"), "{text}");
}

#[test]
fn a_read_only_server_refuses_the_append_and_keeps_the_run_as_it_was() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let (url, store) = opened(&schemas, &Options::default());
    append(&store, &[step(0, None, "a")]).unwrap();
    let read_only = format!("{url}%20-cdefault_transaction_read_only%3Don");
    let replica =
        PostgresStore::open(&read_only, OpenMode::MustExist, &Options::default()).unwrap();
    let head = replica.resume_point(&ids().0, &ids().1).unwrap().unwrap();
    let err = append(&replica, &[step(1, head.head, "b")]).unwrap_err();
    assert_eq!(err.code(), "store_read_only", "{err}");
    assert_eq!(store.run(&ids().0, &ids().1).unwrap().unwrap().records, 1);
}

/// Holds the run's row lock in another session while `during` runs.
fn with_run_locked<T>(url: &str, during: impl FnOnce(i32) -> T) -> T {
    let mut holder = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT 1 FROM cairn_runs FOR UPDATE", &[])
        .unwrap();
    let holder_pid: i32 = tx.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let result = during(holder_pid);
    tx.rollback().unwrap();
    result
}

#[test]
fn a_statement_past_its_timeout_is_a_timeout_and_writes_nothing() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let options = Options {
        statement_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    let (url, store) = opened(&schemas, &options);
    let err = with_run_locked(&url, |_| append(&store, &[step(0, None, "a")]).unwrap_err());
    assert_eq!(err.code(), "store_timeout", "{err}");
    assert_eq!(store.run(&ids().0, &ids().1).unwrap().unwrap().records, 0);
    // The store goes on once the lock is gone.
    append(&store, &[step(0, None, "a")]).unwrap();
}

#[test]
fn a_connection_lost_mid_commit_is_unavailable_and_the_store_recovers() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let (url, store) = opened(&schemas, &Options::default());
    let err = with_run_locked(&url, |holder| {
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| append(&store, &[step(0, None, "a")]));
            // Wait (bounded) until the writer waits for the lock, then cut its connection.
            let mut admin = postgres::Client::connect(schemas.server(), postgres::NoTls).unwrap();
            let mut killed = false;
            for _ in 0..200 {
                let rows = admin
                    .query(
                        "SELECT pid FROM pg_stat_activity
                         WHERE $1 = ANY(pg_blocking_pids(pid))",
                        &[&holder],
                    )
                    .unwrap();
                if let Some(row) = rows.first() {
                    let pid: i32 = row.get(0);
                    admin
                        .execute("SELECT pg_terminate_backend($1)", &[&pid])
                        .unwrap();
                    killed = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(killed, "the writer never waited for the lock");
            writer.join().unwrap().unwrap_err()
        })
    });
    assert_eq!(err.code(), "store_unavailable", "{err}");
    // Nothing landed, and the next append (on a new connection) does.
    assert_eq!(store.run(&ids().0, &ids().1).unwrap().unwrap().records, 0);
    append(&store, &[step(0, None, "a")]).unwrap();
    assert_eq!(store.run(&ids().0, &ids().1).unwrap().unwrap().records, 1);
}

/// TLS that authenticates the server (`sslmode=verify-full`): with the server's certificate as
/// the root, the store's connections are encrypted; a name the certificate does not carry is
/// refused, and nothing connects. Uses the test server's own certificate (Debian's snakeoil
/// one, issued to `localhost`); skipped where the server has none.
#[test]
fn tls_connects_only_to_the_server_the_certificate_names() {
    let Some(schemas) = Schemas::new() else {
        return;
    };
    let cert = "/etc/ssl/certs/ssl-cert-snakeoil.pem";
    let mut admin = postgres::Client::connect(schemas.server(), postgres::NoTls).unwrap();
    let ssl: String = admin.query_one("SHOW ssl", &[]).unwrap().get(0);
    let url = schemas.url();
    if ssl != "on" || !std::path::Path::new(cert).exists() || !url.contains("@127.0.0.1:") {
        eprintln!("SKIPPED: the test server has no TLS certificate for localhost at {cert}");
        return;
    }
    let name = format!("cairn_tls_{}", std::process::id());
    let secure = format!(
        "{}&sslmode=verify-full&sslrootcert={cert}&application_name={name}",
        url.replace("@127.0.0.1:", "@localhost:")
    );
    let store = opened_at(&secure, &Options::default());
    append(&store, &[step(0, None, "a")]).unwrap();
    let row = admin
        .query_one(
            "SELECT COUNT(*), COALESCE(bool_and(s.ssl), false) FROM pg_stat_ssl s
             JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
            &[&name],
        )
        .unwrap();
    let (connections, encrypted): (i64, bool) = (row.get(0), row.get(1));
    assert!(
        connections >= 1 && encrypted,
        "{connections} connection(s), encrypted: {encrypted}"
    );
    // The same server under a name its certificate does not carry.
    let wrong_name = secure.replace("@localhost:", "@127.0.0.1:");
    let options = Options {
        connect_timeout: Duration::from_secs(2),
        ..Options::default()
    };
    let err = PostgresStore::open(&wrong_name, OpenMode::MustExist, &options).unwrap_err();
    assert_eq!(err.code(), "store_unavailable", "{err}");
}
