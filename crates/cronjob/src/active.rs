//! Reconciling `status.active` with the Jobs the cache shows (upstream `syncCronJob`'s first two
//! loops), before the decision: finished Jobs leave the list, a succeeded one moves
//! `lastSuccessfulTime`, and two kinds of doubt are handed to the sync, which reads the API server
//! for them as upstream does (a cache may lag behind the controller's own writes).

use std::sync::Arc;

use controller::PlannedEvent;
use k8s_openapi::api::{
    batch::v1::{CronJob, CronJobStatus, Job},
    core::v1::ObjectReference,
};

use crate::history::{Finished, finished};

pub const REASON_SAW_COMPLETED_JOB: &str = "SawCompletedJob";
pub const REASON_UNEXPECTED_JOB: &str = "UnexpectedJob";
pub const REASON_MISSING_JOB: &str = "MissingJob";

/// The active list reconciled with the cache, and what only the API server can settle.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveReview {
    /// The status with the finished Jobs removed and `lastSuccessfulTime` moved.
    pub status: CronJobStatus,
    pub events: Vec<PlannedEvent>,
    /// Whether `status` differs from the CronJob's.
    pub changed: bool,
    /// Owned, unfinished Jobs the list lacks: the sync reads the CronJob afresh; a Job its fresh
    /// list has is fine, any other gets an `UnexpectedJob` warning ([`unexpected`]) and is not
    /// adopted into the list.
    pub unlisted: Vec<Arc<Job>>,
    /// Entries whose Job the cache lacks: the sync reads each Job; those the API server lacks too
    /// leave the list ([`drop_missing`]).
    pub unseen: Vec<ObjectReference>,
}

/// Reviews `cron_job`'s active list against `jobs`, the Jobs it controls.
pub fn review_active(cron_job: &CronJob, jobs: &[Arc<Job>]) -> ActiveReview {
    let mut status = cron_job.status.clone().unwrap_or_default();
    let mut review = ActiveReview {
        status: status.clone(),
        events: Vec::new(),
        changed: false,
        unlisted: Vec::new(),
        unseen: Vec::new(),
    };
    for job in jobs {
        let uid = job.metadata.uid.as_deref();
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let done = finished(job);
        let found = listed(&status, uid);
        match (found, done) {
            (false, None) => review.unlisted.push(job.clone()),
            (true, Some(how)) => {
                if let Some(active) = status.active.as_mut() {
                    active.retain(|r| r.uid.as_deref() != uid);
                }
                let condition = match how {
                    Finished::Complete => "Complete",
                    Finished::Failed => "Failed",
                };
                review.events.push(PlannedEvent::normal(
                    REASON_SAW_COMPLETED_JOB,
                    format!("Saw completed job: {name}, condition: {condition}"),
                ));
                review.changed = true;
            }
            _ => {}
        }
        if done == Some(Finished::Complete) {
            let completed = job.status.as_ref().and_then(|s| s.completion_time.clone());
            if status.last_successful_time.is_none() {
                status.last_successful_time.clone_from(&completed);
                review.changed = true;
            }
            if let (Some(c), Some(last)) = (&completed, &status.last_successful_time)
                && c.0 > last.0
            {
                status.last_successful_time = Some(c.clone());
                review.changed = true;
            }
        }
    }
    let children: Vec<Option<&str>> = jobs.iter().map(|j| j.metadata.uid.as_deref()).collect();
    review.unseen = status
        .active
        .iter()
        .flatten()
        .filter(|r| !children.contains(&r.uid.as_deref()))
        .cloned()
        .collect();
    review.status = status;
    review
}

/// Whether `status.active` has the Job with this UID (upstream `inActiveList`).
pub fn listed(status: &CronJobStatus, uid: Option<&str>) -> bool {
    uid.is_some() && status.active.iter().flatten().any(|r| r.uid.as_deref() == uid)
}

/// An owned Job neither the cached nor the fresh CronJob lists (upstream does not adopt it).
pub fn unexpected(job: &Job) -> PlannedEvent {
    PlannedEvent::warning(
        REASON_UNEXPECTED_JOB,
        format!(
            "Saw a job that the controller did not create or forgot: {}",
            job.metadata.name.as_deref().unwrap_or_default()
        ),
    )
}

/// Removes the entries whose Jobs the API server does not have either, with a `MissingJob` event
/// each.
pub fn drop_missing(review: &mut ActiveReview, missing: &[ObjectReference]) {
    for gone in missing {
        if let Some(active) = review.status.active.as_mut() {
            active.retain(|r| r.uid != gone.uid);
        }
        review.events.push(PlannedEvent::normal(
            REASON_MISSING_JOB,
            format!(
                "Active job went missing: {}",
                gone.name.as_deref().unwrap_or_default()
            ),
        ));
        review.changed = true;
    }
}

#[cfg(test)]
#[path = "active_tests.rs"]
mod tests;
