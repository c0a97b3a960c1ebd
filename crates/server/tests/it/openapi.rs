//! The OpenAPI document: generated from the handlers' types, committed, and served.

use crate::Harness;

#[test]
fn the_committed_openapi_document_is_current() {
    cairn_test_support::assert_checked_in(
        "docs/api/openapi.json",
        &cairn_server::openapi_document(),
        "cargo test -p cairn-server --test it openapi",
    );
}

#[test]
fn the_service_serves_the_document_and_every_route_is_in_it() {
    let service = Harness::start();
    let served = service.call("GET", "/v1/openapi.json", None, None);
    assert_eq!(served.status, 200);
    assert_eq!(served.body, cairn_server::openapi_document().into_bytes());
    let document = served.json();
    let paths = document["paths"].as_object().expect("paths");
    for path in [
        "/healthz",
        "/readyz",
        "/v1/runs",
        "/v1/runs/{run}",
        "/v1/runs/{run}/steps",
        "/v1/runs/{run}/steps/{step}/outcome",
        "/v1/runs/{run}/observations",
        "/v1/runs/{run}/terminate",
        "/v1/runs/{run}/reconcile",
        "/v1/runs/{run}/verify",
        "/v1/runs/{run}/bundle",
        "/v1/runs/{run}/steps/{step}/proof",
        "/v1/tokens",
        "/v1/tokens/{id}/revoke",
    ] {
        assert!(paths.contains_key(path), "{path} is not documented");
    }
    assert_eq!(service.call("GET", "/healthz", None, None).status, 200);
    assert_eq!(service.call("GET", "/readyz", None, None).status, 200);
}
