//! TLS on the service's TCP listener: a client trusting the service's CA is answered over
//! `https://`; one that trusts another CA, and one that speaks plain HTTP to it, are not.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_server::client::{Endpoint, send_blocking};
use cairn_server::tokens::Role;

use crate::{Harness, READ_A};

/// A self-signed certificate for `localhost`, written as PEM files in `dir`.
fn certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

#[test]
fn https_answers_a_client_that_trusts_the_service_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "service");
    let (other_ca, _) = certificate(dir.path(), "other");
    let service = Harness::start_tls(&cert, &key);
    // Over TLS, the API as ever.
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "over-tls");
    let step = service.step(&agent, &run, READ_A);
    assert_eq!(step.json()["decision"], "allow");

    let Endpoint::Https { host, .. } = &service.tcp else {
        panic!("an https endpoint")
    };
    let second = Duration::from_secs(10);
    let distrusting = Endpoint::Https {
        host: host.clone(),
        ca: Some(other_ca),
    };
    let refused = send_blocking(&distrusting, "GET", "/healthz", None, None, second);
    assert!(
        refused.is_err(),
        "a client trusting another CA got {refused:?}"
    );
    let plain = Endpoint::Tcp(host.clone());
    let cleartext = send_blocking(&plain, "GET", "/healthz", None, None, second);
    assert!(
        cleartext
            .as_ref()
            .map_or(true, |answer| answer.status != 200),
        "plain HTTP to the TLS listener was answered: {cleartext:?}"
    );
}
