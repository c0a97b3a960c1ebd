//! The caller's tenant's tokens, edited in the service's token file.

use super::Service;
use crate::error::ApiError;
use crate::tokens::{Caller, Role, TokenEntry};

impl Service {
    /// Creates a token in the caller's tenant.
    ///
    /// # Errors
    /// The token file's failures.
    pub fn create_token(
        &self,
        caller: &Caller,
        role: Role,
        label: Option<String>,
    ) -> Result<crate::tokens::NewToken, ApiError> {
        let now = self.config.clock.now();
        let made = self.config.tokens.editor().create(
            caller.tenant.clone(),
            role,
            label,
            jiff::Timestamp::from_microsecond(now.unix_micros()).unwrap_or_default(),
        );
        made.map_err(|e| ApiError::from_error(&e))
    }

    /// The caller's tenant's tokens.
    ///
    /// # Errors
    /// The token file's failures.
    pub fn list_tokens(&self, caller: &Caller) -> Result<Vec<TokenEntry>, ApiError> {
        let all = self.config.tokens.editor().list();
        let all = all.map_err(|e| ApiError::from_error(&e))?;
        Ok(all
            .into_iter()
            .filter(|t| t.tenant == caller.tenant)
            .collect())
    }

    /// Revokes a token of the caller's tenant.
    ///
    /// # Errors
    /// `token_not_found` (also for another tenant's token); the token file's failures.
    pub fn revoke_token(&self, caller: &Caller, id: &str) -> Result<TokenEntry, ApiError> {
        let now = self.config.clock.now();
        let revoked = self.config.tokens.editor().revoke(
            id,
            Some(&caller.tenant),
            jiff::Timestamp::from_microsecond(now.unix_micros()).unwrap_or_default(),
        );
        revoked.map_err(|e| ApiError::from_error(&e).at("path.id"))
    }
}
