//! Adoption and release as the Job controller writes them: the generic claim executor
//! ([`controller::execute_claims`]) with the Job's patches, which add or remove the tracking
//! finalizer together with the owner reference, and with each patch's resourceVersion handed to the
//! consistency store (upstream's `PatchPod` feeds `OnWrite`), so that the next sync waits until the
//! pod cache shows the adoption.

use controller::compact_pod::Pod;

use controller::ClaimWrites;
use controller::ConsistencyStore;
use controller::ControlError;
use controller::Owner;
use controller::PodControl;
use informer::ObjectKey;
use serde_json::Value;

use super::{
    GR_PODS,
    patches::{adoption_patch, release_patch},
};

pub(super) struct JobClaims<'a, P> {
    pub(super) control: &'a P,
    pub(super) consistency: &'a ConsistencyStore,
    /// The Job's key, as the sync was handed it.
    pub(super) key: &'a ObjectKey,
    pub(super) owner: &'a Owner,
}

impl<P: PodControl> ClaimWrites<Pod> for JobClaims<'_, P> {
    fn adopt_patch(&self, owner: &Owner, pod: &Pod) -> Value {
        adoption_patch(&owner.controller_ref(), pod)
    }

    fn release_patch(&self, owner: &Owner, pod: &Pod) -> Value {
        release_patch(&owner.uid, pod)
    }

    async fn patch(&self, pod: &Pod, patch: &Value) -> Result<Option<String>, ControlError> {
        let m = &pod.metadata;
        let (ns, name) = (
            m.namespace.as_deref().unwrap_or(""),
            m.name.as_deref().unwrap_or(""),
        );
        let written = self.control.patch_pod_returning(ns, name, patch).await?;
        let version = written.and_then(|w| w.metadata.resource_version);
        self.consistency
            .wrote_at(self.key.as_str(), &self.owner.uid, GR_PODS, version.as_deref());
        Ok(version)
    }
}
