//! Where the client CA comes from: `--client-ca-file`, or the API server's own
//! `kube-system/extension-apiserver-authentication` ConfigMap (key `client-ca-file`), which
//! kube-controller-manager reads unless `--authentication-skip-lookup` is set.
//!
//! The file is read once at start (a bad file stops the process, as in KCM). The ConfigMap is read
//! at start and again every [`CONFIGMAP_REFRESH`], so a rotated API server CA is picked up; while
//! it cannot be read, the last bundle stays in use, and with none client certificates are ignored
//! (the request falls through to tokens, then anonymous), as KCM's dynamic CA controller does.

use std::{path::PathBuf, sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use parking_lot::RwLock;
use tokio_util::sync::CancellationToken;

use super::client_cert::ClientCa;
use crate::error::ServingError;

/// The ConfigMap the API server publishes its authentication configuration in
/// (k8s.io/apiserver `authenticationConfigMapNamespace`/`Name`).
pub const AUTHENTICATION_CONFIGMAP_NAMESPACE: &str = "kube-system";
pub const AUTHENTICATION_CONFIGMAP_NAME: &str = "extension-apiserver-authentication";
/// Its key holding the client CA bundle.
pub const CLIENT_CA_KEY: &str = "client-ca-file";
/// How often the ConfigMap is read again (KCM's `DynamicCAFromConfigMapController` resyncs every
/// minute).
pub const CONFIGMAP_REFRESH: Duration = Duration::from_secs(60);

#[derive(Clone)]
pub enum ClientCaSource {
    File(PathBuf),
    ConfigMap(kube::Client),
}

impl std::fmt::Debug for ClientCaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientCaSource::File(p) => f.debug_tuple("File").field(p).finish(),
            ClientCaSource::ConfigMap(_) => f.write_str("ConfigMap"),
        }
    }
}

/// The current client CA; `None` until one has been read.
#[derive(Debug, Default)]
pub struct DynamicClientCa {
    current: RwLock<Option<Arc<ClientCa>>>,
}

impl DynamicClientCa {
    pub fn current(&self) -> Option<Arc<ClientCa>> {
        self.current.read().clone()
    }

    pub fn set(&self, ca: Option<ClientCa>) {
        *self.current.write() = ca.map(Arc::new);
    }

    /// Loads from `source` and, for the ConfigMap, keeps it fresh until `cancel` fires.
    pub async fn start(
        self: &Arc<Self>,
        source: ClientCaSource,
        cancel: CancellationToken,
    ) -> Result<(), ServingError> {
        match source {
            ClientCaSource::File(path) => {
                let pem = tokio::fs::read(&path).await.map_err(|e| ServingError::ClientCa {
                    source_name: path.display().to_string(),
                    reason: e.to_string(),
                })?;
                let ca = ClientCa::from_pem(&pem).map_err(|reason| ServingError::ClientCa {
                    source_name: path.display().to_string(),
                    reason,
                })?;
                tracing::info!(file = %path.display(), certificates = ca.len(), "client CA loaded");
                self.set(Some(ca));
            }
            ClientCaSource::ConfigMap(client) => {
                let api: Api<ConfigMap> = Api::namespaced(client, AUTHENTICATION_CONFIGMAP_NAMESPACE);
                self.refresh(&api).await;
                let me = self.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            () = cancel.cancelled() => return,
                            () = tokio::time::sleep(CONFIGMAP_REFRESH) => me.refresh(&api).await,
                        }
                    }
                });
            }
        }
        Ok(())
    }

    async fn refresh(&self, api: &Api<ConfigMap>) {
        let name = format!("{AUTHENTICATION_CONFIGMAP_NAMESPACE}/{AUTHENTICATION_CONFIGMAP_NAME}");
        match api.get_opt(AUTHENTICATION_CONFIGMAP_NAME).await {
            Ok(cm) => {
                let pem = cm
                    .and_then(|cm| cm.data)
                    .and_then(|mut d| d.remove(CLIENT_CA_KEY));
                match pem.map(|p| ClientCa::from_pem(p.as_bytes())) {
                    Some(Ok(ca)) => {
                        let changed = self.current().is_none_or(|c| c.fingerprint() != ca.fingerprint());
                        if changed {
                            tracing::info!(configmap = %name, certificates = ca.len(), "client CA loaded");
                        }
                        self.set(Some(ca));
                    }
                    Some(Err(reason)) => {
                        tracing::warn!(configmap = %name, %reason, "client CA unreadable; keeping the last one")
                    }
                    None => {
                        tracing::warn!(configmap = %name, key = CLIENT_CA_KEY, "no client CA published; client certificates are not authenticated");
                        self.set(None);
                    }
                }
            }
            Err(e) => tracing::warn!(
                configmap = %name,
                error = %e,
                "cannot read the client CA (bind the extension-apiserver-authentication-reader Role, or set --client-ca-file or --authentication-skip-lookup)"
            ),
        }
    }
}
