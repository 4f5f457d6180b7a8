//! The finished Jobs a CronJob keeps (upstream `cleanupFinishedJobs` and `removeOldestJobs`): beyond
//! `successfulJobsHistoryLimit` Complete ones and `failedJobsHistoryLimit` Failed ones, the oldest
//! by start time go.

use std::{cmp::Ordering, sync::Arc};

use k8s_openapi::api::batch::v1::{CronJob, Job};

/// How a Job finished: the first `Complete` or `Failed` condition that is `True` (upstream
/// `FinishedCondition`); `FailureTarget` and `SuccessCriteriaMet` alone do not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Complete,
    Failed,
}

pub fn finished(job: &Job) -> Option<Finished> {
    let conditions = job.status.as_ref()?.conditions.as_deref()?;
    conditions
        .iter()
        .find_map(|c| match (c.type_.as_str(), c.status.as_str()) {
            ("Complete", "True") => Some(Finished::Complete),
            ("Failed", "True") => Some(Finished::Failed),
            _ => None,
        })
}

/// The finished Jobs to delete, oldest first, when either limit is set (the API server defaults
/// them to 3 and 1).
pub fn jobs_to_delete(cron_job: &CronJob, jobs: &[Arc<Job>]) -> Vec<Arc<Job>> {
    let spec = &cron_job.spec;
    let limits = [
        (Finished::Complete, spec.successful_jobs_history_limit),
        (Finished::Failed, spec.failed_jobs_history_limit),
    ];
    let mut doomed = Vec::new();
    for (kind, limit) in limits {
        let Some(limit) = limit else { continue };
        let mut of_kind: Vec<&Arc<Job>> = jobs.iter().filter(|j| finished(j) == Some(kind)).collect();
        let keep = usize::try_from(limit).unwrap_or(0);
        if of_kind.len() <= keep {
            continue;
        }
        of_kind.sort_by(|a, b| by_start_time(a, b));
        let excess = of_kind.len() - keep;
        doomed.extend(of_kind.into_iter().take(excess).cloned());
    }
    doomed
}

/// Upstream `byJobStartTime`: started ones first, earlier first; unstarted ones last; ties by name.
fn by_start_time(a: &Job, b: &Job) -> Ordering {
    let start = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0);
    let by_start = match (start(a), start(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_start.then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(name: &str, start: Option<&str>, condition: Option<&str>) -> Arc<Job> {
        crate::fixtures::job(json!({"name": name}), json!({"startTime": start}), condition)
    }

    fn cron_job(successful: Option<i32>, failed: Option<i32>) -> CronJob {
        serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": successful,
                     "failedJobsHistoryLimit": failed, "jobTemplate": {}},
        }))
        .unwrap()
    }

    fn names(jobs: &[Arc<Job>]) -> Vec<&str> {
        jobs.iter().map(|j| j.metadata.name.as_deref().unwrap()).collect()
    }

    #[test]
    fn the_oldest_finished_jobs_beyond_each_limit_go() {
        let jobs = [
            job("new-ok", Some("2016-05-19T10:00:00Z"), Some("Complete")),
            job("old-ok", Some("2016-05-19T08:00:00Z"), Some("Complete")),
            job("unstarted-ok", None, Some("Complete")),
            job("running", Some("2016-05-19T07:00:00Z"), None),
            job("old-failed", Some("2016-05-19T07:00:00Z"), Some("Failed")),
            job("new-failed", Some("2016-05-19T09:00:00Z"), Some("Failed")),
        ];
        assert_eq!(
            names(&jobs_to_delete(&cron_job(Some(1), Some(1)), &jobs)),
            ["old-ok", "new-ok", "old-failed"]
        );
        assert_eq!(
            names(&jobs_to_delete(&cron_job(Some(3), Some(2)), &jobs)),
            Vec::<&str>::new()
        );
        assert_eq!(
            names(&jobs_to_delete(&cron_job(None, Some(0)), &jobs)),
            ["old-failed", "new-failed"]
        );
        assert!(jobs_to_delete(&cron_job(None, None), &jobs).is_empty());
    }

    /// Upstream's `TestByJobStartTime`.
    #[test]
    fn start_time_order_puts_unstarted_last_and_ties_by_name() {
        let (a, b) = (job("a", None, None), job("b", None, None));
        assert_eq!(by_start_time(&a, &b), Ordering::Less);
        let started = job("z", Some("2016-05-19T10:00:00Z"), None);
        assert_eq!(by_start_time(&started, &a), Ordering::Less);
        let same = job("y", Some("2016-05-19T10:00:00Z"), None);
        assert_eq!(by_start_time(&same, &started), Ordering::Less);
        let earlier = job("zz", Some("2016-05-19T09:00:00Z"), None);
        assert_eq!(by_start_time(&earlier, &same), Ordering::Less);
    }

    #[test]
    fn only_a_true_complete_or_failed_condition_finishes_a_job() {
        assert_eq!(
            finished(&job("j", None, Some("Complete"))),
            Some(Finished::Complete)
        );
        assert_eq!(finished(&job("j", None, Some("FailureTarget"))), None);
        assert_eq!(finished(&job("j", None, None)), None);
    }
}
