//! What an investigator reads of a run: its verification, its bundle, a record's proof; and
//! whether the store answers at all.

use cairn_core::{RunId, TenantId};

use super::Service;
use crate::error::{ApiError, ServerCode};
use crate::tokens::Caller;

impl Service {
    /// Whether the store answers (`/readyz`).
    ///
    /// # Errors
    /// The store's failure.
    pub fn ready(&self) -> Result<(), ApiError> {
        let tenant = TenantId::new("cairn-readiness")?;
        let run = RunId::new("probe")?;
        self.config.store.run(&tenant, &run)?;
        Ok(())
    }

    /// Verifies a stored run against the service's trusted keys.
    ///
    /// # Errors
    /// `run_not_found`; store failures.
    pub fn verify(
        &self,
        caller: &Caller,
        run: &RunId,
    ) -> Result<cairn_runtime::ledger::verify::RunReport, ApiError> {
        self.run_info(caller, run)?;
        let store = &self.config.store;
        let rows = store.rows(&caller.tenant, run)?;
        let note = store.checkpoint(&caller.tenant, run)?;
        Ok(cairn_runtime::ledger::verify::verify_run(
            &caller.tenant,
            run,
            &rows,
            note.as_deref(),
            &self.config.trusted,
            cairn_runtime::ledger::verify::CheckpointPolicy::WhenTerminated,
        ))
    }

    /// The run's signed checkpoint (a C2SP signed note: origin, size, Merkle root, then the
    /// signatures), when it has one — as stored: [`Service::verify`] says whether it verifies.
    ///
    /// # Errors
    /// `run_not_found`; store failures.
    pub fn checkpoint_note(
        &self,
        caller: &Caller,
        run: &RunId,
    ) -> Result<Option<String>, ApiError> {
        self.run_info(caller, run)?;
        Ok(self.config.store.checkpoint(&caller.tenant, run)?)
    }

    /// Verifies a posted evidence bundle against the service's trusted keys, its signed
    /// checkpoint required, reading nothing from the store: as `cairn ledger verify --bundle`
    /// on the service's host.
    ///
    /// # Errors
    /// The bundle's errors when it cannot be a bundle at all; `bundle_other_tenant` for a
    /// bundle of another tenant than the caller's.
    pub fn verify_bundle(
        &self,
        caller: &Caller,
        bytes: &[u8],
    ) -> Result<cairn_runtime::ledger::verify::RunReport, ApiError> {
        let bundle = cairn_runtime::ledger::bundle::parse_bundle_bytes(bytes)?;
        if bundle.tenant_id != caller.tenant {
            return Err(ApiError::new(
                ServerCode::BUNDLE_OTHER_TENANT,
                "the bundle is of another tenant than the token's",
            )
            .at("body"));
        }
        Ok(bundle.verify(&self.config.trusted))
    }

    /// A run's evidence bundle (JSON lines).
    ///
    /// # Errors
    /// `run_not_found`; `stored_record_unreadable`; store failures.
    pub fn bundle(&self, caller: &Caller, run: &RunId) -> Result<String, ApiError> {
        self.run_info(caller, run)?;
        let store = &self.config.store;
        let rows = store.rows(&caller.tenant, run)?;
        let note = store.checkpoint(&caller.tenant, run)?;
        cairn_runtime::ledger::bundle::write_bundle(&caller.tenant, run, &rows, note).map_err(
            |fault| {
                ApiError::new(
                    ServerCode::STORED_RECORD_UNREADABLE,
                    format!(
                        "step {}: {} (verify the run)",
                        fault.step_index, fault.detail
                    ),
                )
            },
        )
    }

    /// The inclusion proof of the record at `step` of a closed run.
    ///
    /// # Errors
    /// `run_not_found`, `run_not_closed`, `record_not_found`; store failures.
    pub fn prove(
        &self,
        caller: &Caller,
        run: &RunId,
        step: u64,
    ) -> Result<cairn_runtime::ledger::proof::InclusionProof, ApiError> {
        self.run_info(caller, run)?;
        let store = &self.config.store;
        let note = store.checkpoint(&caller.tenant, run)?.ok_or_else(|| {
            ApiError::new(
                ServerCode::RUN_NOT_CLOSED,
                format!("run `{run}` has no signed checkpoint yet: proofs need a closed run"),
            )
        })?;
        let record = store
            .record(&caller.tenant, run, step)?
            .ok_or_else(|| {
                ApiError::new(
                    ServerCode::RECORD_NOT_FOUND,
                    format!("run `{run}` has no step {step}"),
                )
                .at("path.step")
            })?
            .map_err(|fault| ApiError::new(ServerCode::STORED_RECORD_UNREADABLE, fault.detail))?;
        let digests = store.digests(&caller.tenant, run)?;
        cairn_runtime::ledger::proof::build_proof(record, &digests, note)
            .map_err(|e| ApiError::from_error(&e))
    }
}
