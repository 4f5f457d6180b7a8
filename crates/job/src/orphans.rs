//! Removing the tracking finalizer from pods that no live, unfinished Job of ours owns (upstream
//! `orphanQueue`, `syncOrphanPod`, `syncOrphanPodsBySelector` and `handleSingleOrphanPod`).
//!
//! The queue (`job_orphan_pod`) holds two kinds of key, as upstream 1.36's `orphanPodKey`: one pod
//! (a pod event showed an orphan, or a pod of a gone or finished Job, still carrying the finalizer),
//! or a whole label selector in a namespace (queued when a Job finishes or is deleted: a backup, as
//! the Job should not have finished with any finalizer left, and the one sweep that catches pods
//! whose events came before the Job's). Either way each pod is checked again at sync time: a pod
//! that a live, unfinished Job controls, or that belongs to another kind of controller or to a Job
//! managed by another controller, keeps its finalizer.

use controller::compact_pod::Pod;
use std::fmt;

use controller::{PodControl, pod_util::controller_of};
use informer::{LabelMatcher, Lister, ObjectKey, SelectorError};
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::LabelSelector};

use crate::{
    executor::{SyncError, remove_finalizer_patch},
    ownership::selector,
    spec::{has_tracking_finalizer, is_finished, managed_by_external},
};

/// An item of the orphan queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OrphanKey {
    /// One pod, by `namespace/name`.
    Pod(ObjectKey),
    /// Every pod of `namespace` that a finished or deleted Job's selector selects. The selector is
    /// kept as its JSON (label maps are ordered, so equal selectors give equal keys and dedup).
    Selector { namespace: String, selector: String },
}

impl OrphanKey {
    pub(crate) fn pod(pod: &Pod) -> Self {
        OrphanKey::Pod(ObjectKey::of(pod))
    }

    /// The key sweeping the pods of `job`'s selector; an invalid selector has no key (upstream logs
    /// it and queues nothing).
    pub(crate) fn selector_of(job: &Job) -> Result<Self, SelectorError> {
        selector(job)?;
        let s = job.spec.as_ref().and_then(|s| s.selector.as_ref());
        Ok(OrphanKey::Selector {
            namespace: job.metadata.namespace.clone().unwrap_or_default(),
            selector: serde_json::to_string(&s).unwrap_or_default(),
        })
    }
}

impl fmt::Display for OrphanKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrphanKey::Pod(k) => write!(f, "pod {k}"),
            OrphanKey::Selector { namespace, selector } => {
                write!(f, "pods of {namespace} selected by {selector}")
            }
        }
    }
}

/// What an orphan sync reads and writes through.
#[derive(Debug)]
pub(crate) struct OrphanCleaner<'a, P> {
    pub(crate) pods: &'a Lister<Pod>,
    pub(crate) jobs: &'a Lister<Job>,
    pub(crate) control: &'a P,
    /// Shadow mode: decide, never write.
    pub(crate) read_only: bool,
}

impl<P: PodControl> OrphanCleaner<'_, P> {
    /// One item of the orphan queue. A pod key fails (and is retried) when its patch fails; a
    /// selector sweep logs each failed pod and succeeds, as upstream (each of those pods is queued
    /// again by its own events).
    pub(crate) async fn sync(&self, key: &OrphanKey) -> Result<(), SyncError> {
        match key {
            OrphanKey::Pod(k) => match self.pods.get(k.namespace(), k.name()) {
                Some(pod) => self.clean(&pod).await,
                None => Ok(()),
            },
            OrphanKey::Selector { namespace, selector } => {
                let parsed: Option<LabelSelector> = serde_json::from_str(selector).unwrap_or_default();
                let Ok(matcher) = LabelMatcher::from_selector(parsed.as_ref()) else {
                    return Ok(());
                };
                for pod in self.pods.list_namespace(namespace, &matcher) {
                    if let Err(e) = self.clean(&pod).await {
                        tracing::error!(pod = %ObjectKey::of(&*pod), "syncing orphan pod failed: {e}");
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether `pod`'s finalizer must go: it has one, and no live, unfinished Job of ours controls
    /// it (upstream `handleSingleOrphanPod`), or the Job controlling it is being deleted and no longer
    /// selects it ([`stray_of_deleting_job`]).
    pub(crate) fn must_clean(&self, pod: &Pod) -> bool {
        if !has_tracking_finalizer(&pod.metadata) {
            return false;
        }
        let Some(r) = controller_of(&pod.metadata) else {
            return true;
        };
        if r.kind != "Job" || r.api_version != "batch/v1" {
            return false; // another kind of controller's pod
        }
        let job = self
            .jobs
            .get(pod.metadata.namespace.as_deref(), &r.name)
            .filter(|j| j.metadata.uid.as_deref() == Some(r.uid.as_str()));
        match job {
            Some(j) if managed_by_external(&j).is_some() => false,
            Some(j) => is_finished(&j) || stray_of_deleting_job(&j, pod),
            None => true,
        }
    }

    async fn clean(&self, pod: &Pod) -> Result<(), SyncError> {
        if !self.must_clean(pod) || self.read_only {
            return Ok(());
        }
        let key = ObjectKey::of(pod);
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        match self.control.patch_pod(ns, name, &remove_finalizer_patch()).await {
            Err(e) if !e.is_not_found() => Err(SyncError::Finalizers { key, source: e }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "orphans_tests.rs"]
mod tests;

/// A pod `job` controls but no longer selects (its labels changed) while `job` is being deleted.
///
/// Upstream neither releases such a pod (a Job being deleted adopts and releases nothing) nor counts
/// it (it is not the Job's by selector), so nothing removes its finalizer: under foreground deletion
/// the Job then waits for the pod and the pod for its finalizer, for good (seen under upstream 1.36's
/// controller: a pod relabelled, then its Job deleted in the foreground within the 1 s batch). kcm-rs
/// removes the finalizer here, keeping the owner reference, so the garbage collector finishes the
/// deletion the user asked for. A deliberate difference (crate docs).
pub(crate) fn stray_of_deleting_job(job: &Job, pod: &Pod) -> bool {
    controller::pod_util::is_deleting(&job.metadata)
        && crate::ownership::selector(job).is_ok_and(|m| !m.matches_labels(pod.metadata.labels.as_ref()))
}
