//! What shadow mode calls a disagreement for a CronJob: a write the sync would make (a Job to
//! create or delete) or a status it would write, from the same caches upstream's controller reads.
//! Upstream writes moments after a slot comes; the shadow's settle time covers that.

use std::{sync::Arc, time::Duration};

use controller::shadow::{Differences, names};
use jiff::{Timestamp, tz::TimeZone};
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};

use crate::{
    active::review_active,
    decide::{Decision, decide},
    history::jobs_to_delete,
    sync::positive,
    times::job_name,
};

/// One line per disagreement, and when the CronJob's next slot asks for a look.
pub fn differences(
    cron_job: &CronJob,
    jobs: &[Arc<Job>],
    now: Timestamp,
    local: &TimeZone,
) -> (Vec<String>, Option<Duration>) {
    let mut out = Differences::new();
    let doomed = jobs_to_delete(cron_job, jobs);
    if !doomed.is_empty() {
        out.would("jobs", format_args!("delete {:?}", names(&doomed)));
    }
    let review = review_active(cron_job, jobs);
    let upstream = cron_job.status.clone().unwrap_or_default();
    status_differences(&upstream, &review.status, &mut out);
    let mut reviewed = cron_job.clone();
    reviewed.status = Some(review.status);
    let again = match decide(&reviewed, now, local).decision {
        Decision::Idle => None,
        Decision::Wait { requeue } => Some(positive(requeue)),
        Decision::Start {
            scheduled,
            replace,
            requeue,
        } => {
            let name = job_name(cron_job.metadata.name.as_deref().unwrap_or_default(), scheduled);
            let exists = jobs
                .iter()
                .any(|j| j.metadata.name.as_deref() == Some(name.as_str()));
            if !exists {
                if replace {
                    let active = reviewed.status.iter().flat_map(|s| s.active.iter().flatten());
                    let active: Vec<_> = active.filter_map(|r| r.name.clone()).collect();
                    out.would("jobs", format_args!("delete {active:?} (Replace)"));
                }
                out.would("jobs", format_args!("create {name} for {scheduled}"));
            }
            Some(positive(requeue))
        }
    };
    (out.into_lines(), again)
}

fn status_differences(upstream: &CronJobStatus, ours: &CronJobStatus, out: &mut Differences) {
    let active = |s: &CronJobStatus| {
        let mut names: Vec<String> = s.active.iter().flatten().filter_map(|r| r.name.clone()).collect();
        names.sort();
        names
    };
    out.exact("active", &active(upstream), &active(ours));
    let time = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| t.as_ref().map(|t| t.0);
    out.exact(
        "lastSuccessfulTime",
        &time(&upstream.last_successful_time),
        &time(&ours.last_successful_time),
    );
}

#[cfg(test)]
#[path = "shadow_tests.rs"]
mod tests;
