//! VCE 0.1 and RLC 0.1 documents: the first byte picks the format, the rest is the document
//! and, after a NUL byte, its restore results. A decision never panics, is the same twice,
//! and comes with findings exactly when it is not the passing one.

#![no_main]

use std::sync::LazyLock;

use cairn_continuity::vce::{VceDecision, VceValidator};
use cairn_lanes::rlc::{RlcDecision, RlcValidator, split_document};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

static VCE: LazyLock<VceValidator> = LazyLock::new(|| VceValidator::new().expect("vce"));
static RLC: LazyLock<RlcValidator> = LazyLock::new(|| RlcValidator::new().expect("rlc"));

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(2, |b| *b == 0);
    let Some(Ok(document)) = parts.next().map(serde_json::from_slice::<Value>) else {
        return;
    };
    let restore = parts
        .next()
        .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
    if kind % 2 == 0 {
        let report = VCE.check(&document, restore.as_ref());
        let again = VCE.check(&document, restore.as_ref());
        assert_eq!(report.decision, again.decision);
        assert_eq!(
            report.findings.is_empty(),
            report.decision == VceDecision::Resumable
        );
    } else {
        let (extension, embedded) = split_document(&document);
        let restore = restore.as_ref().or(embedded);
        let report = RLC.check(extension, restore, None);
        let again = RLC.check(extension, restore, None);
        assert_eq!(report.decision, again.decision);
        assert_eq!(
            report.findings.is_empty(),
            report.decision == RlcDecision::Passed
        );
    }
});
