//! One sync of a CronJob (upstream `sync`, `cleanupFinishedJobs` and `syncCronJob`), in upstream's
//! order: the history limits, the active list against the Jobs (reading the API server where the
//! cache may lag), the decision, the writes it asks for, then one status write for all of it.
//!
//! The status is written even when a step failed, as upstream does, and a requeue the decision
//! asked for wins over an error (the two never come together).

use std::{sync::Arc, time::Duration};

use jiff::{SignedDuration, tz::TimeZone};
use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    apimachinery::pkg::apis::meta::v1::Time,
};

use controller::pod_util::controller_of;
use informer::ObjectKey;

use crate::{
    active::{self, ActiveReview, drop_missing, review_active, unexpected},
    decide::{Decision, decide},
    error::SyncError,
    executor::{Executor, REASON_FAILED_CREATE, REASON_FAILED_GET, job_reference},
    history::jobs_to_delete,
    job::job_for,
};
use controller::PlannedEvent;

/// What the sync after the cleanup ended with (upstream `syncCronJob`'s three results).
#[derive(Debug, Default)]
pub struct Outcome {
    pub requeue: Option<Duration>,
    /// Whether the working copy's status differs from what was read.
    pub changed: bool,
    pub error: Option<SyncError>,
}

/// A sync's inputs besides the API: the CronJob's Jobs from the cache, the time, the local zone.
pub struct Run<'a> {
    pub executor: &'a Executor,
    pub key: &'a ObjectKey,
    pub jobs: &'a [Arc<Job>],
    pub now: jiff::Timestamp,
    pub local: &'a TimeZone,
}

impl Run<'_> {
    /// The whole sync of `cached`: returns when to look again, or the error to retry on.
    pub async fn sync(&self, cached: &CronJob) -> Result<Option<Duration>, SyncError> {
        let mut cron_job = cached.clone();
        let cleaned = self.clean_up(&mut cron_job).await;
        let mut outcome = self.sync_cron_job(&mut cron_job).await;
        outcome.changed |= cleaned;
        if outcome.changed {
            self.executor
                .write_status(self.key, &cron_job)
                .await
                .map_err(|source| self.api(source))?;
        }
        match (outcome.requeue, outcome.error) {
            (Some(after), _) => Ok(Some(after)),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(None),
        }
    }

    /// Deletes the finished Jobs beyond the history limits (upstream `cleanupFinishedJobs`);
    /// a refused delete is a warning, not an error.
    async fn clean_up(&self, cron_job: &mut CronJob) -> bool {
        let mut changed = false;
        for job in jobs_to_delete(cron_job, self.jobs) {
            changed |= self.executor.delete_job(cron_job, &job).await;
        }
        changed
    }

    async fn sync_cron_job(&self, cron_job: &mut CronJob) -> Outcome {
        let mut outcome = Outcome::default();
        let (review, failed) = self.review(cron_job).await;
        outcome.changed = review.changed;
        cron_job.status = Some(review.status);
        for event in review.events {
            self.executor.event(cron_job, event);
        }
        if let Some(e) = failed {
            outcome.error = Some(e);
            return outcome;
        }
        let decided = decide(cron_job, self.now, self.local);
        for event in decided.events {
            self.executor.event(cron_job, event);
        }
        match decided.decision {
            Decision::Idle => {}
            Decision::Wait { requeue } => outcome.requeue = Some(positive(requeue)),
            Decision::Start {
                scheduled,
                replace,
                requeue,
            } => {
                if replace && let Err(e) = self.replace_active(cron_job, &mut outcome.changed).await {
                    outcome.error = Some(e);
                    return outcome;
                }
                match self.start(cron_job, scheduled).await {
                    Ok(true) => {
                        outcome.changed = true;
                        outcome.requeue = Some(positive(requeue));
                    }
                    Ok(false) => {}
                    Err(e) => outcome.error = Some(e),
                }
            }
        }
        outcome
    }

    /// The active list reconciled with the cached Jobs, settling what the cache cannot with reads
    /// of the API server. An owned, unfinished Job the list lacks sends upstream to the fresh
    /// CronJob; if that lists it, upstream goes on with the fresh copy (the cached one was behind
    /// its own write) but writes the cached copy, whose stale resourceVersion then conflicts and is
    /// retried. kcm-rs goes on with the fresh copy and writes it: the same status, one retry fewer.
    ///
    /// A read that fails ends the review with what it settled so far, and the error: as upstream,
    /// the finished Jobs already taken off the list and the missing ones already found are
    /// written and told before the sync is retried.
    async fn review(&self, cron_job: &mut CronJob) -> (ActiveReview, Option<SyncError>) {
        let mut review = review_active(cron_job, self.jobs);
        if !review.unlisted.is_empty() {
            let ns = self.key.namespace().unwrap_or_default();
            let fresh = match self.executor.get_cron_job(ns, self.key.name()).await {
                Ok(fresh) => fresh,
                Err(source) => return (review, Some(self.api(source))),
            };
            if review.unlisted.iter().any(|j| listed(&fresh, j)) {
                *cron_job = fresh;
                review = review_active(cron_job, self.jobs);
            }
            for job in &review.unlisted {
                review.events.push(unexpected(job));
            }
        }
        let mut missing = Vec::new();
        let mut failed = None;
        for entry in &review.unseen {
            let ns = entry.namespace.as_deref().unwrap_or_default();
            let name = entry.name.as_deref().unwrap_or_default();
            match self.executor.get_job(ns, name).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => missing.push(entry.clone()),
                Err(source) => {
                    failed = Some(self.api(source));
                    break;
                }
            }
        }
        drop_missing(&mut review, &missing);
        (review, failed)
    }

    /// The Replace policy: every active Job is read and deleted before the new one starts.
    async fn replace_active(&self, cron_job: &mut CronJob, changed: &mut bool) -> Result<(), SyncError> {
        let active = cron_job
            .status
            .as_ref()
            .and_then(|s| s.active.clone())
            .unwrap_or_default();
        for entry in active {
            let ns = entry.namespace.as_deref().unwrap_or_default();
            let name = entry.name.as_deref().unwrap_or_default();
            let job = match self.executor.get_job(ns, name).await {
                Ok(job) => job,
                Err(source) => {
                    self.executor.event(
                        cron_job,
                        PlannedEvent::warning(REASON_FAILED_GET, format!("Get job: {source}")),
                    );
                    return Err(self.api(source));
                }
            };
            if !self.executor.delete_job(cron_job, &job).await {
                return Err(SyncError::Replace {
                    key: self.key.clone(),
                    job: format!("{ns}/{name}"),
                });
            }
            *changed = true;
        }
        Ok(())
    }

    /// Creates the slot's Job and lists it as active: `Ok(false)` when an existing Job of that
    /// name is someone else's, or already listed, and there is nothing to record.
    async fn start(&self, cron_job: &mut CronJob, scheduled: jiff::Timestamp) -> Result<bool, SyncError> {
        let zone = cron_job
            .spec
            .time_zone
            .as_deref()
            .and_then(|tz| TimeZone::get(tz).ok());
        let request = job_for(cron_job, scheduled, zone.as_ref());
        let job = match self.executor.create_job(&request).await {
            Ok(job) => {
                self.executor.created(cron_job, &job, scheduled);
                job
            }
            Err(e) if e.is_namespace_terminating() => return Err(self.api(e)),
            Err(e) if e.is_already_exists() => {
                let ns = request.metadata.namespace.as_deref().unwrap_or_default();
                let name = request.metadata.name.as_deref().unwrap_or_default();
                let existing = self
                    .executor
                    .get_job(ns, name)
                    .await
                    .map_err(|source| self.api(source))?;
                let ours = controller_of(&existing.metadata)
                    .is_some_and(|r| Some(&r.uid) == cron_job.metadata.uid.as_ref());
                if !ours || listed(cron_job, &existing) {
                    return Ok(false);
                }
                tracing::info!(cronjob = %self.key, job = name, "job already exists");
                existing
            }
            Err(e) => {
                self.executor.event(
                    cron_job,
                    PlannedEvent::warning(REASON_FAILED_CREATE, format!("Error creating job: {e}")),
                );
                return Err(self.api(e));
            }
        };
        let status = cron_job.status.get_or_insert_default();
        status.active.get_or_insert_default().push(job_reference(&job));
        status.last_schedule_time = Some(Time(scheduled));
        Ok(true)
    }

    fn api(&self, source: controller::ControlError) -> SyncError {
        SyncError::Api {
            key: self.key.clone(),
            source,
        }
    }
}

/// Whether `cron_job`'s active list has `job`, by UID.
fn listed(cron_job: &CronJob, job: &Job) -> bool {
    cron_job
        .status
        .as_ref()
        .is_some_and(|s| active::listed(s, job.metadata.uid.as_deref()))
}

/// A requeue as the work queue takes it: a time already past means at once.
pub fn positive(d: SignedDuration) -> Duration {
    Duration::try_from(d).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
