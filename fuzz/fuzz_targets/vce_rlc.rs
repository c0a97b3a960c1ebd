//! VCE 0.1 and RLC 0.1 documents, read as `cairn vce|rlc check` reads them (Python's JSON,
//! `cairn_interop::py_json`): the first byte picks the format, the rest is the document and,
//! after a NUL byte, its restore results. Reading never panics (any nesting, any escape, any
//! number); a decision never panics, is the same twice, and comes with findings exactly when
//! it is not the passing one; a document holding a stand-in never passes.

#![no_main]

use std::sync::LazyLock;

use cairn_interop::py_json;
use cairn_interop::rlc::{RlcDecision, RlcValidator};
use cairn_interop::vce::{VceDecision, VceValidator};
use libfuzzer_sys::fuzz_target;

static VCE: LazyLock<VceValidator> = LazyLock::new(|| VceValidator::new().expect("vce"));
static RLC: LazyLock<RlcValidator> = LazyLock::new(|| RlcValidator::new().expect("rlc"));

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(2, |b| *b == 0);
    let read = |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|text| py_json::parse(text).ok())
    };
    let Some(document) = parts.next().and_then(read) else {
        return;
    };
    let restore = parts.next().and_then(read);
    let stand_in = !document.stand_ins.is_empty();
    if kind % 2 == 0 {
        let report = VCE.check_read(&document, restore.as_ref());
        let again = VCE.check_read(&document, restore.as_ref());
        assert_eq!(report.decision, again.decision);
        assert_eq!(
            report.findings.is_empty(),
            report.decision == VceDecision::Resumable
        );
        assert!(!(stand_in && report.decision == VceDecision::Resumable));
    } else {
        let report = RLC.check_read(&document, restore.as_ref(), None);
        let again = RLC.check_read(&document, restore.as_ref(), None);
        assert_eq!(report.decision, again.decision);
        assert_eq!(
            report.findings.is_empty(),
            report.decision == RlcDecision::Passed
        );
    }
});
