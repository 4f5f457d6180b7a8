//! Job conditions, their reasons and messages, and the events that go with them, spelled as upstream
//! (`k8s.io/api/batch/v1` constants and `job_controller.go`'s literals): clients such as kubectl,
//! Kueue and CI scripts match on these strings.

use k8s_openapi::{api::batch::v1::JobCondition, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

pub(crate) const COMPLETE: &str = "Complete";
pub(crate) const FAILED: &str = "Failed";
pub(crate) const SUSPENDED: &str = "Suspended";
pub(crate) const FAILURE_TARGET: &str = "FailureTarget";
pub(crate) const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";

pub(crate) const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
pub(crate) const MESSAGE_BACKOFF_LIMIT_EXCEEDED: &str = "Job has reached the specified backoff limit";
pub(crate) const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
pub(crate) const MESSAGE_DEADLINE_EXCEEDED: &str = "Job was active longer than specified deadline";
pub(crate) const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";
pub(crate) const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
pub(crate) const MESSAGE_MAX_FAILED_INDEXES_EXCEEDED: &str =
    "Job has exceeded the specified maximal number of failed indexes";
pub(crate) const REASON_FAILED_INDEXES: &str = "FailedIndexes";
pub(crate) const MESSAGE_FAILED_INDEXES: &str = "Job has failed indexes";
pub(crate) const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";
pub(crate) const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
pub(crate) const MESSAGE_COMPLETIONS_REACHED: &str = "Reached expected number of succeeded pods";
pub(crate) const REASON_JOB_SUSPENDED: &str = "JobSuspended";
pub(crate) const MESSAGE_JOB_SUSPENDED: &str = "Job suspended";
pub(crate) const REASON_JOB_RESUMED: &str = "JobResumed";
pub(crate) const MESSAGE_JOB_RESUMED: &str = "Job resumed";

/// Event reasons and messages (Normal unless noted).
pub(crate) const EVENT_SUSPENDED: &str = "Suspended";
pub(crate) const EVENT_RESUMED: &str = "Resumed";
pub(crate) const EVENT_COMPLETED: &str = "Completed";
pub(crate) const EVENT_COMPLETED_MESSAGE: &str = "Job completed";
/// Warning.
pub(crate) const EVENT_TOO_MANY_SUCCEEDED: &str = "TooManySucceededPods";
pub(crate) const EVENT_TOO_MANY_SUCCEEDED_MESSAGE: &str =
    "Too many succeeded pods running after completion count reached";
/// Warning.
pub(crate) const EVENT_UNKNOWN_COMPLETION_MODE: &str = "UnknownCompletionMode";
pub(crate) const EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE: &str =
    "Skipped Job sync because completion mode is unknown";

/// A condition with both times set to `now` (upstream `newCondition`).
pub(crate) fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Sets the condition of `type_` to the given status, reason and message, replacing it (times
/// included) only if one of them differs; a False condition is never added where none existed.
/// Returns whether the list changed (upstream `ensureJobConditionStatus`).
pub(crate) fn ensure_condition_status(
    list: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    if let Some(c) = list.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status
            || c.reason.as_deref().unwrap_or("") != reason
            || c.message.as_deref().unwrap_or("") != message
        {
            *c = new_condition(type_, status, reason, message, now);
            return true;
        }
        return false;
    }
    if status != "False" {
        list.push(new_condition(type_, status, reason, message, now));
        return true;
    }
    false
}

/// A condition's reason, `""` if it has none.
pub(crate) fn reason_of(c: &JobCondition) -> &str {
    c.reason.as_deref().unwrap_or("")
}

/// A condition's message, `""` if it has none.
pub(crate) fn message_of(c: &JobCondition) -> &str {
    c.message.as_deref().unwrap_or("")
}

/// Whether `c` is a True condition of `type_`.
pub(crate) fn is_true(c: Option<&JobCondition>, type_: &str) -> bool {
    c.is_some_and(|c| c.type_ == type_ && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::ts;

    #[test]
    fn ensure_condition_status_follows_upstream() {
        let mut list = Vec::new();
        assert!(!ensure_condition_status(
            &mut list,
            SUSPENDED,
            "False",
            REASON_JOB_RESUMED,
            MESSAGE_JOB_RESUMED,
            ts(1)
        ));
        assert!(list.is_empty(), "False is never added from nothing");
        assert!(ensure_condition_status(
            &mut list,
            SUSPENDED,
            "True",
            REASON_JOB_SUSPENDED,
            MESSAGE_JOB_SUSPENDED,
            ts(1)
        ));
        assert!(!ensure_condition_status(
            &mut list,
            SUSPENDED,
            "True",
            REASON_JOB_SUSPENDED,
            MESSAGE_JOB_SUSPENDED,
            ts(2)
        ));
        assert_eq!(
            list[0].last_transition_time,
            Some(Time(ts(1))),
            "unchanged keeps its times"
        );
        assert!(ensure_condition_status(
            &mut list,
            SUSPENDED,
            "False",
            REASON_JOB_RESUMED,
            MESSAGE_JOB_RESUMED,
            ts(3)
        ));
        assert_eq!((list.len(), list[0].status.as_str()), (1, "False"));
        assert_eq!(list[0].last_transition_time, Some(Time(ts(3))));
    }
}
