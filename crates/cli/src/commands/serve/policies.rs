//! The service's policy set, reloaded on SIGHUP without a restart: the folder's `policies/`
//! and `tools.json` are read again and, when they load, replace the set in force for every
//! later decision — runs already open included. A set that does not load (a syntax error, a
//! tool the catalog does not declare, an unreadable file) changes nothing: the set in force
//! stays, and the log says why.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use cairn_core::Digest;
use cairn_policy::PolicyGate;
use cairn_runtime::executor::{Gate, GateRequest, GateVerdict, UnreadableArguments};

/// A policy gate whose set can be replaced while the service runs. Each decision is taken
/// by one set, whose version its verdict carries.
pub struct ReloadableGate {
    current: RwLock<Arc<PolicyGate>>,
    policies: PathBuf,
    tools: PathBuf,
}

impl ReloadableGate {
    /// The gate for the set at `policies` (and the catalog `tools`, when it exists), loaded now.
    ///
    /// # Errors
    /// The set does not load.
    pub fn load(policies: PathBuf, tools: PathBuf) -> Result<Self, cairn_runtime::RuntimeError> {
        let gate = Self::read(&policies, &tools)?;
        Ok(Self {
            current: RwLock::new(Arc::new(gate)),
            policies,
            tools,
        })
    }

    fn read(
        policies: &std::path::Path,
        tools: &std::path::Path,
    ) -> Result<PolicyGate, cairn_runtime::RuntimeError> {
        cairn_runtime::project::load_gate(policies, tools.exists().then_some(tools))
    }

    fn in_force(&self) -> Arc<PolicyGate> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Reads the set again and puts it in force; returns its version, or why it did not load
    /// (the set in force is then unchanged).
    pub fn reload(&self) -> Result<Digest, String> {
        let gate = Self::read(&self.policies, &self.tools).map_err(|e| e.to_string())?;
        let version = gate.version();
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(gate);
        Ok(version)
    }
}

impl Gate for ReloadableGate {
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        Gate::decide(&*self.in_force(), request)
    }

    fn policy_set_version(&self) -> Option<Digest> {
        Gate::policy_set_version(&*self.in_force())
    }

    fn refuse_unreadable(&self, unreadable: &UnreadableArguments) -> GateVerdict {
        Gate::refuse_unreadable(&*self.in_force(), unreadable)
    }
}

/// Reloads `gate` on every SIGHUP, for as long as the runtime runs; logs each outcome.
pub fn reload_on_hangup(gate: Arc<ReloadableGate>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("SIGHUP cannot be caught: the policy set reloads only on a restart");
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let gate = Arc::clone(&gate);
            let reloaded = tokio::task::spawn_blocking(move || gate.reload()).await;
            match reloaded {
                Ok(Ok(version)) => {
                    tracing::info!(%version, "policy set reloaded: in force for every later decision");
                }
                Ok(Err(reason)) => tracing::warn!(
                    %reason,
                    "policy set not reloaded: it does not load, the set in force is kept"
                ),
                Err(_) => tracing::warn!("policy set not reloaded: the reload failed internally"),
            }
        }
    });
}
