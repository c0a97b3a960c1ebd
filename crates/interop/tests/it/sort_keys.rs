//! Interop conformance for the canonical JSON forms: the RFC 8785 vectors for JCS, the VCE 0.1
//! and RLC 0.1 digests reproduced bit for bit, and Python-generated fixtures (with property
//! tests) for `json-sort-keys-utf8-v1`.
//!
//! The vectors and interop documents live in the shared folder next to the repository
//! (`<repo>/../shared`, or `CAIRN_SHARED_DIR`); the Python fixtures are checked in under
//! `tests/data` and regenerated with `tests/data/gen_python_fixtures.py`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use cairn_core::canonical::jcs;
use cairn_core::{Canonicalization, Digest};
use cairn_interop::sort_keys::{sort_keys_utf8_v1, sort_keys_utf8_v1_digest};
use proptest::prelude::*;
use serde_json::{Number, Value, json};

use cairn_test_support::shared::shared_dir;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read `{}`: {e}", path.display()))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&read(path))
        .unwrap_or_else(|e| panic!("`{}` is not JSON: {e}", path.display()))
}

fn canonical_text(value: &Value) -> String {
    String::from_utf8(sort_keys_utf8_v1(value).expect("canonicalisable")).expect("utf-8 output")
}

// --- RFC 8785 (C-2) ---------------------------------------------------------------------

/// Parses an `outhex` file: hex bytes of two lowercase digits separated by whitespace.
fn parse_outhex(path: &Path) -> Vec<u8> {
    let text = String::from_utf8(read(path)).expect("outhex is text");
    text.split_whitespace()
        .map(|token| {
            assert!(
                token.len() == 2 && token.bytes().all(|b| b.is_ascii_hexdigit()),
                "`{}`: `{token}` is not a two-digit hex byte",
                path.display()
            );
            u8::from_str_radix(token, 16).expect("hex byte")
        })
        .collect()
}

#[test]
fn rfc8785_vectors_match_output_and_outhex() {
    let root = shared_dir().join("interop/jcs-rfc8785");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(root.join("input"))
        .expect("rfc 8785 input folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    inputs.sort();
    assert!(
        inputs.len() >= 6,
        "expected the six RFC 8785 vectors, found {inputs:?}"
    );
    for input in &inputs {
        let name = input.file_name().expect("file name");
        let stem = input.file_stem().expect("file stem").to_string_lossy();
        let value = read_json(input);
        let got = jcs(&value).expect("jcs");
        let expected = read(&root.join("output").join(name));
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected),
            "jcs of `{}`",
            input.display()
        );
        assert_eq!(got, expected, "jcs bytes of `{}`", input.display());
        let hex = parse_outhex(&root.join("outhex").join(format!("{stem}.txt")));
        assert_eq!(got, hex, "jcs of `{}` against its outhex", input.display());
    }
}

#[test]
fn jcs_sorts_non_bmp_keys_by_utf16_code_units_and_v1_by_code_points() {
    let value = json!({"\u{FB33}": "hebrew", "\u{1F600}": "emoji"});
    // In UTF-16, U+1F600 is the surrogate pair D83D DE00 and sorts before FB33.
    let jcs_text = String::from_utf8(jcs(&value).expect("jcs")).expect("utf-8");
    assert_eq!(
        jcs_text,
        "{\"\u{1F600}\":\"emoji\",\"\u{FB33}\":\"hebrew\"}"
    );
    // By code point (and UTF-8 bytes: F0 9F.. against EF AC B3) U+FB33 comes first.
    assert_eq!(
        canonical_text(&value),
        "{\"\u{FB33}\":\"hebrew\",\"\u{1F600}\":\"emoji\"}"
    );
}

// --- VCE 0.1 and RLC 0.1 digests (C-3) ----------------------------------------------------

/// Checks a `{algorithm, canonicalization, value}` digest block and returns its value.
fn digest_block_value(block: &Value) -> &str {
    assert_eq!(block["algorithm"], "sha256", "digest block {block}");
    let name = block["canonicalization"]
        .as_str()
        .expect("canonicalization name");
    assert_eq!(
        Canonicalization::from_str(name).expect("known canonicalization"),
        Canonicalization::JsonSortKeysUtf8V1
    );
    assert_eq!(name, Canonicalization::JsonSortKeysUtf8V1.as_str());
    block["value"].as_str().expect("digest value")
}

#[test]
fn vce_envelope_digest_is_reproduced() {
    let path = shared_dir().join("interop/vce-0.1/continuation-envelope.example.json");
    let mut envelope = read_json(&path);
    let block = envelope
        .as_object_mut()
        .expect("envelope object")
        .remove("envelope_digest")
        .expect("envelope_digest");
    let expected = digest_block_value(&block);
    assert!(
        expected.starts_with("2dc8febb"),
        "unexpected fixture {expected}"
    );
    let digest = sort_keys_utf8_v1_digest(&envelope).expect("digest");
    assert_eq!(digest.hex(), expected);
    assert_eq!(Digest::from_bare_hex(expected), Ok(digest));
}

#[test]
fn rlc_extension_and_lane_digests_are_reproduced() {
    for file in ["rlc-accepted.json", "rlc-rejected-lane-conflation.json"] {
        let path = shared_dir().join("interop/rlc-0.1").join(file);
        let mut document = read_json(&path);
        let extension = document["extension"]
            .as_object_mut()
            .expect("extension object");
        let block = extension
            .remove("extension_digest")
            .expect("extension_digest");
        let expected = digest_block_value(&block);
        let digest = sort_keys_utf8_v1_digest(&Value::Object(extension.clone())).expect("digest");
        assert_eq!(digest.hex(), expected, "extension digest of {file}");

        let lanes = extension["responsibility_lanes"].as_array().expect("lanes");
        assert!(!lanes.is_empty(), "{file} has no lanes");
        for lane in lanes {
            let mut lane = lane.as_object().expect("lane object").clone();
            let lane_digest = lane.remove("lane_digest").expect("lane_digest");
            let expected: Digest = lane_digest
                .as_str()
                .expect("lane digest text")
                .parse()
                .expect("sha256: digest");
            let got = sort_keys_utf8_v1_digest(&Value::Object(lane)).expect("digest");
            assert_eq!(got, expected, "lane digest in {file}");
            assert_eq!(Some(got.to_string().as_str()), lane_digest.as_str());
        }
    }
}

// --- Python fixtures for json-sort-keys-utf8-v1 -------------------------------------------

/// Runs every line of a fixture file and reports all mismatches at once.
fn check_python_fixtures(file: &str, at_least: usize) {
    let path = data_dir().join(file);
    let text = String::from_utf8(read(&path)).expect("fixture is utf-8");
    let mut failures = Vec::new();
    let mut count = 0;
    for (number, line) in text.lines().enumerate() {
        let case: Value = serde_json::from_str(line).expect("fixture line is json");
        let input = case["input"].as_str().expect("input");
        let python = case["python"].as_str().expect("python");
        // A known divergence records what we produce instead, and why.
        let expected = match case.get("rust") {
            Some(rust) => {
                let rust = rust.as_str().expect("rust");
                assert_ne!(
                    rust,
                    python,
                    "line {}: a divergence must differ",
                    number + 1
                );
                assert!(
                    case["divergence"].is_string(),
                    "line {}: say why",
                    number + 1
                );
                rust
            }
            None => python,
        };
        let value: Value = serde_json::from_str(input).expect("fixture input is json");
        let got = canonical_text(&value);
        if got != expected {
            failures.push(format!(
                "line {}: {input}\n  want {expected}\n  got  {got}",
                number + 1
            ));
        }
        count += 1;
    }
    assert!(
        count >= at_least,
        "{file}: expected at least {at_least} cases, found {count}"
    );
    assert!(failures.is_empty(), "{file}:\n{}", failures.join("\n"));
}

#[test]
fn python_sort_keys_fixtures_match_byte_for_byte() {
    check_python_fixtures("python_sort_keys.jsonl", 35);
}

#[test]
fn python_float_fixtures_match_byte_for_byte() {
    check_python_fixtures("python_floats.jsonl", 500);
}

#[test]
fn python_examples_from_the_brief() {
    for (value, expected) in [
        (json!(1e-7), "1e-07"),
        (json!(1e16), "1e+16"),
        (json!(1.5e300), "1.5e+300"),
        (json!(100.0), "100.0"),
        (json!(0.0001), "0.0001"),
        (json!(-0.0), "-0.0"),
        (json!(9_007_199_254_740_992_u64), "9007199254740992"),
        (json!("\u{7f}\u{2028}\u{1}"), "\"\u{7f}\u{2028}\\u0001\""),
    ] {
        assert_eq!(canonical_text(&value), expected);
    }
}

// --- Properties -----------------------------------------------------------------------------

/// A reference for Python's `repr(float)`, built differently from the library: the shortest
/// precision whose correctly rounded digits parse back to `x`, then Python's layout rule
/// applied with Rust's fixed-point formatting.
fn reference_repr(x: f64) -> String {
    let (digits, exponent) = (1..=17)
        .find_map(|precision: usize| {
            let text = format!("{:.*e}", precision - 1, x);
            let (_, exp) = text.split_once('e').expect("exponent");
            (text.parse::<f64>().expect("parses") == x)
                .then(|| (precision, exp.parse::<i32>().expect("exponent")))
        })
        .expect("17 digits always round-trip");
    if (-4..16).contains(&exponent) {
        let fraction = (i32::try_from(digits).expect("small") - 1 - exponent).max(1);
        format!("{:.*}", usize::try_from(fraction).expect("positive"), x)
    } else {
        let text = format!("{:.*e}", digits - 1, x);
        let (mantissa, exp) = text.split_once('e').expect("exponent");
        let exp: i32 = exp.parse().expect("exponent");
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        -1e20..1e20_f64,
        -1e-3..1e-3_f64,
        (0..100_000_i64, -8..20_i32).prop_map(|(m, e)| m as f64 * 10_f64.powi(e)),
    ]
    .prop_filter("finite", |x| x.is_finite())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite_f64().prop_map(|x| Value::Number(Number::from_f64(x).expect("finite"))),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn floats_format_like_the_reference(x in finite_f64()) {
        let got = canonical_text(&Value::Number(Number::from_f64(x).expect("finite")));
        prop_assert_eq!(got, reference_repr(x));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn output_parses_back_to_the_same_value_and_is_a_fixed_point(value in json_value()) {
        let bytes = sort_keys_utf8_v1(&value).expect("canonicalisable");
        let parsed: Value = serde_json::from_slice(&bytes).expect("output is json");
        prop_assert_eq!(&parsed, &value);
        prop_assert_eq!(sort_keys_utf8_v1(&parsed).expect("canonicalisable"), bytes);
    }
}

mod fast_path {
    //! The fast RFC 8785 path must agree with the reference canonicaliser on every value.

    use cairn_core::canonical::{jcs, jcs_value};
    use proptest::prelude::*;
    use serde_json::Value;

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-(1i64 << 53)..(1i64 << 53)).prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\a\u{7f}\u{2028}\u{e000}\u{ffff}\u{1f600}]{0,6}"
                .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\u{e9}\u{fb33}\u{1f600}_]{0,5}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn fast_path_equals_the_reference(value in json()) {
            prop_assert_eq!(jcs_value(&value).unwrap(), jcs(&value).unwrap());
        }
    }

    #[test]
    fn the_non_bmp_ordering_case_goes_through_the_reference() {
        let value: Value = serde_json::from_str("{\"\u{fb33}\":1,\"\u{1f600}\":2}").unwrap();
        let out = String::from_utf8(jcs_value(&value).unwrap()).unwrap();
        assert_eq!(out, "{\"\u{1f600}\":2,\"\u{fb33}\":1}");
    }
}
