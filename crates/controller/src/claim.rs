//! Carrying out adoption and release decisions (upstream `ClaimPods`' side effects).

use crate::compact_pod::Pod;
use std::{future::Future, sync::Arc};

use crate::{
    errors::ControlError,
    pod_control::PodControl,
    ref_manager::{Owner, adopt_patch, release_patch},
};

/// What adoption and release achieved.
#[derive(Debug, Default)]
pub struct ClaimOutcome {
    /// Pods now controlled by the owner (the cached objects, as upstream returns them).
    pub adopted: Vec<Arc<Pod>>,
    /// The resourceVersions the adoption patches produced (where the [`PodControl`] reports them):
    /// the caller's consistency store waits for its cache to reach them, as upstream's `PatchPod`
    /// feeds `OnWrite`. Releases are not reported: upstream's callback keys the write by the pod's
    /// controller, which a released pod no longer has.
    pub adopted_versions: Vec<String>,
    /// Failures, each naming its pod. A pod that vanished meanwhile is not a failure: it is left
    /// out of `adopted`, as upstream's `ClaimObject` ignores NotFound.
    pub errors: Vec<ControlError>,
}

/// Adopts `adopt` and releases `release`. `can_adopt` is asked once, and only if there is something
/// to adopt: callers check with a fresh GET that the owner still exists with the same UID and is not
/// being deleted (kubernetes/kubernetes#42639).
pub async fn execute_claims<P, F, Fut>(
    control: &P,
    owner: &Owner,
    adopt: &[Arc<Pod>],
    release: &[Arc<Pod>],
    can_adopt: F,
) -> ClaimOutcome
where
    P: PodControl,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), ControlError>>,
{
    let mut out = ClaimOutcome::default();
    if !adopt.is_empty() {
        match can_adopt().await {
            Ok(()) => {
                for pod in adopt {
                    let (ns, name, uid) = ids(pod);
                    match control
                        .patch_pod_returning(ns, name, &adopt_patch(owner, uid))
                        .await
                    {
                        Ok(patched) => {
                            out.adopted.push(pod.clone());
                            out.adopted_versions
                                .extend(patched.and_then(|p| p.metadata.resource_version));
                        }
                        Err(e) if e.is_not_found() => {}
                        Err(e) => out.errors.push(e),
                    }
                }
            }
            Err(e) => out.errors.push(e),
        }
    }
    for pod in release {
        let (ns, name, uid) = ids(pod);
        match control.patch_pod(ns, name, &release_patch(&owner.uid, uid)).await {
            // Gone, or recreated under the same name (the UID precondition fails as Invalid).
            Err(e) if !(e.is_not_found() || e.is_invalid()) => out.errors.push(e),
            _ => {}
        }
    }
    out
}

fn ids(pod: &Pod) -> (&str, &str, &str) {
    let m = &pod.metadata;
    (
        m.namespace.as_deref().unwrap_or(""),
        m.name.as_deref().unwrap_or(""),
        m.uid.as_deref().unwrap_or(""),
    )
}
