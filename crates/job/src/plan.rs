//! Deciding, first half: what one sync of a Job does to its pods, as a pure function of what the
//! caches show (upstream `syncJob` up to `manageJob`'s writes). [`crate::tracking`] is the second
//! half (status, conditions, finalizers) and takes what the pod writes achieved; [`plan_sync`] runs
//! both assuming every write succeeds, for tests, benchmarks and shadow mode.

use controller::compact_pod::Pod;
use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
    time::Duration,
};

use controller::{Owner, pod_util::is_deleting};
use informer::{ObjectKey, SelectorError};
use k8s_openapi::{
    api::batch::v1::{Job, JobCondition, JobStatus},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};

use crate::{
    backoff::BackoffRecord,
    claim::{claim, owner, selector},
    conditions::*,
    finishing::{failure, finishing_condition},
    intervals::OrderedIntervals,
    manage::{PodAction, plan_manage},
    pod_failure_policy::match_pod_failure_policy,
    spec::*,
    tracking::{ManageOutcome, StatusPlan},
};

/// What the caches show for one Job, and this controller's memory of it.
#[derive(Debug, Clone, Copy)]
pub struct SyncInput<'a> {
    pub job: &'a Job,
    /// Every pod of the Job's namespace that it might own: its own and the orphans.
    pub candidates: &'a [Arc<Pod>],
    /// Checked before listing pods, so that a pod arriving in between is handled by the next sync.
    pub expectations_satisfied: bool,
    /// Pods whose finalizer removal is in flight: counted already, not to be counted again.
    pub expected_rm_finalizers: &'a HashSet<String>,
    pub backoff: BackoffRecord,
    pub now: Timestamp,
    /// Suspending a Job clears `status.startTime` (1.36 gate `MutableSchedulingDirectivesForSuspendedJobs`,
    /// beta and on by default; resuming sets it again either way).
    pub suspend_clears_start_time: bool,
}

/// Why a Job is not synced at all.
#[derive(Debug)]
pub enum Decision<T> {
    /// `spec.managedBy` names another controller: not ours, whatever the handlers thought.
    ManagedExternally(String),
    /// Complete or Failed already: nothing left to do (the backoff record is dropped).
    Finished,
    /// A completion mode this controller does not know: a Warning event, no retry.
    UnknownCompletionMode,
    Sync(Box<T>),
}

/// Why a Job cannot be planned for; reported and not retried.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("couldn't convert the selector of Job {key}: {source}")]
    InvalidSelector { key: ObjectKey, source: SelectorError },
}

/// Everything the first half decided, and what the second half needs.
#[derive(Debug, Clone)]
pub struct SyncPlan {
    pub key: ObjectKey,
    pub owner: Owner,
    /// Orphans to adopt (the patch adds the tracking finalizer too) and pods to release.
    pub adopt: Vec<Arc<Pod>>,
    pub release: Vec<Arc<Pod>>,
    /// The Job as this sync sees it: startTime set, uncountedTerminatedPods present.
    pub job: Job,
    /// Claimed pods (adopted ones shown with the finalizer) and the active ones among them.
    pub pods: Vec<Arc<Pod>>,
    pub active: Vec<Arc<Pod>>,
    pub ready: i32,
    pub terminating: i32,
    pub succeeded: i32,
    pub failed: i32,
    pub prev_succeeded_indexes: OrderedIntervals,
    pub succeeded_indexes: OrderedIntervals,
    /// Only with backoffLimitPerIndex.
    pub failed_indexes: Option<OrderedIntervals>,
    /// The backoff record including this sync's newly finished pods.
    pub backoff: BackoffRecord,
    /// The finishing condition decided before any pod write (interim, or final for a Job whose
    /// interim condition was written earlier).
    pub finished: Option<JobCondition>,
    pub expectations_satisfied: bool,
    /// Per index, the failed pod kept until its replacement exists.
    pub delayed: BTreeMap<i32, Arc<Pod>>,
    pub uncounted_succeeded: HashSet<String>,
    pub uncounted_failed: HashSet<String>,
    pub expected_rm_finalizers: HashSet<String>,
    /// The pod writes, and whether manageJob ran (suspension conditions are set only then).
    pub action: PodAction,
    pub manage_called: bool,
    /// [`SyncInput::suspend_clears_start_time`].
    pub suspend_clears_start_time: bool,
    pub requeue_after: Option<Duration>,
    /// The `action` label of the sync metrics: reconciling, tracking, pods_created, pods_deleted.
    pub metrics_action: &'static str,
    pub now: Timestamp,
}

/// Both halves under the assumption that every write succeeds.
#[derive(Debug, Clone)]
pub struct FullPlan {
    pub sync: SyncPlan,
    pub status: StatusPlan,
}

/// Plans a whole sync as if every write succeeds: the pod writes, then the status, conditions,
/// finalizer removals and events that follow.
pub fn plan_sync(input: &SyncInput<'_>) -> Result<Decision<FullPlan>, PlanError> {
    Ok(match plan_pods(input)? {
        Decision::Sync(sync) => {
            let status = sync.status_plan(&ManageOutcome::assumed(&sync.action));
            Decision::Sync(Box::new(FullPlan { sync: *sync, status }))
        }
        Decision::ManagedExternally(n) => Decision::ManagedExternally(n),
        Decision::Finished => Decision::Finished,
        Decision::UnknownCompletionMode => Decision::UnknownCompletionMode,
    })
}

/// The first half: entry checks, counting, the finishing condition and the pod writes.
pub fn plan_pods(input: &SyncInput<'_>) -> Result<Decision<SyncPlan>, PlanError> {
    let shared = input.job;
    if let Some(name) = managed_by_external(shared) {
        return Ok(Decision::ManagedExternally(name.to_owned()));
    }
    if is_finished(shared) {
        return Ok(Decision::Finished);
    }
    if !matches!(
        completion_mode(shared),
        None | Some(MODE_INDEXED | MODE_NON_INDEXED)
    ) {
        return Ok(Decision::UnknownCompletionMode);
    }
    let key = ObjectKey::of(shared);
    let matcher = selector(shared).map_err(|source| PlanError::InvalidSelector {
        key: key.clone(),
        source,
    })?;
    let owner = owner(shared);
    let now = input.now;
    let mut job = shared.clone();
    let status = job.status.get_or_insert_with(JobStatus::default);
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let uncounted_succeeded: HashSet<String> = uncounted.succeeded.iter().flatten().cloned().collect();
    let uncounted_failed: HashSet<String> = uncounted.failed.iter().flatten().cloned().collect();

    let (pods, adopt, release) = claim(&owner, &matcher, input.candidates);
    let active: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| controller::pod_util::is_active(p))
        .cloned()
        .collect();
    let ready = len_i32(
        active
            .iter()
            .filter(|p| controller::pod_util::is_ready(p))
            .count(),
    );
    let terminating = len_i32(
        pods.iter()
            .filter(|p| controller::pod_util::is_terminating(p))
            .count(),
    );
    let expected = input.expected_rm_finalizers;
    let indexed = is_indexed(&job);
    let completions = indexed_completions(&job);
    // Finished pods not counted yet: with the finalizer, not uncounted, not being un-finalized, and
    // (Indexed) with a valid index.
    let countable = |p: &Pod, uncounted: &HashSet<String>| {
        let uid = p.metadata.uid.as_deref().unwrap_or("");
        has_tracking_finalizer(&p.metadata)
            && !uncounted.contains(uid)
            && !expected.contains(uid)
            && (!indexed || valid_index(p, completions).is_some())
    };
    let new_succeeded: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| countable(p, &uncounted_succeeded) && phase(p) == "Succeeded")
        .cloned()
        .collect();
    let new_failed: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| countable(p, &uncounted_failed) && is_pod_failed(p, &job))
        .cloned()
        .collect();
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    let counted_failures = new_failed
        .iter()
        .filter(|p| match_pod_failure_policy(policy, p).count_failed)
        .count();
    let status = job.status.get_or_insert_with(JobStatus::default);
    let mut succeeded =
        status.succeeded.unwrap_or(0) + len_i32(new_succeeded.len()) + len_i32(uncounted_succeeded.len());
    let failed = status.failed.unwrap_or(0) + len_i32(counted_failures) + len_i32(uncounted_failed.len());
    if status.start_time.is_none() && !suspended(shared) {
        status.start_time = Some(Time(now));
    }
    let backoff = input.backoff.with_finished(&new_succeeded, &new_failed);

    let mut requeue_after = None;
    let mut finished = finishing_condition(&job, &pods, failed, now, &mut requeue_after);
    let (mut prev_succeeded_indexes, mut succeeded_indexes) = Default::default();
    let mut failed_indexes = None;
    let mut delayed = BTreeMap::new();
    if indexed {
        (prev_succeeded_indexes, succeeded_indexes) = crate::indexed::succeeded_indexes(&job, &pods);
        succeeded = succeeded_indexes.total();
        if backoff_limit_per_index(&job).is_some() {
            let fi = crate::indexed::failed_indexes(&job, &pods);
            if finished.is_none() {
                let max_failed = job.spec.as_ref().and_then(|s| s.max_failed_indexes);
                if max_failed.is_some_and(|m| fi.total() > m) {
                    finished = Some(failure(
                        REASON_MAX_FAILED_INDEXES_EXCEEDED,
                        MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
                        now,
                    ));
                } else if fi.total() > 0 && fi.total() + succeeded_indexes.total() >= completions {
                    finished = Some(failure(REASON_FAILED_INDEXES, MESSAGE_FAILED_INDEXES, now));
                }
            }
            let counted = |p: &Pod| {
                has_tracking_finalizer(&p.metadata)
                    && !expected.contains(p.metadata.uid.as_deref().unwrap_or(""))
            };
            delayed = crate::indexed::pods_with_delayed_deletion(
                &job,
                &pods,
                &active,
                &succeeded_indexes,
                &fi,
                counted,
            );
            failed_indexes = Some(fi);
        }
        if finished.is_none() {
            let sp = job.spec.as_ref().and_then(|s| s.success_policy.as_ref());
            if let Some(msg) =
                crate::success_policy::match_success_policy(sp, completions, &succeeded_indexes)
            {
                finished = Some(new_condition(
                    SUCCESS_CRITERIA_MET,
                    "True",
                    REASON_SUCCESS_POLICY,
                    &msg,
                    now,
                ));
            }
        }
    }

    let mut plan = SyncPlan {
        key,
        owner,
        adopt,
        release,
        job,
        pods,
        active,
        ready,
        terminating,
        succeeded,
        failed,
        prev_succeeded_indexes,
        succeeded_indexes,
        failed_indexes,
        backoff,
        finished,
        expectations_satisfied: input.expectations_satisfied,
        delayed,
        uncounted_succeeded,
        uncounted_failed,
        expected_rm_finalizers: expected.clone(),
        action: PodAction::None,
        manage_called: false,
        suspend_clears_start_time: input.suspend_clears_start_time,
        requeue_after,
        metrics_action: crate::metrics::ACTION_RECONCILING,
        now,
    };
    if plan.finished.is_some() {
        // Finishing: every active pod is deleted, keeping its finalizer until it is counted.
        plan.action = PodAction::DeleteActive(plan.active.clone());
    } else if plan.expectations_satisfied && !is_deleting(&plan.job.metadata) {
        plan_manage(&mut plan);
        plan.manage_called = true;
    }
    Ok(Decision::Sync(Box::new(plan)))
}

#[cfg(test)]
#[path = "plan_test_support.rs"]
pub(crate) mod support;

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "plan_policy_tests.rs"]
mod policy_tests;

#[cfg(test)]
#[path = "plan_table_tests.rs"]
mod table;

#[cfg(test)]
#[path = "plan_props.rs"]
mod props;
