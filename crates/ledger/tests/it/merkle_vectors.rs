//! RFC 6962 Merkle tree conformance: the Certificate Transparency reference vectors, the
//! streaming builder against the recursive definition, and inclusion proofs for every leaf
//! of every small tree, with tampered proofs that must fail.

use cairn_core::ErrorCode;
use cairn_ledger::merkle::{
    Hash, MerkleError, RootBuilder, empty_root, inclusion_proof, leaf_hash, node_hash, root,
    verify_inclusion,
};

/// The reference leaves of the Certificate Transparency test suite, as hex.
///
/// Source: transparency-dev/merkle, `proof/verify_test.go` (`leaves`, `roots`,
/// `inclusionProofs`), the same vectors as google/certificate-transparency's tests.
const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

/// The SHA-256 of the empty string: the root of the empty tree.
const EMPTY_ROOT: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// `ROOTS[n - 1]` is the root of the tree of the first `n` reference leaves.
const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// Reference inclusion proofs: (0-based leaf index, tree size, audit path).
const INCLUSION: [(u64, usize, &[&str]); 4] = [
    (
        0,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        1,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

fn h(text: &str) -> Hash {
    hex::decode(text).unwrap().try_into().unwrap()
}

fn reference_leaf_hashes() -> Vec<Hash> {
    LEAVES
        .iter()
        .map(|data| leaf_hash(&hex::decode(data).unwrap()))
        .collect()
}

/// RFC 6962 §2.1 written as literally as possible, as the oracle for everything else.
fn recursive_mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            node_hash(&recursive_mth(&leaves[..k]), &recursive_mth(&leaves[k..]))
        }
    }
}

fn synthetic_leaves(n: usize) -> Vec<Hash> {
    (0..n)
        .map(|i| leaf_hash(format!("record-{i}").as_bytes()))
        .collect()
}

#[test]
fn empty_tree_root_is_sha256_of_nothing() {
    assert_eq!(empty_root(), h(EMPTY_ROOT));
    assert_eq!(root(&[]), h(EMPTY_ROOT));
    assert_eq!(RootBuilder::new().root(), h(EMPTY_ROOT));
}

#[test]
fn reference_roots_for_every_size_from_1_to_8() {
    let leaves = reference_leaf_hashes();
    let mut builder = RootBuilder::new();
    for (n, expected) in (1..=8).zip(ROOTS) {
        builder.push(leaves[n - 1]);
        assert_eq!(root(&leaves[..n]), h(expected), "root() of size {n}");
        assert_eq!(builder.root(), h(expected), "RootBuilder of size {n}");
        assert_eq!(builder.len(), n as u64);
    }
}

#[test]
fn reference_inclusion_proofs_are_generated_and_verified() {
    let leaves = reference_leaf_hashes();
    for (index, size, expected) in INCLUSION {
        let expected: Vec<Hash> = expected.iter().map(|p| h(p)).collect();
        let proof = inclusion_proof(&leaves[..size], index).unwrap();
        assert_eq!(proof, expected, "leaf {index} of {size}");
        let root = h(ROOTS[size - 1]);
        let leaf = leaves[usize::try_from(index).unwrap()];
        verify_inclusion(&leaf, index, size as u64, &proof, &root).unwrap();
    }
}

#[test]
fn builder_root_and_recursive_definition_agree_up_to_300_leaves() {
    let leaves = synthetic_leaves(300);
    let mut builder = RootBuilder::new();
    assert_eq!(builder.root(), recursive_mth(&[]));
    for n in 1..=leaves.len() {
        builder.push(leaves[n - 1]);
        let expected = recursive_mth(&leaves[..n]);
        assert_eq!(builder.root(), expected, "builder, size {n}");
        assert_eq!(root(&leaves[..n]), expected, "root(), size {n}");
    }
}

#[test]
fn every_proof_verifies_and_every_tampered_proof_fails_up_to_70_leaves() {
    // Twice as many leaves as the largest tree, so that trees of the "wrong" sizes exist too.
    let leaves = synthetic_leaves(2 * 70 + 7);
    for n in 1..=70 {
        let tree = &leaves[..n];
        let size = n as u64;
        let tree_root = root(tree);
        for i in 0..n {
            let index = i as u64;
            let leaf = &tree[i];
            let proof = inclusion_proof(tree, index).unwrap();
            verify_inclusion(leaf, index, size, &proof, &tree_root)
                .unwrap_or_else(|e| panic!("leaf {i} of {n}: {e}"));

            // One flipped bit in any element of the proof (a different bit for each).
            for element in 0..proof.len() {
                for bit in [element * 37 % 256, 255 - element] {
                    let mut bad = proof.clone();
                    bad[element][bit / 8] ^= 1 << (bit % 8);
                    let err = verify_inclusion(leaf, index, size, &bad, &tree_root).unwrap_err();
                    assert_eq!(err.code(), "root_mismatch", "leaf {i} of {n}");
                }
            }

            // A wrong leaf or a wrong root.
            let other_leaf = leaf_hash(b"not a record");
            let err = verify_inclusion(&other_leaf, index, size, &proof, &tree_root);
            assert_eq!(err.unwrap_err().code(), "root_mismatch");
            let err = verify_inclusion(leaf, index, size, &proof, &empty_root());
            assert_eq!(err.unwrap_err().code(), "root_mismatch");

            // A wrong index inside the tree (the leaf really is at `i`).
            for wrong in [index.wrapping_sub(1), index + 1, index ^ 2, index ^ 1] {
                if wrong != index && wrong < size {
                    let result = verify_inclusion(leaf, wrong, size, &proof, &tree_root);
                    assert!(result.is_err(), "leaf {i} of {n} verified at index {wrong}");
                }
            }

            // A wrong size. A proof only fixes the shape of the path, so a size whose path to
            // `i` has exactly the same shape cannot be told apart (which is why the size must
            // come from a signed checkpoint); every other size must fail.
            for wrong in [size * 2, size + 1, size - 1, size / 2, size + 7] {
                if wrong == size || wrong <= index {
                    continue;
                }
                let result = verify_inclusion(leaf, index, wrong, &proof, &tree_root);
                if result.is_ok() {
                    let other = &leaves[..usize::try_from(wrong).unwrap()];
                    let other_proof = inclusion_proof(other, index).unwrap();
                    assert_eq!(
                        other_proof.len(),
                        proof.len(),
                        "leaf {i} of {n} verified at size {wrong} with another path shape"
                    );
                }
            }
            assert!(verify_inclusion(leaf, index, size * 2, &proof, &tree_root).is_err());

            // A proof one hash too long or too short.
            let mut longer = proof.clone();
            longer.push(tree_root);
            let err = verify_inclusion(leaf, index, size, &longer, &tree_root).unwrap_err();
            assert_eq!(err.code(), "proof_length", "leaf {i} of {n}");
            if let Some((_, shorter)) = proof.split_last() {
                let err = verify_inclusion(leaf, index, size, shorter, &tree_root).unwrap_err();
                assert_eq!(err.code(), "proof_length", "leaf {i} of {n}");
            }
        }
        // Out of range, for generation and for verification.
        let err = inclusion_proof(tree, size).unwrap_err();
        assert_eq!(err.code(), "index_out_of_range");
        let err = verify_inclusion(&tree[0], size, size, &[], &tree_root).unwrap_err();
        assert_eq!(err.code(), "index_out_of_range");
    }
}

#[test]
fn empty_tree_has_no_inclusion_proof() {
    assert_eq!(
        inclusion_proof(&[], 0),
        Err(MerkleError::IndexOutOfRange {
            index: 0,
            tree_size: 0
        })
    );
    let err = verify_inclusion(&empty_root(), 0, 0, &[], &empty_root()).unwrap_err();
    assert_eq!(err.code(), "index_out_of_range");
}

#[test]
fn single_leaf_tree_root_is_the_leaf_and_the_proof_is_empty() {
    let leaf = leaf_hash(b"data");
    assert_eq!(root(&[leaf]), leaf);
    assert_eq!(inclusion_proof(&[leaf], 0).unwrap(), Vec::<Hash>::new());
    verify_inclusion(&leaf, 0, 1, &[], &leaf).unwrap();
}

#[test]
fn error_messages_name_the_field() {
    let err = verify_inclusion(&empty_root(), 5, 3, &[], &empty_root()).unwrap_err();
    assert!(err.to_string().contains("`index`"), "{err}");
    let leaves = synthetic_leaves(4);
    let err = verify_inclusion(&leaves[0], 0, 4, &[], &root(&leaves)).unwrap_err();
    assert!(err.to_string().contains("`proof`"), "{err}");
    assert!(err.to_string().contains("expected 2"), "{err}");
}
