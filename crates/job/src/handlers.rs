//! Informer event handlers: which Jobs a change concerns, and which pods need their finalizer
//! removed by the orphan worker (upstream `addPod`, `updatePod`, `deletePod`, `addJob`, `updateJob`,
//! `deleteJob`).

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::Clock;
use controller::ConsistencyStore;
use controller::Expectations;
use controller::pod_util::controller_of;
use controller::resolve_controller;
use controller::selecting;
use informer::{DeletedObject, EventHandler, Lister, ObjectKey, WorkQueue};
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::OwnerReference};

use crate::{
    backoff::BackoffStore,
    delays::JobDelays,
    finalizer_expectations::FinalizerExpectations,
    finished_jobs::FinishedJobs,
    metrics::{EVENT_ADD, EVENT_DELETE, JobMetrics},
    orphans::OrphanKey,
    ownership::selector,
    spec::{has_tracking_finalizer, is_finished, managed_by_external, phase},
};

/// What the handlers share with the controller.
#[derive(Clone)]
pub struct Handlers {
    pub jobs: Lister<Job>,
    pub pods: Lister<Pod>,
    pub expectations: Arc<Expectations>,
    pub finalizers: Arc<FinalizerExpectations>,
    pub queue: WorkQueue<ObjectKey>,
    /// Pods (or a finished or deleted Job's selector) whose finalizers must go because no live,
    /// unfinished Job of ours owns them.
    pub orphan_queue: WorkQueue<OrphanKey>,
    pub metrics: Arc<dyn JobMetrics>,
    pub clock: Arc<dyn Clock>,
    /// Dropped with the Job's delete event, as upstream: a Job re-created under the same name
    /// before the old key syncs starts without the old one's failures.
    pub backoff: Arc<BackoffStore>,
    pub finished: Arc<FinishedJobs>,
    /// Shared with the executor, which records its writes there; dropped with the Job's delete event,
    /// as upstream.
    pub consistency: Arc<ConsistencyStore>,
    /// The controller's waits; the handlers batch pod events for its batch period, the sync plans
    /// with all of them.
    pub delays: JobDelays,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers").finish_non_exhaustive()
    }
}

impl Handlers {
    /// A sync at once, as an `AddAfter` of no delay (upstream `enqueueSyncJobImmediately`), which
    /// the workqueue metrics count as a retry.
    fn sync_now(&self, key: ObjectKey) {
        self.queue.add_after(key, Duration::ZERO);
    }

    fn resolve(&self, namespace: Option<&str>, r: &OwnerReference) -> Option<Arc<Job>> {
        resolve_controller(&self.jobs, namespace, r)
    }

    /// Jobs whose selector matches the pod (client-go's `GetPodJobs`): none for a pod without labels;
    /// Jobs with an invalid selector never match.
    fn matching(&self, pod: &Pod) -> Vec<Arc<Job>> {
        let jobs = selecting(&self.jobs, &pod.metadata, |j| selector(j).ok());
        if jobs.len() > 1 {
            tracing::warn!(pod = ?pod.metadata.name, "user error: more than one Job selects this pod's labels");
        }
        jobs
    }

    /// Pod events are batched: many within the batch period (upstream's 1 s) make one sync.
    fn enqueue_batched(&self, job: &Job) {
        self.queue
            .add_after(ObjectKey::of(job), self.delays.sync_batch_period());
    }

    fn enqueue_orphan(&self, pod: &Pod) {
        self.orphan_queue.add(OrphanKey::pod(pod));
    }

    /// Queues a sweep of every pod `job`'s selector selects (upstream `enqueueLabelSelector`): the
    /// orphan worker removes the finalizer of each one no live, unfinished Job of ours owns.
    fn enqueue_selector(&self, job: &Job) {
        match OrphanKey::selector_of(job) {
            Ok(k) => self.orphan_queue.add(k),
            Err(e) => tracing::error!(job = %ObjectKey::of(job), "Job has an invalid label selector: {e}"),
        }
    }

    /// A pod going away (`last`: the final delete, not a deletionTimestamp update).
    fn pod_deleted(&self, pod: &Pod, last: bool) {
        let has_finalizer = has_tracking_finalizer(&pod.metadata);
        let Some(r) = controller_of(&pod.metadata) else {
            // Possibly a Job's pod whose reference the garbage collector removed.
            if has_finalizer {
                self.enqueue_orphan(pod);
            }
            return;
        };
        let Some(job) = self
            .resolve(pod.metadata.namespace.as_deref(), r)
            .filter(|j| !is_finished(j))
        else {
            // No sync of a live Job will remove this finalizer.
            if has_finalizer {
                self.enqueue_orphan(pod);
            }
            return;
        };
        self.enqueue_if_stray(&job, pod);
        let key = ObjectKey::of(&*job);
        self.expectations
            .deletion_observed(key.as_str(), ObjectKey::of(pod).as_str());
        if last || !has_finalizer {
            self.finalizers
                .removal_observed(key.as_str(), pod.metadata.uid.as_deref().unwrap_or(""));
        }
        self.enqueue_batched(&job);
    }

    /// A pod its deleting Job no longer selects goes to the orphan worker, the only one that will
    /// remove its finalizer (`orphans::stray_of_deleting_job`).
    fn enqueue_if_stray(&self, job: &Job, pod: &Pod) {
        if has_tracking_finalizer(&pod.metadata) && crate::orphans::stray_of_deleting_job(job, pod) {
            self.enqueue_orphan(pod);
        }
    }

    /// `terminated_pods_tracking_finalizer_total`: a finished pod gained or lost the finalizer.
    fn record_finished_with_finalizer(&self, old: Option<&Pod>, cur: Option<&Pod>) {
        let f = |p: Option<&Pod>| {
            p.is_some_and(|p| {
                matches!(phase(p), "Succeeded" | "Failed") && has_tracking_finalizer(&p.metadata)
            })
        };
        let (was, is) = (f(old), f(cur));
        if was != is {
            self.metrics
                .terminated_pod_tracking_finalizer(if is { EVENT_ADD } else { EVENT_DELETE });
        }
    }
}

/// Handles Job events.
#[derive(Debug, Clone)]
pub struct JobHandler(pub Handlers);

impl EventHandler<Job> for JobHandler {
    fn on_add(&self, job: &Arc<Job>, _: bool) {
        self.0.sync_now(ObjectKey::of(&**job));
        if let Some(name) = managed_by_external(job) {
            self.0.metrics.job_by_external_controller(name);
        }
    }

    /// A finished Job is not synced again: its selector is swept by the orphan worker instead (a
    /// backup: the Job should not have finished with any finalizer left). Otherwise spec changes sync
    /// at once, status-only changes batched, and a changed deadline is looked at when it falls.
    fn on_update(&self, old: &Arc<Job>, cur: &Arc<Job>) {
        let h = &self.0;
        let key = ObjectKey::of(&**cur);
        if is_finished(cur) {
            h.enqueue_selector(cur);
            return;
        }
        if cur.metadata.generation == old.metadata.generation {
            h.queue.add_after(key.clone(), h.delays.sync_batch_period());
        } else {
            h.sync_now(key.clone());
        }
        let start = cur.status.as_ref().and_then(|s| s.start_time.as_ref());
        let cur_ads = cur.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        let old_ads = old.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        if let (Some(start), Some(ads)) = (start, cur_ads)
            && old_ads != Some(ads)
        {
            let left = crate::plan::deadline_left(ads, start.0, h.clock.now());
            h.queue.add_after(
                key,
                Duration::from_nanos(u64::try_from(left.max(0)).unwrap_or(u64::MAX)),
            );
        }
    }

    fn on_delete(&self, job: &DeletedObject<Job>) {
        let job = job.object();
        let key = ObjectKey::of(&**job);
        self.0.backoff.remove(key.as_str());
        self.0
            .consistency
            .forget_object(key.as_str(), job.metadata.uid.as_deref().unwrap_or_default());
        if let Some(uid) = job.metadata.uid.as_deref() {
            self.0.finished.observed(uid);
        }
        self.0.sync_now(key);
        self.0.enqueue_selector(job);
    }
}

/// Handles pod events.
#[derive(Debug, Clone)]
pub struct PodHandler(pub Handlers);

impl EventHandler<Pod> for PodHandler {
    fn on_add(&self, pod: &Arc<Pod>, _: bool) {
        let h = &self.0;
        h.record_finished_with_finalizer(None, Some(pod));
        if pod.metadata.deletion_timestamp.is_some() {
            // Seen already being deleted (after a restart): not a creation.
            h.pod_deleted(pod, false);
            return;
        }
        if let Some(r) = controller_of(&pod.metadata) {
            if let Some(job) = h.resolve(pod.metadata.namespace.as_deref(), r) {
                h.expectations.creation_observed(ObjectKey::of(&*job).as_str());
                h.enqueue_batched(&job);
            }
            return;
        }
        if has_tracking_finalizer(&pod.metadata) {
            h.enqueue_orphan(pod);
        }
        for job in h.matching(pod) {
            h.enqueue_batched(&job);
        }
    }

    fn on_update(&self, old: &Arc<Pod>, cur: &Arc<Pod>) {
        let h = &self.0;
        h.record_finished_with_finalizer(Some(old), Some(cur));
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        if cur.metadata.deletion_timestamp.is_some() {
            // Replace the pod as soon as it starts terminating (unless only failed pods are).
            h.pod_deleted(cur, false);
            return;
        }
        // Look at the current pod only: updates may collapse a re-add and removal of the finalizer.
        let finalizer_removed = !has_tracking_finalizer(&cur.metadata);
        let uid = cur.metadata.uid.as_deref().unwrap_or("");
        let (cur_ref, old_ref) = (controller_of(&cur.metadata), controller_of(&old.metadata));
        let ref_changed = cur_ref != old_ref;
        if ref_changed
            && let Some(r) = old_ref
            && let Some(job) = h.resolve(old.metadata.namespace.as_deref(), r)
        {
            if finalizer_removed {
                h.finalizers.removal_observed(ObjectKey::of(&*job).as_str(), uid);
            }
            h.enqueue_batched(&job);
        }
        if let Some(r) = cur_ref {
            if let Some(job) = h.resolve(cur.metadata.namespace.as_deref(), r) {
                h.enqueue_if_stray(&job, cur);
                if finalizer_removed {
                    h.finalizers.removal_observed(ObjectKey::of(&*job).as_str(), uid);
                }
                h.enqueue_batched(&job);
            }
            return;
        }
        if has_tracking_finalizer(&cur.metadata) {
            h.enqueue_orphan(cur);
        }
        if old.metadata.labels != cur.metadata.labels || ref_changed {
            for job in h.matching(cur) {
                h.enqueue_batched(&job);
            }
        }
    }

    /// A tombstone's last known state may be stale, so only a final state counts toward the
    /// finalizer metric (upstream reads a nil pod from a tombstone there).
    fn on_delete(&self, deleted: &DeletedObject<Pod>) {
        let pod = deleted.object();
        if let DeletedObject::Final(p) = deleted {
            self.0.record_finished_with_finalizer(Some(p), None);
        }
        self.0.pod_deleted(pod, true);
    }
}

#[cfg(test)]
#[path = "handlers_tests.rs"]
mod tests;
