//! Deciding: whether one sync of a CronJob starts a Job, and when to look again (upstream
//! `syncCronJob` from the deletion check on, once the active list has been reconciled), as a pure
//! function of the CronJob, the clock and the controller manager's own time zone.

use std::borrow::Cow;

use controller::PlannedEvent;
use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use k8s_openapi::api::batch::v1::CronJob;

use crate::{
    Schedule,
    times::{History, Missed, job_name, requeue_after, slot_to_act_on},
};

pub const REASON_UNKNOWN_TIME_ZONE: &str = "UnknownTimeZone";
pub const REASON_UNSUPPORTED_SCHEDULE: &str = "UnsupportedSchedule";
pub const REASON_UNPARSEABLE_SCHEDULE: &str = "UnparseableSchedule";
pub const REASON_INVALID_SCHEDULE: &str = "InvalidSchedule";
pub const REASON_TOO_MANY_MISSED: &str = "TooManyMissedTimes";
pub const REASON_MISS_SCHEDULE: &str = "MissSchedule";
pub const REASON_JOB_ALREADY_ACTIVE: &str = "JobAlreadyActive";

/// The concurrency policies (`spec.concurrencyPolicy`; the API server defaults it to `Allow`).
pub const ALLOW: &str = "Allow";
pub const FORBID: &str = "Forbid";
pub const REPLACE: &str = "Replace";

/// What one sync does after reconciling the active Jobs.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing, and no requeue: the CronJob is being deleted or suspended, or its schedule or time
    /// zone cannot be used (a change to the CronJob wakes it).
    Idle,
    /// Nothing now; sync again after `requeue` (at once if it is not positive).
    Wait { requeue: SignedDuration },
    /// Start the Job for the slot `scheduled`, after deleting the active ones if `replace`; then
    /// `lastScheduleTime` is `scheduled` and the next sync comes after `requeue`.
    Start {
        scheduled: Timestamp,
        replace: bool,
        requeue: SignedDuration,
    },
}

/// The decision and the events that come with it, whatever the writes do.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub decision: Decision,
    pub events: Vec<PlannedEvent>,
}

/// Decides for `cron_job`, whose `status.active` is already reconciled with its Jobs, at `now`;
/// `local` is the zone of a schedule without `spec.timeZone` (the controller manager's own).
pub fn decide(cron_job: &CronJob, now: Timestamp, local: &TimeZone) -> Decided {
    let mut events = Vec::new();
    let decision = decide_into(cron_job, now, local, &mut events);
    Decided { decision, events }
}

fn decide_into(cj: &CronJob, now: Timestamp, local: &TimeZone, events: &mut Vec<PlannedEvent>) -> Decision {
    let spec = &cj.spec;
    if cj.metadata.deletion_timestamp.is_some() {
        return Decision::Idle;
    }
    let time_zone = spec.time_zone.as_deref();
    if let Some(tz) = time_zone
        && TimeZone::get(tz).is_err()
    {
        events.push(PlannedEvent::warning(
            REASON_UNKNOWN_TIME_ZONE,
            format!("invalid timeZone: {tz:?}: unknown time zone {tz}"),
        ));
        return Decision::Idle;
    }
    if spec.suspend == Some(true) {
        return Decision::Idle;
    }
    let raw = spec.schedule.as_str();
    let Some(schedule) = schedule_of(cj, local, events) else {
        return Decision::Idle;
    };
    let history = history_of(cj);
    let slot = match slot_to_act_on(&history, now, &schedule) {
        Ok(slot) => slot,
        Err(e) => {
            events.push(PlannedEvent::warning(
                REASON_INVALID_SCHEDULE,
                format!("invalid schedule: {raw} : {e}"),
            ));
            return Decision::Idle;
        }
    };
    let requeue = requeue_after(&history, now, &schedule);
    let Some((scheduled, missed)) = slot else {
        return Decision::Wait { requeue };
    };
    if missed == Missed::Many {
        events.push(PlannedEvent::warning(
            REASON_TOO_MANY_MISSED,
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
        ));
    }
    if let Some(deadline) = history.starting_deadline_seconds
        && scheduled
            .checked_add(SignedDuration::from_secs(deadline))
            .is_ok_and(|latest| latest < now)
    {
        events.push(PlannedEvent::warning(
            REASON_MISS_SCHEDULE,
            format!(
                "Missed scheduled time to start a job: {}",
                scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000")
            ),
        ));
        return Decision::Wait { requeue };
    }
    let active = cj
        .status
        .as_ref()
        .and_then(|s| s.active.as_deref())
        .unwrap_or_default();
    let name = job_name(cj.metadata.name.as_deref().unwrap_or_default(), scheduled);
    let processed = active
        .iter()
        .any(|r| r.name.as_deref() == Some(name.as_str()) && r.namespace == cj.metadata.namespace)
        || history.last_scheduled == Some(scheduled);
    if processed {
        return Decision::Wait { requeue };
    }
    let policy = spec.concurrency_policy.as_deref().unwrap_or(ALLOW);
    if policy == FORBID && !active.is_empty() {
        events.push(PlannedEvent::normal(
            REASON_JOB_ALREADY_ACTIVE,
            "Not starting job because prior execution is running and concurrency policy is Forbid",
        ));
        return Decision::Wait { requeue };
    }
    let after_start = History {
        last_scheduled: Some(scheduled),
        ..history
    };
    Decision::Start {
        scheduled,
        replace: policy == REPLACE && !active.is_empty(),
        requeue: requeue_after(&after_start, now, &schedule),
    }
}

/// The schedule as upstream's `formatSchedule` writes it for the parser: a schedule naming its own
/// zone (`TZ` anywhere in it) as it is, otherwise behind `TZ=<spec.timeZone>` when that zone loads.
pub fn schedule_text(cron_job: &CronJob) -> Cow<'_, str> {
    let raw = cron_job.spec.schedule.as_str();
    match cron_job.spec.time_zone.as_deref() {
        Some(tz) if !names_own_zone(raw) && TimeZone::get(tz).is_ok() => Cow::Owned(format!("TZ={tz} {raw}")),
        _ => Cow::Borrowed(raw),
    }
}

/// Whether a schedule carries its own `TZ=`/`CRON_TZ=` (upstream looks for the two letters anywhere).
fn names_own_zone(raw: &str) -> bool {
    raw.contains("TZ")
}

/// The schedule, parsed from [`schedule_text`]; a schedule naming its own zone comes with an
/// `UnsupportedSchedule` warning, and one that cannot be parsed is `None` with an
/// `UnparseableSchedule` warning saying why.
fn schedule_of(cj: &CronJob, local: &TimeZone, events: &mut Vec<PlannedEvent>) -> Option<Schedule> {
    let raw = cj.spec.schedule.as_str();
    if names_own_zone(raw) {
        events.push(PlannedEvent::warning(
            REASON_UNSUPPORTED_SCHEDULE,
            format!(
                "CRON_TZ or TZ used in schedule {raw:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
            ),
        ));
    }
    match Schedule::parse(&schedule_text(cj), local) {
        Ok(schedule) => Some(schedule),
        Err(e) => {
            events.push(PlannedEvent::warning(
                REASON_UNPARSEABLE_SCHEDULE,
                format!("unparseable schedule: {raw:?} : {e}"),
            ));
            None
        }
    }
}

/// The CronJob's creation, last schedule and starting deadline.
pub fn history_of(cj: &CronJob) -> History {
    History {
        created: cj
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(Timestamp::UNIX_EPOCH, |t| t.0),
        last_scheduled: cj
            .status
            .as_ref()
            .and_then(|s| s.last_schedule_time.as_ref())
            .map(|t| t.0),
        starting_deadline_seconds: cj.spec.starting_deadline_seconds,
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
