//! Doing: carries out a [`SyncPlan`] (upstream `claimPods` side effects, `manageReplicas`' writes and
//! `updateReplicaSetStatus`).

use controller::compact_pod::Pod;
use controller::recheck_owner;
use std::{sync::Arc, time::Duration};

use controller::Clock;
use controller::ConsistencyStore;
use controller::ControlError;
use controller::Expectations;
use controller::Owner;
use controller::PodClaims;
use controller::PodControl;
use controller::StaleCache;
use controller::execute_claims;
use controller::slow_start_batch;
use futures::future::join_all;
use informer::ObjectKey;
use k8s_openapi::api::apps::v1::ReplicaSet;
use kube::Client;

use crate::{
    kind::ReplicaKind,
    plan::{ReplicaChange, SyncPlan},
    status::needs_write,
};

/// Why a sync must be retried (with the rate limiter).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("claiming pods for {key}: {source}")]
    Claim { key: ObjectKey, source: ControlError },
    #[error("scaling {key}: {source}")]
    Manage { key: ObjectKey, source: ControlError },
    #[error("updating the status of {key}: {source}")]
    Status { key: ObjectKey, source: ControlError },
    #[error("not syncing {key} yet: {source}")]
    Stale { key: ObjectKey, source: StaleCache },
}

/// The group-resource the consistency store tracks pods under (upstream's name); the controlled
/// kind's is [`ReplicaKind::CONSISTENCY_RESOURCE`].
pub const GR_PODS: &str = "pods";

/// The writes of one controller of kind `K`.
pub struct Executor<P, K = ReplicaSet> {
    pub control: P,
    pub client: Client,
    pub expectations: Arc<Expectations>,
    pub clock: Arc<dyn Clock>,
    /// The resourceVersions this controller wrote, so that no sync runs on a cache older than them.
    pub consistency: Arc<ConsistencyStore>,
    pub kind: std::marker::PhantomData<fn() -> K>,
}

impl<P, K> std::fmt::Debug for Executor<P, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

impl<P: PodControl, K: ReplicaKind> Executor<P, K> {
    /// Adopts and releases the plan's pods ([`execute_claims`]: every one of them whatever fails,
    /// adoption after one fresh read of the owner); the UIDs of orphans found deleted when adopted.
    /// An adoption's resourceVersion goes to the consistency store.
    pub async fn claim(&self, key: &ObjectKey, plan: &SyncPlan) -> Result<Vec<String>, SyncError> {
        let SyncPlan { owner, claims, .. } = plan;
        if claims.adopt.is_empty() && claims.release.is_empty() {
            return Ok(Vec::new());
        }
        let outcome = execute_claims(&PodClaims(&self.control), owner, claims, || {
            recheck_owner::<K>(&self.client, owner, "pods")
        })
        .await;
        for version in &outcome.adopted_versions {
            self.wrote(key, owner, GR_PODS, Some(version));
        }
        outcome.gone_or_first_error().map_err(|source| SyncError::Claim {
            key: key.clone(),
            source,
        })
    }

    /// Scales and writes the status of `obj` (`rs` is its ReplicaSet view, which the plan was made
    /// on), its claims made; returns when to sync again (availability checks).
    pub async fn execute(
        &self,
        key: &ObjectKey,
        obj: &K,
        rs: &ReplicaSet,
        plan: SyncPlan,
    ) -> Result<Option<Duration>, SyncError> {
        let SyncPlan { owner, replicas, .. } = plan;
        let manage = self.manage(key, &owner, rs, &replicas.change).await;
        // As upstream's syncReplicaSet: status and the availability requeue as of after the scaling,
        // which takes seconds when hundreds of pods are created.
        let evaluated_at = self.clock.now();
        let message = manage.as_ref().err().map(ToString::to_string);
        let status = replicas.status_at(rs, message.as_deref(), evaluated_at);
        if needs_write(rs, &status) {
            let written = crate::status_writer::write_status(&self.client, obj, status.clone())
                .await
                .map_err(|source| SyncError::Status {
                    key: key.clone(),
                    source,
                })?;
            if let Some(gr) = K::CONSISTENCY_RESOURCE {
                self.wrote(key, &owner, gr, written.metadata.resource_version.as_deref());
            }
        }
        manage.map_err(|source| SyncError::Manage {
            key: key.clone(),
            source,
        })?;
        Ok(replicas.requeue_at(rs, &status, evaluated_at, self.clock.now()))
    }

    /// Creates or deletes pods, keeping expectations in step: set before the writes, lowered for every
    /// write that failed or was skipped (no watch event will come for those).
    async fn manage(
        &self,
        key: &ObjectKey,
        owner: &Owner,
        rs: &ReplicaSet,
        change: &ReplicaChange,
    ) -> Result<(), ControlError> {
        match change {
            ReplicaChange::None => Ok(()),
            ReplicaChange::Create(n) => {
                tracing::info!(replica_set = %key, creating = n, "too few replicas");
                self.expectations.expect_creations(key.as_str(), *n);
                let template = rs
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.clone())
                    .unwrap_or_default();
                let (created, err) = slow_start_batch(*n, || async {
                    match self.control.create_pod(owner, &template).await {
                        Ok(pod) => {
                            self.wrote(key, owner, GR_PODS, pod.metadata.resource_version.as_deref());
                            Ok(())
                        }
                        // The namespace is going away; no create will ever succeed there.
                        Err(e) if e.is_namespace_terminating() => Ok(()),
                        Err(e) => Err(e),
                    }
                })
                .await;
                for _ in created.len()..*n {
                    self.expectations.creation_observed(key.as_str());
                }
                err.map_or(Ok(()), Err)
            }
            ReplicaChange::Delete(pods) => {
                tracing::info!(replica_set = %key, deleting = pods.len(), "too many replicas");
                self.expectations
                    .expect_deletions(key.as_str(), pods.iter().map(|p| ObjectKey::of(&**p).to_string()));
                let results = join_all(pods.iter().map(|p| self.delete(key, owner, p))).await;
                results.into_iter().find_map(Result::err).map_or(Ok(()), Err)
            }
        }
    }

    /// Remembers a write for the stale-cache gate, for a kind that has one.
    fn wrote(&self, key: &ObjectKey, owner: &Owner, group_resource: &'static str, version: Option<&str>) {
        if K::CONSISTENCY_RESOURCE.is_some() {
            self.consistency
                .wrote_at(key.as_str(), &owner.uid, group_resource, version);
        }
    }

    async fn delete(&self, key: &ObjectKey, owner: &Owner, pod: &Pod) -> Result<(), ControlError> {
        match self.control.delete_pod(owner, pod).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.expectations
                    .deletion_observed(key.as_str(), ObjectKey::of(pod).as_str());
                if e.is_not_found() { Ok(()) } else { Err(e) }
            }
        }
    }
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
