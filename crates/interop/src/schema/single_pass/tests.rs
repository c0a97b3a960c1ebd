//! The soundness rule of [`SinglePass`]: it says valid only if the full validator does. Checked
//! over every conformance document of VCE 0.1 and RLC 0.1 (their case folders, which include
//! the published fixtures) and over mutations of valid ones at every place.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use sha2::{Digest as _, Sha256};

use super::{CanonicalHasher, CanonicalWriter, MarkedCanonicalWriter, SinglePass, SortKeysMarks};
use crate::schema::full_validator;

/// A published schema and the case files it judges.
struct Format {
    schema: &'static str,
    cases: &'static str,
    file: &'static str,
}

const FORMATS: [Format; 4] = [
    Format {
        schema: "interop/schemas/vce-0.1/continuation-envelope.schema.json",
        cases: "interop/tests/vce_cases",
        file: "envelope.json",
    },
    Format {
        schema: "interop/schemas/vce-0.1/restore-results.schema.json",
        cases: "interop/tests/vce_cases",
        file: "restore.json",
    },
    Format {
        schema: "interop/schemas/rlc-0.1/responsibility-lane-envelope.schema.json",
        cases: "interop/tests/rlc_cases",
        file: "extension.json",
    },
    Format {
        schema: "interop/schemas/rlc-0.1/responsibility-lane-restore-results.schema.json",
        cases: "interop/tests/rlc_cases",
        file: "restore.json",
    },
];

/// How many valid documents of each format are mutated.
const MUTATED_PER_FORMAT: usize = 10;

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A case document as the validators read it (Python's reading, stand-ins included).
fn read(path: &Path) -> Value {
    crate::py_json::parse(&fs::read_to_string(path).unwrap())
        .unwrap()
        .value
}

/// Every case document of `format`, by case name.
fn documents(format: &Format) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for entry in fs::read_dir(crates().join(format.cases)).unwrap() {
        let path = entry.unwrap().path().join(format.file);
        if path.is_file() {
            found.push((path.display().to_string(), read(&path)));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Values put in place of each value of a document.
fn replacements() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(0),
        json!(1),
        json!(1.0),
        json!(-1),
        json!(""),
        json!("x"),
        json!("2026-06-30T04:30:00Z"),
        json!("2026-06-30T23:59:60Z"),
        json!(format!("sha256:{}", "0".repeat(64))),
        json!([]),
        json!(["a", "a"]),
        json!([{}]),
        json!({}),
    ]
}

/// Every mutation of `value`: each place replaced, each member removed, an extra member added,
/// each array's first item repeated and removed.
fn mutations(value: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for replacement in replacements() {
        out.push(replacement);
    }
    match value {
        Value::Object(map) => {
            for key in map.keys() {
                let mut without = map.clone();
                without.remove(key);
                out.push(Value::Object(without));
                for inner in mutations(&map[key]) {
                    let mut changed = map.clone();
                    changed.insert(key.clone(), inner);
                    out.push(Value::Object(changed));
                }
            }
            let mut extra = map.clone();
            extra.insert(String::from("unexpected_member"), json!("x"));
            out.push(Value::Object(extra));
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                let mut repeated = items.clone();
                repeated.push(first.clone());
                out.push(Value::Array(repeated));
                out.push(Value::Array(items.get(1..).unwrap_or_default().to_vec()));
            }
            for (position, item) in items.iter().enumerate() {
                for inner in mutations(item) {
                    let mut changed = items.clone();
                    changed[position] = inner;
                    out.push(Value::Array(changed));
                }
            }
        }
        _ => {}
    }
    out
}

#[test]
fn single_pass_says_valid_only_when_the_full_validator_does() {
    for format in &FORMATS {
        let schema = read(&crates().join(format.schema));
        let full = full_validator(&schema).unwrap();
        let walk = SinglePass::compile(&schema)
            .unwrap_or_else(|| panic!("{}: every published schema compiles", format.schema));
        let documents = documents(format);
        assert!(documents.len() > 15, "{}: cases found", format.cases);
        let (mut valid, mut checked) = (0, 0);
        for (name, document) in &documents {
            let expected = full.is_valid(document);
            // Every valid conformance document takes the single-pass path (that is its purpose).
            assert_eq!(walk.is_valid(document), expected, "{name}");
            valid += usize::from(expected);
        }
        assert!(
            valid > 10,
            "{}: valid documents among the cases",
            format.cases
        );
        // Mutations of valid documents, at every place.
        let valid_documents = documents.iter().filter(|(_, d)| full.is_valid(d));
        for (name, document) in valid_documents.take(MUTATED_PER_FORMAT) {
            for mutated in mutations(document) {
                checked += 1;
                if walk.is_valid(&mutated) {
                    assert!(
                        full.is_valid(&mutated),
                        "{name}: the single-pass walk accepted what the full validator rejects: {mutated}"
                    );
                }
            }
        }
        assert!(checked > 1_000, "{}: {checked} mutations", format.schema);
    }
}

/// The errors of [`SinglePass::errors`], sorted, or `None`.
fn single_pass_errors(walk: &SinglePass, document: &Value) -> Option<Vec<(String, String)>> {
    let mut found = walk.errors(document)?;
    found.sort();
    Some(found)
}

/// The crate's errors of `document`, sorted: pointer and message.
fn crate_errors(full: &jsonschema::Validator, document: &Value) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = full
        .iter_errors(document)
        .map(|e| (e.instance_path.as_str().to_owned(), e.to_string()))
        .collect();
    found.sort();
    found
}

/// The errors the single-pass walk reports are exactly the crate's — same places, same messages,
/// as many — over every case document and every mutation of the valid ones; it never gives up
/// on them, so an invalid published-format document never needs the crate's validator.
#[test]
fn quick_errors_are_the_crates_errors() {
    for format in &FORMATS {
        let schema = read(&crates().join(format.schema));
        let full = full_validator(&schema).unwrap();
        let walk = SinglePass::compile(&schema).unwrap();
        let documents = documents(format);
        let mut invalid = 0;
        let mut check = |name: &str, document: &Value| {
            let expected = crate_errors(&full, document);
            let got = single_pass_errors(&walk, document)
                .unwrap_or_else(|| panic!("{name}: the single-pass walk gave up on {document}"));
            assert_eq!(got, expected, "{name}: {document}");
            invalid += usize::from(!expected.is_empty());
        };
        for (name, document) in &documents {
            check(name, document);
        }
        let valid_documents: Vec<&(String, Value)> =
            documents.iter().filter(|(_, d)| full.is_valid(d)).collect();
        for (name, document) in valid_documents.into_iter().take(MUTATED_PER_FORMAT) {
            for mutated in mutations(document) {
                check(name, &mutated);
            }
        }
        assert!(
            invalid > 1_000,
            "{}: {invalid} invalid documents",
            format.schema
        );
    }
}

#[test]
fn keywords_outside_the_published_set_have_no_single_pass_check() {
    for schema in [
        json!({"maximum": 3}),
        json!({"properties": {"a": {"oneOf": [true]}}}),
        json!({"$ref": "https://example.com/schema"}),
        json!({"items": {"$defs": {}}}),
        json!({"const": 1}),
        json!({"enum": ["a", 2]}),
        json!({"pattern": "a+"}),
    ] {
        assert!(SinglePass::compile(&schema).is_none(), "{schema}");
    }
}

#[test]
fn what_only_the_full_validator_can_settle_is_left_to_it() {
    let walk = |schema: Value| SinglePass::compile(&schema).unwrap();
    // A float with no fraction may be an integer; the full validator decides.
    assert!(!walk(json!({"type": "integer"})).is_valid(&json!(1.0)));
    assert!(walk(json!({"type": "integer"})).is_valid(&json!(1)));
    // Objects that differ only in numbers that may be equal.
    let unique = walk(json!({"uniqueItems": true}));
    assert!(!unique.is_valid(&json!([{"a": 1}, {"a": 1.0}])));
    assert!(unique.is_valid(&json!([{"a": 1}, {"a": 2}])));
    assert!(unique.is_valid(&json!([1, true])));
    assert!(!unique.is_valid(&json!(["a", "a"])));
    // Recursion deeper than the limit.
    let nested =
        walk(json!({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}));
    let mut deep = json!([]);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    assert!(!nested.is_valid(&deep));
    assert!(nested.is_valid(&json!([[[]]])));
}

/// `$ref` and `anyOf` judge the same instance again, so a cycle of them would be walked
/// forever: such schemas have no single-pass check (the full validator decides).
#[test]
fn schemas_that_judge_in_cycles_have_no_single_pass_check() {
    for schema in [
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
               "properties": {"x": {"$ref": "#/$defs/a"}}}),
        json!({"$defs": {"a": {"type": "object", "$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}},
               "items": {"$ref": "#/$defs/a"}}),
    ] {
        assert!(SinglePass::compile(&schema).is_none(), "{schema}");
    }
    // Recursion through members or items is not a cycle: each step is one level deeper.
    for schema in [
        json!({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "string"}},
               "anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]}),
    ] {
        assert!(SinglePass::compile(&schema).is_some(), "{schema}");
    }
}

/// `value` with every object's members inserted in key order, or in reverse key order: when
/// `serde_json`'s `preserve_order` feature is on in this build, maps then iterate in that
/// order, and the walk must put reversed members in order itself.
fn reordered(value: &Value, reverse: bool) -> Value {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            if reverse {
                members.reverse();
            }
            Value::Object(
                members
                    .into_iter()
                    .map(|(key, value)| (key.clone(), reordered(value, reverse)))
                    .collect(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| reordered(item, reverse)).collect())
        }
        other => other.clone(),
    }
}

/// The case documents of `format` that the single-pass walk accepts, mutations of the first three, and the
/// first five with their members in and against key order.
fn valid_mutated_and_reordered(format: &Format, walk: &SinglePass) -> Vec<Value> {
    let valid: Vec<Value> = documents(format)
        .into_iter()
        .map(|(_, document)| document)
        .filter(|document| walk.is_valid(document))
        .collect();
    let mut candidates = valid.clone();
    for document in valid.iter().take(3) {
        candidates.extend(mutations(document));
    }
    for document in valid.iter().take(5) {
        candidates.push(reordered(document, false));
        candidates.push(reordered(document, true));
    }
    candidates
}

/// What [`CanonicalWriter`] must have written for `document` without its top-level member `skip`.
fn expected_sort_keys(document: &Value, skip: &str) -> Vec<u8> {
    match document {
        Value::Object(map) => crate::sort_keys::sort_keys_utf8_v1_without(map, skip).unwrap(),
        other => crate::sort_keys::sort_keys_utf8_v1(other).unwrap(),
    }
}

#[test]
fn the_walk_that_accepts_a_document_writes_and_hashes_its_sort_keys_form() {
    let mut written = 0;
    for format in &FORMATS {
        let schema = read(&crates().join(format.schema));
        let walk = SinglePass::compile(&schema).unwrap();
        for document in &valid_mutated_and_reordered(format, &walk) {
            // The top-level digest field of each format, a key no document has, and a nested
            // key (left out only at the top).
            for skip in [
                "envelope_digest",
                "extension_digest",
                "absent",
                "provenance",
            ] {
                let mut sink = CanonicalWriter {
                    out: Vec::new(),
                    skip: Some(skip),
                    failed: false,
                };
                let valid = walk.is_valid_into(document, &mut sink);
                assert_eq!(valid, walk.is_valid(document), "{document}");
                let mut hashing = CanonicalHasher::new(Some(skip));
                assert_eq!(walk.is_valid_into(document, &mut hashing), valid);
                if valid {
                    let expected = expected_sort_keys(document, skip);
                    assert!(!sink.failed, "{document}");
                    assert_eq!(
                        String::from_utf8(sink.out).unwrap(),
                        String::from_utf8(expected.clone()).unwrap(),
                        "skipping {skip}"
                    );
                    assert!(!hashing.inner.failed, "{document}");
                    let digest: [u8; 32] = Sha256::digest(&expected).into();
                    assert_eq!(hashing.finish(), digest, "skipping {skip}: {document}");
                    written += 1;
                }
            }
        }
    }
    assert!(written > 1_000, "{written} documents written");
}

#[test]
fn values_the_schema_does_not_walk_are_written_whole() {
    // `anyOf` branches and unlisted members are only checked; the value is written once,
    // escapes, numbers and all, whichever node accepted it.
    let walk = SinglePass::compile(&json!({
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "object"}, {"type": "array"}]},
            "b": {"$ref": "#/$defs/b"},
            "c": {"enum": ["x\"y", "z"]},
            "d": {"const": null}
        },
        "$defs": {"b": {"type": "array", "items": {"type": "number"}}}
    }))
    .unwrap();
    let document = reordered(
        &json!({
            "a": {"k\n": [1.5, -0.0, 1e300], "\u{1F600}": "é\u{1}"},
            "b": [3, 2.5e-7],
            "c": "x\"y",
            "d": null,
            "e": {"nested": {"deeper": [true, false]}},
            "skip": {"gone": 1}
        }),
        true,
    );
    let mut sink = CanonicalWriter {
        out: Vec::new(),
        skip: Some("skip"),
        failed: false,
    };
    assert!(walk.is_valid_into(&document, &mut sink));
    assert_eq!(sink.out, expected_sort_keys(&document, "skip"));
}

#[test]
fn objects_with_many_declared_members_are_written_in_key_order() {
    // Objects declaring up to `RANKED_LIMIT` properties are put in key order by rank, larger
    // ones by sorting names; each declared in one order and listed in another (with
    // `preserve_order` on, maps keep the listed order), some members left out.
    for declared in [super::RANKED_LIMIT, super::RANKED_LIMIT + 8] {
        let names: Vec<String> = (0..declared)
            .map(|n| format!("m{:02}", (n * 7) % declared))
            .collect();
        let properties: serde_json::Map<String, Value> = names
            .iter()
            .map(|name| (name.clone(), json!({"type": "integer"})))
            .collect();
        let walk = SinglePass::compile(&json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": false
        }))
        .unwrap();
        for size in [1, declared / 2, declared - 1, declared] {
            let members: serde_json::Map<String, Value> = names
                .iter()
                .rev()
                .step_by(if size == declared / 2 { 2 } else { 1 })
                .take(size)
                .enumerate()
                .map(|(value, name)| (name.clone(), json!(value)))
                .collect();
            let document = Value::Object(members);
            let mut sink = CanonicalWriter {
                out: Vec::new(),
                skip: None,
                failed: false,
            };
            assert!(
                walk.is_valid_into(&document, &mut sink),
                "{size} of {declared}"
            );
            assert_eq!(
                sink.out,
                expected_sort_keys(&document, "absent"),
                "{size} of {declared}"
            );
        }
    }
}

#[test]
fn marked_items_lie_where_their_forms_are_written() {
    // RLC 0.1 digests each lane, without its `lane_digest`, from the extension's bytes.
    let format = FORMATS.get(2).unwrap();
    let walk = SinglePass::compile(&read(&crates().join(format.schema))).unwrap();
    let marks = SortKeysMarks {
        array: "responsibility_lanes",
        member: "lane_digest",
    };
    let mut marked = 0;
    for document in &valid_mutated_and_reordered(format, &walk) {
        let sink = CanonicalWriter {
            out: Vec::new(),
            skip: Some("extension_digest"),
            failed: false,
        };
        let mut sink = MarkedCanonicalWriter::new(sink, marks);
        if !walk.is_valid_into(document, &mut sink) {
            continue;
        }
        let bytes = &sink.inner.out;
        assert_eq!(*bytes, expected_sort_keys(document, "extension_digest"));
        let lanes = document["responsibility_lanes"].as_array().unwrap();
        assert_eq!(sink.items.len(), lanes.len(), "{document}");
        for (span, lane) in sink.items.iter().zip(lanes) {
            let span = span
                .as_ref()
                .expect("every lane is walked member by member");
            let whole = &bytes[span.whole.clone()];
            assert_eq!(whole, crate::sort_keys::sort_keys_utf8_v1(lane).unwrap());
            let mut without = whole.to_vec();
            if let Some(cut) = &span.member_span {
                without.drain(cut.start - span.whole.start..cut.end - span.whole.start);
            }
            let lane = lane.as_object().unwrap();
            let expected = crate::sort_keys::sort_keys_utf8_v1_without(lane, "lane_digest");
            assert_eq!(without, expected.unwrap(), "{document}");
            marked += 1;
        }
    }
    assert!(marked > 100, "{marked} lanes marked");
}

#[test]
fn the_marked_member_is_cut_with_one_comma_wherever_it_comes() {
    let walk = SinglePass::compile(&json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"properties": {
            "a": {"type": "string"}, "m": {"type": "string"}, "z": {"type": "string"}
        }}}}
    }))
    .unwrap();
    let document = json!({"items": [
        {"m": "first", "z": "1"},
        {"a": "0", "m": "middle", "z": "1"},
        {"a": "0", "m": "last"},
        {"m": "only"},
        {"a": "none"},
        {},
        "not an object"
    ], "other": [{"m": "unmarked"}]});
    let marks = SortKeysMarks {
        array: "items",
        member: "m",
    };
    let sink = CanonicalWriter {
        out: Vec::new(),
        skip: None,
        failed: false,
    };
    let mut sink = MarkedCanonicalWriter::new(sink, marks);
    assert!(walk.is_valid_into(&document, &mut sink));
    let text = String::from_utf8(sink.inner.out.clone()).unwrap();
    let cut: Vec<Option<(&str, &str)>> = sink
        .items
        .iter()
        .map(|span| {
            span.as_ref().map(|span| {
                let cut = span.member_span.clone().map_or("", |cut| &text[cut]);
                (&text[span.whole.clone()], cut)
            })
        })
        .collect();
    assert_eq!(
        cut,
        vec![
            Some((r#"{"m":"first","z":"1"}"#, r#""m":"first","#)),
            Some((r#"{"a":"0","m":"middle","z":"1"}"#, r#","m":"middle""#)),
            Some((r#"{"a":"0","m":"last"}"#, r#","m":"last""#)),
            Some((r#"{"m":"only"}"#, r#""m":"only""#)),
            Some((r#"{"a":"none"}"#, "")),
            Some(("{}", "")),
            None,
        ]
    );
}
