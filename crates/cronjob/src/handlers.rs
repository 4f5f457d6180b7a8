//! Informer event handlers: which CronJob a change concerns, and when to sync it (upstream
//! `addJob`, `updateJob`, `deleteJob` and `updateCronJob`).

use std::sync::Arc;

use controller::{Clock, PlannedEvent, pod_util::controller_of, resolve_controller};
use informer::{DeletedObject, EventHandler, Lister, ObjectKey, WorkQueue};
use jiff::tz::TimeZone;
use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};

use crate::{
    Schedule,
    decide::{history_of, schedule_text},
    executor::Executor,
    sync::positive,
    times::requeue_after,
};

pub const REASON_UNPARSEABLE_CRON_JOB_SCHEDULE: &str = "UnParseableCronJobSchedule";

/// Wakes a Job's controlling CronJob on every change of the Job.
#[derive(Clone)]
pub struct JobHandler {
    pub cron_jobs: Lister<CronJob>,
    pub queue: WorkQueue<ObjectKey>,
}

impl JobHandler {
    fn wake(&self, job: &Job, owner: &OwnerReference) {
        let ns = job.metadata.namespace.as_deref();
        if let Some(cron_job) = resolve_controller(&self.cron_jobs, ns, owner) {
            self.queue.add(ObjectKey::of(&*cron_job));
        }
    }
}

impl EventHandler<Job> for JobHandler {
    fn on_add(&self, job: &Arc<Job>, _: bool) {
        // A Job already being deleted (seen first after a restart) counts as deleted: the same.
        if let Some(owner) = controller_of(&job.metadata) {
            self.wake(job, owner);
        }
    }

    fn on_update(&self, old: &Arc<Job>, new: &Arc<Job>) {
        // A resync redelivers every Job unchanged; only a new version concerns anyone.
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let (was, is) = (controller_of(&old.metadata), controller_of(&new.metadata));
        if was != is
            && let Some(was) = was
        {
            self.wake(old, was);
        }
        if let Some(is) = is {
            self.wake(new, is);
        }
    }

    fn on_delete(&self, deleted: &DeletedObject<Job>) {
        let job = deleted.object();
        if let Some(owner) = controller_of(&job.metadata) {
            self.wake(job, owner);
        }
    }
}

/// Syncs a CronJob when it appears or goes, at once on a change, and at its next slot when its
/// schedule or time zone changed.
#[derive(Clone)]
pub struct CronJobHandler {
    pub queue: WorkQueue<ObjectKey>,
    pub clock: Arc<dyn Clock>,
    /// The zone of a schedule with no `spec.timeZone` (the controller manager's).
    pub local: TimeZone,
    pub executor: Arc<Executor>,
}

impl EventHandler<CronJob> for CronJobHandler {
    fn on_add(&self, cron_job: &Arc<CronJob>, _: bool) {
        self.queue.add(ObjectKey::of(&**cron_job));
    }

    /// No resourceVersion check here, as upstream: a resync syncs every CronJob.
    fn on_update(&self, old: &Arc<CronJob>, new: &Arc<CronJob>) {
        let key = ObjectKey::of(&**new);
        if old.spec.schedule == new.spec.schedule && old.spec.time_zone == new.spec.time_zone {
            self.queue.add(key);
            return;
        }
        // A schedule that does not parse waits for the next change of the CronJob; the sync's
        // warnings (the zone, a TZ= prefix) are not repeated here.
        match Schedule::parse(&schedule_text(new), &self.local) {
            Ok(schedule) => {
                let after = requeue_after(&history_of(new), self.clock.now(), &schedule);
                self.queue.add_after(key, positive(after));
            }
            Err(e) => {
                tracing::debug!(cronjob = %key, schedule = new.spec.schedule, "unparseable schedule: {e}");
                self.executor.event(
                    new,
                    PlannedEvent::warning(
                        REASON_UNPARSEABLE_CRON_JOB_SCHEDULE,
                        format!("unparseable schedule for cronjob: {}", new.spec.schedule),
                    ),
                );
            }
        }
    }

    fn on_delete(&self, deleted: &DeletedObject<CronJob>) {
        self.queue.add(ObjectKey::of(&**deleted.object()));
    }
}

#[cfg(test)]
#[path = "handlers_tests.rs"]
mod tests;
