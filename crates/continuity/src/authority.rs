//! The authority fields a continuity envelope and the durable state both carry — who acts,
//! under which mode and delegation, by which policy and capability — read by one reader, so
//! the two documents judge them alike.

use cairn_core::TenantId;

use crate::fields::Fields;
use crate::finding::FindingCode;
use crate::types::AuthorizationMode;

/// The authority fields as read: each `None` when missing or malformed (with its finding).
pub(crate) struct Authority {
    pub tenant_id: Option<TenantId>,
    pub principal_id: Option<String>,
    pub authorization_mode: Option<AuthorizationMode>,
    /// `Some(None)` when unused (`null` or `""`).
    pub delegated_principal_id: Option<Option<String>>,
    /// `Some(None)` when unused (`null` or `""`).
    pub delegated_scope: Option<Option<String>>,
    pub policy_version: Option<String>,
    pub capability_name: Option<String>,
    pub capability_version: Option<String>,
}

impl Authority {
    /// Reads the fields in their documented order, recording a finding for each that is
    /// missing or malformed.
    pub(crate) fn read(f: &mut Fields<'_>) -> Self {
        // A struct expression evaluates its fields in the order written: the documented one.
        Self {
            tenant_id: f.parsed(
                "tenant_id",
                FindingCode::BadIdentifier,
                "an identifier of `[A-Za-z0-9._:@-]`, 1 to 128 characters",
                |t| t.parse::<TenantId>().ok(),
            ),
            principal_id: f.text("principal_id"),
            authorization_mode: f.parsed(
                "authorization_mode",
                FindingCode::BadAuthorizationMode,
                "one of `platform_owned`, `user_delegated`, `human_approved`",
                AuthorizationMode::parse,
            ),
            delegated_principal_id: f.delegated_text("delegated_principal_id"),
            delegated_scope: f.delegated_text("delegated_scope"),
            policy_version: f.text("policy_version"),
            capability_name: f.text("capability_name"),
            capability_version: f.text("capability_version"),
        }
    }
}
