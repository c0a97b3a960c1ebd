//! Inclusion proofs: a proof that verifies against the fixture's key proves a genuine record
//! of the genuine run at its own step, and no proof document makes verification panic.

#![no_main]

#[path = "common.rs"]
mod common;

use std::sync::LazyLock;

use cairn_ledger::proof::{InclusionProof, verify_proof};
use libfuzzer_sys::fuzz_target;

static TRUSTED: LazyLock<cairn_ledger::keys::TrustedKeys> = LazyLock::new(common::demo_trusted);
static GENUINE: LazyLock<Vec<cairn_core::Digest>> = LazyLock::new(common::demo_digests);

fuzz_target!(|data: &[u8]| {
    if data.len() as u64 > cairn_ledger::proof::MAX_PROOF_BYTES {
        return;
    }
    let Ok(proof) = serde_json::from_slice::<InclusionProof>(data) else {
        return;
    };
    if verify_proof(&proof, None, &TRUSTED).is_ok() {
        let index = usize::try_from(proof.leaf_index).expect("index");
        assert_eq!(
            GENUINE.get(index),
            Some(&proof.record.digest),
            "a forged proof verified"
        );
    }
});
