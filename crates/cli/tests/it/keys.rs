//! `cairn keys`: a generated private key is owner-only, listed as active, and rotating to a
//! new key keeps checkpoints signed by the old one verifiable (I-3).

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use common::{INVALID, OK, Project, report_for};
use serde_json::Value;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// `name+keyid`, the signer label verification reports, of a verifier key text.
fn signer_label(verifier_key: &str) -> String {
    verifier_key
        .splitn(3, '+')
        .take(2)
        .collect::<Vec<_>>()
        .join("+")
}

fn generate(project: &Project) -> Value {
    project.cairn_json(&["keys", "generate"]).expect(OK).json()
}

#[test]
fn a_generated_private_key_is_owner_only_and_listed_as_active() {
    let project = Project::new();
    let generated = generate(&project);
    let private = Path::new(generated["private_key_path"].as_str().unwrap());
    let public = Path::new(generated["verifier_key_path"].as_str().unwrap());
    assert_eq!(mode(private), 0o600, "{}", private.display());
    assert_eq!(mode(&project.keys_dir()), 0o700);
    assert!(private.starts_with(project.keys_dir()) && public.starts_with(project.keys_dir()));
    let verifier_key = generated["verifier_key"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(public).unwrap().trim(),
        verifier_key
    );
    assert!(!std::fs::read_to_string(public).unwrap().contains("PRIVATE"));

    let list = project.cairn_json(&["keys", "list"]).expect(OK).json();
    assert_eq!(list["active"], verifier_key);
    assert_eq!(list["trusted"], serde_json::json!([verifier_key]));
    let text = project.cairn(&["keys", "list"]);
    assert!(
        text.expect(OK)
            .stdout
            .contains(&format!("* {verifier_key}")),
        "{}",
        text.stdout
    );
    // I-7: the private key never reaches stdout.
    assert!(
        !text.stdout.contains("PRIVATE")
            && !project
                .cairn(&["keys", "generate"])
                .stdout
                .contains("PRIVATE")
    );
}

#[test]
fn generating_a_second_key_keeps_runs_signed_by_the_first_verifiable() {
    let project = Project::new();
    let first = generate(&project)["verifier_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let old_run = project.demo_run();
    let second = generate(&project)["verifier_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second);

    let list = project.cairn_json(&["keys", "list"]).expect(OK).json();
    assert_eq!(list["active"], second.as_str());
    let trusted = list["trusted"].as_array().unwrap();
    assert!(
        trusted.contains(&first.clone().into()) && trusted.contains(&second.clone().into()),
        "{list}"
    );

    let new_run = project.demo_run();
    let verify = project
        .cairn_json(&["ledger", "verify", "--all"])
        .expect(OK)
        .json();
    assert_eq!(
        report_for(&verify, &old_run)["checkpoint"]["signers"],
        serde_json::json!([signer_label(&first)])
    );
    assert_eq!(
        report_for(&verify, &new_run)["checkpoint"]["signers"],
        serde_json::json!([signer_label(&second)])
    );
}

#[test]
fn a_key_name_that_cannot_be_a_file_name_is_refused() {
    let project = Project::new();
    for bad in ["bad name", "a+b", ".hidden", "../escape"] {
        let out = project.cairn_json(&["keys", "generate", "--name", bad]);
        assert_eq!(
            out.expect(INVALID).error_code(),
            "invalid_key_name",
            "`{bad}`"
        );
    }
    assert!(!project.path("escape").exists());
}
