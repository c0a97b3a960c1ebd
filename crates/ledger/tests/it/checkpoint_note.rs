//! Signed-note keys and checkpoints: reference vectors from the `signed_note` crate (the Go
//! `sumdb/note` examples), the C2SP key id, strict body parsing, and opening notes with
//! trusted, untrusted, rotated and tampered keys and bodies.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use cairn_core::{ErrorCode, RunId, TenantId};
use cairn_ledger::checkpoint::{self, Checkpoint};
use cairn_ledger::keys::{SigningKey, TrustedKeys, VerifierKey};
use proptest::prelude::*;
use sha2::{Digest as _, Sha256};

const PETER_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const PETER_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER_TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                          then you don't know what your problem is.\n";
const PETER_NOTE: &str = "If you think cryptography is the answer to your problem,\n\
                          then you don't know what your problem is.\n\
                          \n\
                          — PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
/// The key `signed_note::generate_key` derives from an all-zero RNG under `EnochRoot`, and
/// its signature of the same text (both from the `signed_note` crate's docs and tests).
const ENOCH_VKEY: &str = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const ENOCH_SIG_LINE: &str = "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

/// A deterministic "random" source: every byte it yields is `self.0`.
struct ConstRng(u8);

impl rand_core::RngCore for ConstRng {
    fn next_u32(&mut self) -> u32 {
        u32::from_ne_bytes([self.0; 4])
    }

    fn next_u64(&mut self) -> u64 {
        u64::from_ne_bytes([self.0; 8])
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        dest.fill(self.0);
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for ConstRng {}

fn key(seed: u8, name: &str) -> SigningKey {
    SigningKey::generate(&mut ConstRng(seed), name).unwrap()
}

fn trust(keys: &[&SigningKey]) -> TrustedKeys {
    TrustedKeys::new(keys.iter().map(|k| k.verifier_key()).collect())
}

fn sample() -> Checkpoint {
    let tenant = TenantId::new("acme").unwrap();
    let run = RunId::new("run-42").unwrap();
    Checkpoint {
        origin: Checkpoint::origin_for(&tenant, &run),
        size: 17,
        root: Sha256::digest(b"seventeen records").into(),
    }
}

// ---- keys ----------------------------------------------------------------------------

#[test]
fn peter_neumann_keys_parse_and_encode_like_the_reference() {
    let verifier = VerifierKey::parse(PETER_VKEY).unwrap();
    assert_eq!(verifier.name(), "PeterNeumann");
    assert_eq!(verifier.key_id(), 0xc74f_20a3);
    assert_eq!(verifier.to_string(), PETER_VKEY);

    let signer = SigningKey::from_private_text(PETER_SKEY).unwrap();
    assert_eq!(signer.name(), "PeterNeumann");
    assert_eq!(signer.key_id(), 0xc74f_20a3);
    assert_eq!(signer.to_private_text(), PETER_SKEY);
    assert_eq!(signer.verifier_key(), verifier);
}

#[test]
fn peter_neumann_note_is_byte_identical_to_the_reference() {
    let signer = SigningKey::from_private_text(PETER_SKEY).unwrap();
    let note = signer.sign_note_text(PETER_TEXT.as_bytes()).unwrap();
    assert_eq!(note, PETER_NOTE);
}

#[test]
fn key_id_is_the_c2sp_hash_of_name_newline_algorithm_and_key() {
    let verifier = VerifierKey::parse(PETER_VKEY).unwrap();
    let mut hasher = Sha256::new();
    hasher.update(b"PeterNeumann\n\x01");
    hasher.update(verifier.public_key());
    let digest = hasher.finalize();
    let expected = u32::from_be_bytes(digest[..4].try_into().unwrap());
    assert_eq!(verifier.key_id(), expected);
}

#[test]
fn generated_keys_match_signed_note_generate_key() {
    // The all-zero seed reproduces the reference `EnochRoot` key and signature.
    let enoch = key(0, "EnochRoot");
    assert_eq!(enoch.verifier_key().to_string(), ENOCH_VKEY);
    let note = enoch.sign_note_text(PETER_TEXT.as_bytes()).unwrap();
    assert_eq!(note, format!("{PETER_TEXT}\n{ENOCH_SIG_LINE}"));

    for seed in [0, 7, 255] {
        let ours = key(seed, "cairn-test");
        let (skey, vkey) = signed_note::generate_key(&mut ConstRng(seed), "cairn-test");
        assert_eq!(ours.to_private_text(), skey);
        assert_eq!(ours.verifier_key().to_string(), vkey);
        // And the reference implementation accepts what we produce.
        assert!(signed_note::StandardSigner::new(&ours.to_private_text()).is_ok());
        assert!(signed_note::StandardVerifier::new(&ours.verifier_key().to_string()).is_ok());
    }
}

#[test]
fn debug_output_never_contains_the_secret() {
    let signer = SigningKey::from_private_text(PETER_SKEY).unwrap();
    let debug = format!("{signer:?} {signer:#?}");
    let secret = PETER_SKEY.rsplit_once('+').map(|(_, s)| s).unwrap();
    assert!(!debug.contains(secret), "{debug}");
    assert!(!debug.contains(&secret[..8]), "{debug}");
    assert!(
        debug.contains("PeterNeumann") && debug.contains("c74f20a3"),
        "{debug}"
    );
}

#[test]
fn a_key_id_that_does_not_match_is_refused() {
    let vkey = PETER_VKEY.replace("c74f20a3", "c74f20a4");
    assert_eq!(
        VerifierKey::parse(&vkey).unwrap_err().code(),
        "key_id_mismatch"
    );
    let skey = PETER_SKEY.replace("c74f20a3", "c74f20a4");
    let err = SigningKey::from_private_text(&skey).unwrap_err();
    assert_eq!(err.code(), "key_id_mismatch");
    assert!(!err.to_string().contains("AYEKFALV"), "{err}");
    // The same key under another name has another id.
    let renamed = PETER_VKEY.replace("PeterNeumann", "PeterNeuman");
    assert_eq!(
        VerifierKey::parse(&renamed).unwrap_err().code(),
        "key_id_mismatch"
    );
}

#[test]
fn malformed_keys_are_refused_with_a_code() {
    let peter_data = PETER_VKEY.splitn(3, '+').nth(2).unwrap();
    let two_algorithm = {
        let mut bytes = BASE64.decode(peter_data).unwrap();
        bytes[0] = 0x02;
        format!("PeterNeumann+c74f20a3+{}", BASE64.encode(bytes))
    };
    let short = format!(
        "PeterNeumann+c74f20a3+{}",
        BASE64.encode([1u8; 32].as_slice())
    );
    let cases: &[(&str, &str)] = &[
        ("", "malformed_key"),
        ("PeterNeumann", "malformed_key"),
        ("PeterNeumann+c74f20a3", "malformed_key"),
        ("PeterNeumann+c74f20a+AAAA", "malformed_key"),
        ("PeterNeumann+-74f20a3+AAAA", "malformed_key"),
        ("PeterNeumann+c74f20a3+not base64!", "malformed_key"),
        ("PeterNeumann+c74f20a3+", "malformed_key"),
        (&short, "malformed_key"),
        (&two_algorithm, "unsupported_key_algorithm"),
        ("Peter Neumann+c74f20a3+AAAA", "invalid_key_name"),
        ("+c74f20a3+AAAA", "invalid_key_name"),
    ];
    for (text, code) in cases {
        let err = VerifierKey::parse(text).unwrap_err();
        assert_eq!(err.code(), *code, "{text:?}: {err}");
    }
    // A verifier key is not a private key, and the other way round.
    assert_eq!(
        SigningKey::from_private_text(PETER_VKEY)
            .unwrap_err()
            .code(),
        "malformed_key"
    );
    assert!(VerifierKey::parse(PETER_SKEY).is_err());
}

#[test]
fn key_names_follow_signed_note_rules() {
    for bad in ["", "a+b", "a b", "a\tb", "a\u{2003}b", "a\u{1}b"] {
        let err = SigningKey::generate(&mut ConstRng(1), bad).unwrap_err();
        assert_eq!(err.code(), "invalid_key_name", "{bad:?}");
    }
    for good in ["example.com/log42", "cairn-prod", "ключ"] {
        assert_eq!(key(1, good).name(), good);
    }
}

#[test]
fn trusted_keys_keep_one_copy_of_each_key() {
    let a = key(1, "a");
    let b = key(2, "b");
    let trusted = TrustedKeys::new(vec![a.verifier_key(), b.verifier_key(), a.verifier_key()]);
    assert_eq!(trusted.len(), 2);
    assert!(!trusted.is_empty());
    assert!(TrustedKeys::new(Vec::new()).is_empty());
    let names: Vec<&str> = trusted.iter().map(VerifierKey::name).collect();
    assert_eq!(names, ["a", "b"]);
}

// ---- checkpoint bodies ------------------------------------------------------------------

#[test]
fn body_is_the_three_line_tlog_checkpoint() {
    let cp = sample();
    let expected = format!(
        "cairn/acme/run-42\n17\n{}\n",
        BASE64.encode(Sha256::digest(b"seventeen records"))
    );
    assert_eq!(cp.body(), expected);
    assert_eq!(Checkpoint::parse_body(&expected).unwrap(), cp);
    let empty = Checkpoint {
        origin: "cairn/acme/run-0".to_owned(),
        size: 0,
        root: Sha256::digest(b"").into(),
    };
    assert_eq!(
        empty.body(),
        "cairn/acme/run-0\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
    );
    assert_eq!(Checkpoint::parse_body(&empty.body()).unwrap(), empty);
}

#[test]
fn body_parsing_is_strict() {
    let root = BASE64.encode([9u8; 32]);
    let root_31 = BASE64.encode([9u8; 31]);
    let unpadded = root.trim_end_matches('=').to_owned();
    // Same 32 bytes but with non-zero trailing bits in the last character.
    let trailing_bits = format!("{}{}", &root[..root.len() - 2], "N=");
    let cases: Vec<(String, &str)> = vec![
        (format!("o\n1\n{root}"), "body"),
        (format!("o\n1\n{root}\next\n"), "body"),
        (format!("o\n1\n{root}\n\n"), "body"),
        ("o\n1\n".to_owned(), "root"),
        ("o\n".to_owned(), "size"),
        (format!("\n1\n{root}\n"), "origin"),
        (format!("o\u{7f}\n1\n{root}\n"), "origin"),
        (format!("o\n01\n{root}\n"), "size"),
        (format!("o\n00\n{root}\n"), "size"),
        (format!("o\n+1\n{root}\n"), "size"),
        (format!("o\n-1\n{root}\n"), "size"),
        (format!("o\n 1\n{root}\n"), "size"),
        (format!("o\n\n{root}\n"), "size"),
        (format!("o\n18446744073709551616\n{root}\n"), "size"),
        (format!("o\n1\n{root_31}\n"), "root"),
        (format!("o\n1\n{unpadded}\n"), "root"),
        (format!("o\n1\n{trailing_bits}\n"), "root"),
        ("o\n1\nnot-base64\n".to_owned(), "root"),
        (format!("o\n1\n {root}\n"), "root"),
    ];
    for (text, field) in cases {
        let err = Checkpoint::parse_body(&text).unwrap_err();
        assert_eq!(err.code(), "malformed_checkpoint", "{text:?}");
        assert!(
            err.to_string().contains(&format!("`{field}`")),
            "{text:?}: {err}"
        );
    }
    let max = format!("o\n18446744073709551615\n{root}\n");
    assert_eq!(Checkpoint::parse_body(&max).unwrap().size, u64::MAX);
}

proptest! {
    #[test]
    fn any_checkpoint_body_parses_back_to_itself(
        origin in "[A-Za-z0-9._:@/-]{1,60}",
        size in any::<u64>(),
        root in any::<[u8; 32]>(),
    ) {
        let cp = Checkpoint { origin, size, root };
        prop_assert_eq!(Checkpoint::parse_body(&cp.body()), Ok(cp));
    }
}

// ---- signing and opening --------------------------------------------------------------

#[test]
fn sign_then_open_round_trips() {
    let signer = key(1, "cairn-prod");
    let cp = sample();
    let signed = checkpoint::sign(&cp, &signer).unwrap();
    assert_eq!(signed.checkpoint(), &cp);
    let sig_line_prefix = format!("{}\n— cairn-prod ", cp.body());
    assert!(
        signed.note().starts_with(&sig_line_prefix),
        "{}",
        signed.note()
    );

    let opened = checkpoint::open(signed.note(), &trust(&[&signer])).unwrap();
    assert_eq!(opened.checkpoint(), &cp);
    assert_eq!(opened.note(), signed.note());
    assert_eq!(opened.signers(), &[signer.verifier_key()]);
    opened.ensure_matches(&cp).unwrap();
}

#[test]
fn only_untrusted_signatures_give_no_trusted_signature() {
    let signer = key(1, "cairn-prod");
    let stranger = key(2, "stranger");
    let signed = checkpoint::sign(&sample(), &signer).unwrap();
    let err = checkpoint::open(signed.note(), &trust(&[&stranger])).unwrap_err();
    assert_eq!(err.code(), "no_trusted_signature");
    assert!(err.to_string().contains("cairn-prod+"), "{err}");

    // The same name with another key is another key id, hence untrusted too.
    let impostor = key(3, "cairn-prod");
    let err = checkpoint::open(signed.note(), &trust(&[&impostor])).unwrap_err();
    assert_eq!(err.code(), "no_trusted_signature");

    let err = checkpoint::open(signed.note(), &TrustedKeys::default()).unwrap_err();
    assert_eq!(err.code(), "no_trusted_keys");
}

#[test]
fn a_flipped_byte_in_body_or_signature_fails() {
    let signer = key(1, "cairn-prod");
    let trusted = trust(&[&signer]);
    let signed = checkpoint::sign(&sample(), &signer).unwrap();
    let note = signed.note().as_bytes();

    // Targeted edits that keep the note well-formed: a changed size, a changed root
    // character, a changed signature character.
    let size_changed = signed.note().replacen("\n17\n", "\n18\n", 1);
    let err = checkpoint::open(&size_changed, &trusted).unwrap_err();
    assert_eq!(err.code(), "signature_invalid");

    let body_len = signed.checkpoint().body().len();
    let root_pos = body_len - 10;
    let mut root_changed = signed.note().to_owned().into_bytes();
    root_changed[root_pos] = if root_changed[root_pos] == b'A' {
        b'B'
    } else {
        b'A'
    };
    let err = checkpoint::open(std::str::from_utf8(&root_changed).unwrap(), &trusted);
    assert_eq!(err.unwrap_err().code(), "signature_invalid");

    let sig_pos = note.len() - 20;
    let mut sig_changed = note.to_vec();
    sig_changed[sig_pos] = if sig_changed[sig_pos] == b'A' {
        b'B'
    } else {
        b'A'
    };
    let err = checkpoint::open(std::str::from_utf8(&sig_changed).unwrap(), &trusted);
    assert_eq!(err.unwrap_err().code(), "signature_invalid");

    // Exhaustively: flipping a bit in any byte makes the note fail to open. (Each check
    // verifies an Ed25519 signature, so one bit per byte keeps the test fast.)
    for pos in 0..note.len() {
        let bit = pos % 8;
        let mut bad = note.to_vec();
        bad[pos] ^= 1 << bit;
        let Ok(text) = std::str::from_utf8(&bad) else {
            continue;
        };
        assert!(
            checkpoint::open(text, &trusted).is_err(),
            "flip of bit {bit} at byte {pos} still opens"
        );
    }
}

#[test]
fn rotation_trusts_old_and_new_keys() {
    let old = key(1, "cairn-2025");
    let new = key(2, "cairn-2026");
    let trusted = trust(&[&old, &new]);
    let cp = sample();

    let by_new = checkpoint::sign(&cp, &new).unwrap();
    let opened = checkpoint::open(by_new.note(), &trusted).unwrap();
    assert_eq!(opened.signers(), &[new.verifier_key()]);

    let by_old = checkpoint::sign(&cp, &old).unwrap();
    let opened = checkpoint::open(by_old.note(), &trusted).unwrap();
    assert_eq!(opened.signers(), &[old.verifier_key()]);

    // Once the old key is retired from the trusted set, its checkpoints no longer open.
    let err = checkpoint::open(by_old.note(), &trust(&[&new])).unwrap_err();
    assert_eq!(err.code(), "no_trusted_signature");
}

#[test]
fn a_verified_checkpoint_for_another_size_root_or_run_does_not_match() {
    let signer = key(1, "cairn-prod");
    let trusted = trust(&[&signer]);
    let expected = sample();

    let mut wrong_size = expected.clone();
    wrong_size.size = 16;
    let opened = checkpoint::open(
        checkpoint::sign(&wrong_size, &signer).unwrap().note(),
        &trusted,
    )
    .unwrap();
    let err = opened.ensure_matches(&expected).unwrap_err();
    assert_eq!(err.code(), "size_mismatch");
    assert!(
        err.to_string().contains("`size` is 16, expected 17"),
        "{err}"
    );

    let mut wrong_root = expected.clone();
    wrong_root.root[0] ^= 1;
    let opened = checkpoint::open(
        checkpoint::sign(&wrong_root, &signer).unwrap().note(),
        &trusted,
    )
    .unwrap();
    assert_eq!(
        opened.ensure_matches(&expected).unwrap_err().code(),
        "root_mismatch"
    );

    let mut other_run = expected.clone();
    other_run.origin = Checkpoint::origin_for(
        &TenantId::new("acme").unwrap(),
        &RunId::new("run-43").unwrap(),
    );
    let opened = checkpoint::open(
        checkpoint::sign(&other_run, &signer).unwrap().note(),
        &trusted,
    )
    .unwrap();
    assert_eq!(
        opened.ensure_matches(&expected).unwrap_err().code(),
        "origin_mismatch"
    );
}

#[test]
fn sign_refuses_a_checkpoint_whose_body_would_not_parse_back() {
    let signer = key(1, "cairn-prod");
    for origin in ["", "a\nb", "a\u{0}"] {
        let cp = Checkpoint {
            origin: origin.to_owned(),
            ..sample()
        };
        let err = checkpoint::sign(&cp, &signer).unwrap_err();
        assert_eq!(err.code(), "malformed_checkpoint", "{origin:?}");
    }
}

#[test]
fn signed_notes_that_are_not_cairn_checkpoints_are_refused_after_verification() {
    // The reference note verifies, but its text is not a checkpoint body.
    let peter = SigningKey::from_private_text(PETER_SKEY).unwrap();
    let err = checkpoint::open(PETER_NOTE, &trust(&[&peter])).unwrap_err();
    assert_eq!(err.code(), "malformed_checkpoint");
    let enoch = key(0, "EnochRoot");
    let err = checkpoint::open(PETER_NOTE, &trust(&[&enoch])).unwrap_err();
    assert_eq!(err.code(), "no_trusted_signature");

    // A signed body with an extension line.
    let signer = key(1, "cairn-prod");
    let extended = format!("{}extension\n", sample().body());
    let note = signer.sign_note_text(extended.as_bytes()).unwrap();
    let err = checkpoint::open(&note, &trust(&[&signer])).unwrap_err();
    assert_eq!(err.code(), "malformed_checkpoint");

    // Not a note at all.
    for text in ["", "hello\n", &sample().body()] {
        let err = checkpoint::open(text, &trust(&[&signer])).unwrap_err();
        assert_eq!(err.code(), "malformed_note", "{text:?}");
    }
}
