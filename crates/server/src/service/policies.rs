//! Each tenant's policy set. The service's own policies apply to every tenant; a tenant's
//! admin adds policies of its own beside them — which may permit and forbid, but never lift a
//! forbid of the service's (a Cedar forbid wins over any permit). The service does not know
//! Cedar: a [`PolicyAdmin`] it is handed keeps the sets and gives each tenant's runs its gate.

use std::sync::Arc;

use cairn_core::TenantId;
use cairn_runtime::Gate;
use serde::Serialize;
use utoipa::ToSchema;

use super::Service;
use crate::error::ApiError;
use crate::tokens::Caller;

/// One policy file of a tenant's own.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PolicyFile {
    /// Its name (`<name>.cedar`).
    pub name: String,
    /// Its Cedar text.
    pub text: String,
}

/// A tenant's policy set as it is in force.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PolicySetView {
    /// The version of the whole set in force for the tenant (the service's policies and its
    /// own), as steps and envelopes record it.
    pub version: String,
    /// The names of the service's own policy files, which apply to every tenant.
    pub service_files: Vec<String>,
    /// The tenant's own policy files.
    pub tenant_files: Vec<PolicyFile>,
}

/// Keeps every tenant's policy set.
pub trait PolicyAdmin: Send + Sync {
    /// The gate of `tenant`'s calls: the set in force for it now and after any later change
    /// (a run keeps this gate for its whole life).
    fn gate_for(&self, tenant: &TenantId) -> Arc<dyn Gate>;

    /// The set in force for `tenant`.
    ///
    /// # Errors
    /// The files cannot be read.
    fn policies(&self, tenant: &TenantId) -> Result<PolicySetView, ApiError>;

    /// Adds or replaces `tenant`'s policy file `name` with `text`, once the whole set with it
    /// loads; then it is in force for every later decision of the tenant's runs.
    ///
    /// # Errors
    /// `policy_name_invalid` (`path.name`); the set's load error, located (`body`); the file
    /// cannot be written.
    fn put_policy(
        &self,
        tenant: &TenantId,
        name: &str,
        text: &str,
    ) -> Result<PolicySetView, ApiError>;

    /// Removes `tenant`'s policy file `name`.
    ///
    /// # Errors
    /// `policy_not_found`; as [`PolicyAdmin::put_policy`].
    fn delete_policy(&self, tenant: &TenantId, name: &str) -> Result<PolicySetView, ApiError>;
}

impl Service {
    /// The gate of the caller's tenant's calls.
    pub(super) fn gate_of(&self, tenant: &TenantId) -> Arc<dyn Gate> {
        match &self.config.policies {
            Some(admin) => admin.gate_for(tenant),
            None => Arc::clone(&self.config.gate),
        }
    }

    fn policy_admin(&self) -> Result<&Arc<dyn PolicyAdmin>, ApiError> {
        self.config.policies.as_ref().ok_or_else(|| {
            ApiError::new(
                crate::error::ServerCode::POLICIES_UNAVAILABLE,
                "this service's policies are not managed through the API",
            )
        })
    }

    /// The caller's tenant's policy set.
    ///
    /// # Errors
    /// As [`PolicyAdmin::policies`].
    pub fn policy_set(&self, caller: &Caller) -> Result<PolicySetView, ApiError> {
        self.policy_admin()?.policies(&caller.tenant)
    }

    /// Adds or replaces a policy file of the caller's tenant.
    ///
    /// # Errors
    /// As [`PolicyAdmin::put_policy`].
    pub fn put_policy(
        &self,
        caller: &Caller,
        name: &str,
        text: &str,
    ) -> Result<PolicySetView, ApiError> {
        self.policy_admin()?.put_policy(&caller.tenant, name, text)
    }

    /// Removes a policy file of the caller's tenant.
    ///
    /// # Errors
    /// As [`PolicyAdmin::delete_policy`].
    pub fn delete_policy(&self, caller: &Caller, name: &str) -> Result<PolicySetView, ApiError> {
        self.policy_admin()?.delete_policy(&caller.tenant, name)
    }
}
