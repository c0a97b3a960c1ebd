//! The small closed vocabularies shared by the envelope and the state: side-effect states
//! (E-2, with their input aliases), authorisation modes, approval statuses, event references
//! and the `requires_reauthorization` constant.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

/// What is known about the external effect of the capability call the envelope is about
/// (E-2). Input accepts the aliases `not_started` (→ `not_executed`) and
/// `side_effect_committed` (→ `applied`); output always writes the canonical names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideEffectStatus {
    /// The call was never dispatched: nothing happened outside.
    NotExecuted,
    /// The call completed and its effect is known to have happened.
    Applied,
    /// The call was dispatched and its outcome is unknown (timeout after dispatch, crash).
    SideEffectUnknown,
    /// Part of the effect is known to have happened, part is not.
    PartialSideEffect,
}

impl SideEffectStatus {
    /// The four canonical states, in the order E-2 lists them.
    pub const ALL: [Self; 4] = [
        Self::NotExecuted,
        Self::Applied,
        Self::SideEffectUnknown,
        Self::PartialSideEffect,
    ];

    /// The canonical `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotExecuted => "not_executed",
            Self::Applied => "applied",
            Self::SideEffectUnknown => "side_effect_unknown",
            Self::PartialSideEffect => "partial_side_effect",
        }
    }

    /// Parses a canonical name or one of the two input aliases.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "not_executed" | "not_started" => Some(Self::NotExecuted),
            "applied" | "side_effect_committed" => Some(Self::Applied),
            "side_effect_unknown" => Some(Self::SideEffectUnknown),
            "partial_side_effect" => Some(Self::PartialSideEffect),
            _ => None,
        }
    }

    /// Whether the effect is unresolved and must be reconciled before anything continues
    /// (E-4 step 2, E-5).
    #[must_use]
    pub const fn is_unresolved(self) -> bool {
        matches!(self, Self::SideEffectUnknown | Self::PartialSideEffect)
    }
}

impl fmt::Display for SideEffectStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for SideEffectStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl JsonSchema for SideEffectStatus {
    fn schema_name() -> Cow<'static, str> {
        "SideEffectStatus".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": ["not_executed", "applied", "side_effect_unknown", "partial_side_effect",
                     "not_started", "side_effect_committed"],
            "description": "E-2 side-effect state. Input aliases: not_started = not_executed, side_effect_committed = applied; output uses the canonical names."
        })
    }
}

/// Whose authority the run acts under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthorizationMode {
    /// The platform's own authority.
    PlatformOwned,
    /// A user's authority, delegated with a principal and a scope.
    UserDelegated,
    /// A person approved the specific action.
    HumanApproved,
}

impl AuthorizationMode {
    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PlatformOwned => "platform_owned",
            Self::UserDelegated => "user_delegated",
            Self::HumanApproved => "human_approved",
        }
    }

    /// Parses the `snake_case` name.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::PlatformOwned,
            Self::UserDelegated,
            Self::HumanApproved,
        ]
        .into_iter()
        .find(|mode| mode.as_str() == text)
    }
}

/// The durable status of an approval. Only `active` lets a rehydration pass step 5 of E-4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Granted and usable.
    Active,
    /// Withdrawn by the approver.
    Revoked,
    /// Requested, not yet granted.
    Pending,
    /// Marked expired by the approval system.
    Expired,
    /// Used up (a one-shot approval that has been exercised).
    Consumed,
    /// Refused.
    Denied,
}

impl ApprovalStatus {
    /// Every status.
    pub const ALL: [Self; 6] = [
        Self::Active,
        Self::Revoked,
        Self::Pending,
        Self::Expired,
        Self::Consumed,
        Self::Denied,
    ];

    /// The `snake_case` name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Revoked => "revoked",
            Self::Pending => "pending",
            Self::Expired => "expired",
            Self::Consumed => "consumed",
            Self::Denied => "denied",
        }
    }

    /// Parses the `snake_case` name.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A reference to one source event: the seed writes event ids (`event-0001`); Cairn's ledger
/// numbers steps (`0, 1, 2, …`). Both are accepted and written back as they came.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum EventRef {
    /// A ledger step index.
    Index(u64),
    /// An event identifier.
    Id(#[schemars(length(min = 1, max = 256))] String),
}

/// The first and last source events a derived summary was made from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceEventRange {
    /// The first event summarised.
    pub first: EventRef,
    /// The last event summarised.
    pub last: EventRef,
}

/// The value of `requires_reauthorization`: a type with a single value that always writes
/// `true`, so an envelope that lifts the requirement cannot even be represented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReauthorizationRequired;

impl Serialize for ReauthorizationRequired {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(true)
    }
}

impl JsonSchema for ReauthorizationRequired {
    fn schema_name() -> Cow<'static, str> {
        "ReauthorizationRequired".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "boolean",
            "const": true,
            "description": "Always true: continuity never carries authority; the next capability call goes through the gate afresh."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_parse_to_canonical_names() {
        assert_eq!(
            SideEffectStatus::parse("not_started"),
            Some(SideEffectStatus::NotExecuted)
        );
        assert_eq!(
            SideEffectStatus::parse("side_effect_committed"),
            Some(SideEffectStatus::Applied)
        );
        for status in SideEffectStatus::ALL {
            assert_eq!(SideEffectStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(SideEffectStatus::parse("Applied"), None);
        assert_eq!(
            serde_json::to_string(&SideEffectStatus::parse("not_started")).unwrap(),
            "\"not_executed\""
        );
    }

    #[test]
    fn only_two_statuses_are_unresolved() {
        let unresolved: Vec<_> = SideEffectStatus::ALL
            .into_iter()
            .filter(|s| s.is_unresolved())
            .collect();
        assert_eq!(
            unresolved,
            [
                SideEffectStatus::SideEffectUnknown,
                SideEffectStatus::PartialSideEffect
            ]
        );
    }

    #[test]
    fn reauthorization_always_writes_true() {
        assert_eq!(
            serde_json::to_string(&ReauthorizationRequired).unwrap(),
            "true"
        );
    }
}
