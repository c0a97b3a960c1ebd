//! Decision kinds (D-1): the five built-in kinds and validated custom ones, and the priority
//! that names the determining decision when several share the worst state.
//!
//! A decision's key *is* its kind: a book holds at most one decision per kind. Several
//! task-specific bans go in one `constraint` value (a JSON array or object) or under custom
//! kinds such as `no_force_push`.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use cairn_core::error::excerpt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::DecisionError;

/// The longest custom kind id accepted.
pub const MAX_KIND_LEN: usize = 64;

/// What a decision is about.
///
/// Its text form is the `snake_case` id (`scope`, `approval_boundary`, …, or the custom id);
/// it orders by that text, so snapshots list their decisions in one canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DecisionKind {
    /// Which repository, service, data set or destination is in bounds.
    Scope,
    /// Which actions still need human authority.
    ApprovalBoundary,
    /// The expected branch, environment, release or artefact.
    Target,
    /// The deterministic check that decides the task is done.
    AcceptanceTest,
    /// A task-specific ban that must survive the summary.
    Constraint,
    /// Any other decision, by a validated `snake_case` id.
    Other(CustomKind),
}

impl DecisionKind {
    /// The five built-in kinds, in priority order.
    pub const BUILT_IN: [Self; 5] = [
        Self::ApprovalBoundary,
        Self::Scope,
        Self::Constraint,
        Self::Target,
        Self::AcceptanceTest,
    ];

    /// The text form.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Scope => "scope",
            Self::ApprovalBoundary => "approval_boundary",
            Self::Target => "target",
            Self::AcceptanceTest => "acceptance_test",
            Self::Constraint => "constraint",
            Self::Other(custom) => custom.as_str(),
        }
    }

    /// How directly a defect in this decision changes what the agent may do; lower is more
    /// direct. Used only to name the determining decision among decisions that share the
    /// worst state — the state itself always decides first (see [`mod@crate::compare`]).
    ///
    /// `approval_boundary` (0: what still needs a human) before `scope` (1: where writes
    /// may go), `constraint` (2: what is banned), `target` (3: where the result lands),
    /// `acceptance_test` (4: when the work is done), custom kinds (5).
    #[must_use]
    pub const fn priority(&self) -> u8 {
        match self {
            Self::ApprovalBoundary => 0,
            Self::Scope => 1,
            Self::Constraint => 2,
            Self::Target => 3,
            Self::AcceptanceTest => 4,
            Self::Other(_) => 5,
        }
    }
}

impl FromStr for DecisionKind {
    type Err = DecisionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "scope" => Self::Scope,
            "approval_boundary" => Self::ApprovalBoundary,
            "target" => Self::Target,
            "acceptance_test" => Self::AcceptanceTest,
            "constraint" => Self::Constraint,
            other => Self::Other(CustomKind::new(other)?),
        })
    }
}

impl fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Ord for DecisionKind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for DecisionKind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for DecisionKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DecisionKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A custom decision kind: 1–64 characters of `[a-z0-9_]`, starting with a letter, and not
/// one of the built-in names (those parse to the built-in variants, so each kind has exactly
/// one representation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomKind(String);

impl CustomKind {
    /// Validates a custom kind id.
    ///
    /// # Errors
    /// [`DecisionError::InvalidKind`] when the id is not `snake_case` or is a built-in name.
    pub fn new(id: &str) -> Result<Self, DecisionError> {
        let invalid = |reason| DecisionError::InvalidKind {
            value: excerpt(id),
            reason,
        };
        if id.is_empty() || id.len() > MAX_KIND_LEN {
            return Err(invalid("expected 1-64 characters"));
        }
        if !id.starts_with(|c: char| c.is_ascii_lowercase()) {
            return Err(invalid("expected a lowercase ascii letter first"));
        }
        if !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(invalid("expected only `a-z`, `0-9` and `_`"));
        }
        if DecisionKind::BUILT_IN.iter().any(|k| k.as_str() == id) {
            return Err(invalid("a built-in kind is not a custom kind"));
        }
        Ok(Self(id.to_owned()))
    }

    /// The id.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use super::*;
    use cairn_core::ErrorCode;

    #[test]
    fn built_in_and_custom_kinds_round_trip_through_text() {
        for text in [
            "scope",
            "approval_boundary",
            "target",
            "acceptance_test",
            "constraint",
            "no_force_push",
            "a1",
        ] {
            let kind: DecisionKind = text.parse().unwrap();
            assert_eq!(kind.as_str(), text);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<DecisionKind>(&json).unwrap(), kind);
        }
        assert_eq!(
            "scope".parse::<DecisionKind>().unwrap(),
            DecisionKind::Scope
        );
    }

    #[test]
    fn invalid_custom_kinds_are_refused_with_a_stable_code() {
        let long = "a".repeat(65);
        for bad in [
            "",
            "Scope",
            "1st",
            "_x",
            "with space",
            "dash-ed",
            "caf\u{e9}",
            long.as_str(),
        ] {
            let err = bad.parse::<DecisionKind>().unwrap_err();
            assert_eq!(err.code(), "invalid_decision_kind", "{bad}");
        }
        assert!(CustomKind::new("scope").is_err());
        assert!(serde_json::from_str::<DecisionKind>("\"Bad\"").is_err());
    }

    #[test]
    fn kinds_order_by_text_and_rank_by_authority() {
        let mut kinds: Vec<DecisionKind> = DecisionKind::BUILT_IN.to_vec();
        kinds.sort();
        let names: Vec<&str> = kinds.iter().map(DecisionKind::as_str).collect();
        assert_eq!(
            names,
            [
                "acceptance_test",
                "approval_boundary",
                "constraint",
                "scope",
                "target"
            ]
        );
        assert!(
            DecisionKind::ApprovalBoundary.priority() < DecisionKind::AcceptanceTest.priority()
        );
        assert!(DecisionKind::Scope.priority() < DecisionKind::Target.priority());
    }
}
