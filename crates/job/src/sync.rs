//! The steps of a Job's sync (upstream `syncJob`), which [`controller::sync`] runs in order: read
//! one's own writes, take the cached Job, plan on its pods, then compare (shadow mode) or execute.

use std::{collections::HashSet, sync::Arc, time::Duration};

use controller::{
    Comparison, Decided, Freshness, Owner, PodControl, Steps, compact_pod::Pod, events::TYPE_WARNING,
    object_reference, pod_candidates, shadow::ShadowState,
};
use informer::ObjectKey;
use k8s_openapi::{api::batch::v1::Job, jiff::Timestamp};
use tokio::time::Instant;

use super::{COMPONENT, JobController};
use crate::{
    backoff::BackoffRecord,
    conditions::{EVENT_UNKNOWN_COMPLETION_MODE, EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE},
    executor::{GR_JOBS, GR_PODS, SyncError},
    metrics::ACTION_RECONCILING,
    plan::{Decision, FullPlan, ManageOutcome, PlanError, SyncInput, SyncPlan, plan_pods, status_plan},
    shadow,
    spec::completion_mode_label,
};

/// What a Job's sync decided, with what it was decided on.
#[derive(Debug)]
pub struct JobPlan(Planned);

#[derive(Debug)]
enum Planned {
    /// Pods to create, delete or release, and the status they lead to.
    Sync {
        job: Arc<Job>,
        candidates: Vec<Arc<Pod>>,
        basis: Basis,
        plan: Box<SyncPlan>,
        started: Instant,
    },
    /// A finished Job: nothing to write. Shadow mode still compares its final status, computed
    /// while the plan's input was at hand: a finished Job gets no more events, so a difference
    /// would otherwise never be seen.
    Finished(Comparison),
}

/// What the plan was made on besides the Job and its candidates, kept to plan again without an
/// orphan that vanished before its adoption.
#[derive(Debug)]
struct Basis {
    expectations_satisfied: bool,
    expected_rm_finalizers: HashSet<String>,
    backoff: BackoffRecord,
    now: Timestamp,
}

impl<P: PodControl> Steps for JobController<P> {
    const NAME: &'static str = COMPONENT;
    type Object = Job;
    type Plan = JobPlan;
    type Error = SyncError;

    /// Reading one's own writes: no sync while a cache is older than what this controller wrote.
    fn ensure_fresh(&self, key: &ObjectKey) -> Result<Freshness, SyncError> {
        if !self.features.stale_controller_consistency_job {
            return Ok(Freshness::Fresh);
        }
        self.wiring
            .ensure_fresh(&self.executor.consistency, key, |gr| match gr {
                GR_PODS => self.pods.last_synced_resource_version_in(key.namespace()),
                GR_JOBS => self.jobs.last_synced_resource_version_in(key.namespace()),
                _ => u64::MAX,
            })
            .map(|()| Freshness::Fresh)
            .map_err(|source| SyncError::Stale {
                key: key.clone(),
                source,
            })
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<Job>> {
        let mut job = self.handlers.jobs.get(key.namespace(), key.name())?;
        if self.ignore_suspend
            && let Some(spec) = Arc::make_mut(&mut job).spec.as_mut()
        {
            spec.suspend = Some(false);
        }
        Some(job)
    }

    /// Also the shadow's record of finished pods: nothing of a gone Job stands.
    fn forget(&self, key: &ObjectKey) {
        let h = &self.handlers;
        h.expectations.delete(key.as_str());
        h.finalizers.delete(key.as_str());
        self.executor.consistency.clear(key.as_str());
        self.executor.backoff.remove(key.as_str());
        if let Some(s) = &self.shadow {
            s.finishes.forget(key.as_str());
        }
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_ref().map(|s| &*s.state)
    }

    fn client(&self) -> &kube::Client {
        &self.executor.client
    }

    /// The plan on the Job's pods; a Job another controller manages, one finished, one of an
    /// unknown completion mode or with a selector that does not parse has none.
    fn decide(&self, key: &ObjectKey, job: Arc<Job>) -> Result<Decided<JobPlan>, SyncError> {
        let started = Instant::now();
        let h = &self.handlers;
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        if crate::spec::is_finished(&job) {
            h.finished.observed(uid);
        } else if h.finished.awaited(uid) {
            tracing::debug!(job = %key, "written finished, not yet seen so in the cache; skipping");
            return Ok(Decided::Nothing(None));
        }
        // Checked before listing pods, so that a pod arriving in between is handled next time.
        let expectations_satisfied = h.expectations.satisfied(key.as_str());
        let candidates = pod_candidates(self.pods.store(), &*job);
        let backoff = match &self.shadow {
            Some(s) => s.finishes.record(&job, &candidates),
            None => self.executor.backoff.get(key.as_str()),
        };
        let basis = Basis {
            expectations_satisfied,
            expected_rm_finalizers: h.finalizers.expected(key.as_str()),
            backoff,
            now: self.executor.clock.now(),
        };
        self.plan(key, job, candidates, basis, started)
    }

    fn compare(&self, _: &ObjectKey, plan: JobPlan) -> Comparison {
        match plan.0 {
            Planned::Sync {
                job,
                candidates,
                plan,
                ..
            } => {
                let status = status_plan(&plan, &ManageOutcome::assumed(&plan.action));
                let full = FullPlan { sync: *plan, status };
                Comparison {
                    differences: shadow::differences(&job, &full),
                    fingerprint: controller::shadow::fingerprint(&*job, &candidates),
                    again: None,
                }
            }
            Planned::Finished(comparison) => comparison,
        }
    }

    /// Adopts (adding the tracking finalizer) and releases (removing it). A failed claim fails the
    /// sync as a failed write does ([`Self::failed`]).
    async fn claim(&self, key: &ObjectKey, plan: &JobPlan) -> Result<Vec<String>, SyncError> {
        let Planned::Sync {
            job, plan, started, ..
        } = &plan.0
        else {
            return Ok(Vec::new());
        };
        let claimed = self.executor.claim(key, plan).await;
        if claimed.is_err() {
            self.failed(key, job, plan.metrics_action, plan.requeue_after, *started);
        }
        claimed
    }

    fn without(
        &self,
        key: &ObjectKey,
        plan: JobPlan,
        gone: &[String],
    ) -> Result<Decided<JobPlan>, SyncError> {
        let Planned::Sync {
            job,
            candidates,
            basis,
            started,
            ..
        } = plan.0
        else {
            return Ok(Decided::Plan(plan));
        };
        let kept = candidates
            .into_iter()
            .filter(|p| {
                !gone
                    .iter()
                    .any(|uid| p.metadata.uid.as_deref() == Some(uid.as_str()))
            })
            .collect();
        self.plan(key, job, kept, basis, started)
    }

    async fn execute(&self, key: &ObjectKey, plan: JobPlan) -> Result<Option<Duration>, SyncError> {
        let Planned::Sync {
            job, plan, started, ..
        } = plan.0
        else {
            return Ok(None);
        };
        let (action, requeue) = (plan.metrics_action, plan.requeue_after);
        let result = self.executor.execute(key, *plan).await;
        if result.is_err() {
            self.failed(key, &job, action, requeue, started);
        } else {
            let mode = completion_mode_label(&job);
            self.executor
                .metrics
                .job_sync(mode, "success", action, started.elapsed());
        }
        result
    }
}

impl<P: PodControl> JobController<P> {
    /// A sync whose claims or writes failed: counted, and its timed wake-up queued all the same.
    fn failed(
        &self,
        key: &ObjectKey,
        job: &Job,
        action: &'static str,
        requeue: Option<Duration>,
        started: Instant,
    ) {
        if let Some(after) = requeue {
            // Upstream queues its timed wake-ups (the active deadline, the end of a backoff) while
            // it syncs, whatever the sync returns; the queue keeps the earlier of this and the
            // rate-limited retry, so a Job whose writes keep failing still fails on its deadline.
            self.handlers.queue.add_after(key.clone(), after);
        }
        let mode = completion_mode_label(job);
        self.executor
            .metrics
            .job_sync(mode, "error", action, started.elapsed());
    }

    /// The plan on `candidates` (upstream `syncJob` up to its writes).
    fn plan(
        &self,
        key: &ObjectKey,
        job: Arc<Job>,
        candidates: Vec<Arc<Pod>>,
        basis: Basis,
        started: Instant,
    ) -> Result<Decided<JobPlan>, SyncError> {
        let input = SyncInput {
            job: &job,
            candidates: &candidates,
            expectations_satisfied: basis.expectations_satisfied,
            expected_rm_finalizers: &basis.expected_rm_finalizers,
            backoff: basis.backoff,
            now: basis.now,
            suspend_clears_start_time: self.features.mutable_scheduling_directives_for_suspended_jobs,
            delays: self.handlers.delays,
        };
        let plan = match plan_pods(&input) {
            Ok(Decision::Sync(plan)) => plan,
            other => return self.without_plan(key, &input, other, started),
        };
        Ok(Decided::Plan(JobPlan(Planned::Sync {
            job,
            candidates,
            basis,
            plan,
            started,
        })))
    }

    /// A Job the plan has nothing to do for.
    fn without_plan(
        &self,
        key: &ObjectKey,
        input: &SyncInput<'_>,
        decided: Result<Decision<SyncPlan>, PlanError>,
        started: Instant,
    ) -> Result<Decided<JobPlan>, SyncError> {
        match decided {
            Ok(Decision::Sync(_)) => unreachable!("a plan is executed, not passed here"),
            Ok(Decision::ManagedExternally(name)) => {
                tracing::debug!(job = %key, controller = name, "managed by another controller; skipping");
                if let Some(s) = &self.shadow {
                    s.finishes.forget(key.as_str());
                }
                Ok(Decided::NotOurs)
            }
            Ok(Decision::Finished) => {
                self.executor.backoff.remove(key.as_str());
                if self.shadow.is_none() {
                    return Ok(Decided::Nothing(None));
                }
                Ok(Decided::Plan(JobPlan(Planned::Finished(Comparison {
                    differences: shadow::final_status_differences(input),
                    fingerprint: controller::shadow::fingerprint(input.job, input.candidates),
                    again: None,
                }))))
            }
            Ok(Decision::UnknownCompletionMode) => {
                self.executor.recorder.record(
                    &object_reference(&Owner::of(input.job)),
                    TYPE_WARNING,
                    EVENT_UNKNOWN_COMPLETION_MODE,
                    EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE.to_owned(),
                );
                Ok(Decided::Nothing(None))
            }
            Err(PlanError::InvalidSelector { key, source }) => {
                // As upstream: an error (retried with backoff, no event) that only a change to the
                // Job fixes; other Jobs go on meanwhile.
                let mode = completion_mode_label(input.job);
                self.executor
                    .metrics
                    .job_sync(mode, "error", ACTION_RECONCILING, started.elapsed());
                Err(SyncError::InvalidSelector { key, source })
            }
        }
    }
}
