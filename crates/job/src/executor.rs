//! Doing: carries out a [`SyncPlan`]: the pod writes ([`crate::pod_writes`]), then the status writes
//! and finalizer removals in the order that keeps counting exact (see [`crate::tracking`]), and
//! remembers the resourceVersions it wrote so that no later sync reads an older cache.

use controller::compact_pod::Pod;
use std::{collections::HashSet, sync::Arc, time::Duration};

use controller::{
    Clock, ControlError, EventRecorder, Expectations, Owner, PodControl,
    consistency::{ConsistencyStore, StaleCache},
    events::{TYPE_NORMAL, TYPE_WARNING},
    pod_control::object_reference,
    writes,
};
use futures::future::join_all;
use informer::{ObjectKey, SelectorError};
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use kube::Client;
use serde_json::json;

use crate::{
    backoff::BackoffStore, finalizer_expectations::FinalizerExpectations, finish::finished_events,
    finished_jobs::FinishedJobs, metrics::JobMetrics, plan::SyncPlan, spec::JOB_TRACKING_FINALIZER,
    tracking::PlannedEvent,
};

/// Why a sync must be retried (with the queue's backoff).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Upstream returns this error from `getPodsForJob` (no event): the Job is retried with backoff
    /// until it is fixed or deleted; other Jobs go on.
    #[error("couldn't convert the selector of Job {key}: {source}")]
    InvalidSelector { key: ObjectKey, source: SelectorError },
    /// A cache is older than this controller's own write (1.36 `StaleControllerConsistencyJob`).
    #[error("not syncing Job {key} yet: {source}")]
    Stale { key: ObjectKey, source: StaleCache },
    #[error("claiming pods for Job {key}: {source}")]
    Claim { key: ObjectKey, source: ControlError },
    #[error("managing the pods of Job {key}: {source}")]
    Manage { key: ObjectKey, source: ControlError },
    #[error("tracking the status of Job {key}: {source}")]
    Status { key: ObjectKey, source: ControlError },
    #[error("removing tracking finalizers of Job {key}: {source}")]
    Finalizers { key: ObjectKey, source: ControlError },
}

/// Group-resources the consistency store tracks (upstream's names).
pub const GR_PODS: &str = "pods";
pub const GR_JOBS: &str = "jobs.batch";

/// The writes of one Job controller.
pub struct Executor<P> {
    pub control: P,
    pub client: Client,
    pub recorder: EventRecorder,
    pub expectations: Arc<Expectations>,
    pub finalizers: Arc<FinalizerExpectations>,
    pub backoff: Arc<BackoffStore>,
    pub finished: Arc<FinishedJobs>,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<dyn JobMetrics>,
    /// The resourceVersions this controller wrote (pods created, Job statuses), so that no sync
    /// runs on a cache older than them.
    pub consistency: Arc<ConsistencyStore>,
}

impl<P> std::fmt::Debug for Executor<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

/// The patch removing the tracking finalizer (strategic merge, primitive list).
pub fn remove_finalizer_patch() -> serde_json::Value {
    json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})
}

impl<P: PodControl> Executor<P> {
    /// Carries out the plan; returns when to sync again.
    pub async fn execute(&self, plan: SyncPlan) -> Result<Option<Duration>, SyncError> {
        let key = plan.key.clone();
        self.claim(&plan).await.map_err(|source| SyncError::Claim {
            key: key.clone(),
            source,
        })?;
        let (outcome, manage_err) = self.manage(&plan).await;
        let sp = plan.status_plan(&outcome);
        for e in &sp.events {
            self.event(&plan.owner, e);
        }
        let mode = crate::spec::completion_mode_label(&plan.job);
        let mut job = plan.job.clone();
        let mut old = job.status.clone().unwrap_or_default();
        if sp.flush_first {
            job = self
                .write(&job, sp.status.clone())
                .await
                .map_err(|source| SyncError::Status {
                    key: key.clone(),
                    source,
                })?;
            self.backoff.update(key.as_str(), plan.backoff);
            self.finished_pod_metrics(&plan.job, &old, &sp.status);
            old = sp.status.clone();
            if !sp.remove_finalizers.is_empty() {
                crate::failpoints::crash_at(crate::failpoints::AFTER_UNCOUNTED_STATUS);
            }
        }
        for (action, n) in &sp.policy_actions {
            self.metrics
                .pod_failures_handled_by_policy(action.as_str(), u64::from(*n));
        }
        let (removed, rm_err) = self.remove_finalizers(&plan.owner, &sp.remove_finalizers).await;
        if !removed.is_empty() {
            crate::failpoints::crash_at(crate::failpoints::AFTER_FINALIZER_REMOVAL);
        }
        let now = self.clock.now();
        let after = sp.after_removal(&removed, rm_err.is_some(), now);
        if let Some(source) = rm_err {
            if after.write {
                self.write(&job, after.status)
                    .await
                    .map_err(|source| SyncError::Status {
                        key: key.clone(),
                        source,
                    })?;
            }
            return Err(SyncError::Finalizers { key, source });
        }
        if after.write {
            self.write(&job, after.status.clone())
                .await
                .map_err(|source| SyncError::Status {
                    key: key.clone(),
                    source,
                })?;
            if let Some(c) = &after.finished {
                self.finished.written(&plan.owner.uid);
                let completions = crate::spec::completions(&plan.job);
                for e in finished_events(completions, after.status.succeeded.unwrap_or(0), c) {
                    self.event(&plan.owner, &e);
                }
                let result = if c.type_ == crate::conditions::COMPLETE {
                    crate::metrics::SUCCEEDED
                } else {
                    crate::metrics::FAILED
                };
                // Both results carry the condition's reason (CompletionsReached, SuccessPolicy,
                // BackoffLimitExceeded, …), as upstream labels the stable metric.
                self.metrics
                    .job_finished(mode, result, c.reason.as_deref().unwrap_or(""));
            }
            self.finished_pod_metrics(&plan.job, &old, &after.status);
        }
        if let Some(source) = manage_err {
            return Err(SyncError::Manage { key, source });
        }
        Ok(plan.requeue_after)
    }

    fn event(&self, owner: &Owner, e: &PlannedEvent) {
        let reason: &'static str = static_reason(&e.reason);
        let type_ = if e.warning { TYPE_WARNING } else { TYPE_NORMAL };
        self.recorder
            .record(&object_reference(owner), type_, reason, e.message.clone());
    }

    /// Removes the finalizers concurrently; returns the UIDs now without it (a pod that is gone
    /// counts) and the first error.
    async fn remove_finalizers(
        &self,
        owner: &Owner,
        pods: &[Arc<Pod>],
    ) -> (HashSet<String>, Option<ControlError>) {
        let key = owner.key();
        let key = key.as_str();
        if pods.is_empty() {
            return (HashSet::new(), None);
        }
        let uids: Vec<String> = pods
            .iter()
            .map(|p| p.metadata.uid.clone().unwrap_or_default())
            .collect();
        self.finalizers.expect_removed(key, uids.iter().cloned());
        let patch = remove_finalizer_patch();
        let results = join_all(pods.iter().map(|p| self.patch(owner, p, &patch))).await;
        let mut removed = HashSet::new();
        let mut first = None;
        for (uid, r) in uids.into_iter().zip(results) {
            match r {
                Ok(()) => {
                    removed.insert(uid);
                }
                Err(e) => {
                    self.finalizers.removal_observed(key, &uid);
                    if e.is_not_found() {
                        removed.insert(uid);
                    } else {
                        first.get_or_insert(e);
                    }
                }
            }
        }
        (removed, first)
    }

    /// A full PUT of the status subresource (upstream `UpdateStatus`, no retry: a conflict requeues).
    ///
    /// Returns the Job as it now is on the server (managedFields aside) without decoding the answer
    /// ([`controller::writes`]): a status PUT that passed its resourceVersion precondition was
    /// applied to exactly the object sent, and the server changes nothing of it but the status
    /// (which is `status`) and the resourceVersion (which the answer carries). The next write of
    /// the same sync starts from it.
    async fn write(&self, job: &Job, status: JobStatus) -> Result<Job, ControlError> {
        let ns = job.metadata.namespace.as_deref().unwrap_or_default();
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let mut body = job.clone();
        body.metadata.managed_fields = None;
        body.status = Some(status);
        let written = writes::replace_status(&self.client, ns, name, &body)
            .await
            .map_err(|e| ControlError::api("update status", format!("{ns}/{name}"), e))?;
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let key = format!("{ns}/{name}");
        let rv = written.metadata.resource_version;
        self.consistency.wrote_at(&key, uid, GR_JOBS, rv.as_deref());
        body.metadata.resource_version = rv;
        Ok(body)
    }

    fn finished_pod_metrics(&self, job: &Job, old: &JobStatus, new: &JobStatus) {
        crate::metrics::record_pods_finished(&*self.metrics, job, old, new);
    }
}

/// Event reasons are `&'static str` in the recorder; the Job controller's come from a known set.
fn static_reason(reason: &str) -> &'static str {
    use crate::conditions::*;
    [
        EVENT_SUSPENDED,
        EVENT_RESUMED,
        EVENT_COMPLETED,
        EVENT_TOO_MANY_SUCCEEDED,
        EVENT_UNKNOWN_COMPLETION_MODE,
        REASON_BACKOFF_LIMIT_EXCEEDED,
        REASON_DEADLINE_EXCEEDED,
        REASON_POD_FAILURE_POLICY,
        REASON_MAX_FAILED_INDEXES_EXCEEDED,
        REASON_FAILED_INDEXES,
        REASON_SUCCESS_POLICY,
        REASON_COMPLETIONS_REACHED,
    ]
    .into_iter()
    .find(|r| *r == reason)
    .unwrap_or("JobFailed")
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
