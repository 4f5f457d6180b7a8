//! The status once the pod writes are done (upstream `syncJob` after `manageJob`): the active, ready
//! and terminating counts from what the writes achieved, SuccessCriteriaMet once the completions
//! are reached, and the Suspended condition (with its event and startTime) as manageJob left the
//! Job. What [`super::tracking`] continues from.

use k8s_openapi::{
    api::batch::v1::{JobCondition, JobStatus},
    apimachinery::pkg::apis::meta::v1::Time,
};

use super::state::{ManageOutcome, PlannedEvent, StatusDraft, SyncPlan};
use crate::{conditions::*, spec::*};

/// The status after the pod writes, given what they achieved.
pub(super) fn after_pod_writes(plan: &SyncPlan, outcome: &ManageOutcome) -> StatusDraft {
    let active = len_i32(plan.active.len()) - outcome.deleted + outcome.created;
    let terminating = plan.terminating + outcome.deleted;
    let ready = plan.ready - outcome.deleted_ready;
    let mut job = plan.job.clone();
    let mut events = Vec::new();
    let status = job.status.get_or_insert_with(JobStatus::default);
    let (finished, mut needs_flush) = if plan.finished.is_some() {
        // Pods may remain, or may not be in the cache yet: not finished this sync.
        let stands = outcome.all_deleted && plan.expectations_satisfied;
        (plan.finished.clone().filter(|_| stands), false)
    } else {
        completion_or_suspension(plan, outcome, status, active, &mut events)
    };
    needs_flush |= active != status.active.unwrap_or(0);
    needs_flush |= status.ready != Some(ready) || status.terminating != Some(terminating);
    status.active = Some(active);
    status.ready = Some(ready);
    status.terminating = Some(terminating);
    StatusDraft {
        job,
        finished,
        terminating,
        needs_flush,
        events,
    }
}

/// A Job nothing finished before the writes: SuccessCriteriaMet once the completions are reached
/// with no pod active, else the Suspended condition once manageJob ran. Returns the finishing
/// condition and whether the status changed.
fn completion_or_suspension(
    plan: &SyncPlan,
    outcome: &ManageOutcome,
    status: &mut JobStatus,
    active: i32,
    events: &mut Vec<PlannedEvent>,
) -> (Option<JobCondition>, bool) {
    let now = outcome.done_at.unwrap_or(plan.now);
    let complete = match completions(&plan.job) {
        None => plan.succeeded > 0 && active == 0,
        Some(c) => plan.succeeded >= c && active == 0,
    };
    let mut finished = None;
    let mut changed = false;
    let conds = status.conditions.get_or_insert_with(Vec::new);
    if complete {
        finished = Some(new_condition(
            SUCCESS_CRITERIA_MET,
            "True",
            REASON_COMPLETIONS_REACHED,
            MESSAGE_COMPLETIONS_REACHED,
            now,
        ));
    } else if plan.manage_called && suspended(&plan.job) {
        if ensure_condition_status(
            conds,
            SUSPENDED,
            "True",
            REASON_JOB_SUSPENDED,
            MESSAGE_JOB_SUSPENDED,
            now,
        ) {
            changed = true;
            events.push(PlannedEvent::normal(EVENT_SUSPENDED, MESSAGE_JOB_SUSPENDED));
            if plan.suspend_clears_start_time {
                status.start_time = None;
            }
        }
    } else if plan.manage_called
        && ensure_condition_status(
            conds,
            SUSPENDED,
            "False",
            REASON_JOB_RESUMED,
            MESSAGE_JOB_RESUMED,
            now,
        )
    {
        changed = true;
        events.push(PlannedEvent::normal(EVENT_RESUMED, MESSAGE_JOB_RESUMED));
        // The deadline counts continuous activity: a resumed Job starts again.
        status.start_time = Some(Time(now));
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        status.conditions = None;
    }
    (finished, changed)
}
