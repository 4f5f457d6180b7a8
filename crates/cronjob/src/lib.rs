//! The CronJob controller (upstream `pkg/controller/cronjob`, the v2 controller, Kubernetes 1.36),
//! in progress: what exists so far is when a schedule fires.
//!
//! Start here: [`Schedule`] parses a schedule as upstream's controller does (robfig/cron's standard
//! parser: five fields, `@` descriptors, a `TZ=` prefix) and says when it fires next, in the
//! schedule's time zone with robfig's handling of daylight-saving transitions (`schedule/next.rs`).
//! Then `times.rs`: which slot a sync acts on ([`slot_to_act_on`]), how many were missed, and when
//! to look again ([`requeue_after`]), with upstream's arithmetic. Then `decide.rs`: what one sync
//! does once the active Jobs are reconciled ([`decide`]: idle, wait, or start a slot's Job), the
//! Job a slot starts ([`job_for`]) and the finished Jobs the history limits remove
//! ([`jobs_to_delete`]).
#![forbid(unsafe_code)]

mod decide;
mod history;
mod job;
mod schedule;
mod times;

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
