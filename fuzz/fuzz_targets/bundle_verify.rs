//! Bundle parsing and verification: a bundle either fails to parse (the CLI exits 5), or is
//! reported not intact (exit 5), or verifies — and one that verifies against the fixture's
//! key holds exactly the genuine run's records.

#![no_main]

#[path = "common.rs"]
mod common;

use std::sync::LazyLock;

use cairn_ledger::bundle::parse_bundle_bytes;
use cairn_ledger::verify::{CheckpointPolicy, verify_run};
use libfuzzer_sys::fuzz_target;

static TRUSTED: LazyLock<cairn_ledger::keys::TrustedKeys> = LazyLock::new(common::demo_trusted);
static GENUINE: LazyLock<Vec<cairn_core::Digest>> = LazyLock::new(common::demo_digests);

fuzz_target!(|data: &[u8]| {
    let Ok(bundle) = parse_bundle_bytes(data) else {
        return;
    };
    let report = verify_run(
        &bundle.tenant_id,
        &bundle.run_id,
        &bundle.rows,
        bundle.checkpoint_note.as_deref(),
        &TRUSTED,
        CheckpointPolicy::Required,
    );
    if report.is_intact() {
        let digests: Vec<cairn_core::Digest> = bundle
            .rows
            .iter()
            .map(|row| {
                row.as_ref()
                    .expect("an intact run has no faulty row")
                    .digest
            })
            .collect();
        assert_eq!(digests, *GENUINE, "a forged bundle verified");
    }
});
