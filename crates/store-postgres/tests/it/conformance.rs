//! The store conformance suite (`cairn_test_support::store_conformance`) on PostgreSQL.

use cairn_ledger::store::OpenMode;
use cairn_store_postgres::{Options, PostgresStore};
use cairn_test_support::store_conformance::{Harness, Tamper};

use cairn_test_support::postgres::Schemas;

/// Each store in its own schema; a second handle is a second pool on the same URL.
struct Postgres {
    schemas: Schemas,
    urls: std::sync::Mutex<Vec<(String, String)>>,
}

impl Postgres {
    fn new() -> Option<Self> {
        Some(Self {
            schemas: Schemas::new()?,
            urls: std::sync::Mutex::default(),
        })
    }

    fn url_of(&self, store: &PostgresStore) -> String {
        let urls = self.urls.lock().unwrap();
        let found = urls
            .iter()
            .find(|(location, _)| location == store.location());
        found.map(|(_, url)| url.clone()).unwrap()
    }
}

impl Harness for Postgres {
    type Store = PostgresStore;

    fn fresh(&self) -> PostgresStore {
        let url = self.schemas.url();
        // Few partitions: each test creates its own tables.
        let options = Options {
            partitions: 4,
            ..Options::default()
        };
        let store = PostgresStore::open(&url, OpenMode::CreateIfMissing, &options).unwrap();
        self.urls
            .lock()
            .unwrap()
            .push((store.location().to_owned(), url));
        store
    }

    fn again(&self, store: &PostgresStore) -> PostgresStore {
        PostgresStore::open(
            &self.url_of(store),
            OpenMode::MustExist,
            &Options::default(),
        )
        .unwrap()
    }

    fn tamper(&self, store: &PostgresStore, what: Tamper) {
        let sql = match what {
            Tamper::BodyNotJson { step } => {
                format!("UPDATE cairn_records SET body = '{{not json' WHERE step_index = {step}")
            }
            Tamper::ArgsSizeColumn { step, size } => {
                format!("UPDATE cairn_records SET args_size = {size} WHERE step_index = {step}")
            }
            Tamper::FrontierGarbage => {
                String::from("UPDATE cairn_runs SET frontier = decode(repeat('00', 72), 'hex')")
            }
            Tamper::HeadForgotten => {
                String::from("UPDATE cairn_runs SET head_digest = NULL, frontier = NULL")
            }
        };
        store.execute_raw(&sql).unwrap();
    }

    fn every_run_keeps_a_frontier(&self, store: &PostgresStore) -> bool {
        let url = self.url_of(store);
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let missing: i64 = client
            .query_one(
                "SELECT COUNT(*) FROM cairn_runs WHERE frontier IS NULL",
                &[],
            )
            .unwrap()
            .get(0);
        missing == 0
    }
}

cairn_test_support::store_conformance!(Postgres::new());
