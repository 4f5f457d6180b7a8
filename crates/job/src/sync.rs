//! One sync of a Job (upstream `syncJob`): read one's own writes, take the cached Job, plan on its
//! pods, then compare (shadow mode) or execute. The steps that are not the plan are methods of their
//! own, so that the sync reads as that order.

use std::{sync::Arc, time::Duration};

use controller::{Owner, PodControl, candidates, compact_pod::Pod, events::TYPE_WARNING, object_reference};
use informer::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use tokio::time::Instant;

use super::{COMPONENT, JobController, Shadow};
use crate::{
    conditions::{EVENT_UNKNOWN_COMPLETION_MODE, EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE},
    executor::{GR_JOBS, GR_PODS, SyncError},
    metrics::ACTION_RECONCILING,
    plan::{Decision, FullPlan, ManageOutcome, PlanError, SyncInput, SyncPlan, plan_pods, status_plan},
    shadow,
    spec::completion_mode_label,
};

impl<P: PodControl> JobController<P> {
    /// One sync of the Job at `key` (upstream `syncJob`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, SyncError> {
        let started = Instant::now();
        self.ensure_fresh(key)?;
        let Some(job) = self.cached(key) else {
            return Ok(None);
        };
        let h = &self.handlers;
        // Checked before listing pods, so that a pod arriving in between is handled next time.
        let satisfied = h.expectations.satisfied(key.as_str());
        let candidates = candidates(self.pods.store(), &*job);
        let expected = h.finalizers.expected(key.as_str());
        let backoff = match &self.shadow {
            Some(s) => s.finishes.record(&job, &candidates),
            None => self.executor.backoff.get(key.as_str()),
        };
        let input = SyncInput {
            job: &job,
            candidates: &candidates,
            expectations_satisfied: satisfied,
            expected_rm_finalizers: &expected,
            backoff,
            now: self.executor.clock.now(),
            suspend_clears_start_time: self.features.mutable_scheduling_directives_for_suspended_jobs,
        };
        let plan = match plan_pods(&input) {
            Ok(Decision::Sync(plan)) => *plan,
            other => return self.without_plan(key, &input, other, started).await,
        };
        if let Some(shadow) = &self.shadow {
            return Ok(self.compare(shadow, key, &job, &candidates, plan).await);
        }
        self.execute(key, &job, plan, started).await
    }

    /// Reading one's own writes: no sync while a cache is older than what this controller wrote
    /// (upstream checks before reading the Job).
    fn ensure_fresh(&self, key: &ObjectKey) -> Result<(), SyncError> {
        if !self.features.stale_controller_consistency_job {
            return Ok(());
        }
        self.wiring
            .ensure_fresh(&self.executor.consistency, key, |gr| match gr {
                GR_PODS => self.pods.last_synced_resource_version(),
                GR_JOBS => self.jobs.last_synced_resource_version(),
                _ => u64::MAX,
            })
            .map_err(|source| SyncError::Stale {
                key: key.clone(),
                source,
            })
    }

    /// The cached Job to sync, or `None`: it is gone (everything kept for it is dropped), or it was
    /// written finished and the cache does not show that yet.
    fn cached(&self, key: &ObjectKey) -> Option<Arc<Job>> {
        let h = &self.handlers;
        let Some(mut job) = h.jobs.get(key.namespace(), key.name()) else {
            h.expectations.delete(key.as_str());
            h.finalizers.delete(key.as_str());
            self.executor.consistency.clear(key.as_str());
            self.executor.backoff.remove(key.as_str());
            self.forget_shadow(key);
            return None;
        };
        if self.ignore_suspend
            && let Some(spec) = Arc::make_mut(&mut job).spec.as_mut()
        {
            spec.suspend = Some(false);
        }
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        if crate::spec::is_finished(&job) {
            h.finished.observed(uid);
        } else if h.finished.awaited(uid) {
            tracing::debug!(job = %key, "written finished, not yet seen so in the cache; skipping");
            return None;
        }
        Some(job)
    }

    /// A Job the plan has nothing to do for: another controller's, finished, of an unknown
    /// completion mode, or with a selector that does not parse.
    async fn without_plan(
        &self,
        key: &ObjectKey,
        input: &SyncInput<'_>,
        decided: Result<Decision<SyncPlan>, PlanError>,
        started: Instant,
    ) -> Result<Option<Duration>, SyncError> {
        match decided {
            Ok(Decision::Sync(_)) => unreachable!("a plan is executed, not passed here"),
            Ok(Decision::ManagedExternally(name)) => {
                tracing::debug!(job = %key, controller = name, "managed by another controller; skipping");
                self.forget_shadow(key);
            }
            Ok(Decision::Finished) => {
                self.executor.backoff.remove(key.as_str());
                if let Some(Shadow { state, .. }) = &self.shadow {
                    // The final status is compared before the Job is forgotten: a finished Job
                    // gets no more events, so a difference would otherwise never be seen.
                    let differences = shadow::final_status_differences(input);
                    let fingerprint = controller::shadow::fingerprint(input.job, input.candidates);
                    return Ok(state
                        .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
                        .await);
                }
            }
            Ok(Decision::UnknownCompletionMode) => {
                self.executor.recorder.record(
                    &object_reference(&Owner::of(input.job)),
                    TYPE_WARNING,
                    EVENT_UNKNOWN_COMPLETION_MODE,
                    EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE.to_owned(),
                );
            }
            Err(PlanError::InvalidSelector { key, source }) => {
                // As upstream: an error (retried with backoff, no event) that only a change to the
                // Job fixes; other Jobs go on meanwhile.
                let mode = completion_mode_label(input.job);
                self.executor
                    .metrics
                    .job_sync(mode, "error", ACTION_RECONCILING, started.elapsed());
                return Err(SyncError::InvalidSelector { key, source });
            }
        }
        Ok(None)
    }

    /// Shadow mode: the plan and the status it leads to, against what upstream wrote.
    async fn compare(
        &self,
        shadow: &Shadow,
        key: &ObjectKey,
        job: &Job,
        candidates: &[Arc<Pod>],
        plan: SyncPlan,
    ) -> Option<Duration> {
        let status = status_plan(&plan, &ManageOutcome::assumed(&plan.action));
        let full = FullPlan { sync: plan, status };
        let differences = shadow::differences(job, &full);
        let fingerprint = controller::shadow::fingerprint(job, candidates);
        shadow
            .state
            .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
            .await
    }

    async fn execute(
        &self,
        key: &ObjectKey,
        job: &Job,
        plan: SyncPlan,
        started: Instant,
    ) -> Result<Option<Duration>, SyncError> {
        let mode = completion_mode_label(job);
        let action = plan.metrics_action;
        let requeue = plan.requeue_after;
        let result = self.executor.execute(plan).await;
        if result.is_err()
            && let Some(after) = requeue
        {
            // Upstream queues its timed wake-ups (the active deadline, the end of a backoff) while
            // it syncs, whatever the sync returns; the queue keeps the earlier of this and the
            // rate-limited retry, so a Job whose writes keep failing still fails on its deadline.
            self.handlers.queue.add_after(key.clone(), after);
        }
        let outcome = if result.is_ok() { "success" } else { "error" };
        self.executor
            .metrics
            .job_sync(mode, outcome, action, started.elapsed());
        result
    }
}
