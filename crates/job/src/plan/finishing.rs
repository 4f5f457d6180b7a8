//! The finishing condition, decided before any pod write (upstream `syncJob`'s evaluation order):
//! an interim condition already written wins, then a podFailurePolicy FailJob match, backoffLimit
//! (with `restartPolicy: OnFailure` restart counts) and activeDeadlineSeconds; for Indexed Jobs
//! then maxFailedIndexes, failed indexes and the successPolicy.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::batch::v1::{Job, JobCondition},
    jiff::Timestamp,
};

use crate::{
    conditions::*, intervals::OrderedIntervals, pod_failure_policy::match_pod_failure_policy, spec::*,
    success_policy::match_success_policy,
};

/// The finishing condition, or when to look again for the deadline.
#[derive(Debug, Default)]
pub(super) struct Finishing {
    pub(crate) condition: Option<JobCondition>,
    /// The active deadline, while it is still ahead.
    pub(crate) requeue_after: Option<Duration>,
}

fn failure(reason: &str, message: &str, now: Timestamp) -> JobCondition {
    new_condition(FAILURE_TARGET, "True", reason, message, now)
}

/// From the Job's conditions, the pod failure policy, backoffLimit and activeDeadlineSeconds,
/// first match wins. `job` carries this sync's startTime; `failed` is the failure count with this
/// sync's failed pods.
pub(super) fn finishing_condition(job: &Job, pods: &[Arc<Pod>], failed: i32, now: Timestamp) -> Finishing {
    let conds = conditions(job);
    let finished = |c: JobCondition| Finishing {
        condition: Some(c),
        requeue_after: None,
    };
    if let Some(c) = find_condition(conds, SUCCESS_CRITERIA_MET).filter(|c| c.status == "True") {
        return finished(c.clone());
    }
    if let Some(c) = find_condition(conds, FAILURE_TARGET).filter(|c| c.status == "True") {
        let reason = c.reason.as_deref().unwrap_or("");
        return finished(new_condition(
            FAILED,
            "True",
            reason,
            c.message.as_deref().unwrap_or(""),
            now,
        ));
    }
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    if policy.is_some() {
        let msg = pods
            .iter()
            .filter(|p| is_pod_failed(p, job))
            .find_map(|p| match_pod_failure_policy(policy, p).fail_job_message);
        if let Some(msg) = msg {
            return finished(failure(REASON_POD_FAILURE_POLICY, &msg, now));
        }
    }
    if failed > backoff_limit(job) || past_backoff_limit_on_failure(job, pods) {
        return finished(failure(
            REASON_BACKOFF_LIMIT_EXCEEDED,
            MESSAGE_BACKOFF_LIMIT_EXCEEDED,
            now,
        ));
    }
    let deadline = job.spec.as_ref().and_then(|s| s.active_deadline_seconds);
    let start = job
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map(|t| t.0);
    if let (Some(ads), Some(start), false) = (deadline, start, suspended(job)) {
        let left = deadline_left(ads, start, now);
        if left <= 0 {
            return finished(failure(REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE_EXCEEDED, now));
        }
        return Finishing {
            condition: None,
            requeue_after: Some(Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX))),
        };
    }
    Finishing::default()
}

/// An Indexed Job's finishing condition from its indexes, when nothing else finished it: too many
/// failed indexes, every index succeeded or failed with some failed (backoffLimitPerIndex,
/// `failed` is `Some`), or the successPolicy met.
pub(super) fn by_indexes(
    job: &Job,
    succeeded: &OrderedIntervals,
    failed: Option<&OrderedIntervals>,
    now: Timestamp,
) -> Option<JobCondition> {
    if !is_indexed(job) {
        return None;
    }
    if let Some(failed) = failed {
        let max_failed = job.spec.as_ref().and_then(|s| s.max_failed_indexes);
        if max_failed.is_some_and(|m| failed.total() > m) {
            return Some(failure(
                REASON_MAX_FAILED_INDEXES_EXCEEDED,
                MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
                now,
            ));
        }
        if failed.total() > 0 && failed.total() + succeeded.total() >= indexed_completions(job) {
            return Some(failure(REASON_FAILED_INDEXES, MESSAGE_FAILED_INDEXES, now));
        }
    }
    let policy = job.spec.as_ref().and_then(|s| s.success_policy.as_ref());
    let msg = match_success_policy(policy, indexed_completions(job), succeeded)?;
    Some(new_condition(
        SUCCESS_CRITERIA_MET,
        "True",
        REASON_SUCCESS_POLICY,
        &msg,
        now,
    ))
}

/// Nanoseconds left before `activeDeadlineSeconds` counted from `start`; 0 or less once past it.
///
/// The allowance is Go's `time.Duration(ads) * time.Second`, which wraps in 64-bit nanoseconds for
/// `ads` of 9223372037 or more: upstream then fails such a Job on its first sync (int64's maximum
/// wraps to -1 s) or at a wrapped deadline. That is what a user of upstream observes, so kcm-rs
/// computes the same allowance instead of an "infinite" one.
pub(crate) fn deadline_left(ads: i64, start: Timestamp, now: Timestamp) -> i128 {
    const NANOS_PER_SECOND: i64 = 1_000_000_000;
    let allowed = i128::from(ads.wrapping_mul(NANOS_PER_SECOND));
    allowed - (now.as_nanosecond() - start.as_nanosecond())
}

/// With `restartPolicy: OnFailure`, container restarts of running and pending pods count as
/// failures: at least backoffLimit of them (any, with a limit of 0) fail the Job.
fn past_backoff_limit_on_failure(job: &Job, pods: &[Arc<Pod>]) -> bool {
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.restart_policy.as_deref());
    if policy != Some("OnFailure") {
        return false;
    }
    // An int32 sum that wraps, as upstream's (restartCount is not validated).
    let restarts = pods
        .iter()
        .filter(|p| matches!(phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .fold(0i32, |sum, c| sum.wrapping_add(c.restart_count));
    let limit = backoff_limit(job);
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}
