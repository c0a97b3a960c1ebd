//! A run's responsibility lanes (SPEC §7): the book as the run's records left it, and the
//! lane events a person records in it — rulings, evidence, handoffs signed by the service.
//! Every event is applied to the run's live book and written as a boundary record naming its
//! lane, in the run's chain (`runtime::lanes`).

use std::path::PathBuf;

use cairn_runtime::Receipt;
use cairn_runtime::lanes::{Handoff, LaneBook, LaneEvent, LaneSpec};

use super::Service;
use crate::error::{ApiError, ServerCode};
use crate::tokens::Caller;

/// The lanes file a service puts every run in.
#[derive(Debug, Clone)]
pub struct LanesFile {
    /// `lanes.json` (`cairn.lanes/v1`).
    pub path: PathBuf,
    /// The folder the agents' file paths are judged against (`--agents-root`).
    pub root: PathBuf,
}

/// One lane of a run, as its records left it (answered as is by `GET /v1/runs/{run}/lanes`).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct LaneState {
    /// The lane's id.
    pub lane_id: String,
    /// Its current owner.
    pub owner: String,
    /// `active`, `blocked`, `complete` or `superseded`.
    pub status: String,
    /// The ruling its current definition comes from.
    pub ruling_ref: Option<String>,
    /// Its definition's digest (`sha256:…`, as RLC 0.1 computes it).
    pub digest: String,
    /// The done condition's evidence refs not yet recorded as passing.
    pub missing_evidence: Vec<String>,
    /// Its current definition (a `cairn.lanes/v1` lane).
    #[schema(value_type = Object)]
    pub definition: LaneSpec,
}

impl Service {
    /// The lanes every run is put in, read now; `None` when the service has none.
    ///
    /// # Errors
    /// `service_config` when the file exists and does not load: no run is opened or resumed
    /// without its lanes.
    pub(super) fn lane_book(&self) -> Result<Option<LaneBook>, ApiError> {
        let Some(lanes) = &self.config.lanes else {
            return Ok(None);
        };
        cairn_runtime::config::load_lanes(&lanes.path, &lanes.root).map_err(|e| {
            ApiError::new(
                ServerCode::SERVICE_CONFIG,
                format!("the service's lanes do not load: {e}"),
            )
        })
    }

    /// The run's active lane and every lane as its records left it (rulings, evidence,
    /// handoffs applied); no lanes when the service declares none.
    ///
    /// # Errors
    /// `run_not_found`; store failures.
    pub fn run_lanes(
        &self,
        caller: &Caller,
        run: &cairn_core::RunId,
    ) -> Result<(Option<String>, Vec<LaneState>), ApiError> {
        self.with_executor(caller, run, |executor, _| {
            let Some(book) = executor.lanes() else {
                return Ok((None, Vec::new()));
            };
            let lanes = book
                .lanes()
                .map(|lane| {
                    let id = lane.id();
                    LaneState {
                        lane_id: id.to_owned(),
                        owner: book.owner(id).unwrap_or_default().to_owned(),
                        status: book
                            .status(id)
                            .map_or("unknown", |status| status.as_str())
                            .to_owned(),
                        ruling_ref: book.ruling_ref(id).map(str::to_owned),
                        digest: lane.digest().to_owned(),
                        missing_evidence: book.missing_evidence(id),
                        definition: lane.spec().clone(),
                    }
                })
                .collect();
            Ok((book.active_lane().map(str::to_owned), lanes))
        })
    }

    /// Records a person's ruling in the run: the lane as ruled (`definition`, a
    /// `cairn.lanes/v1` lane) replaces its definition.
    ///
    /// # Errors
    /// `run_not_found` first; `body_invalid` (`body.definition`) for a definition that is not
    /// a lane; `invalid_input` (`body.lane_event`) for a ruling the lanes refuse, `body.lanes`
    /// when the service declares none; store failures.
    pub fn record_ruling(
        &self,
        caller: &Caller,
        run: &cairn_core::RunId,
        ruling_ref: String,
        definition: serde_json::Value,
    ) -> Result<Receipt, ApiError> {
        self.with_executor(caller, run, |executor, _| {
            let definition: LaneSpec = serde_json::from_value(definition).map_err(|e| {
                ApiError::new(ServerCode::BODY_INVALID, format!("not a lane: {e}"))
                    .at("body.definition")
            })?;
            Ok(executor.record_lane_event(&LaneEvent::Ruling {
                ruling_ref,
                definition,
            })?)
        })
    }

    /// Records evidence for a lane's done condition.
    ///
    /// # Errors
    /// As [`Self::record_ruling`].
    pub fn record_lane_evidence(
        &self,
        caller: &Caller,
        run: &cairn_core::RunId,
        lane_id: String,
        evidence_ref: String,
        passed: bool,
    ) -> Result<Receipt, ApiError> {
        let event = LaneEvent::Evidence {
            lane_id,
            evidence_ref,
            passed,
        };
        self.with_executor(caller, run, |executor, _| {
            Ok(executor.record_lane_event(&event)?)
        })
    }

    /// Hands a lane from its current owner to `to_owner`: the handoff, bound to the lane's
    /// current digest, is signed with the service's key, verified and recorded (L-7).
    /// Returns the receipt and the signed note.
    ///
    /// # Errors
    /// `invalid_input` (`body.lane_event`) for a lane the run does not have; as
    /// [`Self::record_ruling`].
    pub fn hand_off_lane(
        &self,
        caller: &Caller,
        run: &cairn_core::RunId,
        lane_id: &str,
        to_owner: String,
        reason: String,
    ) -> Result<(Receipt, String), ApiError> {
        let key = &self.config.signing_key;
        let trusted = &self.config.trusted;
        self.with_executor(caller, run, |executor, _| {
            let no_lane = || {
                ApiError::from(cairn_runtime::RuntimeError::InvalidInput {
                    field: "lane_event",
                    reason: format!("the run has no lane `{lane_id}`"),
                })
            };
            let book = executor.lanes().ok_or_else(no_lane)?;
            let lane = book.lane(lane_id).ok_or_else(no_lane)?;
            let handoff = Handoff {
                schema_version: cairn_runtime::lanes::HANDOFF_SCHEMA_VERSION.to_owned(),
                lane_id: lane_id.to_owned(),
                from_owner: book.owner(lane_id).unwrap_or_default().to_owned(),
                to_owner,
                lane_digest: lane.digest().to_owned(),
                reason,
            };
            let note = cairn_runtime::lanes::sign_handoff(key, &handoff)?;
            // Verified against the service's trusted keys as any handoff is: a service whose
            // own key is not trusted records nothing.
            let receipt = executor.accept_handoff(&note, trusted)?;
            Ok((receipt, note))
        })
    }
}
