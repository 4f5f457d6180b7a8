//! The CronJob controller (upstream `pkg/controller/cronjob`, the v2 controller, Kubernetes 1.36):
//! starts a Job at each slot of a CronJob's schedule, with its concurrency policy, starting
//! deadline, suspension and history limits, and keeps `status.active`, `lastScheduleTime` and
//! `lastSuccessfulTime`.
//!
//! Start here: [`Schedule`] parses a schedule as upstream's controller does (robfig/cron's standard
//! parser: five fields, `@` descriptors, a `TZ=` prefix) and says when it fires next, in the
//! schedule's time zone with robfig's handling of daylight-saving transitions (`schedule/next.rs`).
//! Then, in the order a sync runs them (`sync.rs`, the only place that calls the API, through
//! `executor.rs`): the history limits ([`jobs_to_delete`], `history.rs`), the active list against
//! the cached Jobs ([`review_active`], `active.rs`), which slot the sync acts on and when to look
//! again ([`slot_to_act_on`], [`requeue_after`], `times.rs`, upstream's arithmetic), what the sync
//! does ([`decide`]: idle, wait, or start a slot's Job, `decide.rs`) and the Job a slot starts
//! ([`job_for`], `job.rs`). `controller.rs` wires the CronJob and Job informers onto the shared
//! skeleton; `handlers.rs` says which change wakes which CronJob, and when: a changed schedule
//! wakes it at its next slot, not at once.
//!
//! Time comes from an injected [`controller::Clock`], so the unit tests run on a fake one; a
//! schedule without `spec.timeZone` is read in the controller manager's zone
//! ([`CronJobOptions::local`]), as upstream reads it in Go's `time.Local`.
#![forbid(unsafe_code)]

mod active;
mod controller;
mod decide;
mod error;
mod executor;
#[cfg(test)]
mod fixtures;
mod handlers;
mod history;
mod job;
mod metrics;
mod schedule;
mod shadow;
mod sync;
mod times;

pub use active::{
    ActiveReview, REASON_MISSING_JOB, REASON_SAW_COMPLETED_JOB, REASON_UNEXPECTED_JOB, drop_missing,
    review_active, unexpected,
};
pub use controller::{COMPONENT, CronJobController, CronJobOptions, QUEUE_NAME};
pub use decide::{
    ALLOW, Decided, Decision, FORBID, REASON_INVALID_SCHEDULE, REASON_JOB_ALREADY_ACTIVE,
    REASON_MISS_SCHEDULE, REASON_TOO_MANY_MISSED, REASON_UNKNOWN_TIME_ZONE, REASON_UNPARSEABLE_SCHEDULE,
    REASON_UNSUPPORTED_SCHEDULE, REPLACE, decide, history_of, schedule_text,
};
pub use error::SyncError;
pub use executor::{
    REASON_FAILED_CREATE, REASON_FAILED_DELETE, REASON_FAILED_GET, REASON_SUCCESSFUL_CREATE,
    REASON_SUCCESSFUL_DELETE,
};
pub use handlers::REASON_UNPARSEABLE_CRON_JOB_SCHEDULE;
pub use history::{Finished, finished, jobs_to_delete};
pub use job::{SCHEDULED_TIMESTAMP_ANNOTATION, job_for};
pub use metrics::{CronJobMetrics, NoCronJobMetrics};
pub use schedule::{Schedule, ScheduleError};
pub use times::{
    History, MANY_MISSED, Missed, NEXT_SCHEDULE_DELTA, NoGap, Window, job_name, most_recent, requeue_after,
    slot_to_act_on,
};
