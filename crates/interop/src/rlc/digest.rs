//! RLC 0.1 digests: the extension digest (stage 2) and each lane digest (checked among the
//! semantic rules, as the reference does), both SHA-256 over the
//! `json-sort-keys-utf8-v1` form (SPEC C-3) of an object without its own digest field, written
//! by [`super::canonical`].

use crate::lookup::field;
use cairn_core::CodedFinding;
use serde_json::{Map, Value};

use super::canonical::{ExtensionBytes, digest_without};
use super::codes;
use super::text::{tick, tick_value};

/// The only `extension_digest.algorithm` RLC 0.1 defines.
const ALGORITHM: &str = "sha256";
/// The only `extension_digest.canonicalization` RLC 0.1 defines.
const CANONICALIZATION: &str = "json-sort-keys-utf8-v1";
/// The prefix of a lane digest.
const LANE_PREFIX: &str = "sha256:";

/// The lane digest text `sha256:<hex>` of a lane object.
pub(crate) fn lane_digest_text(lane: &Map<String, Value>) -> Result<String, cairn_core::CoreError> {
    digest_without(lane, "lane_digest").map(|bytes| format!("{LANE_PREFIX}{}", hex::encode(bytes)))
}

/// Whether `declared` is the text `prefix` followed by the lowercase hex of `digest`,
/// compared without allocating.
fn declares(declared: Option<&Value>, prefix: &str, digest: &[u8; 32]) -> bool {
    let Some(hex_part) = declared
        .and_then(Value::as_str)
        .and_then(|text| text.strip_prefix(prefix))
    else {
        return false;
    };
    let mut expected = [0u8; 64];
    hex::encode_to_slice(digest, &mut expected).is_ok() && hex_part.as_bytes() == expected
}

/// Stage 2: the extension digest, with the metadata shape the reference demands; appends a
/// finding on a mismatch. `written` is the extension's canonical form when the schema stage
/// already wrote it; the form is returned for [`check_lanes`].
pub(crate) fn check(
    extension: &Map<String, Value>,
    written: Option<ExtensionBytes>,
    findings: &mut Vec<CodedFinding>,
) -> Option<ExtensionBytes> {
    let written = match written.map_or_else(|| ExtensionBytes::write(extension), Ok) {
        Ok(written) => Some(written),
        Err(e) => {
            findings.push(CodedFinding::new(
                codes::EXTENSION_DIGEST_MISMATCH,
                format!("`$.extension_digest.value`: the extension digest cannot be computed: {e}"),
            ));
            None
        }
    };
    if let Some(written) = &written {
        check_extension_digest(written, extension, findings);
    }
    written
}

/// The lane digest of each lane in `lanes` (position in `responsibility_lanes`, body), among
/// the semantic rules as in the reference, which digests only the lanes it indexes: the first
/// lane of each id — a later duplicate is reported as such, never digested. Appends a finding
/// per mismatch.
pub(crate) fn check_lanes<'a>(
    lanes: impl IntoIterator<Item = (usize, &'a Map<String, Value>)>,
    written: Option<&ExtensionBytes>,
    findings: &mut Vec<CodedFinding>,
) {
    for (index, lane) in lanes {
        // The lane's bytes inside the extension's form; written alone only if that failed.
        let digest = match written.and_then(|w| w.lane_digest(index)) {
            Some(digest) => Ok(digest),
            None => digest_without(lane, "lane_digest"),
        };
        let path = || format!("$.responsibility_lanes[{index}].lane_digest");
        let declared = field(lane, "lane_digest");
        match digest {
            Ok(digest) if declares(declared, LANE_PREFIX, &digest) => {}
            Ok(digest) => findings.push(CodedFinding::new(
                codes::LANE_DIGEST_MISMATCH,
                format!(
                    "`{}`: lane {} declares {} but its content digests to {}",
                    path(),
                    tick_value(field(lane, "lane_id")),
                    tick_value(declared),
                    tick(&format!("{LANE_PREFIX}{}", hex::encode(digest))),
                ),
            )),
            Err(e) => findings.push(CodedFinding::new(
                codes::LANE_DIGEST_MISMATCH,
                format!("`{}`: the lane digest cannot be computed: {e}", path()),
            )),
        }
    }
}

fn check_extension_digest(
    written: &ExtensionBytes,
    extension: &Map<String, Value>,
    findings: &mut Vec<CodedFinding>,
) {
    let metadata = field(extension, "extension_digest").and_then(Value::as_object);
    let Some(metadata) = metadata else {
        findings.push(CodedFinding::new(
            codes::EXTENSION_DIGEST_UNSUPPORTED,
            "`$.extension_digest` must be an object",
        ));
        return;
    };
    let mut supported = true;
    for (name, wanted) in [
        ("algorithm", ALGORITHM),
        ("canonicalization", CANONICALIZATION),
    ] {
        let found = field(metadata, name);
        if found.and_then(Value::as_str) != Some(wanted) {
            supported = false;
            findings.push(CodedFinding::new(
                codes::EXTENSION_DIGEST_UNSUPPORTED,
                format!(
                    "`$.extension_digest.{name}` is {}, expected {}",
                    tick_value(found),
                    tick(wanted)
                ),
            ));
        }
    }
    if !supported {
        return;
    }
    let declared = field(metadata, "value");
    let digest = written.digest();
    if !declares(declared, "", &digest) {
        findings.push(CodedFinding::new(
            codes::EXTENSION_DIGEST_MISMATCH,
            format!(
                "`$.extension_digest.value` is {} but the extension digests to {}",
                tick_value(declared),
                tick(&hex::encode(digest)),
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;
    use serde_json::json;

    #[test]
    fn a_declared_digest_must_match_exactly() {
        let digest = [0xabu8; 32];
        let text = format!("sha256:{}", hex::encode(digest));
        assert!(declares(Some(&json!(text)), LANE_PREFIX, &digest));
        assert!(!declares(
            Some(&json!(format!("{text}\n"))),
            LANE_PREFIX,
            &digest
        ));
        assert!(!declares(
            Some(&json!(text.to_uppercase())),
            LANE_PREFIX,
            &digest
        ));
        assert!(!declares(Some(&json!(1)), LANE_PREFIX, &digest));
        assert!(!declares(None, LANE_PREFIX, &digest));
    }
}
