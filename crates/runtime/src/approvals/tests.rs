//! Unit tests of approval ids: their form, and that an id names one run's request.

#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;

#[test]
fn ids_are_apr_and_24_lowercase_hex_digits() {
    let tenant = TenantId::new("acme").unwrap();
    let run = RunId::new("run-1").unwrap();
    let id = ApprovalId::derive(&tenant, &run, "00ff").unwrap();
    assert_eq!(ApprovalId::parse(id.as_str()).unwrap(), id);
    assert_ne!(
        ApprovalId::derive(&tenant, &RunId::new("run-2").unwrap(), "00ff").unwrap(),
        id,
        "an id names one run's request"
    );
    for bad in [
        "",
        "apr-",
        "apr-0123456789abcdef0123456",
        "apr-0123456789abcdef012345678",
        "apr-0123456789ABCDEF01234567",
        "xpr-0123456789abcdef01234567",
        "apr-0123456789abcdef0123456g",
    ] {
        let err = ApprovalId::parse(bad).unwrap_err();
        assert_eq!(
            cairn_core::ErrorCode::error_code(&err).name(),
            "approval_id_invalid",
            "{bad}"
        );
    }
}
