//! The envelope's top-level members, found in one pass over its map.
//!
//! The later stages read the top level about thirty times; each `Map::get` on a `BTreeMap` of
//! fourteen members compares the name with several keys, which together cost about a tenth of
//! a decision. One pass that sorts each member into its slot costs one comparison per member.

use serde_json::Value;

/// The top-level members of a VCE 0.1 envelope (`None`: absent, or the envelope is not an
/// object).
#[derive(Default, Clone, Copy)]
pub(super) struct Top<'a> {
    pub(super) active_objective: Option<&'a Value>,
    pub(super) artifact_refs: Option<&'a Value>,
    pub(super) authority_model: Option<&'a Value>,
    pub(super) created_at: Option<&'a Value>,
    pub(super) envelope_digest: Option<&'a Value>,
    pub(super) envelope_id: Option<&'a Value>,
    pub(super) next_action: Option<&'a Value>,
    pub(super) operational_tail: Option<&'a Value>,
    pub(super) pending_verification: Option<&'a Value>,
    pub(super) project: Option<&'a Value>,
    pub(super) rejected_approaches: Option<&'a Value>,
    pub(super) restore_requirements: Option<&'a Value>,
    pub(super) schema_version: Option<&'a Value>,
    pub(super) transition_reason: Option<&'a Value>,
}

impl<'a> Top<'a> {
    /// The members of `envelope`.
    pub(super) fn of(envelope: &'a Value) -> Self {
        let mut top = Self::default();
        let Some(map) = envelope.as_object() else {
            return top;
        };
        for (key, value) in map {
            let slot = match key.as_str() {
                "active_objective" => &mut top.active_objective,
                "artifact_refs" => &mut top.artifact_refs,
                "authority_model" => &mut top.authority_model,
                "created_at" => &mut top.created_at,
                "envelope_digest" => &mut top.envelope_digest,
                "envelope_id" => &mut top.envelope_id,
                "next_action" => &mut top.next_action,
                "operational_tail" => &mut top.operational_tail,
                "pending_verification" => &mut top.pending_verification,
                "project" => &mut top.project,
                "rejected_approaches" => &mut top.rejected_approaches,
                "restore_requirements" => &mut top.restore_requirements,
                "schema_version" => &mut top.schema_version,
                "transition_reason" => &mut top.transition_reason,
                _ => continue,
            };
            *slot = Some(value);
        }
        top
    }

    /// Every required top-level member with its value, in name order.
    pub(super) fn required(&self) -> [(&'static str, Option<&'a Value>); 14] {
        [
            ("active_objective", self.active_objective),
            ("artifact_refs", self.artifact_refs),
            ("authority_model", self.authority_model),
            ("created_at", self.created_at),
            ("envelope_digest", self.envelope_digest),
            ("envelope_id", self.envelope_id),
            ("next_action", self.next_action),
            ("operational_tail", self.operational_tail),
            ("pending_verification", self.pending_verification),
            ("project", self.project),
            ("rejected_approaches", self.rejected_approaches),
            ("restore_requirements", self.restore_requirements),
            ("schema_version", self.schema_version),
            ("transition_reason", self.transition_reason),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_required_member_is_found_and_others_are_ignored() {
        let mut envelope = serde_json::Map::new();
        for (position, name) in Top::default()
            .required()
            .map(|(name, _)| name)
            .iter()
            .enumerate()
        {
            envelope.insert((*name).to_owned(), json!(position));
        }
        envelope.insert(String::from("extra"), json!("x"));
        let envelope = Value::Object(envelope);
        let top = Top::of(&envelope);
        for (position, (name, value)) in top.required().iter().enumerate() {
            assert_eq!(*value, Some(&json!(position)), "{name}");
            assert_eq!(envelope.get(name), *value, "{name}");
        }
        assert!(
            Top::of(&json!([1]))
                .required()
                .iter()
                .all(|(_, v)| v.is_none())
        );
    }
}
