//! RFC 6962 Merkle tree hashing (RFC 9162 §2.1): leaf and node hashes, a streaming root
//! builder, audit paths (inclusion proofs) and their verification.
//!
//! A run's checkpoint commits to the ordered list of its record digests through the Merkle
//! Tree Hash (MTH) defined here; an inclusion proof lets one record be shown to an auditor
//! without the rest of the run. The hashing is bit-for-bit RFC 6962 so that any other
//! transparency-log tooling computes the same roots.

use sha2::{Digest as _, Sha256};
use thiserror::Error;

use cairn_core::{Code, ErrorCode};

/// A SHA-256 output: a leaf hash, an interior node hash or a tree root.
pub type Hash = [u8; 32];

/// The domain-separation prefix of leaf hashes (RFC 6962 §2.1).
const LEAF_PREFIX: u8 = 0x00;
/// The domain-separation prefix of interior node hashes (RFC 6962 §2.1).
const NODE_PREFIX: u8 = 0x01;

/// Errors raised when building or checking an inclusion proof.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MerkleError {
    /// The leaf index is not inside the tree.
    #[error("leaf `index` {index} is out of range for `tree_size` {tree_size}")]
    IndexOutOfRange {
        /// The requested leaf index.
        index: u64,
        /// The number of leaves in the tree.
        tree_size: u64,
    },
    /// The proof has more or fewer hashes than the tree shape requires.
    #[error(
        "inclusion `proof` has {actual} hashes, expected {expected} for leaf {index} of {tree_size}"
    )]
    ProofLength {
        /// The leaf index the proof is for.
        index: u64,
        /// The number of leaves in the tree.
        tree_size: u64,
        /// The number of hashes the tree shape requires.
        expected: usize,
        /// The number of hashes supplied.
        actual: usize,
    },
    /// The root recomputed from the leaf and the proof is not the expected root.
    #[error(
        "inclusion `proof` for leaf {index} of {tree_size} does not lead to the expected `root`"
    )]
    RootMismatch {
        /// The leaf index the proof is for.
        index: u64,
        /// The number of leaves in the tree.
        tree_size: u64,
    },
}

cairn_core::error_codes! {
    MerkleError {
        /// A leaf index beyond the tree.
        INDEX_OUT_OF_RANGE = Invalid("index_out_of_range");
        /// An inclusion path of the wrong length for the tree.
        PROOF_LENGTH = Invalid("proof_length");
        /// A recomputed root differs from the one claimed.
        ROOT_MISMATCH = Tamper("root_mismatch");
    }
}

impl ErrorCode for MerkleError {
    fn error_code(&self) -> Code {
        match self {
            Self::IndexOutOfRange { .. } => Self::INDEX_OUT_OF_RANGE,
            Self::ProofLength { .. } => Self::PROOF_LENGTH,
            Self::RootMismatch { .. } => Self::ROOT_MISMATCH,
        }
    }
}

/// The hash of one leaf: `SHA-256(0x00 || data)`.
#[must_use]
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([LEAF_PREFIX]);
    hasher.update(data);
    hasher.finalize().into()
}

/// The hash of an interior node: `SHA-256(0x01 || left || right)`.
#[must_use]
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([NODE_PREFIX]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The root of the empty tree: the SHA-256 of the empty string (RFC 6962 §2.1).
#[must_use]
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Computes the Merkle Tree Hash of a stream of leaf hashes in `O(log n)` memory.
///
/// The builder keeps one perfect subtree root per set bit of the leaf count, like the digits
/// of a binary counter: pushing a leaf "carries" by merging equal-sized subtrees. Because
/// RFC 6962 splits every tree at the largest power of two below its size, the MTH of `n`
/// leaves is exactly these subtrees folded together from the smallest (rightmost) upward.
/// Pushing never allocates, which matters when a verifier streams millions of records.
#[derive(Clone)]
pub struct RootBuilder {
    /// `subtrees[level]` is the root of the perfect subtree of `2^level` leaves that is
    /// pending at that level. It is meaningful only when bit `level` of `len` is set.
    subtrees: [Hash; 64],
    /// The number of leaves pushed so far.
    len: u64,
}

impl RootBuilder {
    /// An empty builder (whose root is [`empty_root`]).
    #[must_use]
    pub fn new() -> Self {
        Self {
            subtrees: [[0; 32]; 64],
            len: 0,
        }
    }

    /// Appends the hash of the next leaf (see [`leaf_hash`]).
    pub fn push(&mut self, leaf_hash: Hash) {
        let mut carry = leaf_hash;
        for (level, slot) in self.subtrees.iter_mut().enumerate() {
            if (self.len >> level) & 1 == 1 {
                // A subtree of the same size is pending: merge it (it is the left sibling).
                carry = node_hash(slot, &carry);
            } else {
                *slot = carry;
                break;
            }
        }
        // INVARIANT: `len` cannot wrap; reaching 2^64 leaves would take centuries of hashing.
        self.len = self.len.wrapping_add(1);
    }

    /// The number of leaves pushed so far.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no leaf has been pushed yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The builder's state as bytes — the leaf count (8 bytes, big-endian), then the pending
    /// subtree roots from the smallest up, one per set bit of the count (32 bytes each) — so
    /// a writer can resume a tree of any size without reading its leaves again.
    #[must_use]
    pub fn frontier(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(8 + 32 * self.len.count_ones() as usize);
        bytes.extend_from_slice(&self.len.to_be_bytes());
        for (level, subtree) in self.subtrees.iter().enumerate() {
            if (self.len >> level) & 1 == 1 {
                bytes.extend_from_slice(subtree);
            }
        }
        bytes
    }

    /// The builder [`RootBuilder::frontier`] wrote, or `None` when `bytes` are not one (a
    /// wrong length for the count they start with).
    #[must_use]
    pub fn from_frontier(bytes: &[u8]) -> Option<Self> {
        let (count, rest) = bytes.split_first_chunk::<8>()?;
        let len = u64::from_be_bytes(*count);
        if rest.len() != 32 * len.count_ones() as usize {
            return None;
        }
        let mut builder = Self::new();
        builder.len = len;
        let mut hashes = rest.chunks_exact(32);
        for (level, slot) in builder.subtrees.iter_mut().enumerate() {
            if (len >> level) & 1 == 1 {
                slot.copy_from_slice(hashes.next()?);
            }
        }
        Some(builder)
    }

    /// The Merkle Tree Hash of every leaf pushed so far.
    #[must_use]
    pub fn root(&self) -> Hash {
        let mut acc: Option<Hash> = None;
        for (level, subtree) in self.subtrees.iter().enumerate() {
            if (self.len >> level) & 1 == 1 {
                // Larger subtrees sit to the left of everything accumulated so far.
                acc = Some(match acc {
                    None => *subtree,
                    Some(right) => node_hash(subtree, &right),
                });
            }
        }
        acc.unwrap_or_else(empty_root)
    }
}

impl Default for RootBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for RootBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pending subtrees are an implementation detail; the size and root say it all.
        f.debug_struct("RootBuilder")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// The Merkle Tree Hash of a list of leaf hashes (RFC 6962 §2.1).
#[must_use]
pub fn root(leaf_hashes: &[Hash]) -> Hash {
    let mut builder = RootBuilder::new();
    for leaf in leaf_hashes {
        builder.push(*leaf);
    }
    builder.root()
}

/// The largest power of two strictly smaller than `n`, for `n >= 2`: where RFC 6962 splits a
/// tree of `n` leaves.
fn split_point(n: usize) -> usize {
    let below = n.saturating_sub(1);
    if below == 0 {
        0
    } else {
        1 << (usize::BITS - 1 - below.leading_zeros())
    }
}

/// The audit path of leaf `index` (RFC 6962 §2.1.1): the sibling hashes from the leaf's level
/// up to the root, in the order [`verify_inclusion`] consumes them.
///
/// # Errors
/// [`MerkleError::IndexOutOfRange`] when `index` is not below the number of leaves.
pub fn inclusion_proof(leaf_hashes: &[Hash], index: u64) -> Result<Vec<Hash>, MerkleError> {
    let out_of_range = || MerkleError::IndexOutOfRange {
        index,
        tree_size: u64::try_from(leaf_hashes.len()).unwrap_or(u64::MAX),
    };
    let mut m = usize::try_from(index).map_err(|_| out_of_range())?;
    if m >= leaf_hashes.len() {
        return Err(out_of_range());
    }
    // Walk down from the root, noting the sibling subtree's root at each split; the path is
    // then reversed so that it starts next to the leaf, as RFC 6962's PATH() lists it.
    let mut path = Vec::new();
    let mut subtree = leaf_hashes;
    while subtree.len() > 1 {
        let k = split_point(subtree.len());
        // `k < subtree.len()` always holds, so the split cannot fail.
        let Some((left, right)) = subtree.split_at_checked(k) else {
            break;
        };
        if m < k {
            path.push(root(right));
            subtree = left;
        } else {
            path.push(root(left));
            subtree = right;
            m -= k;
        }
    }
    path.reverse();
    Ok(path)
}

/// The number of hashes in the audit path of leaf `index` in a tree of `tree_size` leaves
/// (`index < tree_size`): one per level below the point where the paths to `index` and to the
/// last leaf diverge, plus one per left sibling on the shared path above it.
fn expected_proof_len(index: u64, tree_size: u64) -> usize {
    let last = tree_size.saturating_sub(1);
    let inner = u64::BITS - (index ^ last).leading_zeros();
    let border = index.checked_shr(inner).unwrap_or(0).count_ones();
    // Both counts are at most 64, so the sum always fits.
    usize::try_from(inner + border).unwrap_or(usize::MAX)
}

/// Checks that `proof` shows the leaf with hash `leaf_hash` at position `index` in the tree
/// of `tree_size` leaves whose root is `root`, following RFC 9162 §2.1.3.2 step by step.
///
/// # Errors
/// - [`MerkleError::IndexOutOfRange`] when `index >= tree_size`;
/// - [`MerkleError::ProofLength`] when the proof is longer or shorter than the tree shape
///   requires;
/// - [`MerkleError::RootMismatch`] when the recomputed root differs from `root`.
pub fn verify_inclusion(
    leaf_hash: &Hash,
    index: u64,
    tree_size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), MerkleError> {
    // Step 1.
    if index >= tree_size {
        return Err(MerkleError::IndexOutOfRange { index, tree_size });
    }
    let wrong_length = || MerkleError::ProofLength {
        index,
        tree_size,
        expected: expected_proof_len(index, tree_size),
        actual: proof.len(),
    };
    // Steps 2 and 3.
    let mut fn_ = index;
    let mut sn = tree_size - 1;
    let mut r = *leaf_hash;
    // Step 4.
    for p in proof {
        if sn == 0 {
            return Err(wrong_length());
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            // The leaf is the right edge of its subtree here: skip the levels where it has
            // no sibling (it is promoted unchanged).
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 5.
    if sn != 0 {
        return Err(wrong_length());
    }
    if r != *root {
        return Err(MerkleError::RootMismatch { index, tree_size });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_point_is_the_largest_power_of_two_below() {
        let cases = [(2, 1), (3, 2), (4, 2), (5, 4), (8, 4), (9, 8), (1000, 512)];
        for (n, k) in cases {
            assert_eq!(split_point(n), k, "n = {n}");
        }
    }

    #[test]
    fn expected_length_matches_generated_paths() {
        let leaves: Vec<Hash> = (0u32..40).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        for n in 1..=leaves.len() {
            for i in 0..n {
                let path = inclusion_proof(&leaves[..n], i as u64).unwrap();
                assert_eq!(
                    path.len(),
                    expected_proof_len(i as u64, n as u64),
                    "{i}/{n}"
                );
            }
        }
    }
}

#[cfg(test)]
mod frontier_tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn a_builder_resumed_from_its_frontier_grows_the_same_tree() {
        let leaf = |i: u64| leaf_hash(&i.to_be_bytes());
        let mut whole = RootBuilder::new();
        for size in 0..300_u64 {
            let resumed = RootBuilder::from_frontier(&whole.frontier()).unwrap();
            assert_eq!(resumed.len(), size);
            assert_eq!(resumed.root(), whole.root());
            let mut grown = resumed;
            grown.push(leaf(size));
            whole.push(leaf(size));
            assert_eq!(grown.root(), whole.root(), "size {size}");
        }
        // Bytes of the wrong length for their count are not a frontier.
        let mut bytes = whole.frontier();
        bytes.pop();
        assert!(RootBuilder::from_frontier(&bytes).is_none());
        assert!(RootBuilder::from_frontier(&[0; 7]).is_none());
    }
}
