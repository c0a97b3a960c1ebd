//! The hook events `cairn hook` forwards to the service (`CAIRN_SERVER`), answered by the
//! same engine as locally (`cairn_hooks::handle`), with the service's folder as the project:
//! its policies, lanes and `hooks.json`, its key, its store, and a session folder of its own.
//! Every run is recorded under the agent token's tenant and named after its id.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::SystemClock;
use cairn_hooks::project::{Binding, Project};
use cairn_hooks::{Environment, Host, Namespace, StoreLocation};
use cairn_ledger::Store;
use cairn_server::tokens::Caller;
use cairn_server::{ApiError, HookAnswerer, ServerCode};

/// The hooks engine over the service's folder.
pub struct ServiceHooks {
    project: Project,
    keys: PathBuf,
    store: Arc<dyn Store>,
    gates: Arc<cairn_runtime::config::GateCache>,
    /// The tenants' policy sets: a tenant with files of its own is judged by its set.
    sets: super::policies::PolicySets,
}

impl ServiceHooks {
    /// Hooks answered over the folder `data`, the keys in `keys` and `store`, judging the
    /// agents' paths against `root`.
    pub fn new(
        data: &Path,
        root: &Path,
        keys: PathBuf,
        store: Arc<dyn Store>,
        sets: super::policies::PolicySets,
    ) -> Self {
        Self {
            project: Project::folder(data, root),
            keys,
            store,
            gates: Arc::default(),
            sets,
        }
    }
}

impl ServiceHooks {
    /// How long after a boundary a decision may still be observed (the folder's
    /// `hooks.json`, 10 minutes by default): the service's comparisons use the hooks' window.
    ///
    /// # Errors
    /// A `hooks.json` that does not load: the service does not start on it.
    pub fn decision_window(&self) -> Result<jiff::SignedDuration, crate::failure::Failure> {
        cairn_hooks::config::HookConfig::load(&self.project)
            .map(|config| config.decision_window)
            .map_err(|e| crate::failure::Failure::from_error(&e))
    }
}

impl HookAnswerer for ServiceHooks {
    fn answer(
        &self,
        caller: &Caller,
        host: &str,
        input: &[u8],
    ) -> Result<serde_json::Value, ApiError> {
        let host: Host = host.parse().map_err(|_| {
            ApiError::new(
                ServerCode::HOOK_HOST_UNKNOWN,
                format!("no hook host `{host}` (claude-code or codex)"),
            )
            .at("path.host")
        })?;
        let env = Environment {
            clock: Arc::new(SystemClock),
            // The service's own store, open already: the opener is never asked for it.
            stores: Arc::new(crate::store::HookStores::LongLived),
            store: Some(StoreLocation::Open(Arc::clone(&self.store))),
            keys_dir: Some(self.keys.clone()),
            fault: None,
            gates: Arc::clone(&self.gates),
            binding: Binding {
                fixed: Some(self.project.clone()),
                explicit: None,
                index: None,
                home: None,
            },
            namespace: Some(Namespace {
                tenant: caller.tenant.clone(),
                run_prefix: caller.token_id.clone(),
                principal: caller.principal(),
            }),
            // A tenant with policies of its own is judged by its set; any other by the
            // folder's files, read on every call as the local hooks read them.
            gate: self.sets.own_gate(&caller.tenant),
        };
        let answer = cairn_hooks::handle(host, input, &env);
        serde_json::to_value(&answer)
            .map_err(|e| ApiError::new(ServerCode::INTERNAL, e.to_string()))
    }
}
