//! The service's policy sets: its own (`policies/` and `tools.json` in its folder), in force
//! for every tenant, and beside it each tenant's own files (`tenants/t-<tenant>/policies/`,
//! edited through `/v1/policies` by the tenant's admin), loaded together with the service's —
//! so a tenant's policies may permit and forbid, but never lift a forbid of the service's.
//!
//! SIGHUP reloads every set: the folder's files are read again and, when every set loads,
//! replace the sets in force for every later decision — runs already open included. A set
//! that does not load changes nothing: the sets in force stay, and the log says why. An edit
//! through the API is taken only when the tenant's set with it loads, under a lock on the
//! tenant's folder, and is in force for the tenant's next decision.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use cairn_core::{Digest, TenantId};
use cairn_policy::{PolicyGate, PolicySource, ToolCatalog};
use cairn_runtime::RuntimeError;
use cairn_runtime::layout::{POLICIES_DIR, TENANTS_DIR, tenant_dir, tenant_of_dir};
use cairn_runtime::{Gate, GateRequest, GateVerdict};
use cairn_server::{ApiError, PolicyAdmin, PolicyFile, PolicySetView, ServerCode};

/// How the service's files are named in a tenant's set (a tenant is shown no host path).
const SERVICE_PREFIX: &str = "service/";

/// The longest policy file name, `.cedar` excluded.
const MAX_NAME: usize = 64;

/// The sets in force.
struct Sets {
    /// The service's own set: the gate of every tenant without files of its own.
    service: Arc<PolicyGate>,
    /// The tenants with files of their own: the service's set and theirs.
    tenants: HashMap<TenantId, Arc<PolicyGate>>,
}

/// Where the sets are read from.
struct Folder {
    data: PathBuf,
    policies: PathBuf,
    tools: PathBuf,
}

struct Inner {
    folder: Folder,
    sets: RwLock<Sets>,
    /// Serialises this process's edits (a lock file serialises them across processes).
    editing: Mutex<()>,
}

/// Every tenant's policy set, replaceable while the service runs.
#[derive(Clone)]
pub struct PolicySets(Arc<Inner>);

impl PolicySets {
    /// The sets of the service folder `data`: its `policies` (and the catalog `tools`, when it
    /// exists), and every tenant's own files, loaded now.
    ///
    /// # Errors
    /// A set does not load: the service does not start on it.
    pub fn load(data: PathBuf, policies: PathBuf, tools: PathBuf) -> Result<Self, RuntimeError> {
        let folder = Folder {
            data,
            policies,
            tools,
        };
        let sets = folder.read_all()?;
        Ok(Self(Arc::new(Inner {
            folder,
            sets: RwLock::new(sets),
            editing: Mutex::new(()),
        })))
    }

    /// The gate of the service's own set (and of every tenant without files of its own).
    pub fn service_gate(&self) -> Arc<dyn Gate> {
        Arc::new(SetGate {
            inner: Arc::clone(&self.0),
            tenant: None,
        })
    }

    /// The gate of `tenant`'s own set, when it has files of its own.
    pub fn own_gate(&self, tenant: &TenantId) -> Option<Arc<dyn Gate>> {
        self.0
            .lock_sets()
            .tenants
            .contains_key(tenant)
            .then(|| self.gate_for(tenant))
    }

    /// Reads every set again and puts them in force; returns the service set's version, or
    /// why a set did not load (the sets in force are then unchanged).
    pub fn reload(&self) -> Result<Digest, String> {
        let _editing = self
            .0
            .editing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let sets = self.0.folder.read_all().map_err(|e| e.to_string())?;
        let version = sets.service.version();
        *self.0.sets.write().unwrap_or_else(PoisonError::into_inner) = sets;
        Ok(version)
    }
}

impl Inner {
    fn lock_sets(&self) -> std::sync::RwLockReadGuard<'_, Sets> {
        self.sets.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn in_force(&self, tenant: Option<&TenantId>) -> Arc<PolicyGate> {
        let sets = self.lock_sets();
        let gate = tenant
            .and_then(|t| sets.tenants.get(t))
            .unwrap_or(&sets.service);
        Arc::clone(gate)
    }

    fn view(&self, tenant: &TenantId) -> Result<PolicySetView, ApiError> {
        let service = self.folder.service_sources().map_err(ApiError::from)?;
        let files = self.folder.tenant_files(tenant).map_err(ApiError::from)?;
        Ok(self.view_of(tenant, &service, files))
    }

    /// The view of `tenant`'s set in force, the service's sources and its files in hand.
    fn view_of(
        &self,
        tenant: &TenantId,
        service: &[PolicySource],
        tenant_files: Vec<PolicyFile>,
    ) -> PolicySetView {
        PolicySetView {
            version: self.in_force(Some(tenant)).version().to_string(),
            service_files: service
                .iter()
                .map(|s| s.name.trim_start_matches(SERVICE_PREFIX).to_owned())
                .collect(),
            tenant_files,
        }
    }

    /// Puts `tenant`'s files with `name` replaced by `text` (`None`: removed) in force, once
    /// the set with them loads; then writes the file.
    fn edit(
        &self,
        tenant: &TenantId,
        name: &str,
        text: Option<&str>,
    ) -> Result<PolicySetView, ApiError> {
        check_name(name)?;
        let _editing = self.editing.lock().unwrap_or_else(PoisonError::into_inner);
        let dir = self.folder.tenant_dir(tenant);
        let config = |e: String| ApiError::new(ServerCode::SERVICE_CONFIG, e);
        cairn_runtime::files::create_private_dir(&dir)
            .map_err(|e| config(format!("{}: {e}", dir.display())))?;
        let _lock = cairn_runtime::files::lock_exclusive(&dir.join(".lock"))
            .map_err(|(what, e)| config(format!("cannot {what} the policy lock: {e}")))?;
        let mut files = self.folder.tenant_files(tenant).map_err(ApiError::from)?;
        let found = files.iter().position(|file| file.name == name);
        match (text, found) {
            (Some(text), Some(at)) => {
                if let Some(file) = files.get_mut(at) {
                    text.clone_into(&mut file.text);
                }
            }
            (Some(text), None) => files.push(PolicyFile {
                name: name.to_owned(),
                text: text.to_owned(),
            }),
            (None, Some(at)) => {
                files.remove(at);
            }
            (None, None) => {
                return Err(ApiError::new(
                    ServerCode::POLICY_NOT_FOUND,
                    format!("the tenant has no policy file `{name}`"),
                )
                .at("path.name"));
            }
        }
        let service = self.folder.service_sources().map_err(ApiError::from)?;
        let catalog = self.folder.catalog().map_err(ApiError::from)?;
        let gate = self
            .folder
            .build(&service, &catalog, &files)
            .map_err(|e| ApiError::from(e).at("body"))?;
        let path = dir.join(name);
        let written = match text {
            Some(text) => cairn_runtime::files::replace(&path, 0o600, text.as_bytes()),
            None => std::fs::remove_file(&path).map_err(|e| ("remove", e)),
        };
        written.map_err(|(what, e)| config(format!("cannot {what} `{}`: {e}", path.display())))?;
        let mut sets = self.sets.write().unwrap_or_else(PoisonError::into_inner);
        if files.is_empty() {
            sets.tenants.remove(tenant);
        } else {
            sets.tenants.insert(tenant.clone(), Arc::new(gate));
        }
        drop(sets);
        Ok(self.view_of(tenant, &service, files))
    }
}

impl Folder {
    fn catalog(&self) -> Result<ToolCatalog, RuntimeError> {
        cairn_runtime::config::read_tool_catalog(self.tools.exists().then_some(&*self.tools))
    }

    /// The service's files, named `service/<file>` (a tenant is shown no path of the host).
    fn service_sources(&self) -> Result<Vec<PolicySource>, RuntimeError> {
        Ok(cairn_runtime::config::read_policy_sources(&self.policies)?
            .into_iter()
            .map(|source| PolicySource {
                name: format!("{SERVICE_PREFIX}{}", file_name(&source.name)),
                text: source.text,
            })
            .collect())
    }

    /// The folder of `tenant`'s own files.
    fn tenant_dir(&self, tenant: &TenantId) -> PathBuf {
        tenant_dir(&self.data, tenant).join(POLICIES_DIR)
    }

    /// `tenant`'s own files, by name.
    fn tenant_files(&self, tenant: &TenantId) -> Result<Vec<PolicyFile>, RuntimeError> {
        let dir = self.tenant_dir(tenant);
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let io = |e: std::io::Error| RuntimeError::Io {
            path: dir.clone(),
            reason: e.to_string(),
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = file_name(&path.to_string_lossy()).to_owned();
            if check_name(&name).is_ok() && path.is_file() {
                files.push(PolicyFile {
                    text: cairn_runtime::config::read_text(&path)?,
                    name,
                });
            }
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(files)
    }

    /// The gate of the service's set with `tenant_files` beside it.
    fn build(
        &self,
        service: &[PolicySource],
        catalog: &ToolCatalog,
        tenant_files: &[PolicyFile],
    ) -> Result<PolicyGate, RuntimeError> {
        let mut sources = service.to_vec();
        sources.extend(tenant_files.iter().map(|file| PolicySource {
            name: format!("tenant/{}", file.name),
            text: file.text.clone(),
        }));
        Ok(PolicyGate::load(&sources, catalog)?)
    }

    /// Every set, read from the folder now.
    fn read_all(&self) -> Result<Sets, RuntimeError> {
        let service = self.service_sources()?;
        let catalog = self.catalog()?;
        let mut tenants = HashMap::new();
        let root = self.data.join(TENANTS_DIR);
        if root.is_dir() {
            let io = |e: std::io::Error| RuntimeError::Io {
                path: root.clone(),
                reason: e.to_string(),
            };
            for entry in std::fs::read_dir(&root).map_err(io)? {
                let entry = entry.map_err(io)?;
                let folder = entry.file_name();
                let Some(tenant) = folder.to_str().and_then(tenant_of_dir) else {
                    continue;
                };
                let files = self.tenant_files(&tenant)?;
                if !files.is_empty() {
                    let gate = self.build(&service, &catalog, &files)?;
                    tenants.insert(tenant, Arc::new(gate));
                }
            }
        }
        Ok(Sets {
            service: Arc::new(self.build(&service, &catalog, &[])?),
            tenants,
        })
    }
}

impl PolicyAdmin for PolicySets {
    fn gate_for(&self, tenant: &TenantId) -> Arc<dyn Gate> {
        Arc::new(SetGate {
            inner: Arc::clone(&self.0),
            tenant: Some(tenant.clone()),
        })
    }

    fn policies(&self, tenant: &TenantId) -> Result<PolicySetView, ApiError> {
        self.0.view(tenant)
    }

    fn put_policy(
        &self,
        tenant: &TenantId,
        name: &str,
        text: &str,
    ) -> Result<PolicySetView, ApiError> {
        self.0.edit(tenant, name, Some(text))
    }

    fn delete_policy(&self, tenant: &TenantId, name: &str) -> Result<PolicySetView, ApiError> {
        self.0.edit(tenant, name, None)
    }
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    Path::new(path)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(path)
}

/// `name` is `[a-z0-9_-]{1,64}.cedar`.
fn check_name(name: &str) -> Result<(), ApiError> {
    let stem = name.strip_suffix(".cedar").unwrap_or_default();
    if stem.is_empty()
        || stem.len() > MAX_NAME
        || !stem
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    {
        return Err(ApiError::new(
            ServerCode::POLICY_NAME_INVALID,
            format!(
                "`{name}` is not a policy file name: 1–64 of a-z, 0-9, `-`, `_`, then `.cedar`"
            ),
        )
        .at("path.name"));
    }
    Ok(())
}

/// The gate of one tenant (or of the service's own set): each decision is taken by the set in
/// force at that moment, whose version its verdict carries.
struct SetGate {
    inner: Arc<Inner>,
    tenant: Option<TenantId>,
}

impl Gate for SetGate {
    fn decide(&self, request: &GateRequest<'_>) -> GateVerdict {
        Gate::decide(&*self.inner.in_force(self.tenant.as_ref()), request)
    }

    fn policy_set_version(&self) -> Option<Digest> {
        Gate::policy_set_version(&*self.inner.in_force(self.tenant.as_ref()))
    }
}

/// Reloads `gate` on every SIGHUP, for as long as the runtime runs; logs each outcome.
pub fn reload_on_hangup(gate: PolicySets) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("SIGHUP cannot be caught: the policy set reloads only on a restart");
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let gate = gate.clone();
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
