//! Sets of refs (scopes, effects, source refs) read straight from a JSON array, with the
//! membership semantics of the reference's Python `set`s of strings.
//!
//! Small arrays — every array in a real extension — are scanned in place without allocating;
//! large ones are sorted once so that a hostile document with thousands of refs costs
//! `n log n`, not `n²`.

use serde_json::Value;

/// Arrays up to this length are scanned instead of sorted.
const SCAN_LIMIT: usize = 16;

/// The string items of a JSON array as a set (other items cannot name a ref).
pub(crate) enum RefSet<'a> {
    /// A short array, scanned.
    Small(&'a [Value]),
    /// A long array's strings, sorted and deduplicated.
    Sorted(Vec<&'a str>),
}

impl<'a> RefSet<'a> {
    /// The set of `value`'s string items; empty when `value` is not an array.
    pub(crate) fn of(value: Option<&'a Value>) -> Self {
        let items: &[Value] = value.and_then(Value::as_array).map_or(&[], Vec::as_slice);
        if items.len() <= SCAN_LIMIT {
            return Self::Small(items);
        }
        let mut refs: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
        refs.sort_unstable();
        refs.dedup();
        Self::Sorted(refs)
    }

    /// Whether `item` is in the set.
    pub(crate) fn contains(&self, item: &str) -> bool {
        match self {
            Self::Small(items) => items.iter().any(|v| v.as_str() == Some(item)),
            Self::Sorted(refs) => refs.binary_search(&item).is_ok(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = &'a str> + '_> {
        match self {
            Self::Small(items) => Box::new(items.iter().filter_map(Value::as_str)),
            Self::Sorted(refs) => Box::new(refs.iter().copied()),
        }
    }

    /// The members of `self` that `other` lacks, sorted and unique (no allocation when none).
    pub(crate) fn missing_from(&self, other: &RefSet<'_>) -> Vec<&'a str> {
        self.select(|item| !other.contains(item))
    }

    /// The members of `self` that `other` has too, sorted and unique.
    pub(crate) fn shared_with(&self, other: &RefSet<'_>) -> Vec<&'a str> {
        self.select(|item| other.contains(item))
    }

    fn select(&self, keep: impl Fn(&str) -> bool) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = match self {
            // Checking membership item by item without the iterator box keeps the common,
            // all-in-scope case free of allocations.
            Self::Small(items) => items
                .iter()
                .filter_map(Value::as_str)
                .filter(|item| keep(item))
                .collect(),
            Self::Sorted(_) => self.iter().filter(|item| keep(item)).collect(),
        };
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_and_large_sets_agree() {
        let small = json!(["b", "a", "b", 1, null]);
        let many: Vec<String> = (0..40).map(|i| format!("r{i:02}")).collect();
        let large = json!(many);
        for (value, member, stranger) in [(&small, "a", "c"), (&large, "r07", "r99")] {
            let set = RefSet::of(Some(value));
            assert!(set.contains(member) && !set.contains(stranger));
        }
        let a = RefSet::of(Some(&small));
        let only_b = json!(["b"]);
        let b = RefSet::of(Some(&only_b));
        assert_eq!(a.missing_from(&b), vec!["a"]);
        assert_eq!(a.shared_with(&b), vec!["b"]);
        let large_set = RefSet::of(Some(&large));
        assert_eq!(large_set.missing_from(&RefSet::of(None)).len(), 40);
        assert!(
            RefSet::of(Some(&json!("not an array")))
                .missing_from(&a)
                .is_empty()
        );
    }
}
