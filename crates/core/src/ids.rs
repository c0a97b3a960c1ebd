//! Identifiers of tenants, runs, tasks and lanes.
//!
//! An identifier appears inside a signed checkpoint's origin line (`cairn/<tenant>/<run>`)
//! and in file names, so the allowed alphabet is deliberately narrow: ASCII letters, digits
//! and `-_.:@`, 1 to 128 characters. No `/`, `+` or whitespace (the C2SP formats reserve them).

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{CoreError, excerpt};

/// The longest identifier accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// Names one kind of identifier for error messages and schemas.
pub trait IdKind {
    /// The field name used in records and messages (`tenant_id`, `run_id`, ...).
    const FIELD: &'static str;
}

/// A validated identifier of kind `K`.
pub struct Id<K> {
    value: String,
    kind: PhantomData<fn() -> K>,
}

macro_rules! id_kind {
    ($(#[$doc:meta])* $marker:ident, $alias:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $marker {}
        impl IdKind for $marker {
            const FIELD: &'static str = $field;
        }
        $(#[$doc])*
        pub type $alias = Id<$marker>;
    };
}

id_kind!(
    /// The isolation boundary: nothing crosses a tenant.
    Tenant, TenantId, "tenant_id"
);
id_kind!(
    /// One execution of a task.
    Run, RunId, "run_id"
);
id_kind!(
    /// A user-authorised goal, created before the first step.
    Task, TaskId, "task_id"
);
id_kind!(
    /// A responsibility lane.
    Lane, LaneId, "lane_id"
);

impl<K: IdKind> Id<K> {
    /// Validates and wraps `value`.
    ///
    /// # Errors
    /// [`CoreError::InvalidId`] naming the field when `value` is empty, longer than
    /// [`MAX_ID_LEN`] or has a character outside `[A-Za-z0-9._:@-]`.
    pub fn new(value: impl Into<String>) -> Result<Self, CoreError> {
        let value = value.into();
        let reason = if value.is_empty() {
            Some("must not be empty")
        } else if value.len() > MAX_ID_LEN {
            Some("must be at most 128 characters")
        } else if !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b))
        {
            Some("only ASCII letters, digits and `-_.:@` are allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(CoreError::InvalidId {
                kind: K::FIELD,
                value: excerpt(&value),
                reason,
            }),
            None => Ok(Self {
                value,
                kind: PhantomData,
            }),
        }
    }

    /// The identifier text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

impl<K> Clone for Id<K> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for Id<K> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<K> Eq for Id<K> {}

impl<K> std::hash::Hash for Id<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value.hash(state);
    }
}

impl<K> PartialOrd for Id<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Id<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.value.cmp(&other.value)
    }
}

impl<K> fmt::Display for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.value)
    }
}

impl<K: IdKind> fmt::Debug for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?})", K::FIELD, self.value)
    }
}

impl<K: IdKind> FromStr for Id<K> {
    type Err = CoreError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::new(text)
    }
}

impl<K> Serialize for Id<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.value)
    }
}

impl<'de, K: IdKind> Deserialize<'de> for Id<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(text).map_err(serde::de::Error::custom)
    }
}

impl<K: IdKind> schemars::JsonSchema for Id<K> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Identifier".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ID_LEN,
            "pattern": "^[A-Za-z0-9._:@-]+$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn accepts_the_documented_alphabet() {
        for ok in ["acme", "run-0193.a_b:c@d", "x"] {
            assert_eq!(RunId::new(ok).map(|id| id.to_string()), Ok(ok.to_owned()));
        }
    }

    #[test]
    fn refuses_separators_of_the_checkpoint_origin_and_names_the_field() {
        for bad in ["", "a/b", "a+b", "a b", "é", &"x".repeat(129)] {
            let err = TenantId::new(bad).expect_err(bad);
            assert_eq!(err.code(), "invalid_id");
            assert!(err.to_string().contains("tenant_id"), "{err}");
        }
    }
}
