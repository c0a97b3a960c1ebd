//! Approvals as the service serves them (SPEC T-4): people read their tenant's requests and
//! approvers decide them; a held call may wait for the decision within its admission; new
//! requests are pushed to the operator's webhook. The runtime (`cairn_runtime::approvals`)
//! decides everything; this is who may, and where the records go.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::{RunId, TenantId};
use cairn_runtime::approvals::{ApprovalId, Approvals, Listed, PersonDecision, Waited};

use super::Service;
use crate::error::ApiError;
use crate::tokens::Caller;

/// Where new approval requests are pushed: a JSON `POST` signed with an HMAC of its body.
#[derive(Clone)]
pub struct Webhook {
    /// The receiver (`http://host:port/path` or `https://host[:port]/path`).
    pub endpoint: crate::client::Endpoint,
    /// The path on it.
    pub path: String,
    /// The key of the `X-Cairn-Signature` HMAC.
    pub key: cairn_core::HmacKey,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("endpoint", &self.endpoint)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook at `url` (`http://…` or `https://…`, with a path) signed with `secret`.
    ///
    /// # Errors
    /// A message naming what is wrong with the URL or the secret.
    pub fn new(url: &str, secret: &[u8]) -> Result<Self, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
        let (host, path) = rest
            .split_once('/')
            .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
        let endpoint: crate::client::Endpoint = format!("{scheme}://{host}")
            .parse()
            .map_err(|e: crate::client::ClientError| e.to_string())?;
        if matches!(endpoint, crate::client::Endpoint::Unix(_)) {
            return Err(format!("`{url}` is not an http:// or https:// URL"));
        }
        if secret.len() < 16 {
            return Err("the webhook secret must be at least 16 bytes".to_owned());
        }
        let key =
            cairn_core::HmacKey::new("webhook", secret.to_vec()).map_err(|e| e.to_string())?;
        Ok(Self {
            endpoint,
            path,
            key,
        })
    }
}

/// How the service treats held calls.
#[derive(Debug, Clone, Default)]
pub struct ApprovalSettings {
    /// The longest a step's admission may wait for a person (`hold_seconds` in the request is
    /// capped by it; zero: never holds).
    pub max_hold: Duration,
    /// How long a request waits for a person.
    pub request_ttl: Option<jiff::SignedDuration>,
    /// Where new requests are pushed, if anywhere.
    pub webhook: Option<Webhook>,
}

/// How long a webhook receiver has to answer.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(5);

impl Service {
    fn approvals(&self) -> Approvals {
        Approvals::new(
            Arc::clone(&self.config.store),
            Arc::clone(&self.config.clock),
        )
    }

    /// The requests of the caller's tenant: those waiting, or (`all`) every one of its open
    /// and closed runs.
    ///
    /// # Errors
    /// Store failures.
    pub fn list_approvals(&self, caller: &Caller, all: bool) -> Result<Vec<Listed>, ApiError> {
        let listed = self.approvals().list(Some(&caller.tenant), all)?;
        Ok(listed
            .into_iter()
            .filter(|l| all || l.state == cairn_runtime::approvals::ApprovalState::Pending)
            .collect())
    }

    /// The request `id` of the caller's tenant.
    ///
    /// # Errors
    /// `approval_id_invalid`, `approval_not_found` (another tenant's reads as missing).
    pub fn approval(&self, caller: &Caller, id: &str) -> Result<Listed, ApiError> {
        let id = ApprovalId::parse(id).map_err(|e| ApiError::from_error(&e).at("path.id"))?;
        Ok(self.approvals().find(Some(&caller.tenant), &id)?)
    }

    /// Records an approver's decision on the request `id`: with the run's live writer when
    /// this replica holds the run (so that it never meets a record it did not write), else
    /// with a writer of its own.
    ///
    /// # Errors
    /// As [`Approvals::decide`]: `approval_state_conflict` when it was decided already (by
    /// whom is said), `approval_run_closed`, `approval_not_found`.
    pub fn decide_approval(
        &self,
        caller: &Caller,
        id: &str,
        decision: &PersonDecision,
        note: Option<&str>,
    ) -> Result<Listed, ApiError> {
        let id = ApprovalId::parse(id).map_err(|e| ApiError::from_error(&e).at("path.id"))?;
        let approvals = self.approvals();
        let approver = format!("token:{}", caller.token_id);
        let found = approvals.open_request(Some(&caller.tenant), &id)?;
        let run = found.approval.request.run.clone();
        let live = self
            .lock_live()
            .get(&(caller.tenant.clone(), run.clone()))
            .cloned();
        if let Some(live) = live {
            let (_committing, mut guard) = live.lock_to_commit();
            if let Some(executor) = guard.executor.as_mut() {
                approvals.decide_on(executor.recorder(), &id, decision, &approver, note)?;
                drop(guard);
                return Ok(approvals.read_again(&found, &id)?);
            }
        }
        Ok(approvals.decide_found(&found, &id, decision, &approver, note)?)
    }

    /// Waits up to `hold` for a person to decide the request `id` of `run`.
    ///
    /// # Errors
    /// Store failures.
    pub fn wait_for_approval(
        &self,
        tenant: &TenantId,
        run: &RunId,
        id: &str,
        hold: Duration,
    ) -> Result<Waited, ApiError> {
        let id = ApprovalId::parse(id).map_err(|e| ApiError::from_error(&e))?;
        Ok(self.approvals().wait(tenant, run, &id, hold)?)
    }

    /// The longest a step's admission may hold a call for a person.
    #[must_use]
    pub fn max_approval_hold(&self) -> Duration {
        self.config.approvals.max_hold
    }

    /// Pushes the new request `id` to the webhook, if one is set: in the background, logged,
    /// never failing the call it belongs to. The body names the request, its run and tool,
    /// and the digest of the arguments — never the arguments.
    pub fn notify_approval(self: &Arc<Self>, tenant: &TenantId, run: &RunId, id: &str) {
        let Some(webhook) = self.config.approvals.webhook.clone() else {
            return;
        };
        let Ok(approval) = ApprovalId::parse(id) else {
            return;
        };
        let (service, tenant, run) = (Arc::clone(self), tenant.clone(), run.clone());
        tokio::spawn(async move {
            // The request is read from its run on the blocking pool, never on this thread.
            let reading = Arc::clone(&service);
            let (t, r) = (tenant.clone(), run.clone());
            let read =
                tokio::task::spawn_blocking(move || reading.approvals().of_run(&t, &r)).await;
            let Some(request) = read
                .ok()
                .and_then(Result::ok)
                .and_then(|book| book.get(&approval).map(|a| a.request.clone()))
            else {
                tracing::warn!(approval = %approval, run = %run, "approval request not pushed: not found in its run");
                return;
            };
            let body = serde_json::json!({
                "type": "cairn.approval_requested",
                "approval_id": request.id,
                "tenant_id": request.tenant,
                "run_id": request.run,
                "step": request.step,
                "tool": request.tool.name,
                "tool_version": request.tool.version,
                "action_digest": request.action_digest,
                "policy_set_version": request.policy_set_version,
                "call_id": request.call_id,
                "requested_at": request.requested_at,
                "expires_at": request.expires_at,
                "decide_with": format!("cairn approvals approve {approval}"),
            });
            let bytes = body.to_string().into_bytes();
            let signature = webhook.key.digest(&bytes).to_string();
            let sent = crate::client::send_with_headers(
                &webhook.endpoint,
                "POST",
                &webhook.path,
                None,
                &[("x-cairn-signature", signature)],
                Some(bytes),
                WEBHOOK_TIMEOUT,
            )
            .await;
            match sent {
                Ok(answer) if (200..300).contains(&answer.status) => {
                    tracing::info!(approval = %approval, run = %run, "approval request pushed to the webhook");
                }
                Ok(answer) => {
                    tracing::warn!(approval = %approval, run = %run, status = answer.status, "the approval webhook refused the request");
                }
                Err(error) => {
                    tracing::warn!(approval = %approval, run = %run, error = %error, "the approval webhook did not answer");
                }
            }
        });
    }
}
