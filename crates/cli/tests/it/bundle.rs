//! Evidence bundles through the binary: `ledger export --format jsonl` writes records then the
//! signed checkpoint; `ledger verify --bundle` accepts them offline with the right keys, and
//! names the step and kind of every tampering (I-3).

use crate::common;

use common::{INVALID, OK, Output, Project, TAMPER, arg, command_in, findings_of, parse};

/// A project with one demo run exported to `run.jsonl`: (project, run id, bundle lines).
fn exported() -> (Project, String, Vec<String>) {
    let project = Project::new();
    let run = project.demo_run();
    let lines = project.export(&run, "run.jsonl");
    (project, run, lines)
}

/// Verifies the tampered lines and returns the findings of the (single) run, asserting exit 5.
#[track_caller]
fn tampered_findings(project: &Project, lines: &[String]) -> Vec<(String, Option<u64>)> {
    let out = project.verify_bundle_lines(lines, "tampered.jsonl");
    let json = out.expect(TAMPER).json();
    assert_eq!(json["intact"], false);
    let findings = findings_of(&json["runs"][0]);
    assert!(!findings.is_empty(), "exit 5 without findings: {json}");
    findings
}

#[track_caller]
fn assert_finding(findings: &[(String, Option<u64>)], kind: &str, step: u64) {
    assert!(
        findings.iter().any(|(k, s)| k == kind && *s == Some(step)),
        "expected a `{kind}` finding at step {step}, got {findings:?}"
    );
}

#[test]
fn export_writes_the_records_in_step_order_then_one_checkpoint_line() {
    let project = Project::new();
    let run = project.demo_run();
    let out = project.path("run.jsonl");
    let summary = project
        .cairn_json(&common::export_args(&run, arg(&out)))
        .expect(OK)
        .json();
    assert_eq!(summary["checkpoint"].as_bool(), Some(true));
    let records = usize::try_from(summary["records"].as_u64().unwrap()).unwrap();

    let lines = common::read_lines(&out);
    assert_eq!(lines.len(), records + 1, "the records, then the checkpoint");
    for (index, line) in lines[..records].iter().enumerate() {
        let record = parse(line);
        assert_eq!(record["schema"], "cairn.intent/v1");
        assert_eq!(record["run_id"], run.as_str());
        assert_eq!(record["step_index"].as_u64(), Some(index as u64));
        assert!(
            record["admission"].is_object() || record["kind"] != "step",
            "{line}"
        );
    }
    assert_eq!(parse(&lines[records - 1])["kind"], "terminal");
    let checkpoint = parse(&lines[records]);
    assert_eq!(checkpoint["schema"], "cairn.checkpoint/v1");
    assert_eq!(checkpoint["run_id"], run.as_str());
    assert!(
        checkpoint["note"]
            .as_str()
            .unwrap()
            .starts_with(&format!("cairn/demo/{run}\n{records}\n"))
    );

    // Without --out the JSON lines go to stdout, whatever the output mode.
    let stdout = project
        .cairn_json(&["ledger", "export", "--run", &run, "--format", "jsonl"])
        .expect(OK)
        .stdout
        .clone();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), lines);
}

#[test]
fn an_exported_bundle_verifies_with_the_store_keys_or_the_pub_file_alone() {
    let (project, run, _) = exported();
    let bundle = project.path("run.jsonl");
    let json = project
        .cairn_json(&["ledger", "verify", "--bundle", arg(&bundle)])
        .expect(OK)
        .json();
    assert_eq!(json["intact"], true);
    assert_eq!(json["runs"][0]["run_id"], run.as_str());
    assert_eq!(json["runs"][0]["checkpoint"]["state"], "verified");

    // Offline: an auditor with only the bundle and the verifier key file, no store.
    let auditor = Project::new();
    let pubs = project.pub_files();
    assert_eq!(pubs.len(), 1, "{pubs:?}");
    let key = auditor.path("trusted.pub");
    std::fs::copy(&pubs[0], &key).unwrap();
    std::fs::copy(&bundle, auditor.path("run.jsonl")).unwrap();
    let out = Output::of(command_in(auditor.root()).args([
        "--json",
        "ledger",
        "verify",
        "--bundle",
        "run.jsonl",
        "--trusted-key",
        arg(&key),
    ]));
    assert_eq!(out.expect(OK).json()["intact"], true);
}

#[test]
fn a_bundle_signed_by_a_key_outside_the_trusted_set_is_rejected_as_tamper() {
    let (project, _, _) = exported();
    let bundle = project.path("run.jsonl");
    let other = project.path("other-keys");
    Output::of(command_in(project.root()).args(["--keys", arg(&other), "keys", "generate"]))
        .expect(OK);
    let other_pub = common::files_with_extension(&other, "pub");
    assert_eq!(other_pub.len(), 1);

    let out = project.cairn_json(&[
        "ledger",
        "verify",
        "--bundle",
        arg(&bundle),
        "--trusted-key",
        arg(&other_pub[0]),
    ]);
    let json = out.expect(TAMPER).json();
    assert_eq!(json["runs"][0]["checkpoint"]["state"], "failed");
    assert!(
        findings_of(&json["runs"][0])
            .iter()
            .any(|(k, _)| k == "checkpoint"),
        "{json}"
    );

    let via_dir = Output::of(command_in(project.root()).args([
        "--keys",
        arg(&other),
        "ledger",
        "verify",
        "--bundle",
        arg(&bundle),
    ]));
    via_dir.expect(TAMPER);
}

#[test]
fn an_edited_argument_size_is_reported_as_modified_at_its_step() {
    let (project, _, mut lines) = exported();
    let mut record = parse(&lines[2]);
    record["args"]["size"] = (record["args"]["size"].as_u64().unwrap() + 1).into();
    lines[2] = record.to_string();
    assert_finding(&tampered_findings(&project, &lines), "modified", 2);
}

#[test]
fn a_deleted_middle_record_is_reported_as_deleted_at_its_step() {
    let (project, _, mut lines) = exported();
    lines.remove(3);
    assert_finding(&tampered_findings(&project, &lines), "deleted", 3);
}

#[test]
fn swapped_records_are_reported_as_reordered() {
    let (project, _, mut lines) = exported();
    lines.swap(2, 3);
    let findings = tampered_findings(&project, &lines);
    assert!(
        findings
            .iter()
            .any(|(k, s)| k == "reordered" && matches!(s, Some(2 | 3))),
        "{findings:?}"
    );
}

#[test]
fn a_bundle_without_its_checkpoint_line_is_reported() {
    let (project, _, mut lines) = exported();
    lines.pop();
    let findings = tampered_findings(&project, &lines);
    assert!(
        findings.iter().any(|(k, _)| k == "checkpoint"),
        "{findings:?}"
    );
}

#[test]
fn dropped_final_records_are_reported_as_truncated() {
    let (project, _, mut lines) = exported();
    // The last two records (the final step and the terminal record) go; the checkpoint stays.
    let checkpoint = lines.len() - 1;
    lines.remove(checkpoint - 1);
    lines.remove(checkpoint - 2);
    let first_dropped = u64::try_from(checkpoint - 2).unwrap();
    assert_finding(
        &tampered_findings(&project, &lines),
        "truncated",
        first_dropped,
    );
}

#[test]
fn a_record_from_another_run_is_reported_as_spliced_at_its_step() {
    let (project, _, mut lines) = exported();
    let other_run = project.demo_run();
    let other = project.export(&other_run, "other.jsonl");
    // Appended after the run's records, before its checkpoint line.
    lines.insert(lines.len() - 1, other[4].clone());
    let findings = tampered_findings(&project, &lines);
    assert_finding(&findings, "spliced", 4);

    // Replacing a record with the other run's record of the same step.
    let (project, _, mut lines) = exported();
    let other_run = project.demo_run();
    let other = project.export(&other_run, "other.jsonl");
    lines[2] = other[2].clone();
    assert_finding(&tampered_findings(&project, &lines), "spliced", 2);
}

#[test]
fn a_line_that_is_not_a_record_is_reported_at_its_position() {
    let (project, _, mut lines) = exported();
    lines[2] = "{\"schema\":\"cairn.intent/v1\",\"oops\":true}".to_owned();
    assert_finding(&tampered_findings(&project, &lines), "modified", 2);
}

/// Issue 15, item 11: an evidence bundle that does not parse is evidence of tampering or
/// corruption (exit 5, naming the line), not invalid input; only a file that cannot be read at
/// all is.
#[test]
fn issue_15_a_bundle_that_does_not_parse_is_evidence_of_tampering() {
    let (project, _, lines) = exported();
    let empty = project.verify_bundle_lines(&[], "empty.jsonl");
    assert_eq!(empty.expect(TAMPER).error_code(), "bundle_empty");
    let mut twice = lines.clone();
    twice.push(lines[lines.len() - 1].clone());
    let duplicate = project.verify_bundle_lines(&twice, "twice.jsonl");
    assert_eq!(
        duplicate.expect(TAMPER).error_code(),
        "bundle_duplicate_checkpoint"
    );
    let last = lines.len();
    let mut broken = lines.clone();
    broken[last - 1] = broken[last - 1].replacen("\"tenant_id\":\"", "\"tenant_id\":\"/", 1);
    let invalid = project.verify_bundle_lines(&broken, "broken.jsonl");
    assert_eq!(
        invalid.expect(TAMPER).error_code(),
        "bundle_invalid_checkpoint"
    );
    assert!(
        invalid
            .error_message()
            .contains(&format!("line {last} (after step {})", last - 1)),
        "{invalid:?}"
    );
    let missing = project.cairn_json(&[
        "ledger",
        "verify",
        "--bundle",
        arg(&project.path("missing.jsonl")),
    ]);
    assert_eq!(missing.expect(INVALID).error_code(), "unreadable_input");
}

/// Issue 15, item 11: a byte that makes a line invalid UTF-8 damages that record, reported
/// at its step.
#[test]
fn issue_15_a_line_that_is_not_utf8_is_a_damaged_record_at_its_step() {
    let (project, _, lines) = exported();
    let mut bytes = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let mut line = line.clone().into_bytes();
        if index == 3 {
            line[10] = 0xff;
        }
        bytes.extend_from_slice(&line);
        bytes.push(b'\n');
    }
    let path = project.path("utf8.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let out = project.cairn_json(&["ledger", "verify", "--bundle", arg(&path)]);
    let findings = findings_of(&out.expect(TAMPER).json()["runs"][0]);
    assert_finding(&findings, "modified", 3);
}

/// Issue 15, item 11: every one-byte change of an exported bundle is reported as tampering
/// (exit 5), never as invalid input (2) or an internal error (1). The only change that can
/// leave it intact is one to the final newline that keeps it white space.
#[test]
fn issue_15_one_byte_tamperings_always_exit_5() {
    let (project, _, _) = exported();
    let original = std::fs::read(project.path("run.jsonl")).unwrap();
    let mut seed: u64 = 0x15_15_15;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let path = project.path("tampered.jsonl");
    for round in 0..150 {
        let mut bytes = original.clone();
        let at = usize::try_from(next()).unwrap() % bytes.len();
        let value = u8::try_from(next() % 256).unwrap();
        if bytes[at] == value {
            continue;
        }
        bytes[at] = value;
        std::fs::write(&path, &bytes).unwrap();
        let out = project.cairn_json(&["ledger", "verify", "--bundle", arg(&path)]);
        let benign = at == bytes.len() - 1 && value.is_ascii_whitespace();
        assert!(
            out.code == TAMPER || (benign && out.code == OK),
            "round {round}: byte {at} set to {value:#04x}: {out:?}"
        );
    }
}

/// Bug: `ledger verify --bundle F` with no trusted key configured (empty or missing key
/// directory, no `--trusted-key`) reports the bundle as TAMPERED and exits 5. Verifying the
/// store in the same situation is a usage error (`no_trusted_keys`, exit 2); a bundle should
/// be too, since nothing about the bundle is wrong.
#[test]
fn verifying_a_bundle_without_any_trusted_key_is_a_usage_error_not_tamper() {
    let (project, _, _) = exported();
    let auditor = Project::new();
    std::fs::copy(project.path("run.jsonl"), auditor.path("run.jsonl")).unwrap();
    let no_keys = auditor.path("no-keys");
    std::fs::create_dir(&no_keys).unwrap();
    let out = Output::of(command_in(auditor.root()).args([
        "--json",
        "--keys",
        arg(&no_keys),
        "ledger",
        "verify",
        "--bundle",
        "run.jsonl",
    ]));
    assert_eq!(out.expect(INVALID).error_code(), "no_trusted_keys");
}

/// Bug: a `--trusted-key` file that does not exist exits 1 (internal failure, code
/// `keyring_io`) instead of 2 (invalid input): the path came from the command line.
#[test]
fn a_missing_trusted_key_file_is_invalid_input() {
    let (project, _, _) = exported();
    let missing = project.path("missing.pub");
    let out = project.cairn_json(&[
        "ledger",
        "verify",
        "--bundle",
        arg(&project.path("run.jsonl")),
        "--trusted-key",
        arg(&missing),
    ]);
    out.expect(INVALID);
    assert!(
        out.error_message().contains(arg(&missing)),
        "{}",
        out.stdout
    );
}
