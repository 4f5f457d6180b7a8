//! The CronJob controller (upstream `pkg/controller/cronjob`, the v2 controller, Kubernetes 1.36),
//! in progress: the decisions of a sync, pure and tested against upstream's tables; not yet the
//! executor, the handlers or the binary's row, so nothing runs it.
//!
//! Start here: [`Schedule`] parses a schedule as upstream's controller does (robfig/cron's standard
//! parser: five fields, `@` descriptors, a `TZ=` prefix) and says when it fires next, in the
//! schedule's time zone with robfig's handling of daylight-saving transitions (`schedule/next.rs`).
//! Then, in the order a sync runs them: the history limits ([`jobs_to_delete`], `history.rs`), the
//! active list against the cached Jobs ([`review_active`], `active.rs`), which slot the sync acts on
//! and when to look again ([`slot_to_act_on`], [`requeue_after`], `times.rs`, upstream's
//! arithmetic), what the sync does ([`decide`]: idle, wait, or start a slot's Job, `decide.rs`) and
//! the Job a slot starts ([`job_for`], `job.rs`).
#![forbid(unsafe_code)]

mod active;
mod decide;
#[cfg(test)]
mod fixtures;
mod history;
mod job;
mod schedule;
mod times;

pub use active::{
    ActiveReview, REASON_MISSING_JOB, REASON_SAW_COMPLETED_JOB, REASON_UNEXPECTED_JOB, drop_missing,
    review_active, unexpected,
};
pub use decide::{
    ALLOW, Decided, Decision, FORBID, REASON_INVALID_SCHEDULE, REASON_JOB_ALREADY_ACTIVE,
    REASON_MISS_SCHEDULE, REASON_TOO_MANY_MISSED, REASON_UNKNOWN_TIME_ZONE, REASON_UNPARSEABLE_SCHEDULE,
    REASON_UNSUPPORTED_SCHEDULE, REPLACE, decide, history_of,
};
pub use history::{Finished, finished, jobs_to_delete};
pub use job::{SCHEDULED_TIMESTAMP_ANNOTATION, job_for};
pub use schedule::{Schedule, ScheduleError};
pub use times::{
    History, MANY_MISSED, Missed, NEXT_SCHEDULE_DELTA, NoGap, Window, job_name, most_recent, requeue_after,
    slot_to_act_on,
};
