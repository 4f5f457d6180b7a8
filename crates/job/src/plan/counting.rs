//! Counting, before any decision (upstream `syncJob` from `getPodsForJob` to the backoff record):
//! which claimed pods are active, ready or terminating, which finished pods this sync counts for
//! the first time, what the counters become, and for Indexed Jobs the succeeded and failed indexes.

use controller::compact_pod::Pod;
use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
};

use controller::pod_util::{is_active, is_ready, is_terminating};
use k8s_openapi::api::batch::v1::{Job, JobStatus};

use crate::{
    indexed::{failed_indexes, pods_with_delayed_deletion, succeeded_indexes},
    intervals::OrderedIntervals,
    pod_failure_policy::match_pod_failure_policy,
    spec::*,
};

/// What the claimed pods add up to.
#[derive(Debug)]
pub(super) struct Counts {
    pub(crate) active: Vec<Arc<Pod>>,
    pub(crate) ready: i32,
    pub(crate) terminating: i32,
    /// Finished pods no earlier sync counted: the backoff record takes their finish times.
    pub(crate) new_succeeded: Vec<Arc<Pod>>,
    pub(crate) new_failed: Vec<Arc<Pod>>,
    /// The counters as if this sync's finished pods were counted already.
    pub(crate) succeeded: i32,
    pub(crate) failed: i32,
    /// `status.uncountedTerminatedPods` as the sync found it.
    pub(crate) uncounted_succeeded: HashSet<String>,
    pub(crate) uncounted_failed: HashSet<String>,
}

/// Counts `pods`, the Job's claimed pods. `job` carries `status.uncountedTerminatedPods`.
pub(super) fn count(job: &Job, pods: &[Arc<Pod>], expected_rm_finalizers: &HashSet<String>) -> Counts {
    let status = job.status.as_ref();
    let uncounted = status.and_then(|s| s.uncounted_terminated_pods.as_ref());
    let uids = |l: Option<&Vec<String>>| l.into_iter().flatten().cloned().collect::<HashSet<_>>();
    let uncounted_succeeded = uids(uncounted.and_then(|u| u.succeeded.as_ref()));
    let uncounted_failed = uids(uncounted.and_then(|u| u.failed.as_ref()));

    let active: Vec<Arc<Pod>> = pods.iter().filter(|p| is_active(p)).cloned().collect();
    let ready = len_i32(active.iter().filter(|p| is_ready(p)).count());
    let terminating = len_i32(pods.iter().filter(|p| is_terminating(p)).count());

    let indexed = is_indexed(job);
    let completions = indexed_completions(job);
    // Finished pods not counted yet: with the finalizer, not uncounted, not being un-finalized, and
    // (Indexed) with a valid index.
    let countable = |p: &Pod, uncounted: &HashSet<String>| {
        let uid = p.metadata.uid.as_deref().unwrap_or("");
        has_tracking_finalizer(&p.metadata)
            && !uncounted.contains(uid)
            && !expected_rm_finalizers.contains(uid)
            && (!indexed || valid_index(p, completions).is_some())
    };
    let new_succeeded: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| countable(p, &uncounted_succeeded) && phase(p) == "Succeeded")
        .cloned()
        .collect();
    let new_failed: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| countable(p, &uncounted_failed) && is_pod_failed(p, job))
        .cloned()
        .collect();
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    let counted_failures = new_failed
        .iter()
        .filter(|p| match_pod_failure_policy(policy, p).count_failed)
        .count();
    let (succeeded_before, failed_before) = status.map_or((None, None), |s| (s.succeeded, s.failed));
    // Wrapping, as upstream's int32 sums: the API server takes any count >= 0 in a status write, and
    // the sum past i32::MAX is then refused as upstream's is, not a panic in a debug build.
    let succeeded = succeeded_before
        .unwrap_or(0)
        .wrapping_add(len_i32(new_succeeded.len()))
        .wrapping_add(len_i32(uncounted_succeeded.len()));
    let failed = failed_before
        .unwrap_or(0)
        .wrapping_add(len_i32(counted_failures))
        .wrapping_add(len_i32(uncounted_failed.len()));
    Counts {
        active,
        ready,
        terminating,
        new_succeeded,
        new_failed,
        succeeded,
        failed,
        uncounted_succeeded,
        uncounted_failed,
    }
}

/// The Job as the sync works on it: a status, and in it `uncountedTerminatedPods`, always present.
pub(super) fn with_status(job: &Job) -> Job {
    let mut job = job.clone();
    job.status
        .get_or_insert_with(JobStatus::default)
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    job
}

/// An Indexed Job's indexes; all empty for a NonIndexed one.
#[derive(Debug, Default)]
pub(super) struct Indexes {
    /// `status.completedIndexes` as written, and with this sync's successes added.
    pub(crate) prev_succeeded: OrderedIntervals,
    pub(crate) succeeded: OrderedIntervals,
    /// Only with backoffLimitPerIndex.
    pub(crate) failed: Option<OrderedIntervals>,
    /// Per index, the failed pod kept until its replacement exists (backoffLimitPerIndex only).
    pub(crate) delayed: BTreeMap<i32, Arc<Pod>>,
}

/// Upstream `calculateSucceededIndexes`, `calculateFailedIndexes` and
/// `getPodsWithDelayedDeletionPerIndex`.
pub(super) fn indexes(
    job: &Job,
    pods: &[Arc<Pod>],
    active: &[Arc<Pod>],
    expected_rm_finalizers: &HashSet<String>,
) -> Indexes {
    if !is_indexed(job) {
        return Indexes::default();
    }
    let (prev_succeeded, succeeded) = succeeded_indexes(job, pods);
    if backoff_limit_per_index(job).is_none() {
        return Indexes {
            prev_succeeded,
            succeeded,
            ..Indexes::default()
        };
    }
    let failed = failed_indexes(job, pods);
    let counted = |p: &Pod| {
        has_tracking_finalizer(&p.metadata)
            && !expected_rm_finalizers.contains(p.metadata.uid.as_deref().unwrap_or(""))
    };
    let delayed = pods_with_delayed_deletion(job, pods, active, &succeeded, &failed, counted);
    Indexes {
        prev_succeeded,
        succeeded,
        failed: Some(failed),
        delayed,
    }
}
