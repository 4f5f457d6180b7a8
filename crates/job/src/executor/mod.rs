//! Doing: carries out a [`SyncPlan`]: the pod writes, then the status writes and finalizer removals
//! in the order that keeps counting exact (see [`crate::plan`]'s tracking step), and remembers the
//! resourceVersions it wrote so that no later sync reads an older cache.
//!
//! Pod deletions follow [`PodAction`]: surplus and suspension remove the finalizer first; a
//! finishing Job's pods keep it until they are counted. Expectations are kept in step with what
//! was actually written.

mod claims;
mod error;
mod outcome;
mod patches;

use controller::compact_pod::Pod;
use std::{
    collections::HashSet,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use controller::Clock;
use controller::ConsistencyStore;
use controller::ControlError;
use controller::EventRecorder;
use controller::Expectations;
use controller::Owner;
use controller::PodControl;
use controller::execute_claims;
use controller::object_reference;
use controller::recheck_owner;
use controller::slow_start_batch;
use controller::writes;
use futures::future::join_all;
use informer::ObjectKey;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use kube::Client;

pub use error::SyncError;
pub(crate) use patches::remove_finalizer_patch;

use self::{
    claims::JobClaims,
    outcome::{Attempt, deletion_outcome, record_creations},
};
use crate::{
    backoff::BackoffStore,
    finalizer_expectations::FinalizerExpectations,
    finished_jobs::FinishedJobs,
    metrics::JobMetrics,
    plan::{
        Creation, ManageOutcome, PlannedEvent, PodAction, SyncPlan, finished_events, status_after_removal,
        status_plan,
    },
    spec::has_tracking_finalizer,
};

/// Group-resources the consistency store tracks (upstream's names).
pub(crate) const GR_PODS: &str = "pods";
pub(crate) const GR_JOBS: &str = "jobs.batch";

/// The writes of one Job controller.
pub(crate) struct Executor<P> {
    pub(crate) control: P,
    pub(crate) client: Client,
    pub(crate) recorder: EventRecorder,
    pub(crate) expectations: Arc<Expectations>,
    pub(crate) finalizers: Arc<FinalizerExpectations>,
    pub(crate) backoff: Arc<BackoffStore>,
    pub(crate) finished: Arc<FinishedJobs>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) metrics: Arc<dyn JobMetrics>,
    /// The resourceVersions this controller wrote (pods created, Job statuses), so that no sync
    /// runs on a cache older than them.
    pub(crate) consistency: Arc<ConsistencyStore>,
}

impl<P> std::fmt::Debug for Executor<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

impl<P: PodControl> Executor<P> {
    /// Carries out the plan, its claims made ([`Self::claim`]); returns when to sync again.
    pub(crate) async fn execute(
        &self,
        key: &ObjectKey,
        plan: SyncPlan,
    ) -> Result<Option<Duration>, SyncError> {
        let (mut outcome, manage_err) = self.manage(key, &plan).await;
        outcome.done_at = Some(self.clock.now());
        let sp = status_plan(&plan, &outcome);
        for e in &sp.events {
            self.event(&plan.owner, e);
        }
        let mode = crate::spec::completion_mode_label(&plan.job);
        let mut job = plan.job.clone();
        let mut old = job.status.clone().unwrap_or_default();
        if sp.flush_first {
            job = self
                .write(key, &job, sp.status.clone())
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
        let (removed, rm_err) = self
            .remove_finalizers(key, &plan.owner, &sp.remove_finalizers)
            .await;
        if !removed.is_empty() {
            crate::failpoints::crash_at(crate::failpoints::AFTER_FINALIZER_REMOVAL);
        }
        let now = self.clock.now();
        let after = status_after_removal(&sp, &removed, rm_err.is_some(), now);
        if let Some(source) = rm_err {
            if after.write {
                self.write(key, &job, after.status)
                    .await
                    .map_err(|source| SyncError::Status {
                        key: key.clone(),
                        source,
                    })?;
            }
            return Err(SyncError::Finalizers {
                key: key.clone(),
                source,
            });
        }
        if after.write {
            self.write(key, &job, after.status.clone())
                .await
                .map_err(|source| SyncError::Status {
                    key: key.clone(),
                    source,
                })?;
            if let Some(c) = &after.finished {
                self.finished.written(&plan.owner.uid);
                let completions = crate::spec::completions(&plan.job);
                // On the Job as this sync's first status write returned it (the cached one if there
                // was none), as upstream's recordJobFinished: its resourceVersion in involvedObject.
                let written = Owner::of(&job);
                for e in finished_events(completions, after.status.succeeded.unwrap_or(0), c) {
                    self.event(&written, &e);
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
            return Err(SyncError::Manage {
                key: key.clone(),
                source,
            });
        }
        Ok(plan.requeue_after)
    }

    /// Adopts (adding the finalizer) and releases (removing it) through [`execute_claims`]: every
    /// claim is tried, as upstream's `ClaimPods`, adoption after one fresh read of the Job; the
    /// first error fails the sync afterwards. The UIDs of orphans found deleted when adopted.
    pub(crate) async fn claim(&self, key: &ObjectKey, plan: &SyncPlan) -> Result<Vec<String>, SyncError> {
        let writes = JobClaims {
            control: &self.control,
            consistency: &self.consistency,
            key,
            owner: &plan.owner,
        };
        let outcome = execute_claims(&writes, &plan.owner, &plan.claims, || {
            recheck_owner::<Job>(&self.client, &plan.owner, "pods")
        })
        .await;
        outcome.gone_or_first_error().map_err(|source| SyncError::Claim {
            key: key.clone(),
            source,
        })
    }

    /// A patch of one of `owner`'s pods. Its resourceVersion goes to the consistency store, as
    /// upstream's `PatchPod` hands it to `OnWrite`: the next sync waits until the pod cache shows
    /// the adoption or the finalizer's removal instead of acting on the pod as it was.
    async fn patch(
        &self,
        key: &ObjectKey,
        owner: &Owner,
        p: &Pod,
        patch: &serde_json::Value,
    ) -> Result<(), ControlError> {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let name = p.metadata.name.as_deref().unwrap_or("");
        let written = self.control.patch_pod_returning(ns, name, patch).await?;
        if let Some(w) = written {
            let rv = w.metadata.resource_version.as_deref();
            self.consistency.wrote_at(key.as_str(), &owner.uid, GR_PODS, rv);
        }
        Ok(())
    }

    /// The pod writes, keeping expectations in step; returns what they achieved and the first error.
    async fn manage(&self, key: &ObjectKey, plan: &SyncPlan) -> (ManageOutcome, Option<ControlError>) {
        match &plan.action {
            PodAction::None => (ManageOutcome::assumed(&plan.action), None),
            PodAction::DeleteKeepingFinalizer(pods) => {
                let deletes = pods.iter().map(|p| async {
                    let r = self.control.delete_pod(&plan.owner, p).await;
                    (r, true)
                });
                let results = join_all(deletes).await;
                deletion_outcome(pods, results)
            }
            PodAction::RemoveFinalizerThenDelete(pods) => {
                self.expectations
                    .expect_deletions(key.as_str(), pods.iter().map(|p| ObjectKey::of(&**p).to_string()));
                let results = join_all(pods.iter().map(|p| self.unfinalize_and_delete(key, plan, p))).await;
                deletion_outcome(pods, results)
            }
            PodAction::Create(c) => self.create(key, plan, c).await,
        }
    }

    /// Removes the finalizer, then deletes. Returns the result and whether the DELETE was sent.
    async fn unfinalize_and_delete(
        &self,
        key: &ObjectKey,
        plan: &SyncPlan,
        p: &Pod,
    ) -> (Result<(), ControlError>, bool) {
        let mut result = Ok(());
        if has_tracking_finalizer(&p.metadata) {
            result = self.patch(key, &plan.owner, p, &remove_finalizer_patch()).await;
        }
        let sent = result.is_ok();
        if sent {
            result = self.control.delete_pod(&plan.owner, p).await;
        }
        if result.is_err() {
            // No watch event will come for this deletion.
            self.expectations
                .deletion_observed(key.as_str(), ObjectKey::of(p).as_str());
        }
        (result, sent)
    }

    /// The creations, in slow-start batches (Indexed: each pod named after its index).
    async fn create(
        &self,
        key: &ObjectKey,
        plan: &SyncPlan,
        c: &Creation,
    ) -> (ManageOutcome, Option<ControlError>) {
        let key = key.as_str();
        self.expectations.expect_creations(key, c.count);
        let mut n = 0;
        let failed = AtomicU64::new(0);
        let (created, err) = slow_start_batch(c.count, || {
            let (template, name) = c.pod(plan, n);
            n += 1;
            let failed = &failed;
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
                    Ok(pod) => {
                        let rv = pod.metadata.resource_version.as_deref();
                        self.consistency.wrote_at(key, &plan.owner.uid, GR_PODS, rv);
                        Ok(Attempt::Created)
                    }
                    // The namespace is going away; no create will ever succeed there.
                    Err(e) if e.is_namespace_terminating() => Ok(Attempt::NamespaceTerminating),
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        Err(e)
                    }
                }
            }
        })
        .await;
        for _ in created.len()..c.count {
            self.expectations.creation_observed(key);
        }
        let reason = crate::metrics::creation_reason(&plan.job, plan.failed, plan.terminating);
        record_creations(&*self.metrics, reason, &created, failed.into_inner());
        let outcome = ManageOutcome {
            created: crate::spec::len_i32(created.len()),
            all_deleted: true,
            ..ManageOutcome::default()
        };
        (outcome, err)
    }

    fn event(&self, owner: &Owner, e: &PlannedEvent) {
        self.recorder.record(
            &object_reference(owner),
            e.type_,
            e.reason.clone(),
            e.message.clone(),
        );
    }

    /// Removes the finalizers concurrently; returns the UIDs now without it (a pod that is gone
    /// counts) and the first error.
    async fn remove_finalizers(
        &self,
        key: &ObjectKey,
        owner: &Owner,
        pods: &[Arc<Pod>],
    ) -> (HashSet<String>, Option<ControlError>) {
        if pods.is_empty() {
            return (HashSet::new(), None);
        }
        let uids: Vec<String> = pods
            .iter()
            .map(|p| p.metadata.uid.clone().unwrap_or_default())
            .collect();
        self.finalizers.expect_removed(key.as_str(), uids.iter().cloned());
        let patch = remove_finalizer_patch();
        let results = join_all(pods.iter().map(|p| self.patch(key, owner, p, &patch))).await;
        let mut removed = HashSet::new();
        let mut first = None;
        for (uid, r) in uids.into_iter().zip(results) {
            match r {
                Ok(()) => {
                    removed.insert(uid);
                }
                Err(e) => {
                    self.finalizers.removal_observed(key.as_str(), &uid);
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
    async fn write(&self, key: &ObjectKey, job: &Job, status: JobStatus) -> Result<Job, ControlError> {
        let ns = job.metadata.namespace.as_deref().unwrap_or_default();
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let mut body = job.clone();
        body.metadata.managed_fields = None;
        body.status = Some(status);
        let written = writes::replace_status(&self.client, ns, name, &body)
            .await
            .map_err(|e| ControlError::api("update status", format!("{ns}/{name}"), e))?;
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let rv = written.metadata.resource_version;
        self.consistency
            .wrote_at(key.as_str(), uid, GR_JOBS, rv.as_deref());
        body.metadata.resource_version = rv;
        Ok(body)
    }

    fn finished_pod_metrics(&self, job: &Job, old: &JobStatus, new: &JobStatus) {
        crate::metrics::record_pods_finished(&*self.metrics, job, old, new);
    }
}

#[cfg(test)]
mod tests;
