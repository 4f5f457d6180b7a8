//! Deciding: what one sync of a Job writes, as a pure function of what the caches show (upstream
//! `syncJob`). It comes in two halves because the second depends on what the first one's writes
//! achieved: [`plan_pods`] decides the pod writes; [`status_plan`] the status, conditions and
//! finalizer removals that follow from them; [`status_after_removal`] what the status becomes once
//! those removals are done. [`plan_sync`] runs all of it as if every write succeeds, for tests,
//! benchmarks and shadow mode; the executor runs the halves around the real writes.
//!
//! Each step is a module that returns its part. The types the steps hand on live in [`state`],
//! which imports no other step, and no step imports this module: the only way through the
//! planner is the sequence below.

mod after_removal;
mod counting;
mod finishing;
mod pods;
mod state;
mod status;
mod tracking;

use std::time::Duration;

use controller::{Owner, pod_util::is_deleting};
use informer::ObjectKey;
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::Time};

pub(crate) use after_removal::{finished_events, status_after_removal};
pub(crate) use finishing::deadline_left;
pub(crate) use state::{Creation, ManageOutcome, PlannedEvent, PodAction, StatusPlan, SyncPlan};
pub use state::{Decision, FullPlan, PlanError, SyncInput};

use crate::{
    metrics::ACTION_RECONCILING,
    ownership::{ownership, selector},
    spec::{
        MODE_INDEXED, MODE_NON_INDEXED, completion_mode, is_finished, is_indexed, managed_by_external,
        suspended,
    },
};

/// Plans a whole sync as if every write succeeds: the pod writes, then the status, conditions,
/// finalizer removals and events that follow.
pub fn plan_sync(input: &SyncInput<'_>) -> Result<Decision<FullPlan>, PlanError> {
    Ok(match plan_pods(input)? {
        Decision::Sync(sync) => {
            let status = status_plan(&sync, &ManageOutcome::assumed(&sync.action));
            Decision::Sync(Box::new(FullPlan { sync: *sync, status }))
        }
        Decision::ManagedExternally(n) => Decision::ManagedExternally(n),
        Decision::Finished => Decision::Finished,
        Decision::UnknownCompletionMode => Decision::UnknownCompletionMode,
    })
}

/// The first half: entry checks, counting, the finishing condition and the pod writes, one line
/// per step of upstream's `syncJob`.
pub(crate) fn plan_pods(input: &SyncInput<'_>) -> Result<Decision<SyncPlan>, PlanError> {
    if let Some(skip) = not_ours_to_sync(input.job) {
        return Ok(skip);
    }
    let matcher = selector(input.job).map_err(|source| PlanError::InvalidSelector {
        key: ObjectKey::of(input.job),
        source,
    })?;
    let owner = Owner::of(input.job);
    // getPodsForJob
    let claimed = ownership(&owner, &matcher, input.candidates);
    // active, ready, terminating; getNewFinishedPods; the counters
    let mut job = counting::with_status(input.job);
    let counts = counting::count(&job, &claimed.pods, input.expected_rm_finalizers);
    set_start_time(&mut job, input);
    // newBackoffRecord
    let backoff = input
        .backoff
        .with_finished(&counts.new_succeeded, &counts.new_failed);
    // podFailurePolicy FailJob, backoffLimit, activeDeadlineSeconds
    let finishing = finishing::finishing_condition(&job, &claimed.pods, counts.failed, input.now);
    // Indexed: calculateSucceededIndexes, calculateFailedIndexes, maxFailedIndexes, successPolicy
    let indexes = counting::indexes(&job, &claimed.pods, &counts.active, input.expected_rm_finalizers);
    let finished = finishing
        .condition
        .or_else(|| finishing::by_indexes(&job, &indexes.succeeded, indexes.failed.as_ref(), input.now));
    // An Indexed Job's successes are its succeeded indexes.
    let succeeded = if is_indexed(&job) {
        indexes.succeeded.total()
    } else {
        counts.succeeded
    };
    let plan = SyncPlan {
        owner,
        claims: claimed.claims,
        job,
        pods: claimed.pods,
        active: counts.active,
        ready: counts.ready,
        terminating: counts.terminating,
        succeeded,
        failed: counts.failed,
        prev_succeeded_indexes: indexes.prev_succeeded,
        succeeded_indexes: indexes.succeeded,
        failed_indexes: indexes.failed,
        backoff,
        finished,
        expectations_satisfied: input.expectations_satisfied,
        delayed: indexes.delayed,
        uncounted_succeeded: counts.uncounted_succeeded,
        uncounted_failed: counts.uncounted_failed,
        expected_rm_finalizers: input.expected_rm_finalizers.clone(),
        action: PodAction::None,
        manage_called: false,
        suspend_clears_start_time: input.suspend_clears_start_time,
        delays: input.delays,
        requeue_after: finishing.requeue_after,
        metrics_action: ACTION_RECONCILING,
        now: input.now,
    };
    // deleteActivePods or manageJob
    Ok(Decision::Sync(Box::new(with_pod_writes(plan))))
}

/// The second half, given what the pod writes achieved: the status they leave, then finalizer
/// tracking up to its first write (upstream `trackJobStatusAndRemoveFinalizers`).
pub(crate) fn status_plan(plan: &SyncPlan, outcome: &ManageOutcome) -> StatusPlan {
    let draft = status::after_pod_writes(plan, outcome);
    tracking::track(plan, draft)
}

/// The Job is not synced: another controller manages it, it is finished, or its completion mode
/// is unknown.
fn not_ours_to_sync<T>(job: &Job) -> Option<Decision<T>> {
    if let Some(name) = managed_by_external(job) {
        return Some(Decision::ManagedExternally(name.to_owned()));
    }
    if is_finished(job) {
        return Some(Decision::Finished);
    }
    let known = matches!(completion_mode(job), None | Some(MODE_INDEXED | MODE_NON_INDEXED));
    (!known).then_some(Decision::UnknownCompletionMode)
}

/// A Job starts running at its first sync, unless it is suspended.
fn set_start_time(job: &mut Job, input: &SyncInput<'_>) {
    let status = job.status.get_or_insert_with(Default::default);
    if status.start_time.is_none() && !suspended(input.job) {
        status.start_time = Some(Time(input.now));
    }
}

/// Upstream's choice of pod writes: a finishing Job deletes its active pods (`deleteActivePods`),
/// keeping their finalizers for tracking to count them; otherwise `manageJob` runs, once the
/// caches show every pod write of earlier syncs and unless the Job is being deleted.
fn with_pod_writes(mut plan: SyncPlan) -> SyncPlan {
    if plan.finished.is_some() {
        plan.action = PodAction::DeleteKeepingFinalizer(plan.active.clone());
    } else if plan.expectations_satisfied && !is_deleting(&plan.job.metadata) {
        let writes = pods::manage(&plan);
        plan.action = writes.action;
        plan.metrics_action = writes.metrics_action;
        plan.requeue_after = earliest(plan.requeue_after, writes.requeue_after);
        plan.manage_called = true;
    }
    plan
}

fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
pub(crate) mod tests;
