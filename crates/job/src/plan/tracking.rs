//! Finalizer tracking up to its first write (upstream `trackJobStatusAndRemoveFinalizers`): which
//! finished pods this sync records as uncounted and un-finalizes, and which conditions are written
//! before the removals.
//!
//! The order is what makes finalizer tracking safe: finished pods are first written into
//! `status.uncountedTerminatedPods` (or, Indexed successes, `completedIndexes`), then their finalizer
//! is removed, then they move to `succeeded`/`failed` ([`super::after_removal`]). A crash at any
//! point leaves either a pod with its finalizer (counted on the next sync) or an uncounted UID whose
//! pod lost the finalizer (moved to the counters on the next sync); never a pod counted twice or
//! lost. The terminal condition comes only once nothing is uncounted and no pod is terminating.

use controller::compact_pod::Pod;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::{
    api::batch::v1::{JobCondition, JobStatus},
    jiff::Timestamp,
};

use super::state::{StatusDraft, StatusPlan, SyncPlan};
use crate::{
    conditions::*,
    pod_failure_policy::{Action, match_pod_failure_policy},
    spec::*,
};

/// Most pods one sync adds to `uncountedTerminatedPods` and un-finalizes (upstream
/// `MaxUncountedPods`, which upstream sizes to keep the status small and big Jobs from starving
/// small ones).
pub(super) const MAX_UNCOUNTED_PODS: usize = 500;

/// The status write and finalizer removals that follow `draft`.
pub(super) fn track(plan: &SyncPlan, draft: StatusDraft) -> StatusPlan {
    let StatusDraft {
        mut job,
        finished,
        terminating,
        mut needs_flush,
        events,
    } = draft;
    let pods = in_tracking_order(plan);
    let uids_with_finalizer: HashSet<String> =
        pods.iter().filter(|p| tracked(plan, p)).map(|p| uid(p)).collect();
    let status = job.status.get_or_insert_with(JobStatus::default);
    needs_flush |= move_counted(status, &uids_with_finalizer);
    let recorded = record_finished(plan, &pods, status, finished.as_ref());
    needs_flush |= recorded.changed;
    if is_indexed(&plan.job) {
        needs_flush |= write_indexes(plan, status, recorded.new_succeeded_indexes);
    }
    let (finished, interim_added) = interim_condition(status, finished, plan.now);
    needs_flush |= interim_added;
    StatusPlan {
        status: job.status.unwrap_or_default(),
        flush_first: needs_flush,
        remove_finalizers: recorded.remove,
        uids_with_finalizer,
        finished,
        reached_max_uncounted: recorded.reached_max,
        terminating,
        events,
        policy_actions: recorded.policy_actions,
    }
}

/// Moves uncounted UIDs whose pods no longer carry the finalizer into the counters (upstream
/// `cleanUncountedPodsWithoutFinalizers`). Returns whether anything moved.
pub(super) fn move_counted(status: &mut JobStatus, with_finalizer: &HashSet<String>) -> bool {
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let mut changed = false;
    for (list, counter) in [
        (&mut uncounted.succeeded, &mut status.succeeded),
        (&mut uncounted.failed, &mut status.failed),
    ] {
        let Some(uids) = list.as_mut() else { continue };
        let before = uids.len();
        uids.retain(|u| with_finalizer.contains(u));
        let moved = before - uids.len();
        if moved > 0 {
            changed = true;
            // Wrapping, as upstream's int32 sum (see `counting`).
            *counter = Some(counter.unwrap_or(0).wrapping_add(len_i32(moved)));
        }
        if uids.is_empty() {
            *list = None;
        }
    }
    changed
}

fn uid(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

/// The claimed pods, Indexed ones by index: the uncounted cap then keeps the lowest indexes.
fn in_tracking_order(plan: &SyncPlan) -> Vec<&Arc<Pod>> {
    let mut pods: Vec<&Arc<Pod>> = plan.pods.iter().collect();
    if is_indexed(&plan.job) {
        pods.sort_by_key(|p| completion_index(p).unwrap_or(-1));
    }
    pods
}

/// The pod still carries the finalizer as far as this sync knows: no removal is in flight.
fn tracked(plan: &SyncPlan, p: &Pod) -> bool {
    let uid = p.metadata.uid.as_deref().unwrap_or_default();
    has_tracking_finalizer(&p.metadata) && !plan.expected_rm_finalizers.contains(uid)
}

/// What [`record_finished`] wrote into the status.
#[derive(Debug, Default)]
struct Recorded {
    /// Pods whose finalizer goes after the status write.
    remove: Vec<Arc<Pod>>,
    /// Indexed: indexes that succeeded this sync, unsorted.
    new_succeeded_indexes: Vec<i32>,
    policy_actions: BTreeMap<Action, u32>,
    /// [`MAX_UNCOUNTED_PODS`] was reached: the remaining pods wait for the next sync.
    reached_max: bool,
    changed: bool,
}

/// Adds the finished pods whose finalizer can go to `uncountedTerminatedPods` (Indexed successes:
/// to the new succeeded indexes), up to [`MAX_UNCOUNTED_PODS`].
fn record_finished(
    plan: &SyncPlan,
    pods: &[&Arc<Pod>],
    status: &mut JobStatus,
    finished: Option<&JobCondition>,
) -> Recorded {
    let indexed = is_indexed(&plan.job);
    let completions = indexed_completions(&plan.job);
    let policy = plan.job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    // A failing Job counts every pod it un-finalizes as failed, running ones included.
    let failing = finished.is_some_and(|c| !is_true(Some(c), SUCCESS_CRITERIA_MET));
    let mut out = Recorded::default();
    for p in pods {
        if !tracked(plan, p) {
            continue; // handled by an earlier sync
        }
        let u = uid(p);
        let considered_failed = is_pod_failed(p, &plan.job);
        if !can_remove_finalizer(plan, p, considered_failed, finished.is_some()) {
            continue;
        }
        out.remove.push((*p).clone());
        let uncounted = status
            .uncounted_terminated_pods
            .get_or_insert_with(Default::default);
        if phase(p) == "Succeeded" && !plan.uncounted_failed.contains(&u) {
            if indexed {
                if let Some(ix) =
                    valid_index(p, completions).filter(|ix| !plan.prev_succeeded_indexes.has(*ix))
                {
                    out.new_succeeded_indexes.push(ix);
                    out.changed = true;
                }
            } else if !plan.uncounted_succeeded.contains(&u) {
                out.changed = true;
                uncounted.succeeded.get_or_insert_with(Vec::new).push(u);
            }
        } else if (considered_failed || failing)
            && !plan.uncounted_failed.contains(&u)
            && (!indexed || valid_index(p, completions).is_some())
        {
            let m = match_pod_failure_policy(policy, p);
            if let Some(a) = m.action {
                *out.policy_actions.entry(a).or_insert(0) += 1;
            }
            if m.count_failed {
                out.changed = true;
                uncounted.failed.get_or_insert_with(Vec::new).push(u);
            }
        }
        let listed =
            uncounted.succeeded.as_ref().map_or(0, Vec::len) + uncounted.failed.as_ref().map_or(0, Vec::len);
        if out.new_succeeded_indexes.len() + listed >= MAX_UNCOUNTED_PODS {
            out.reached_max = true;
            break;
        }
    }
    out
}

/// Whether a pod's finalizer can go now: the Job is being deleted or finishing, the pod
/// succeeded, or it failed and is not kept for its index's replacement (upstream
/// `canRemoveFinalizer`).
fn can_remove_finalizer(plan: &SyncPlan, p: &Pod, considered_failed: bool, finishing: bool) -> bool {
    if plan.job.metadata.deletion_timestamp.is_some() || finishing || phase(p) == "Succeeded" {
        return true;
    }
    if !considered_failed {
        return false;
    }
    if backoff_limit_per_index(&plan.job).is_some()
        && let Some(ix) = completion_index(p)
        && plan
            .delayed
            .get(&ix)
            .is_some_and(|d| d.metadata.uid == p.metadata.uid)
    {
        return false;
    }
    true
}

/// Indexed: `completedIndexes` with this sync's successes, `succeeded` from it, and
/// `failedIndexes`. Returns whether either list changed.
fn write_indexes(plan: &SyncPlan, status: &mut JobStatus, mut new_succeeded: Vec<i32>) -> bool {
    new_succeeded.sort_unstable();
    let all = plan.succeeded_indexes.with_ordered_indexes(&new_succeeded);
    let s = all.to_string();
    let mut changed = status.completed_indexes.as_deref().unwrap_or("") != s;
    status.succeeded = Some(all.total());
    status.completed_indexes = Some(s);
    let failed = plan.failed_indexes.as_ref().map(ToString::to_string);
    if status.failed_indexes != failed {
        status.failed_indexes = failed;
        changed = true;
    }
    changed
}

/// Writes the interim condition (FailureTarget, SuccessCriteriaMet) with this status and returns
/// the terminal one (Failed, Complete) to add once the removals allow it, and whether a condition
/// was added.
fn interim_condition(
    status: &mut JobStatus,
    finished: Option<JobCondition>,
    now: Timestamp,
) -> (Option<JobCondition>, bool) {
    let Some(c) = finished else {
        return (None, false);
    };
    let conds = status.conditions.get_or_insert_with(Vec::new);
    if c.type_ == FAILURE_TARGET {
        conds.push(c.clone());
        let failed = new_condition(FAILED, "True", reason_of(&c), message_of(&c), now);
        (Some(failed), true)
    } else if is_true(Some(&c), SUCCESS_CRITERIA_MET) {
        let added = !conds.iter().any(|x| is_true(Some(x), SUCCESS_CRITERIA_MET));
        if added {
            conds.push(c.clone());
        }
        let complete = new_condition(COMPLETE, "True", reason_of(&c), message_of(&c), now);
        (Some(complete), added)
    } else {
        (Some(c), false)
    }
}
