//! The CronJob controller (upstream `pkg/controller/cronjob`, the v2 controller, Kubernetes 1.36),
//! in progress: what exists so far is when a schedule fires.
//!
//! Start here: [`Schedule`] parses a schedule as upstream's controller does (robfig/cron's standard
//! parser: five fields, `@` descriptors, a `TZ=` prefix) and says when it fires next, in the
//! schedule's time zone with robfig's handling of daylight-saving transitions (`schedule/next.rs`).
#![forbid(unsafe_code)]

mod schedule;

pub use schedule::{Schedule, ScheduleError};
