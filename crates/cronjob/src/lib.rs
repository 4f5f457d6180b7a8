//! The CronJob controller (upstream `pkg/controller/cronjob`, the v2 controller, Kubernetes 1.36),
//! in progress: what exists so far is when a schedule fires.
//!
//! Start here: [`Schedule`] parses a schedule as upstream's controller does (robfig/cron's standard
//! parser: five fields, `@` descriptors, a `TZ=` prefix) and says when it fires next, in the
//! schedule's time zone with robfig's handling of daylight-saving transitions (`schedule/next.rs`).
//! Then `times.rs`: which slot a sync acts on ([`slot_to_act_on`]), how many were missed, and when
//! to look again ([`requeue_after`]), with upstream's arithmetic.
#![forbid(unsafe_code)]

mod schedule;
mod times;

pub use schedule::{Schedule, ScheduleError};
pub use times::{
    History, MANY_MISSED, Missed, NEXT_SCHEDULE_DELTA, NoGap, Window, job_name, most_recent, requeue_after,
    slot_to_act_on,
};
