//! Retained content (a call's arguments, what the model was shown) read back by the digest a
//! record holds, and re-hashed before anyone sees it (I-4): a content store that was altered
//! shows as altered, never as the record's content.

use cairn_core::{Digest, RunId, TenantId};
use cairn_ledger::store::StoredRow;
use cairn_ledger::{Store, StoreError};

/// What the content store holds for a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retained {
    /// The bytes, which hash to the digest.
    Matches(Vec<u8>),
    /// Bytes that do not hash to the digest: the content store was altered.
    Altered {
        /// What the stored bytes hash to.
        actual: Digest,
    },
    /// Nothing: never retained, or its retention ended.
    Gone,
}

/// The content retained for `digest`, re-hashed against it.
///
/// # Errors
/// The store's failures.
pub fn retained(store: &dyn Store, digest: &Digest) -> Result<Retained, StoreError> {
    Ok(match store.content(digest)? {
        None => Retained::Gone,
        Some(content) => {
            let actual = Digest::of(&content.bytes);
            if actual == *digest {
                Retained::Matches(content.bytes)
            } else {
                Retained::Altered { actual }
            }
        }
    })
}

/// One step read for an incident (`cairn ledger show`, the console's step page): the record,
/// whether its digest matches its content, and its retained arguments and observation, each
/// re-hashed against the digest the record holds.
#[derive(Debug)]
pub struct StepView {
    /// The record, or why it does not read.
    pub row: StoredRow,
    /// Whether the record's digest matches its content.
    pub digest_matches: bool,
    /// Its retained arguments (`None`: the record has none).
    pub args: Option<Retained>,
    /// What the model was shown before it (`None`: the record names nothing).
    pub observation: Option<Retained>,
}

/// Step `step` of `tenant`'s `run`, or `None` when the run has no such record.
///
/// # Errors
/// The store's failures.
pub fn step_view(
    store: &dyn Store,
    tenant: &TenantId,
    run: &RunId,
    step: u64,
) -> Result<Option<StepView>, StoreError> {
    let Some(row) = store.record(tenant, run, step)? else {
        return Ok(None);
    };
    let Ok(record) = row else {
        return Ok(Some(StepView {
            row,
            digest_matches: false,
            args: None,
            observation: None,
        }));
    };
    let digest_matches = record.compute_digest().ok() == Some(record.digest);
    let args = record
        .args
        .as_ref()
        .map(|a| retained(store, &a.digest))
        .transpose()?;
    let observation = record
        .observation_digest
        .map(|d| retained(store, &d))
        .transpose()?;
    Ok(Some(StepView {
        row: Ok(record),
        digest_matches,
        args,
        observation,
    }))
}

/// Retained content as it travels — in the service's answer to `GET
/// /v1/runs/{run}/steps/{step}`, read back by `cairn ledger show` against a service: the text
/// when it re-hashed to the record's digest (bytes that are not UTF-8 are shown with
/// replacement characters), what it hashed to when it did not, or that it is gone.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RetainedText {
    /// It hashes to the record's digest.
    Matches {
        /// The content.
        text: String,
    },
    /// The content store was altered: what its bytes hash to.
    Altered {
        /// What the stored bytes hash to.
        actual_digest: Digest,
    },
    /// Never retained, or its retention ended.
    NotRetained,
}

impl From<&Retained> for RetainedText {
    fn from(retained: &Retained) -> Self {
        match retained {
            Retained::Matches(bytes) => Self::Matches {
                text: String::from_utf8_lossy(bytes).into_owned(),
            },
            Retained::Altered { actual } => Self::Altered {
                actual_digest: *actual,
            },
            Retained::Gone => Self::NotRetained,
        }
    }
}

impl From<RetainedText> for Retained {
    fn from(text: RetainedText) -> Self {
        match text {
            RetainedText::Matches { text } => Self::Matches(text.into_bytes()),
            RetainedText::Altered { actual_digest } => Self::Altered {
                actual: actual_digest,
            },
            RetainedText::NotRetained => Self::Gone,
        }
    }
}

/// A readable step as it travels (the service's `GET /v1/runs/{run}/steps/{step}`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StepText {
    /// The record.
    pub record: cairn_ledger::record::IntentRecord,
    /// Whether its digest matches its content.
    pub digest_matches_content: bool,
    /// Its retained arguments (`None`: it has none).
    pub args: Option<RetainedText>,
    /// What the model was shown before it (`None`: the record names nothing).
    pub observation: Option<RetainedText>,
}

impl StepView {
    /// The step as it travels; `Err` with the row's fault when the record does not read.
    ///
    /// # Errors
    /// The row's fault.
    pub fn to_text(&self) -> Result<StepText, &cairn_ledger::store::RowFault> {
        let record = self.row.as_ref()?;
        Ok(StepText {
            record: record.clone(),
            digest_matches_content: self.digest_matches,
            args: self.args.as_ref().map(RetainedText::from),
            observation: self.observation.as_ref().map(RetainedText::from),
        })
    }
}
