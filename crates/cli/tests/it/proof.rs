//! Inclusion proofs through the binary: `ledger prove` writes one, `ledger verify-proof`
//! accepts it offline and rejects a modified record, a foreign checkpoint, an untrusted
//! signer and a forged audit path (I-3).

use crate::common;

use common::{INVALID, OK, Output, Project, TAMPER, arg, command_in, parse};
use serde_json::Value;

/// A project with a demo run and a proof of its step 2 at `proof.json`.
fn proven() -> (Project, String, Value) {
    let project = Project::new();
    let run = project.demo_run();
    let out = project.path("proof.json");
    project
        .cairn(&[
            "ledger",
            "prove",
            "--run",
            &run,
            "--step",
            "2",
            "--out",
            arg(&out),
        ])
        .expect(OK);
    let proof = parse(&std::fs::read_to_string(&out).unwrap());
    (project, run, proof)
}

/// Writes `proof` to `name` and runs `ledger verify-proof` on it with `--json` and `extra`.
fn verify(project: &Project, proof: &Value, name: &str, extra: &[&str]) -> Output {
    let path = project.path(name);
    std::fs::write(&path, proof.to_string()).unwrap();
    let mut args = vec!["ledger", "verify-proof", arg(&path)];
    args.extend_from_slice(extra);
    project.cairn_json(&args)
}

#[test]
fn a_proof_of_one_step_verifies_offline() {
    let (project, run, proof) = proven();
    assert_eq!(proof["schema"], "cairn.inclusion-proof/v1");
    assert_eq!(proof["leaf_index"], 2);
    let records = project.export(&run, "run.jsonl").len() - 1;
    assert_eq!(
        proof["tree_size"].as_u64(),
        Some(records as u64),
        "one leaf per record"
    );
    assert_eq!(proof["record"]["step_index"], 2);

    let json = project
        .cairn_json(&["ledger", "verify-proof", arg(&project.path("proof.json"))])
        .expect(OK)
        .json();
    assert_eq!(json["valid"], true);
    assert_eq!(json["origin"], format!("cairn/demo/{run}"));
    assert_eq!(json["leaf_index"], 2);
    assert_eq!(json["tree_size"], proof["tree_size"]);
    assert_eq!(json["record_digest"], proof["record"]["digest"]);

    // An auditor with the proof and the verifier key file only.
    let auditor = Project::new();
    let key = project.pub_files().remove(0);
    std::fs::copy(project.path("proof.json"), auditor.path("proof.json")).unwrap();
    let out = Output::of(command_in(auditor.root()).args([
        "ledger",
        "verify-proof",
        "proof.json",
        "--trusted-key",
        arg(&key),
    ]));
    assert!(out.expect(OK).stdout.starts_with("valid"), "{}", out.stdout);
}

#[test]
fn a_proof_whose_record_was_edited_is_rejected() {
    let (project, _, mut proof) = proven();
    proof["record"]["args"]["size"] = 9999.into();
    let out = verify(&project, &proof, "edited.json", &[]);
    assert_eq!(out.expect(TAMPER).error_code(), "record_modified");

    // Another step's record, intact and with its own digest, does not lead along step 2's
    // audit path to the signed root.
    let (project, run, mut proof) = proven();
    let lines = project.export(&run, "run.jsonl");
    proof["record"] = parse(&lines[3]);
    proof["leaf_index"] = 3.into();
    let out = verify(&project, &proof, "other-step.json", &[]);
    assert_eq!(out.expect(TAMPER).error_code(), "proof_mismatch");
}

#[test]
fn a_proof_checked_against_another_runs_checkpoint_is_rejected() {
    let (project, _, _) = proven();
    let other = project.demo_run();
    let lines = project.export(&other, "other.jsonl");
    let line = project.path("other-checkpoint.json");
    std::fs::write(&line, lines.last().unwrap()).unwrap();
    let note = project.path("other.note");
    std::fs::write(
        &note,
        parse(lines.last().unwrap())["note"].as_str().unwrap(),
    )
    .unwrap();

    for checkpoint in [&line, &note] {
        let out = project.cairn_json(&[
            "ledger",
            "verify-proof",
            arg(&project.path("proof.json")),
            "--checkpoint",
            arg(checkpoint),
        ]);
        assert_eq!(
            out.expect(TAMPER).error_code(),
            "checkpoint_rejected",
            "{}",
            checkpoint.display()
        );
    }
}

#[test]
fn a_proof_signed_by_an_untrusted_key_is_rejected() {
    let (project, _, _) = proven();
    let other = project.path("other-keys");
    Output::of(command_in(project.root()).args(["--keys", arg(&other), "keys", "generate"]))
        .expect(OK);
    let out = Output::of(command_in(project.root()).args([
        "--json",
        "--keys",
        arg(&other),
        "ledger",
        "verify-proof",
        arg(&project.path("proof.json")),
    ]));
    assert_eq!(out.expect(TAMPER).error_code(), "checkpoint_rejected");
}

#[test]
fn a_forged_audit_path_or_size_is_rejected() {
    let (project, _, proof) = proven();
    let mut forged = proof.clone();
    let path = forged["audit_path"].as_array_mut().unwrap();
    assert!(!path.is_empty());
    path[0] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into();
    assert_eq!(
        verify(&project, &forged, "path.json", &[])
            .expect(TAMPER)
            .error_code(),
        "proof_mismatch"
    );

    let mut resized = proof.clone();
    resized["tree_size"] = 6.into();
    assert_eq!(
        verify(&project, &resized, "size.json", &[])
            .expect(TAMPER)
            .error_code(),
        "proof_inconsistent"
    );

    let mut garbled = proof;
    garbled["audit_path"][0] = "not base64!".into();
    assert_eq!(
        verify(&project, &garbled, "garbled.json", &[])
            .expect(INVALID)
            .error_code(),
        "proof_malformed"
    );
    let not_a_proof = project.path("nonsense.json");
    std::fs::write(&not_a_proof, "{}").unwrap();
    let out = project.cairn_json(&["ledger", "verify-proof", arg(&not_a_proof)]);
    assert_eq!(out.expect(INVALID).error_code(), "proof_malformed");
}

#[test]
fn proofs_need_an_existing_step() {
    let project = Project::new();
    let run = project.demo_run();
    // One past the last record (the export is the records and a checkpoint line).
    let past_end = (project.export(&run, "run.jsonl").len() - 1).to_string();
    let out = project.cairn_json(&["ledger", "prove", "--run", &run, "--step", &past_end]);
    assert_eq!(out.expect(INVALID).error_code(), "step_not_found");
}
