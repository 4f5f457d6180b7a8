//! Doing: carries out a [`SyncPlan`]: adoption and release, pod creations and deletions, then the
//! status writes and finalizer removals in the order that keeps counting exact (see
//! [`crate::tracking`]).

use std::{collections::HashSet, sync::Arc, time::Duration};

use controller::{
    Clock, ControlError, EventRecorder, Expectations, Owner, PodControl,
    events::{TYPE_NORMAL, TYPE_WARNING},
    pod_control::object_reference,
    slow_start::slow_start_batch,
};
use futures::future::join_all;
use informer::ObjectKey;
use k8s_openapi::api::{
    batch::v1::{Job, JobStatus},
    core::v1::Pod,
};
use kube::{Api, Client, api::PostParams};
use serde_json::json;

use crate::{
    backoff::BackoffStore,
    finalizer_expectations::FinalizerExpectations,
    manage::{Creation, PodAction},
    metrics::JobMetrics,
    plan::SyncPlan,
    spec::{JOB_TRACKING_FINALIZER, has_tracking_finalizer},
    tracking::{ManageOutcome, PlannedEvent, finished_events},
};

/// Why a sync must be retried (with the queue's backoff).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("claiming pods for Job {key}: {source}")]
    Claim { key: ObjectKey, source: ControlError },
    #[error("managing the pods of Job {key}: {source}")]
    Manage { key: ObjectKey, source: ControlError },
    #[error("tracking the status of Job {key}: {source}")]
    Status { key: ObjectKey, source: ControlError },
    #[error("removing tracking finalizers of Job {key}: {source}")]
    Finalizers { key: ObjectKey, source: ControlError },
}

/// The writes of one Job controller.
pub struct Executor<P> {
    pub control: P,
    pub client: Client,
    pub recorder: EventRecorder,
    pub expectations: Arc<Expectations>,
    pub finalizers: Arc<FinalizerExpectations>,
    pub backoff: Arc<BackoffStore>,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<dyn JobMetrics>,
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
        }
        for (action, n) in &sp.policy_actions {
            self.metrics
                .pod_failures_handled_by_policy(action.as_str(), u64::from(*n));
        }
        let (removed, rm_err) = self.remove_finalizers(key.as_str(), &sp.remove_finalizers).await;
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
                let completions = crate::spec::completions(&plan.job);
                for e in finished_events(completions, after.status.succeeded.unwrap_or(0), c) {
                    self.event(&plan.owner, &e);
                }
                let (result, reason) = if c.type_ == crate::conditions::COMPLETE {
                    (crate::metrics::SUCCEEDED, "")
                } else {
                    (crate::metrics::FAILED, c.reason.as_deref().unwrap_or(""))
                };
                self.metrics.job_finished(mode, result, reason);
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

    /// Adopts (adding the finalizer) and releases (removing it), after a fresh read for adoption.
    async fn claim(&self, plan: &SyncPlan) -> Result<(), ControlError> {
        if !plan.adopt.is_empty() {
            self.can_adopt(&plan.owner).await?;
        }
        let owner_ref = plan.owner.controller_ref();
        for p in &plan.adopt {
            let patch = json!({"metadata": {"ownerReferences": [owner_ref], "uid": p.metadata.uid, "finalizers": [JOB_TRACKING_FINALIZER]}});
            match self.patch(p, &patch).await {
                Err(e) if !e.is_not_found() => return Err(e),
                _ => {}
            }
        }
        for p in &plan.release {
            let patch = json!({"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": plan.owner.uid}],
                "uid": p.metadata.uid,
                "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}});
            match self.patch(p, &patch).await {
                Err(e) if !(e.is_not_found() || e.is_invalid()) => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    async fn can_adopt(&self, owner: &Owner) -> Result<(), ControlError> {
        let api: Api<Job> = Api::namespaced(self.client.clone(), &owner.namespace);
        let fresh = api
            .get(&owner.name)
            .await
            .map_err(|e| ControlError::api("get job", owner.key(), e))?;
        let refused = |message: String| ControlError::Refused {
            what: format!("adopting pods for Job {}", owner.key()),
            message,
        };
        if fresh.metadata.uid.as_deref() != Some(owner.uid.as_str()) {
            return Err(refused(format!(
                "original Job {} is gone: got uid {}, wanted {}",
                owner.key(),
                fresh.metadata.uid.unwrap_or_default(),
                owner.uid
            )));
        }
        if fresh.metadata.deletion_timestamp.is_some() {
            return Err(refused(format!("Job {} has just been deleted", owner.key())));
        }
        Ok(())
    }

    async fn patch(&self, p: &Pod, patch: &serde_json::Value) -> Result<(), ControlError> {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let name = p.metadata.name.as_deref().unwrap_or("");
        self.control.patch_pod(ns, name, patch).await
    }

    /// The pod writes, keeping expectations in step; returns what they achieved and the first error.
    async fn manage(&self, plan: &SyncPlan) -> (ManageOutcome, Option<ControlError>) {
        let key = plan.key.as_str();
        match &plan.action {
            PodAction::None => (ManageOutcome::assumed(&plan.action), None),
            PodAction::DeleteActive(pods) => {
                let results = join_all(pods.iter().map(|p| self.control.delete_pod(&plan.owner, p))).await;
                self.deletion_outcome(pods, results)
            }
            PodAction::Delete(pods) => {
                self.expectations
                    .expect_deletions(key, pods.iter().map(|p| ObjectKey::of(&**p).to_string()));
                let results = join_all(pods.iter().map(|p| self.unfinalize_and_delete(plan, p))).await;
                self.deletion_outcome(pods, results)
            }
            PodAction::Create(c) => self.create(plan, c).await,
        }
    }

    async fn unfinalize_and_delete(&self, plan: &SyncPlan, p: &Pod) -> Result<(), ControlError> {
        let key = plan.key.as_str();
        let mut result = Ok(());
        if has_tracking_finalizer(&p.metadata) {
            result = self.patch(p, &remove_finalizer_patch()).await;
        }
        if result.is_ok() {
            result = self.control.delete_pod(&plan.owner, p).await;
        }
        if result.is_err() {
            // No watch event will come for this deletion.
            self.expectations
                .deletion_observed(key, ObjectKey::of(p).as_str());
        }
        result
    }

    fn deletion_outcome(
        &self,
        pods: &[Arc<Pod>],
        results: Vec<Result<(), ControlError>>,
    ) -> (ManageOutcome, Option<ControlError>) {
        let mut out = ManageOutcome {
            all_deleted: true,
            ..ManageOutcome::default()
        };
        let mut first = None;
        for (p, r) in pods.iter().zip(results) {
            match r {
                Err(e) if !e.is_not_found() => {
                    out.all_deleted = false;
                    first.get_or_insert(e);
                    continue;
                }
                _ => {}
            }
            out.deleted += 1;
            if controller::pod_util::is_ready(p) {
                out.deleted_ready += 1;
            }
        }
        (out, first)
    }

    async fn create(&self, plan: &SyncPlan, c: &Creation) -> (ManageOutcome, Option<ControlError>) {
        let key = plan.key.as_str();
        self.expectations.expect_creations(key, c.count);
        let mut n = 0;
        let (created, err) = slow_start_batch(c.count, || {
            let (template, name) = c.pod(plan, n);
            n += 1;
            async move {
                let r = match &name {
                    Some(g) => {
                        self.control
                            .create_pod_with_generate_name(&plan.owner, &template, g)
                            .await
                    }
                    None => self.control.create_pod(&plan.owner, &template).await,
                };
                match r {
                    Ok(_) => Ok(()),
                    // The namespace is going away; no create will ever succeed there.
                    Err(e) if e.is_namespace_terminating() => Ok(()),
                    Err(e) => Err(e),
                }
            }
        })
        .await;
        for _ in created.len()..c.count {
            self.expectations.creation_observed(key);
        }
        let reason = crate::metrics::creation_reason(&plan.job, plan.failed, plan.terminating);
        if !created.is_empty() {
            self.metrics
                .pods_created(reason, crate::metrics::SUCCEEDED, created.len() as u64);
        }
        if err.is_some() {
            self.metrics.pods_created(reason, crate::metrics::FAILED, 1);
        }
        let outcome = ManageOutcome {
            created: crate::spec::len_i32(created.len()),
            all_deleted: true,
            ..ManageOutcome::default()
        };
        (outcome, err)
    }

    /// Removes the finalizers concurrently; returns the UIDs now without it (a pod that is gone
    /// counts) and the first error.
    async fn remove_finalizers(
        &self,
        key: &str,
        pods: &[Arc<Pod>],
    ) -> (HashSet<String>, Option<ControlError>) {
        if pods.is_empty() {
            return (HashSet::new(), None);
        }
        let uids: Vec<String> = pods
            .iter()
            .map(|p| p.metadata.uid.clone().unwrap_or_default())
            .collect();
        self.finalizers.expect_removed(key, uids.iter().cloned());
        let patch = remove_finalizer_patch();
        let results = join_all(pods.iter().map(|p| self.patch(p, &patch))).await;
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
    async fn write(&self, job: &Job, status: JobStatus) -> Result<Job, ControlError> {
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let name = job.metadata.name.clone().unwrap_or_default();
        let api: Api<Job> = Api::namespaced(self.client.clone(), &ns);
        let mut body = job.clone();
        body.metadata.managed_fields = None;
        body.status = Some(status);
        api.replace_status(&name, &PostParams::default(), &body)
            .await
            .map_err(|e| ControlError::api("update status", format!("{ns}/{name}"), e))
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
