//! `cairn tokens create|list|revoke`: the service folder's token book, from the command line.
//! A token's secret is printed once and stored nowhere; a folder that does not exist is an
//! invalid `--data`, never an empty book.

use crate::common;

use std::path::Path;

use common::{INVALID, OK, Output, command_in};
use serde_json::Value;

fn tokens(dir: &Path, args: &[&str]) -> Output {
    Output::of(command_in(dir).arg("--json").arg("tokens").args(args))
}

#[test]
fn a_missing_service_folder_is_invalid_input_naming_the_folder_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let data = missing.to_str().unwrap();
    for args in [
        &[
            "create", "--tenant", "acme", "--role", "agent", "--data", data,
        ][..],
        &["list", "--data", data],
        &["revoke", "0123456789ab", "--data", data],
    ] {
        let out = tokens(dir.path(), args);
        out.expect(INVALID);
        assert_eq!(out.error_code(), "service_folder_missing", "{args:?}");
        let message = out.error_message();
        assert!(message.contains(data), "{args:?}: {message}");
        assert!(
            message.contains(&format!("cairn serve --init-only --data {data}")),
            "{args:?}: {message}"
        );
    }
    assert!(!missing.exists(), "nothing was created");
}

#[test]
fn a_token_is_created_listed_without_its_secret_and_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::service_folder(dir.path());
    let data = data.to_str().unwrap();
    let made = tokens(
        dir.path(),
        &[
            "create",
            "--tenant",
            "acme",
            "--role",
            "investigator",
            "--label",
            "ci",
            "--data",
            data,
        ],
    );
    let made = made.expect(OK).json();
    let secret = made["token"].as_str().unwrap().to_owned();
    let id = made["entry"]["id"].as_str().unwrap().to_owned();
    assert!(secret.starts_with(&format!("cairn_{id}_")), "{secret}");
    assert_eq!(
        (&made["entry"]["tenant"], &made["entry"]["role"]),
        (&Value::from("acme"), &Value::from("investigator"))
    );

    let listed = tokens(dir.path(), &["list", "--data", data]);
    let text = listed.expect(OK).stdout.clone();
    let secret_part = secret.rsplit('_').next().unwrap();
    assert!(!text.contains(secret_part), "the list shows no secret");
    let stored = std::fs::read_to_string(Path::new(data).join("tokens.json")).unwrap();
    assert!(
        !stored.contains(secret_part),
        "the file holds a digest only"
    );
    let listed = listed.json();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["revoked_at"], Value::Null);

    let revoked = tokens(dir.path(), &["revoke", &id, "--data", data]);
    assert!(revoked.expect(OK).json()["revoked_at"].is_string());
    let listed = tokens(dir.path(), &["list", "--data", data]).json();
    assert!(listed[0]["revoked_at"].is_string());

    let unknown = tokens(dir.path(), &["revoke", "0123456789ab", "--data", data]);
    assert_eq!(unknown.error_code(), "token_not_found");
    let role = tokens(
        dir.path(),
        &[
            "create", "--tenant", "acme", "--role", "king", "--data", data,
        ],
    );
    role.expect(INVALID);
    assert_eq!(role.error_code(), "invalid_role");
}
