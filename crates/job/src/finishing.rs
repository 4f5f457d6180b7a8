//! The finishing condition decided before any pod write (upstream `syncJob`'s evaluation order):
//! an interim condition already written wins, then a podFailurePolicy FailJob match, backoffLimit
//! (with `restartPolicy: OnFailure` restart counts) and activeDeadlineSeconds.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::batch::v1::{Job, JobCondition},
    jiff::Timestamp,
};

use crate::{conditions::*, pod_failure_policy::match_pod_failure_policy, spec::*};

pub fn failure(reason: &str, message: &str, now: Timestamp) -> JobCondition {
    new_condition(FAILURE_TARGET, "True", reason, message, now)
}

/// The finishing condition from the Job's conditions, the pod failure policy, backoffLimit and
/// activeDeadlineSeconds, first match wins; or when to look again for the deadline.
pub fn finishing_condition(
    job: &Job,
    pods: &[Arc<Pod>],
    failed: i32,
    now: Timestamp,
    requeue_after: &mut Option<Duration>,
) -> Option<JobCondition> {
    let conds = conditions(job);
    if let Some(c) = find_condition(conds, SUCCESS_CRITERIA_MET).filter(|c| c.status == "True") {
        return Some(c.clone());
    }
    if let Some(c) = find_condition(conds, FAILURE_TARGET).filter(|c| c.status == "True") {
        let reason = c.reason.as_deref().unwrap_or("");
        return Some(new_condition(
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
            return Some(failure(REASON_POD_FAILURE_POLICY, &msg, now));
        }
    }
    if failed > backoff_limit(job) || past_backoff_limit_on_failure(job, pods) {
        return Some(failure(
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
            return Some(failure(REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE_EXCEEDED, now));
        }
        *requeue_after = Some(Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX)));
    }
    None
}

/// Nanoseconds left before `activeDeadlineSeconds` counted from `start`; 0 or less once past it.
///
/// The allowance is Go's `time.Duration(ads) * time.Second`, which wraps in 64-bit nanoseconds for
/// `ads` of 9223372037 or more: upstream then fails such a Job on its first sync (int64's maximum
/// wraps to -1 s) or at a wrapped deadline. That is what a user of upstream observes, so kcm-rs
/// computes the same allowance instead of an "infinite" one.
pub fn deadline_left(ads: i64, start: Timestamp, now: Timestamp) -> i128 {
    const NANOS_PER_SECOND: i64 = 1_000_000_000;
    let allowed = i128::from(ads.wrapping_mul(NANOS_PER_SECOND));
    allowed - (now.as_nanosecond() - start.as_nanosecond())
}

/// With `restartPolicy: OnFailure`, container restarts of running and pending pods count as
/// failures: at least backoffLimit of them (any, with a limit of 0) fail the Job.
pub fn past_backoff_limit_on_failure(job: &Job, pods: &[Arc<Pod>]) -> bool {
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.restart_policy.as_deref());
    if policy != Some("OnFailure") {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .map(|c| i64::from(c.restart_count))
        .sum();
    let limit = i64::from(backoff_limit(job));
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}
