//! Leader-for-life (operator-lib's `leader.Become`, described in seed article 003): the lock is a
//! Lease owned by the leader's Pod through an ownerReference. There are no renewals and no expiry:
//! the leader leads until its Pod is deleted, when the garbage collector deletes the lock and the
//! next candidate takes it. A Pod that was evicted keeps existing (Failed) and would hold the lock
//! forever, so a candidate that finds the holder evicted or failed deletes the lock itself.

use std::time::Duration;

use k8s_openapi::{
    api::{
        coordination::v1::{Lease, LeaseSpec},
        core::v1::Pod,
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{DeleteParams, PostParams, Preconditions},
};
use tokio_util::sync::CancellationToken;

/// First wait between attempts (operator-lib: 1 s, doubling).
pub const FOR_LIFE_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait between attempts (operator-lib: 16 s).
pub const FOR_LIFE_MAX_BACKOFF: Duration = Duration::from_secs(16);

#[derive(Debug, thiserror::Error)]
pub enum ForLifeError {
    #[error("leader-for-life needs the candidate's own Pod: set POD_NAME and POD_NAMESPACE (downward API)")]
    NotInPod,
    #[error("reading this candidate's Pod {namespace}/{name}: {source}")]
    OwnPod {
        namespace: String,
        name: String,
        source: kube::Error,
    },
}

/// A candidate for leadership for life.
pub struct LeaderForLife {
    leases: Api<Lease>,
    pods: Api<Pod>,
    name: String,
    pod_name: String,
}

impl std::fmt::Debug for LeaderForLife {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderForLife")
            .field("name", &self.name)
            .field("pod", &self.pod_name)
            .finish()
    }
}

impl LeaderForLife {
    /// A candidate running in Pod `pod_namespace/pod_name`, locking Lease `name` in that namespace.
    pub fn new(client: Client, pod_namespace: &str, pod_name: &str, name: &str) -> Self {
        Self {
            leases: Api::namespaced(client.clone(), pod_namespace),
            pods: Api::namespaced(client, pod_namespace),
            name: name.to_owned(),
            pod_name: pod_name.to_owned(),
        }
    }

    /// From the `POD_NAME` and `POD_NAMESPACE` environment variables.
    pub fn from_env(client: Client, name: &str) -> Result<Self, ForLifeError> {
        let (Ok(pod), Ok(ns)) = (std::env::var("POD_NAME"), std::env::var("POD_NAMESPACE")) else {
            return Err(ForLifeError::NotInPod);
        };
        Ok(Self::new(client, &ns, &pod, name))
    }

    /// Waits until this candidate holds the lock (true) or `cancel` fires (false).
    pub async fn become_leader(&self, cancel: &CancellationToken) -> Result<bool, ForLifeError> {
        let me = self
            .pods
            .get(&self.pod_name)
            .await
            .map_err(|source| ForLifeError::OwnPod {
                namespace: self.pods.namespace().unwrap_or_default().to_owned(),
                name: self.pod_name.clone(),
                source,
            })?;
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: self.pod_name.clone(),
            uid: me.metadata.uid.clone().unwrap_or_default(),
            controller: None,
            block_owner_deletion: None,
        };
        let lock = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                owner_references: Some(vec![owner]),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.pod_name.clone()),
                acquire_time: Some(MicroTime(Timestamp::now())),
                ..LeaseSpec::default()
            }),
        };
        let mut backoff = FOR_LIFE_INITIAL_BACKOFF;
        loop {
            match self.leases.create(&PostParams::default(), &lock).await {
                Ok(_) => {
                    tracing::info!(lock = %self.name, "became the leader for life");
                    return Ok(true);
                }
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    if let Ok(existing) = self.leases.get(&self.name).await {
                        let holder = existing
                            .spec
                            .as_ref()
                            .and_then(|s| s.holder_identity.clone())
                            .unwrap_or_default();
                        if holder == self.pod_name {
                            return Ok(true); // this Pod already holds it (the process restarted)
                        }
                        if self.holder_is_gone(&holder).await {
                            tracing::info!(lock = %self.name, %holder, "the leader's Pod is evicted or failed; deleting the lock");
                            let dp = DeleteParams {
                                preconditions: Some(Preconditions {
                                    uid: existing.metadata.uid.clone(),
                                    resource_version: None,
                                }),
                                ..DeleteParams::default()
                            };
                            let _ = self.leases.delete(&self.name, &dp).await;
                            continue;
                        }
                        tracing::info!(lock = %self.name, %holder, "not the leader; waiting");
                    }
                }
                Err(e) => tracing::warn!(lock = %self.name, "creating the lock failed: {e}"),
            }
            tokio::select! {
                () = cancel.cancelled() => return Ok(false),
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(FOR_LIFE_MAX_BACKOFF);
        }
    }

    async fn holder_is_gone(&self, holder: &str) -> bool {
        match self.pods.get_opt(holder).await {
            Ok(None) => true,
            Ok(Some(pod)) => {
                let status = pod.status.unwrap_or_default();
                status.phase.as_deref() == Some("Failed") || status.reason.as_deref() == Some("Evicted")
            }
            Err(_) => false,
        }
    }
}
