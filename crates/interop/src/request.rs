//! One check as a single JSON document — a line of `cairn vce check --jsonl` /
//! `cairn rlc check --jsonl`, or the body of the service's `POST /v1/vce/check` and
//! `POST /v1/rlc/check` — taken apart into the documents the validators decide:
//!
//! - VCE: `{"envelope": …, "restore"?: …}`;
//! - RLC: `{"extension": …, "restore"? | "restore_results"?: …, "vce"?: …}`.
//!
//! Each member keeps the stand-ins Python's reader would have made in it, so a request decides
//! exactly as its documents would in files. A member that is not known is refused: a misspelt
//! `restore` must not silently mean "no restore results".

use thiserror::Error;

use crate::py_json::PyJson;

/// Why a request document could not be taken apart, and which member is at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct RequestShapeError {
    /// The member at fault (`envelope`, `restore`, …), when one is.
    pub member: Option<String>,
    /// What is wrong, completing "the request …" (e.g. "has no `envelope`").
    pub message: String,
}

impl RequestShapeError {
    fn new(member: Option<&str>, message: String) -> Self {
        Self {
            member: member.map(str::to_owned),
            message,
        }
    }
}

/// A VCE check: the envelope and the restore results observed after the boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct VceRequest {
    /// The envelope.
    pub envelope: PyJson,
    /// The restore results, when given.
    pub restore: Option<PyJson>,
}

impl VceRequest {
    /// The members of one VCE check.
    const MEMBERS: &[&str] = &["envelope", "restore"];

    /// Takes `document` apart.
    ///
    /// # Errors
    /// [`RequestShapeError`] when it is not an object, has no `envelope`, or has another
    /// member.
    pub fn from_document(mut document: PyJson) -> Result<Self, RequestShapeError> {
        is_object(&document)?;
        let envelope = document
            .take_member("envelope")
            .ok_or_else(|| missing("envelope"))?;
        let restore = document.take_member("restore");
        only_these_members(&document, Self::MEMBERS)?;
        Ok(Self { envelope, restore })
    }
}

/// An RLC check: the extension, its lane restore results and the VCE envelope it extends.
#[derive(Debug, Clone, PartialEq)]
pub struct RlcRequest {
    /// The extension.
    pub extension: PyJson,
    /// The restore results (`restore` or `restore_results`), when given.
    pub restore: Option<PyJson>,
    /// The VCE envelope, when given.
    pub vce: Option<PyJson>,
}

impl RlcRequest {
    /// The members of one RLC check.
    const MEMBERS: &[&str] = &["extension", "restore", "restore_results", "vce"];

    /// Takes `document` apart.
    ///
    /// # Errors
    /// [`RequestShapeError`] when it is not an object, has no `extension`, has both
    /// `restore` and `restore_results`, or has another member.
    pub fn from_document(mut document: PyJson) -> Result<Self, RequestShapeError> {
        is_object(&document)?;
        let extension = document
            .take_member("extension")
            .ok_or_else(|| missing("extension"))?;
        let restore = match (
            document.take_member("restore"),
            document.take_member("restore_results"),
        ) {
            (Some(_), Some(_)) => {
                return Err(RequestShapeError::new(
                    Some("restore_results"),
                    "has both `restore` and `restore_results`".to_owned(),
                ));
            }
            (one, other) => one.or(other),
        };
        let vce = document.take_member("vce");
        only_these_members(&document, Self::MEMBERS)?;
        Ok(Self {
            extension,
            restore,
            vce,
        })
    }
}

fn is_object(document: &PyJson) -> Result<(), RequestShapeError> {
    if document.value.is_object() {
        Ok(())
    } else {
        Err(RequestShapeError::new(
            None,
            "is not a JSON object".to_owned(),
        ))
    }
}

fn missing(member: &str) -> RequestShapeError {
    RequestShapeError::new(Some(member), format!("has no `{member}`"))
}

fn only_these_members(rest: &PyJson, known: &[&str]) -> Result<(), RequestShapeError> {
    match rest.value.as_object().and_then(|rest| rest.keys().next()) {
        Some(unknown) => Err(RequestShapeError::new(
            Some(unknown),
            format!(
                "has the unknown member `{unknown}` (known: {})",
                known.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;
    use crate::py_json::parse;

    #[test]
    fn a_vce_request_keeps_each_members_stand_ins() {
        let request = VceRequest::from_document(
            parse(r#"{"envelope": {"a": "\ud800"}, "restore": [1]}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(request.envelope.stand_ins.len(), 1);
        assert_eq!(request.envelope.stand_ins[0].path, "$.a");
        assert_eq!(request.restore.unwrap().value, serde_json::json!([1]));
    }

    #[test]
    fn a_misspelt_member_is_refused_and_named() {
        let error = VceRequest::from_document(parse(r#"{"envelope": {}, "restor": {}}"#).unwrap())
            .unwrap_err();
        assert_eq!(error.member.as_deref(), Some("restor"));
        let error = RlcRequest::from_document(parse(r#"{"vce": {}}"#).unwrap()).unwrap_err();
        assert_eq!(error.member.as_deref(), Some("extension"));
        assert_eq!(error.message, "has no `extension`");
    }

    #[test]
    fn an_rlc_request_takes_either_name_of_the_restore_results_but_not_both() {
        let request = RlcRequest::from_document(
            parse(r#"{"extension": {}, "restore_results": {"x": 1}}"#).unwrap(),
        )
        .unwrap();
        assert!(request.restore.is_some() && request.vce.is_none());
        let error = RlcRequest::from_document(
            parse(r#"{"extension": {}, "restore": {}, "restore_results": {}}"#).unwrap(),
        )
        .unwrap_err();
        assert_eq!(error.member.as_deref(), Some("restore_results"));
        assert!(VceRequest::from_document(parse("[]").unwrap()).is_err());
    }
}
