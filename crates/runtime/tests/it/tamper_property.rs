//! Acceptance: random tamperings of stored runs and of exported bundles are all detected and
//! located at the tampered step; untampered runs always verify (SPEC I-3).
//!
//! Each case copies a template store (or bundle) holding real signed runs, applies one
//! tampering of a random kind at a random place, verifies, and checks that a finding names
//! the step that was touched with a fitting kind. 640 store cases + 640 bundle cases.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cairn_core::{RunId, TenantId};
use cairn_ledger::Store;
use cairn_ledger::bundle::{CheckpointLine, parse_bundle};
use cairn_ledger::keys::TrustedKeys;
use cairn_ledger::record::IntentRecord;
use cairn_ledger::verify::{CheckpointPolicy, RunReport, TamperKind, verify_run};
use cairn_store_sqlite::{OpenMode, SqliteStore};
use proptest::prelude::*;
use serde_json::Value;

const STEPS: usize = 11;

struct Template {
    _dir: tempfile::TempDir,
    db: PathBuf,
    trusted: TrustedKeys,
    target: (TenantId, RunId),
    other: (TenantId, RunId),
    bundle: Vec<String>,
    other_bundle: Vec<String>,
}

fn bundle_lines(store: &SqliteStore, tenant: &TenantId, run: &RunId) -> Vec<String> {
    let mut lines: Vec<String> = store
        .rows(tenant, run)
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().to_json_line().unwrap())
        .collect();
    let note = store.checkpoint(tenant, run).unwrap().unwrap();
    lines.push(CheckpointLine::new(tenant.clone(), run.clone(), note).to_json_line());
    lines
}

fn template() -> &'static Template {
    static TEMPLATE: OnceLock<Template> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("template.db");
        let (key, trusted) = common::key();
        let (target, other, bundle, other_bundle);
        {
            let store = common::open(&db);
            target = common::write_run(store.clone(), &key, "acme", "run-a", STEPS);
            other = common::write_run(store.clone(), &key, "acme", "run-b", STEPS);
            common::write_run(store.clone(), &key, "globex", "run-a", 4);
            bundle = bundle_lines(&store, &target.0, &target.1);
            other_bundle = bundle_lines(&store, &other.0, &other.1);
        }
        Template {
            _dir: dir,
            db,
            trusted,
            target,
            other,
            bundle,
            other_bundle,
        }
    })
}

/// The places and kinds a finding may name for a tampering to count as located.
struct Expect {
    steps: BTreeSet<u64>,
    kinds: &'static [TamperKind],
}

fn assert_located(report: &RunReport, expect: &Expect, what: &str) {
    assert!(!report.is_intact(), "{what}: not detected");
    let hit = report.findings.iter().any(|f| {
        f.step.is_some_and(|s| expect.steps.contains(&s)) && expect.kinds.contains(&f.kind)
    });
    assert!(
        hit,
        "{what}: detected but not located at {:?} as {:?}; findings: {:#?}",
        expect.steps, expect.kinds, report.findings
    );
}

/// Changes one field of a record's JSON; `choice` picks among the fields the record has.
fn mutate(value: &mut Value, choice: usize) {
    let obj = value.as_object_mut().unwrap();
    let mut options: Vec<&str> = vec!["recorded_at", "task_id", "lane_id", "observation_digest"];
    if obj.get("tool").is_some_and(|t| !t.is_null()) {
        options.extend([
            "tool.version",
            "args.size",
            "admission.decision",
            "admission.rule_ids",
        ]);
    }
    if obj.get("termination").is_some_and(|t| !t.is_null()) {
        options.push("termination.reason");
    }
    if obj.get("boundary").is_some_and(|t| !t.is_null()) {
        options.push("boundary.event");
    }
    let digest =
        Value::String(cairn_core::Digest::of(format!("forged{choice}").as_bytes()).to_string());
    match options[choice % options.len()] {
        "recorded_at" => obj["recorded_at"] = Value::String("2026-11-30T07:00:00Z".into()),
        "task_id" => obj["task_id"] = Value::String("task-forged".into()),
        "lane_id" => obj["lane_id"] = Value::String("lane-forged".into()),
        "observation_digest" => obj["observation_digest"] = digest,
        "tool.version" => obj["tool"]["version"] = Value::String("99".into()),
        "args.size" => {
            let size = obj["args"]["size"].as_u64().unwrap();
            obj["args"]["size"] = Value::from(size + 1);
        }
        "admission.decision" => {
            let flipped = if obj["admission"]["decision"] == "allow" {
                "deny"
            } else {
                "allow"
            };
            obj["admission"]["decision"] = Value::String(flipped.into());
        }
        "admission.rule_ids" => obj["admission"]["rule_ids"]
            .as_array_mut()
            .unwrap()
            .push("forged.rule".into()),
        "termination.reason" => obj["termination"]["reason"] = Value::String("cancelled".into()),
        "boundary.event" => obj["boundary"]["event"] = Value::String("handoff".into()),
        other => unreachable!("{other}"),
    }
}

fn rehash(value: &Value) -> IntentRecord {
    let mut record: IntentRecord = serde_json::from_value(value.clone()).unwrap();
    record.digest = record.compute_digest().unwrap();
    record
}

// ---------------------------------------------------------------- store tamperings

#[derive(Debug, Clone)]
enum StoreTamper {
    None,
    Modify { step: u64, field: usize },
    ModifyRehash { step: u64, field: usize },
    Delete { step: u64 },
    InsertAfterEnd,
    Reorder { a: u64, b: u64 },
    Truncate { from: u64 },
    Splice { step: u64 },
    SpliceAppend,
}

fn store_tamper() -> impl Strategy<Value = StoreTamper> {
    let n = (STEPS + 2) as u64; // steps + boundary + terminal
    prop_oneof![
        1 => Just(StoreTamper::None),
        2 => (0..n, 0..16usize).prop_map(|(step, field)| StoreTamper::Modify { step, field }),
        2 => (0..n, 0..16usize).prop_map(|(step, field)| StoreTamper::ModifyRehash { step, field }),
        2 => (0..n).prop_map(|step| StoreTamper::Delete { step }),
        1 => Just(StoreTamper::InsertAfterEnd),
        2 => (0..n, 0..n).prop_filter("two places", |(a, b)| a != b).prop_map(|(a, b)| StoreTamper::Reorder { a, b }),
        1 => (1..n).prop_map(|from| StoreTamper::Truncate { from }),
        2 => (0..n).prop_map(|step| StoreTamper::Splice { step }),
        1 => Just(StoreTamper::SpliceAppend),
    ]
}

fn body(conn: &rusqlite::Connection, t: &(TenantId, RunId), step: u64) -> Value {
    let text: String = conn
        .query_row(
            "SELECT body FROM records WHERE tenant_id = ?1 AND run_id = ?2 AND step_index = ?3",
            rusqlite::params![t.0.as_str(), t.1.as_str(), step as i64],
            |r| r.get(0),
        )
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Rewrites a row as a careful attacker would: the body and every index column agree.
fn put_row(
    conn: &rusqlite::Connection,
    t: &(TenantId, RunId),
    column_step: u64,
    record: &Value,
    insert: bool,
) {
    let parsed: IntentRecord = serde_json::from_value(record.clone()).unwrap();
    let sql = if insert {
        "INSERT INTO records (kind, task_id, tool_name, args_size, decision, termination_reason,
             recorded_at_us, digest, body, tenant_id, run_id, step_index)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
    } else {
        "UPDATE records SET kind = ?1, task_id = ?2, tool_name = ?3, args_size = ?4, decision = ?5,
             termination_reason = ?6, recorded_at_us = ?7, digest = ?8, body = ?9
         WHERE tenant_id = ?10 AND run_id = ?11 AND step_index = ?12"
    };
    let changed = conn
        .execute(
            sql,
            rusqlite::params![
                parsed.kind.as_str(),
                parsed.task_id.as_str(),
                parsed.tool.as_ref().map(|t| t.name.as_str().to_owned()),
                parsed.args.as_ref().map(|a| a.size as i64),
                parsed.admission.as_ref().map(|a| a.decision.as_str()),
                parsed.termination.as_ref().map(|x| x.reason.as_str()),
                parsed.recorded_at.unix_micros(),
                parsed.digest.to_string(),
                serde_json::to_string(record).unwrap(),
                t.0.as_str(),
                t.1.as_str(),
                column_step as i64,
            ],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

fn apply_store(conn: &rusqlite::Connection, tamper: &StoreTamper) -> Option<Expect> {
    let tpl = template();
    let t = &tpl.target;
    let last = (STEPS + 1) as u64;
    let one = |s: u64| BTreeSet::from([s]);
    Some(match *tamper {
        StoreTamper::None => return None,
        StoreTamper::Modify { step, field } => {
            let mut v = body(conn, t, step);
            mutate(&mut v, field);
            put_row(conn, t, step, &v, false);
            Expect {
                steps: one(step),
                kinds: &[TamperKind::Modified],
            }
        }
        StoreTamper::ModifyRehash { step, field } => {
            let mut v = body(conn, t, step);
            mutate(&mut v, field);
            let forged = serde_json::to_value(rehash(&v)).unwrap();
            put_row(conn, t, step, &forged, false);
            Expect {
                steps: one(step),
                kinds: &[TamperKind::Modified],
            }
        }
        StoreTamper::Delete { step } => {
            conn.execute(
                "DELETE FROM records WHERE tenant_id = ?1 AND run_id = ?2 AND step_index = ?3",
                rusqlite::params![t.0.as_str(), t.1.as_str(), step as i64],
            )
            .unwrap();
            Expect {
                steps: one(step),
                kinds: &[TamperKind::Deleted, TamperKind::Truncated],
            }
        }
        StoreTamper::InsertAfterEnd => {
            // A well-formed forgery chained after the terminal record.
            let mut v = body(conn, t, last - 1);
            let prev = body(conn, t, last)["digest"].clone();
            v["step_index"] = Value::from(last + 1);
            v["prev_digest"] = prev;
            let forged = serde_json::to_value(rehash(&v)).unwrap();
            put_row(conn, t, last + 1, &forged, true);
            Expect {
                steps: one(last + 1),
                kinds: &[TamperKind::Inserted],
            }
        }
        StoreTamper::Reorder { a, b } => {
            let (va, vb) = (body(conn, t, a), body(conn, t, b));
            put_row(conn, t, a, &vb, false);
            put_row(conn, t, b, &va, false);
            Expect {
                steps: BTreeSet::from([a, b]),
                kinds: &[
                    TamperKind::Reordered,
                    TamperKind::Modified,
                    TamperKind::Inserted,
                    TamperKind::Deleted,
                ],
            }
        }
        StoreTamper::Truncate { from } => {
            conn.execute(
                "DELETE FROM records WHERE tenant_id = ?1 AND run_id = ?2 AND step_index >= ?3",
                rusqlite::params![t.0.as_str(), t.1.as_str(), from as i64],
            )
            .unwrap();
            Expect {
                steps: one(from),
                kinds: &[TamperKind::Truncated],
            }
        }
        StoreTamper::Splice { step } => {
            let foreign = body(conn, &tpl.other, step);
            put_row(conn, t, step, &foreign, false);
            Expect {
                steps: one(step),
                kinds: &[TamperKind::Spliced],
            }
        }
        StoreTamper::SpliceAppend => {
            let foreign = body(conn, &tpl.other, last);
            put_row(conn, t, last + 1, &foreign, true);
            Expect {
                steps: one(last),
                kinds: &[TamperKind::Spliced],
            }
        }
    })
}

fn verify_store(path: &Path) -> RunReport {
    let tpl = template();
    let store = SqliteStore::open(path, OpenMode::MustExist).unwrap();
    let (tenant, run) = &tpl.target;
    common::verify_stored(
        &store,
        (tenant, run),
        &tpl.trusted,
        CheckpointPolicy::WhenTerminated,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 640, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_store_tampering_is_detected_and_located(tamper in store_tamper()) {
        let tpl = template();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("case.db");
        std::fs::copy(&tpl.db, &db).unwrap();
        let expect = {
            let conn = rusqlite::Connection::open(&db).unwrap();
            apply_store(&conn, &tamper)
        };
        let report = verify_store(&db);
        match expect {
            None => prop_assert!(report.is_intact(), "untampered run failed: {:#?}", report.findings),
            Some(expect) => assert_located(&report, &expect, &format!("{tamper:?}")),
        }
    }
}

// --------------------------------------------------------------- bundle tamperings

#[derive(Debug, Clone)]
enum BundleTamper {
    None,
    Modify { line: usize, field: usize },
    ModifyRehash { line: usize, field: usize },
    Delete { line: usize },
    Duplicate { line: usize, at: usize },
    Swap { a: usize, b: usize },
    Truncate { from: usize },
    DropCheckpoint,
    Splice { line: usize, at: usize },
}

fn bundle_tamper() -> impl Strategy<Value = BundleTamper> {
    let n = STEPS + 2; // record lines; the checkpoint line follows
    prop_oneof![
        1 => Just(BundleTamper::None),
        2 => (0..n, 0..16usize).prop_map(|(line, field)| BundleTamper::Modify { line, field }),
        2 => (0..n, 0..16usize).prop_map(|(line, field)| BundleTamper::ModifyRehash { line, field }),
        2 => (0..n).prop_map(|line| BundleTamper::Delete { line }),
        1 => (0..n, 0..=n).prop_map(|(line, at)| BundleTamper::Duplicate { line, at }),
        2 => (0..n, 0..n).prop_filter("two lines", |(a, b)| a != b).prop_map(|(a, b)| BundleTamper::Swap { a, b }),
        1 => (1..n).prop_map(|from| BundleTamper::Truncate { from }),
        1 => Just(BundleTamper::DropCheckpoint),
        2 => (0..n, 0..=n).prop_map(|(line, at)| BundleTamper::Splice { line, at }),
    ]
}

fn apply_bundle(lines: &mut Vec<String>, tamper: &BundleTamper) -> Option<Expect> {
    let tpl = template();
    let n = lines.len() - 1;
    let one = |s: usize| BTreeSet::from([s as u64]);
    let value = |line: &str| serde_json::from_str::<Value>(line).unwrap();
    Some(match *tamper {
        BundleTamper::None => return None,
        BundleTamper::Modify { line, field } => {
            let mut v = value(&lines[line]);
            mutate(&mut v, field);
            lines[line] = v.to_string();
            Expect {
                steps: one(line),
                kinds: &[TamperKind::Modified],
            }
        }
        BundleTamper::ModifyRehash { line, field } => {
            let mut v = value(&lines[line]);
            mutate(&mut v, field);
            lines[line] = rehash(&v).to_json_line().unwrap();
            Expect {
                steps: one(line),
                kinds: &[TamperKind::Modified],
            }
        }
        BundleTamper::Delete { line } => {
            lines.remove(line);
            Expect {
                steps: one(line),
                kinds: &[TamperKind::Deleted, TamperKind::Truncated],
            }
        }
        BundleTamper::Duplicate { line, at } => {
            // A forged record claiming an existing step, chained like the original.
            let mut v = value(&lines[line]);
            mutate(&mut v, line);
            let forged = rehash(&v).to_json_line().unwrap();
            lines.insert(at.min(n), forged);
            Expect {
                steps: one(line),
                kinds: &[
                    TamperKind::Inserted,
                    TamperKind::Modified,
                    TamperKind::Reordered,
                ],
            }
        }
        BundleTamper::Swap { a, b } => {
            lines.swap(a, b);
            Expect {
                steps: BTreeSet::from([a as u64, b as u64]),
                kinds: &[TamperKind::Reordered],
            }
        }
        BundleTamper::Truncate { from } => {
            lines.drain(from..n);
            Expect {
                steps: one(from),
                kinds: &[TamperKind::Truncated],
            }
        }
        BundleTamper::DropCheckpoint => {
            lines.pop();
            Expect {
                steps: one(n - 1),
                kinds: &[TamperKind::Checkpoint],
            }
        }
        BundleTamper::Splice { line, at } => {
            let foreign = tpl.other_bundle[line].clone();
            lines.insert(at.min(n), foreign);
            Expect {
                steps: one(line),
                kinds: &[TamperKind::Spliced],
            }
        }
    })
}

/// The verification of the bundle of `lines` (each without its line end), as the run `as_run`
/// when given, else as the run it names, against `trusted`.
fn verify_bundle(
    lines: &[String],
    as_run: Option<&(TenantId, RunId)>,
    trusted: &TrustedKeys,
) -> RunReport {
    let bundle = parse_bundle(&(lines.join("\n") + "\n")).unwrap();
    let (tenant, run) = as_run.map_or((&bundle.tenant_id, &bundle.run_id), |(t, r)| (t, r));
    verify_run(
        tenant,
        run,
        &bundle.rows,
        bundle.checkpoint_note.as_deref(),
        trusted,
        CheckpointPolicy::Required,
    )
}

#[track_caller]
fn assert_checkpoint_refused(report: &RunReport) {
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == TamperKind::Checkpoint),
        "{:#?}",
        report.findings
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 640, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_bundle_tampering_is_detected_and_located(tamper in bundle_tamper()) {
        let tpl = template();
        let mut lines = tpl.bundle.clone();
        let expect = apply_bundle(&mut lines, &tamper);
        let report = verify_bundle(&lines, None, &tpl.trusted);
        match expect {
            None => prop_assert!(report.is_intact(), "untampered bundle failed: {:#?}", report.findings),
            Some(expect) => assert_located(&report, &expect, &format!("{tamper:?}")),
        }
    }
}

#[test]
fn a_checkpoint_signed_by_an_untrusted_key_is_refused() {
    let tpl = template();
    let (_, stranger) = common::key();
    assert_checkpoint_refused(&verify_bundle(&tpl.bundle, None, &stranger));
}

#[test]
fn a_checkpoint_of_another_run_is_refused() {
    let tpl = template();
    let mut lines = tpl.bundle.clone();
    let last = lines.len() - 1;
    lines[last] = tpl.other_bundle[tpl.other_bundle.len() - 1].clone();
    // The bundle now claims to be run-b; its records are run-a's: every one is spliced.
    assert_checkpoint_refused(&verify_bundle(&lines, Some(&tpl.target), &tpl.trusted));
}
