//! Which pods to create or delete (upstream `manageJob`'s decisions): suspension deletes every active
//! pod; otherwise the Job wants `min(completions − succeeded, parallelism)` active pods (parallelism
//! until the first success in work-queue mode), deletes the surplus (Indexed: bad and duplicate
//! indexes first) or creates the missing ones (Indexed: lowest pending indexes), never both in one
//! sync, and waits out the re-creation backoff.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::pod_util::is_terminating;
use k8s_openapi::api::core::v1::PodTemplateSpec;

use super::state::{Creation, PodAction, SyncPlan};
use crate::{
    active_pods::{sort_for_deletion, sort_for_deletion_keeping_ties},
    backoff::remaining_for_index,
    indexed::{add_completion_index_env, duplicated_index_pods, first_pending_indexes, indexes_of},
    metrics::{ACTION_PODS_CREATED, ACTION_PODS_DELETED, ACTION_TRACKING},
    spec::*,
};

/// Most pods one sync creates or deletes (upstream `MaxPodCreateDeletePerSync`).
pub(super) const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

/// What manageJob decided.
#[derive(Debug)]
pub(super) struct PodWrites {
    pub(crate) action: PodAction,
    /// The `action` label of the sync metrics.
    pub(crate) metrics_action: &'static str,
    /// The end of a backoff being waited out.
    pub(crate) requeue_after: Option<Duration>,
}

impl PodWrites {
    fn delete(pods: Vec<Arc<Pod>>) -> Self {
        PodWrites {
            action: PodAction::RemoveFinalizerThenDelete(pods),
            metrics_action: ACTION_PODS_DELETED,
            requeue_after: None,
        }
    }

    /// No write: the pods are as wanted, or the missing ones wait (`requeue_after`).
    fn nothing(metrics_action: &'static str, requeue_after: Option<Duration>) -> Self {
        PodWrites {
            action: PodAction::None,
            metrics_action,
            requeue_after,
        }
    }
}

/// Upstream `manageJob`, for a Job that is not finishing.
pub(super) fn manage(plan: &SyncPlan) -> PodWrites {
    let job = &plan.job;
    if suspended(job) {
        return PodWrites::delete(pods_for_removal(plan, plan.active.len()));
    }
    let active = len_i32(plan.active.len());
    let want = wanted_active(plan);
    let rm_at_least = usize::try_from((active - want).max(0)).unwrap_or(0);
    let mut rm = pods_for_removal(plan, rm_at_least);
    rm.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
    if !rm.is_empty() {
        return PodWrites::delete(rm);
    }
    // With podReplacementPolicy Failed a terminating pod is replaced only once it has failed: until
    // then it holds its place.
    let terminating = if only_replace_failed(job) {
        plan.terminating
    } else {
        0
    };
    let missing = want - terminating - active;
    if missing <= 0 {
        return PodWrites::nothing(ACTION_TRACKING, None);
    }
    create(plan, usize::try_from(missing).unwrap_or(0))
}

/// How many pods should be active.
fn wanted_active(plan: &SyncPlan) -> i32 {
    let parallelism = parallelism(&plan.job);
    match completions(&plan.job) {
        // Work-queue mode: after the first success no new pod, the running ones finish.
        None if plan.succeeded > 0 => len_i32(plan.active.len()),
        None => parallelism,
        // Wrapping, as upstream's int32: a succeeded count past i32::MAX has wrapped (`counting`).
        Some(c) => c.wrapping_sub(plan.succeeded).min(parallelism).max(0),
    }
}

/// At least `rm_at_least` active pods to delete, in deletion order (upstream `activePodsForRemoval`).
fn pods_for_removal(plan: &SyncPlan, rm_at_least: usize) -> Vec<Arc<Pod>> {
    let indexed = is_indexed(&plan.job);
    let (mut rm, mut left) = if indexed {
        duplicated_index_pods(&plan.active, indexed_completions(&plan.job))
    } else {
        (Vec::new(), plan.active.clone())
    };
    if rm.len() < rm_at_least {
        if indexed {
            // One pod per index, in index order.
            sort_for_deletion_keeping_ties(&mut left);
        } else {
            sort_for_deletion(&mut left);
        }
        let more = rm_at_least - rm.len();
        rm.extend(left.into_iter().take(more));
    }
    rm
}

/// Up to `missing` creations (Indexed: the lowest pending indexes whose backoff is over), unless
/// the Job's re-creation backoff is still running.
fn create(plan: &SyncPlan, missing: usize) -> PodWrites {
    let job = &plan.job;
    if backoff_limit_per_index(job).is_none() {
        let remaining = plan.backoff.remaining(&plan.delays, plan.now);
        if remaining > Duration::ZERO {
            return wait(plan, remaining);
        }
    }
    let mut count = missing.min(MAX_POD_CREATE_DELETE_PER_SYNC);
    let mut template = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    let mut indexes = Vec::new();
    if is_indexed(job) {
        add_completion_index_env(&mut template);
        indexes = pending_indexes(plan, count);
        if backoff_limit_per_index(job).is_some() {
            match out_of_backoff(plan, indexes) {
                Ok(ready) => indexes = ready,
                Err(waiting) => return waiting,
            }
        }
        count = indexes.len();
    }
    if count == 0 {
        return PodWrites::nothing(ACTION_PODS_CREATED, None);
    }
    with_tracking_finalizer(&mut template);
    PodWrites {
        action: PodAction::Create(Box::new(Creation {
            template,
            count,
            indexes,
        })),
        metrics_action: ACTION_PODS_CREATED,
        requeue_after: None,
    }
}

/// The `count` lowest indexes with no active (or, replacing only failed pods, terminating) pod
/// that have neither succeeded nor failed.
fn pending_indexes(plan: &SyncPlan, count: usize) -> Vec<i32> {
    let job = &plan.job;
    let mut non_pending = plan
        .succeeded_indexes
        .with_ordered_indexes(&indexes_of(&plan.active));
    if only_replace_failed(job) {
        let terminating: Vec<Arc<Pod>> = plan.pods.iter().filter(|p| is_terminating(p)).cloned().collect();
        non_pending = non_pending.with_ordered_indexes(&indexes_of(&terminating));
    }
    if let Some(f) = &plan.failed_indexes {
        non_pending = non_pending.merge(f);
    }
    first_pending_indexes(count, indexed_completions(job), &non_pending)
}

/// backoffLimitPerIndex: the indexes whose own backoff is over; if none is, the wait for the
/// first one to end (nothing at all if no index waits).
fn out_of_backoff(plan: &SyncPlan, mut indexes: Vec<i32>) -> Result<Vec<i32>, PodWrites> {
    let now = plan.now;
    let remaining = |ix: &i32| remaining_for_index(&plan.delays, plan.delayed.get(ix).map(|p| &**p), now);
    let min_wait = indexes
        .iter()
        .map(remaining)
        .filter(|d| *d > Duration::ZERO)
        .min();
    indexes.retain(|ix| remaining(ix) == Duration::ZERO);
    if indexes.is_empty() {
        return Err(match min_wait {
            Some(d) => wait(plan, d),
            None => PodWrites::nothing(ACTION_PODS_CREATED, None),
        });
    }
    Ok(indexes)
}

/// Waiting out a backoff: look again then (at least a batch period away, as upstream's
/// `enqueueSyncJobWithDelay`). The status keeps the
/// current active count: reporting 0 beside Ready pods is a status the API server refuses ("cannot
/// set more ready pods than active"), which would hold back the failed pod's counting and its
/// finalizer for the whole backoff (Kubernetes 1.36.3 reports the current count too).
fn wait(plan: &SyncPlan, delay: Duration) -> PodWrites {
    PodWrites::nothing(
        ACTION_PODS_CREATED,
        Some(delay.max(plan.delays.sync_batch_period())),
    )
}

/// Pods are created with the tracking finalizer, so none finishes uncounted.
fn with_tracking_finalizer(template: &mut PodTemplateSpec) {
    let meta = template.metadata.get_or_insert_with(Default::default);
    let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
        finalizers.push(JOB_TRACKING_FINALIZER.into());
    }
}
