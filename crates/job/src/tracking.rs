//! Deciding, second half: status, conditions and finalizer removals once the pod writes are done
//! (upstream's end of `syncJob` and `trackJobStatusAndRemoveFinalizers`).
//!
//! The order is what makes finalizer tracking safe: finished pods are first written into
//! `status.uncountedTerminatedPods` (or, Indexed successes, `completedIndexes`), then their finalizer
//! is removed, then they move to `succeeded`/`failed`. A crash at any point leaves either a pod with
//! its finalizer (counted on the next sync) or an uncounted UID whose pod lost the finalizer (moved to
//! the counters on the next sync); never a pod counted twice or lost. The terminal condition comes
//! only once nothing is uncounted and no pod is terminating.

use controller::compact_pod::Pod;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};

use crate::{
    conditions::*,
    finish::{message, move_counted, normal, reason},
    manage::PodAction,
    plan::SyncPlan,
    pod_failure_policy::{Action, match_pod_failure_policy},
    spec::*,
};

/// Most pods one sync adds to `uncountedTerminatedPods` and un-finalizes (upstream
/// `MaxUncountedPods`: keeps the status under about 20 KB and big Jobs from starving small ones).
pub const MAX_UNCOUNTED_PODS: usize = 500;

/// What the pod writes achieved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ManageOutcome {
    pub deleted: i32,
    pub deleted_ready: i32,
    pub created: i32,
    /// Every deletion asked for succeeded (finishing Jobs keep their condition only then).
    pub all_deleted: bool,
}

impl ManageOutcome {
    /// Every write of `action` succeeded.
    pub fn assumed(action: &PodAction) -> Self {
        let (deleted, deleted_ready) = match action {
            PodAction::DeleteActive(p) | PodAction::Delete(p) => (
                len_i32(p.len()),
                len_i32(p.iter().filter(|p| controller::pod_util::is_ready(p)).count()),
            ),
            _ => (0, 0),
        };
        let created = match action {
            PodAction::Create(c) => len_i32(c.count),
            _ => 0,
        };
        ManageOutcome {
            deleted,
            deleted_ready,
            created,
            all_deleted: true,
        }
    }
}

/// An event to record on the Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

/// The status writes and finalizer removals of one sync.
#[derive(Debug, Clone)]
pub struct StatusPlan {
    /// The status to write before removing finalizers (`flush_first`), uncounted pods included.
    pub status: JobStatus,
    pub flush_first: bool,
    /// Pods whose tracking finalizer is removed after that write.
    pub remove_finalizers: Vec<Arc<Pod>>,
    /// UIDs that still carry the finalizer as far as this sync knows.
    pub uids_with_finalizer: HashSet<String>,
    /// The terminal condition to add once the counts allow it (Complete or Failed).
    pub finished: Option<JobCondition>,
    /// The uncounted limit was reached: no terminal condition this sync.
    pub reached_max_uncounted: bool,
    pub terminating: i32,
    /// Suspended / Resumed events, recorded with the status write.
    pub events: Vec<PlannedEvent>,
    /// Failed pods handled by a pod failure policy rule, by action (metrics).
    pub policy_actions: BTreeMap<Action, u32>,
}

impl SyncPlan {
    /// The second half, given what the pod writes achieved.
    pub fn status_plan(&self, outcome: &ManageOutcome) -> StatusPlan {
        let now = self.now;
        let mut job = self.job.clone();
        let mut finished = self.finished.clone();
        let active = len_i32(self.active.len()) - outcome.deleted + outcome.created;
        let terminating = self.terminating + outcome.deleted;
        let ready = self.ready - outcome.deleted_ready;
        let mut events = Vec::new();
        let status = job.status.get_or_insert_with(JobStatus::default);
        let mut needs_flush = false;
        if finished.is_some() {
            if !outcome.all_deleted || !self.expectations_satisfied {
                // Pods may remain, or may not be in the cache yet: not finished this sync.
                finished = None;
            }
        } else {
            let complete = match completions(&self.job) {
                None => self.succeeded > 0 && active == 0,
                Some(c) => self.succeeded >= c && active == 0,
            };
            let conds = status.conditions.get_or_insert_with(Vec::new);
            if complete {
                finished = Some(new_condition(
                    SUCCESS_CRITERIA_MET,
                    "True",
                    REASON_COMPLETIONS_REACHED,
                    MESSAGE_COMPLETIONS_REACHED,
                    now,
                ));
            } else if self.manage_called && suspended(&self.job) {
                if ensure_condition_status(
                    conds,
                    SUSPENDED,
                    "True",
                    REASON_JOB_SUSPENDED,
                    MESSAGE_JOB_SUSPENDED,
                    now,
                ) {
                    needs_flush = true;
                    events.push(normal(EVENT_SUSPENDED, MESSAGE_JOB_SUSPENDED));
                    if self.suspend_clears_start_time {
                        status.start_time = None;
                    }
                }
            } else if self.manage_called
                && ensure_condition_status(
                    conds,
                    SUSPENDED,
                    "False",
                    REASON_JOB_RESUMED,
                    MESSAGE_JOB_RESUMED,
                    now,
                )
            {
                needs_flush = true;
                events.push(normal(EVENT_RESUMED, MESSAGE_JOB_RESUMED));
                // The deadline counts continuous activity: a resumed Job starts again.
                status.start_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
            }
            if status.conditions.as_ref().is_some_and(Vec::is_empty) {
                status.conditions = None;
            }
        }
        needs_flush |= active != status.active.unwrap_or(0);
        needs_flush |= status.ready != Some(ready) || status.terminating != Some(terminating);
        status.active = Some(active);
        status.ready = Some(ready);
        status.terminating = Some(terminating);
        self.track(job, finished, terminating, needs_flush, events)
    }

    /// Upstream `trackJobStatusAndRemoveFinalizers` up to the first write.
    fn track(
        &self,
        mut job: k8s_openapi::api::batch::v1::Job,
        mut finished: Option<JobCondition>,
        terminating: i32,
        mut needs_flush: bool,
        events: Vec<PlannedEvent>,
    ) -> StatusPlan {
        let now = self.now;
        let indexed = is_indexed(&job);
        let completions = indexed_completions(&job);
        let mut pods: Vec<&Arc<Pod>> = self.pods.iter().collect();
        if indexed {
            pods.sort_by_key(|p| completion_index(p).unwrap_or(-1));
        }
        let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
        let uids_with_finalizer: HashSet<String> = pods
            .iter()
            .filter(|p| has_tracking_finalizer(&p.metadata) && !self.expected_rm_finalizers.contains(&uid(p)))
            .map(|p| uid(p))
            .collect();
        let status = job.status.get_or_insert_with(JobStatus::default);
        needs_flush |= move_counted(status, &uids_with_finalizer);
        let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.clone());
        let mut policy_actions = BTreeMap::new();
        let mut remove = Vec::new();
        let mut new_succeeded_indexes = Vec::new();
        let mut reached_max = false;
        let failing = finished
            .as_ref()
            .is_some_and(|c| !is_true(Some(c), SUCCESS_CRITERIA_MET));
        for p in pods {
            let u = uid(p);
            if !has_tracking_finalizer(&p.metadata) || self.expected_rm_finalizers.contains(&u) {
                continue; // handled by an earlier sync
            }
            let considered_failed = is_pod_failed(p, &self.job);
            if !self.can_remove_finalizer(p, considered_failed, finished.is_some()) {
                continue;
            }
            remove.push(p.clone());
            let uncounted = status
                .uncounted_terminated_pods
                .get_or_insert_with(Default::default);
            if phase(p) == "Succeeded" && !self.uncounted_failed.contains(&u) {
                if indexed {
                    if let Some(ix) =
                        valid_index(p, completions).filter(|ix| !self.prev_succeeded_indexes.has(*ix))
                    {
                        new_succeeded_indexes.push(ix);
                        needs_flush = true;
                    }
                } else if !self.uncounted_succeeded.contains(&u) {
                    needs_flush = true;
                    uncounted.succeeded.get_or_insert_with(Vec::new).push(u);
                }
            } else if (considered_failed || failing)
                && !self.uncounted_failed.contains(&u)
                && (!indexed || valid_index(p, completions).is_some())
            {
                let m = match_pod_failure_policy(policy.as_ref(), p);
                if let Some(a) = m.action {
                    *policy_actions.entry(a).or_insert(0) += 1;
                }
                if m.count_failed {
                    needs_flush = true;
                    uncounted.failed.get_or_insert_with(Vec::new).push(u);
                }
            }
            let listed = uncounted.succeeded.as_ref().map_or(0, Vec::len)
                + uncounted.failed.as_ref().map_or(0, Vec::len);
            if new_succeeded_indexes.len() + listed >= MAX_UNCOUNTED_PODS {
                reached_max = true;
                break;
            }
        }
        if indexed {
            new_succeeded_indexes.sort_unstable();
            let all = self
                .succeeded_indexes
                .with_ordered_indexes(&new_succeeded_indexes);
            let s = all.to_string();
            if status.completed_indexes.as_deref().unwrap_or("") != s {
                needs_flush = true;
            }
            status.succeeded = Some(all.total());
            status.completed_indexes = Some(s);
            let failed_s = self.failed_indexes.as_ref().map(ToString::to_string);
            if status.failed_indexes != failed_s {
                status.failed_indexes = failed_s;
                needs_flush = true;
            }
        }
        if let Some(c) = finished.take() {
            let conds = status.conditions.get_or_insert_with(Vec::new);
            finished = Some(if c.type_ == FAILURE_TARGET {
                conds.push(c.clone());
                needs_flush = true;
                new_condition(FAILED, "True", reason(&c), message(&c), now)
            } else if is_true(Some(&c), SUCCESS_CRITERIA_MET) {
                if !conds.iter().any(|x| is_true(Some(x), SUCCESS_CRITERIA_MET)) {
                    conds.push(c.clone());
                    needs_flush = true;
                }
                new_condition(COMPLETE, "True", reason(&c), message(&c), now)
            } else {
                c
            });
        }
        StatusPlan {
            status: job.status.unwrap_or_default(),
            flush_first: needs_flush,
            remove_finalizers: remove,
            uids_with_finalizer,
            finished,
            reached_max_uncounted: reached_max,
            terminating,
            events,
            policy_actions,
        }
    }

    /// Whether a pod's finalizer can go now: the Job is being deleted or finishing, the pod
    /// succeeded, or it failed and is not kept for its index's replacement (upstream
    /// `canRemoveFinalizer`).
    fn can_remove_finalizer(&self, p: &Pod, considered_failed: bool, finishing: bool) -> bool {
        if self.job.metadata.deletion_timestamp.is_some() || finishing || phase(p) == "Succeeded" {
            return true;
        }
        if !considered_failed {
            return false;
        }
        if backoff_limit_per_index(&self.job).is_some()
            && let Some(ix) = completion_index(p)
            && self
                .delayed
                .get(&ix)
                .is_some_and(|d| d.metadata.uid == p.metadata.uid)
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
#[path = "tracking_tests.rs"]
mod tests;
