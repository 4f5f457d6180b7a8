//! Carrying out adoption and release decisions, for any kind (upstream `ClaimObject`'s side effects
//! and `RecheckDeletionTimestamp`).

use crate::compact_pod::Pod;
use std::{fmt::Debug, future::Future, sync::Arc};

use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use serde_json::Value;

use crate::{
    errors::ControlError,
    pod_control::PodControl,
    ref_manager::{ClaimPlan, Owner, adopt_patch, release_patch},
};

/// The writes a claim makes for one kind: pods go through [`PodControl`], ReplicaSets through a
/// plain patch, and the Job controller adds or removes its tracking finalizer in the same patch.
pub trait ClaimWrites<K>: Sync {
    /// The adoption patch of `obj`; by default [`adopt_patch`].
    fn adopt_patch(&self, owner: &Owner, obj: &K) -> Value;

    /// The release patch of `obj`; by default [`release_patch`].
    fn release_patch(&self, owner: &Owner, obj: &K) -> Value;

    /// Sends `patch` (a strategic merge guarded by the object's UID); the resourceVersion it wrote,
    /// when known.
    fn patch(
        &self,
        obj: &K,
        patch: &Value,
    ) -> impl Future<Output = Result<Option<String>, ControlError>> + Send;
}

/// Pods claimed through a [`PodControl`] with the plain patches.
#[derive(Debug)]
pub struct PodClaims<'a, P>(pub &'a P);

impl<P: PodControl> ClaimWrites<Pod> for PodClaims<'_, P> {
    fn adopt_patch(&self, owner: &Owner, pod: &Pod) -> Value {
        adopt_patch(owner, pod.metadata.uid.as_deref().unwrap_or(""))
    }

    fn release_patch(&self, owner: &Owner, pod: &Pod) -> Value {
        release_patch(&owner.uid, pod.metadata.uid.as_deref().unwrap_or(""))
    }

    async fn patch(&self, pod: &Pod, patch: &Value) -> Result<Option<String>, ControlError> {
        let m = &pod.metadata;
        let (ns, name) = (
            m.namespace.as_deref().unwrap_or(""),
            m.name.as_deref().unwrap_or(""),
        );
        let written = self.0.patch_pod_returning(ns, name, patch).await?;
        Ok(written.and_then(|w| w.metadata.resource_version))
    }
}

/// What adoption and release achieved.
#[derive(Debug)]
pub struct ClaimOutcome<K> {
    /// Objects now controlled by the owner (the cached objects, as upstream returns them).
    pub adopted: Vec<Arc<K>>,
    /// The resourceVersions the adoption patches produced (where the writer reports them): the
    /// caller's consistency store waits for its cache to reach them, as upstream's `PatchPod` feeds
    /// `OnWrite`. Releases are not reported: upstream's callback keys the write by the object's
    /// controller, which a released object no longer has.
    pub adopted_versions: Vec<String>,
    /// Orphans found gone when adopted: not the owner's, and no failure (upstream's `ClaimObject`
    /// ignores NotFound); a plan that counted them must be made again without them.
    pub gone: Vec<Arc<K>>,
    /// Failures, in the order the claims were made, each naming its object.
    pub errors: Vec<ControlError>,
}

impl<K> ClaimOutcome<K> {
    /// The first failure, which fails the sync once every claim was tried (upstream aggregates
    /// them; the count goes to the log).
    pub fn first_error(self) -> Option<ControlError> {
        if self.errors.len() > 1 {
            tracing::warn!(
                failures = self.errors.len(),
                "claims failed more than once; reporting the first"
            );
        }
        self.errors.into_iter().next()
    }
}

impl<K: Resource> ClaimOutcome<K> {
    /// What the sync goes on with: the UIDs of the orphans found gone (to plan again without), or
    /// the first failure.
    pub fn gone_or_first_error(self) -> Result<Vec<String>, ControlError> {
        let gone = self
            .gone
            .iter()
            .map(|o| o.meta().uid.clone().unwrap_or_default())
            .collect();
        self.first_error().map_or(Ok(gone), Err)
    }
}

/// Adopts `plan.adopt` and releases `plan.release`, every one of them whatever fails, as upstream's
/// `ClaimObject` loop does. `can_adopt` is asked once, and only if there is something to adopt
/// ([`recheck_owner`]); if it refuses, nothing is adopted, the releases are still made, and the
/// refusal is the outcome's first error. A release of an object that is gone, or whose UID
/// precondition fails (recreated under the same name, refused as Invalid), is done.
pub async fn execute_claims<K, W, F, Fut>(
    writes: &W,
    owner: &Owner,
    plan: &ClaimPlan<K>,
    can_adopt: F,
) -> ClaimOutcome<K>
where
    W: ClaimWrites<K>,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), ControlError>>,
{
    let mut out = ClaimOutcome {
        adopted: Vec::new(),
        adopted_versions: Vec::new(),
        gone: Vec::new(),
        errors: Vec::new(),
    };
    if !plan.adopt.is_empty() {
        match can_adopt().await {
            Ok(()) => {
                for obj in &plan.adopt {
                    match writes.patch(obj, &writes.adopt_patch(owner, obj)).await {
                        Ok(version) => {
                            out.adopted.push(obj.clone());
                            out.adopted_versions.extend(version);
                        }
                        Err(e) if e.is_not_found() => out.gone.push(obj.clone()),
                        Err(e) => out.errors.push(e),
                    }
                }
            }
            Err(e) => out.errors.push(e),
        }
    }
    for obj in &plan.release {
        match writes.patch(obj, &writes.release_patch(owner, obj)).await {
            Err(e) if !(e.is_not_found() || e.is_invalid()) => out.errors.push(e),
            _ => {}
        }
    }
    out
}

/// The fresh read before adopting (upstream `RecheckDeletionTimestamp`, kubernetes/kubernetes#42639):
/// the owner must still exist with the same UID and not be being deleted, or nothing is adopted; a
/// cached owner may be a deleted one's ghost. `adopting` names what would have been adopted
/// (`pods`, `replica sets`), for the error.
pub async fn recheck_owner<K>(client: &Client, owner: &Owner, adopting: &str) -> Result<(), ControlError>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned,
{
    let kind = K::kind(&());
    let api: Api<K> = Api::namespaced(client.clone(), &owner.namespace);
    let fresh = api
        .get(&owner.name)
        .await
        .map_err(|e| ControlError::api(get_verb(&kind), owner.key(), e))?;
    let refused = |message: String| ControlError::Refused {
        what: format!("adopting {adopting} for {kind} {}", owner.key()),
        message,
    };
    let meta = fresh.meta();
    if meta.uid.as_deref() != Some(owner.uid.as_str()) {
        return Err(refused(format!(
            "original {kind} {} is gone: got uid {}, wanted {}",
            owner.key(),
            meta.uid.as_deref().unwrap_or_default(),
            owner.uid
        )));
    }
    if meta.deletion_timestamp.is_some() {
        return Err(refused(format!("{kind} {} has just been deleted", owner.key())));
    }
    Ok(())
}

/// The error's verb for a fresh read of an object of `kind` (`ControlError` verbs are static).
pub fn get_verb(kind: &str) -> &'static str {
    match kind {
        "ReplicaSet" => "get replicaset",
        "ReplicationController" => "get replicationcontroller",
        "Deployment" => "get deployment",
        "Job" => "get job",
        _ => "get owner",
    }
}

#[cfg(test)]
#[path = "claim_tests.rs"]
mod tests;
