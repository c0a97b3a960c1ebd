//! Lanes on the executor's path (SPEC §7, L-4…L-7): a project that declares lanes has every
//! call resolved to a lane (the one it names, else the active one), checked against that
//! lane's scope after the policy allowed it, and recorded with the lane's id — denials
//! included, with the `cairn.lane-*` rule that refused them. Lane events (rulings, evidence,
//! handoffs, revalidations) go through the executor so that each is both applied to the
//! [`LaneBook`] and written as a boundary record bound to its lane.
//!
//! Handoffs are C2SP signed notes over the handoff's canonical text, signed and opened with
//! the same keys as checkpoints.

use cairn_core::{Digest, LaneId};
/// The lanes' vocabulary the edges use, from `cairn-lanes`.
pub use cairn_lanes::{HANDOFF_SCHEMA_VERSION, Handoff, LaneBook, LaneEvent, LaneSpec};
use cairn_lanes::{LaneCall, LaneVerdict, Validity};
use cairn_ledger::keys::{SigningKey, TrustedKeys};
use cairn_ledger::record::{BoundaryEvent, Label};
use serde_json::Value;

use crate::error::{RuntimeError, label};
use crate::executor::Executor;
use crate::recorder::{Receipt, ToolCall};

/// Why the lane check refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaneDenial {
    /// The `cairn.lane-*` rule recorded with the denial.
    pub rule: &'static str,
    /// What is wrong, shown to the model.
    pub message: String,
}

impl Executor {
    /// Puts the project's lanes on this executor's path.
    #[must_use]
    pub fn with_lanes(mut self, lanes: LaneBook) -> Self {
        self.lanes = Some(lanes);
        self
    }

    /// The lanes, when the project declares any.
    #[must_use]
    pub const fn lanes(&self) -> Option<&LaneBook> {
        self.lanes.as_ref()
    }

    /// Tells the executor the repository head, policy version and environment as they are
    /// now; a lane validated against others is sent back to review (L-7).
    pub fn set_validity(&mut self, current: Option<Validity>) {
        self.validity = current;
    }

    /// The lane a call is made in: the one it names, else the configured active lane.
    pub(crate) fn resolve_lane(&self, call: &ToolCall<'_>) -> Result<Option<LaneId>, RuntimeError> {
        if call.lane.is_some() {
            return Ok(call.lane.clone());
        }
        match self.lanes.as_ref().and_then(|book| book.active_lane()) {
            Some(active) => Ok(Some(active.parse()?)),
            None => Ok(None),
        }
    }

    /// The lane check of one call the policy allowed; `None` when it passes or no lanes are
    /// configured.
    pub(crate) fn lane_denial(
        &self,
        tool: &str,
        args: Option<&Value>,
        lane: Option<&LaneId>,
    ) -> Option<LaneDenial> {
        let book = self.lanes.as_ref()?;
        let resolve = |raw: &str| {
            self.guard.as_ref().map_or_else(
                || raw.to_owned(),
                |guard| guard.resolve(raw).to_string_lossy().into_owned(),
            )
        };
        let verdict = book.check(&LaneCall {
            principal: self.principal(),
            lane: lane.map(LaneId::as_str),
            tool,
            args,
            current: self.validity.as_ref(),
            resolve: self
                .guard
                .as_ref()
                .map(|_| &resolve as &dyn Fn(&str) -> String),
        });
        match verdict {
            LaneVerdict::Inside { .. } => None,
            LaneVerdict::Denied { rule, reason, .. } => Some(LaneDenial {
                rule,
                message: reason,
            }),
        }
    }

    /// Applies a lane event and records it (a `lane_ruling`, `lane_evidence`,
    /// `lane_handoff` or `lane_revalidated` boundary record naming the lane).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidInput`] when no lanes are configured or the event is refused
    /// (nothing is recorded then); store failures.
    pub fn record_lane_event(&mut self, event: &LaneEvent) -> Result<Receipt, RuntimeError> {
        let book = self
            .lanes
            .as_mut()
            .ok_or_else(|| RuntimeError::InvalidInput {
                field: "lanes",
                reason: "the project declares no lanes".to_owned(),
            })?;
        book.apply(event).map_err(|e| RuntimeError::InvalidInput {
            field: "lane_event",
            reason: e.to_string(),
        })?;
        let (lane, boundary) = match event {
            LaneEvent::Ruling {
                ruling_ref,
                definition,
            } => {
                let mut b = BoundaryEvent::new(label("lane_ruling")?);
                b.evidence_ref = Some(label(ruling_ref)?);
                b.lane_digest =
                    Some(cairn_lanes::config::lane_digest(definition).parse::<Digest>()?);
                (definition.lane_id.as_str(), b)
            }
            LaneEvent::Evidence {
                lane_id,
                evidence_ref,
                passed,
            } => {
                let mut b = BoundaryEvent::new(label("lane_evidence")?);
                b.evidence_ref = Some(label(evidence_ref)?);
                b.reason = Some(label(if *passed { "passed" } else { "failed" })?);
                (lane_id.as_str(), b)
            }
            LaneEvent::Handoff(handoff) => {
                let mut b = BoundaryEvent::new(label("lane_handoff")?);
                b.evidence_ref = Some(label(&format!(
                    "{}->{}",
                    handoff.from_owner, handoff.to_owner
                ))?);
                b.lane_digest = Some(Digest::of(handoff.signed_text().as_bytes()));
                (handoff.lane_id.as_str(), b)
            }
            LaneEvent::Revalidated { lane_id, against } => {
                let mut b = BoundaryEvent::new(label("lane_revalidated")?);
                b.evidence_ref = Some(label(&against.to_ref())?);
                b.lane_digest = Some(against.digest());
                (lane_id.as_str(), b)
            }
        };
        let lane: LaneId = lane.parse()?;
        self.recorder().record_boundary(boundary, Some(lane))
    }

    /// Puts the project's lanes on the path of a run that may already have lane records
    /// (a resumed run): replays its recorded evidence, handoffs and revalidations, then
    /// compares each lane's definition with the one its latest recorded ruling bound. A lane
    /// never ruled in this run, or whose `latest_ruling_ref` moved on, gets a `lane_ruling`
    /// record binding its definition; a lane whose definition changed under the same ruling is
    /// held for review (every call in it denied) — a definition never changes authority
    /// without a ruling. Returns the lanes held for review.
    ///
    /// # Errors
    /// Store failures; a lane record that no longer replays (for example an evidence record
    /// for a lane the project no longer declares).
    pub fn adopt_lanes(
        &mut self,
        book: LaneBook,
        rows: &[cairn_ledger::store::StoredRow],
    ) -> Result<Vec<String>, RuntimeError> {
        let mut book = book;
        let mut ruled: std::collections::BTreeMap<String, (String, Option<Digest>)> =
            std::collections::BTreeMap::new();
        for record in rows.iter().filter_map(|r| r.as_ref().ok()) {
            let (Some(boundary), Some(lane)) = (&record.boundary, &record.lane_id) else {
                continue;
            };
            let lane = lane.as_str();
            let evidence = boundary.evidence_ref.as_ref().map_or("", Label::as_str);
            let event = match boundary.event.as_str() {
                "lane_ruling" => {
                    ruled.insert(lane.to_owned(), (evidence.to_owned(), boundary.lane_digest));
                    None
                }
                "lane_evidence" => Some(LaneEvent::Evidence {
                    lane_id: lane.to_owned(),
                    evidence_ref: evidence.to_owned(),
                    passed: boundary
                        .reason
                        .as_ref()
                        .is_some_and(|r| r.as_str() == "passed"),
                }),
                // Verified when it was recorded; the chain vouches for it since.
                "lane_handoff" => evidence.split_once("->").map(|(from, to)| {
                    LaneEvent::Handoff(Handoff {
                        schema_version: cairn_lanes::HANDOFF_SCHEMA_VERSION.to_owned(),
                        lane_id: lane.to_owned(),
                        from_owner: from.to_owned(),
                        to_owner: to.to_owned(),
                        lane_digest: book
                            .lane(lane)
                            .map(|l| l.digest().to_owned())
                            .unwrap_or_default(),
                        reason: "replayed".to_owned(),
                    })
                }),
                "lane_revalidated" => {
                    Validity::from_ref(evidence).map(|against| LaneEvent::Revalidated {
                        lane_id: lane.to_owned(),
                        against,
                    })
                }
                _ => None,
            };
            if let Some(event) = event {
                book.apply(&event).map_err(|e| RuntimeError::InvalidInput {
                    field: "lane_event",
                    reason: format!("step {} no longer replays: {e}", record.step_index),
                })?;
            }
        }
        let lanes: Vec<(String, cairn_lanes::LaneSpec, String)> = book
            .lanes()
            .map(|l| (l.id().to_owned(), l.spec().clone(), l.digest().to_owned()))
            .collect();
        self.lanes = Some(book);
        let mut held = Vec::new();
        for (id, spec, digest) in lanes {
            let ruling = spec
                .latest_ruling_ref
                .clone()
                .unwrap_or_else(|| "declared".to_owned());
            let current: Option<Digest> = digest.parse().ok();
            match ruled.get(&id) {
                // The definition its latest recorded ruling bound: nothing to do.
                Some((_, bound)) if *bound == current => {}
                Some((recorded, _)) if *recorded == ruling => {
                    let reason = format!(
                        "the definition of lane `{id}` changed without a new ruling (still \
                         `{ruling}`); record the ruling that changed it"
                    );
                    if let Some(book) = self.lanes.as_mut() {
                        book.suspend(&id, reason);
                    }
                    held.push(id);
                }
                _ => {
                    self.record_lane_event(&LaneEvent::Ruling {
                        ruling_ref: ruling,
                        definition: spec,
                    })?;
                }
            }
        }
        Ok(held)
    }

    /// Verifies a signed handoff against `trusted` and records it (L-7).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidInput`] for a note no trusted key signed, a text that is not a
    /// handoff, or a handoff the lanes refuse (wrong owner, stale digest).
    pub fn accept_handoff(
        &mut self,
        note: &str,
        trusted: &TrustedKeys,
    ) -> Result<Receipt, RuntimeError> {
        let handoff = open_handoff(note, trusted)?;
        self.record_lane_event(&LaneEvent::Handoff(handoff))
    }
}

/// Signs a handoff as a C2SP signed note.
///
/// # Errors
/// When the key cannot sign the text.
pub fn sign_handoff(key: &SigningKey, handoff: &Handoff) -> Result<String, RuntimeError> {
    Ok(key
        .sign_note_text(handoff.signed_text().as_bytes())
        .map_err(cairn_ledger::checkpoint::CheckpointError::from)?)
}

/// Opens a signed handoff: a trusted signature, then the handoff text.
///
/// # Errors
/// [`RuntimeError::InvalidInput`] naming what failed.
pub fn open_handoff(note: &str, trusted: &TrustedKeys) -> Result<Handoff, RuntimeError> {
    let (text, _signers) = cairn_ledger::checkpoint::open_note(note, trusted).map_err(|e| {
        RuntimeError::InvalidInput {
            field: "handoff",
            reason: e.to_string(),
        }
    })?;
    Handoff::from_signed_text(&text).map_err(|reason| RuntimeError::InvalidInput {
        field: "handoff",
        reason,
    })
}
