//! Which scheduled time a sync acts on, and when to look again: upstream's `mostRecentScheduleTime`,
//! `nextScheduleTime` and `nextScheduleTimeDuration` (`pkg/controller/cronjob/utils.go`), with their
//! approximations. Missed runs are counted from the gap between the next two slots, so an irregular
//! schedule (`30 10,11,12 * * 1-5`) can find no most recent slot after a long absence, and upstream's
//! tests expect that; kcm-rs does the same.

use jiff::{SignedDuration, Timestamp};

use crate::Schedule;

/// Added to the wait for the next slot, so that the sync lands just after it (upstream
/// `nextScheduleDelta`).
pub const NEXT_SCHEDULE_DELTA: SignedDuration = SignedDuration::from_millis(100);

/// More missed slots than this and the sync warns `TooManyMissedTimes` (upstream: "more than 80,
/// less than lots").
pub const MANY_MISSED: i64 = 100;

/// What a CronJob's status and spec say about its past: the times are its `creationTimestamp`,
/// `status.lastScheduleTime` and `spec.startingDeadlineSeconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct History {
    pub created: Timestamp,
    pub last_scheduled: Option<Timestamp>,
    pub starting_deadline_seconds: Option<i64>,
}

/// How many slots went by unacted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    Few,
    /// More than [`MANY_MISSED`].
    Many,
}

/// The slots between the earliest time the controller would still act on and now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The last schedule time, or the creation time, moved up to `now − startingDeadlineSeconds`
    /// when asked to.
    pub earliest: Timestamp,
    /// The latest slot not after now, if the walk found one.
    pub most_recent: Option<Timestamp>,
    pub missed: Missed,
}

/// The schedule's next two slots are less than a second apart: it never fires (`59 23 31 2 *`)
/// or not twice in five years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("time difference between two schedules is less than 1 second")]
pub struct NoGap {
    /// What the window was before the error, as upstream returns it beside the error.
    pub earliest: Timestamp,
}

/// Upstream `mostRecentScheduleTime`.
pub fn most_recent(
    history: &History,
    now: Timestamp,
    schedule: &Schedule,
    include_deadline: bool,
) -> Result<Window, NoGap> {
    let mut earliest = history.last_scheduled.unwrap_or(history.created);
    if include_deadline && let Some(seconds) = history.starting_deadline_seconds {
        let deadline = now
            .saturating_sub(SignedDuration::from_secs(seconds.max(0)))
            .unwrap_or(now);
        if deadline > earliest {
            earliest = deadline;
        }
    }
    let window = |most_recent, missed| Window {
        earliest,
        most_recent,
        missed,
    };
    // `None` is robfig's zero time, before any `now`.
    let t1 = schedule.next(earliest);
    let t2 = t1.and_then(|t| schedule.next(t));
    match (t1, t2) {
        (Some(t1), _) if now < t1 => return Ok(window(None, Missed::None)),
        (Some(t1), Some(t2)) if now < t2 => return Ok(window(Some(t1), Missed::None)),
        _ => {}
    }
    let (Some(t1), Some(t2)) = (t1, t2) else {
        return Err(NoGap { earliest });
    };
    // Slots are whole seconds: Go's rounding to seconds changes nothing.
    let gap = t2.duration_since(t1).as_secs();
    if gap < 1 {
        return Err(NoGap { earliest });
    }
    // Whole seconds elapsed, truncated as Go's int64(Duration.Seconds()).
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / gap + 1;
    // Back two gaps from the estimate, then walk: a schedule that is not regular (`30 6-16/4 * * 1-5`)
    // is found by the walk, not by the arithmetic.
    let back = SignedDuration::from_secs((missed - 2).saturating_mul(gap));
    let start = t1.saturating_add(back).unwrap_or(t1);
    let mut most_recent = None;
    let mut t = schedule.next(start);
    while let Some(slot) = t.filter(|slot| *slot <= now) {
        most_recent = Some(slot);
        t = schedule.next(slot);
    }
    let missed = if missed > MANY_MISSED {
        Missed::Many
    } else {
        Missed::Few
    };
    Ok(window(most_recent, missed))
}

/// The slot a sync acts on (upstream `nextScheduleTime`): the most recent one not after now, with
/// `startingDeadlineSeconds` applied, and how many were missed (the caller warns for
/// [`Missed::Many`]). The error comes with no slot only.
pub fn slot_to_act_on(
    history: &History,
    now: Timestamp,
    schedule: &Schedule,
) -> Result<Option<(Timestamp, Missed)>, NoGap> {
    let window = most_recent(history, now, schedule, true)?;
    Ok(window
        .most_recent
        .filter(|t| *t <= now)
        .map(|t| (t, window.missed)))
}

/// How long until the sync after the next slot (upstream `nextScheduleTimeDuration`): from the most
/// recent slot (the earliest time when none was missed and none found; now when some were missed
/// or the schedule has no gap), to the slot after it, plus [`NEXT_SCHEDULE_DELTA`]. Negative when
/// the schedule never fires again: look at once.
pub fn requeue_after(history: &History, now: Timestamp, schedule: &Schedule) -> SignedDuration {
    let from = match most_recent(history, now, schedule, false) {
        Err(_) => now,
        Ok(Window {
            most_recent: Some(t), ..
        }) => t,
        Ok(Window {
            earliest,
            missed: Missed::None,
            ..
        }) => earliest,
        Ok(_) => now,
    };
    // robfig's zero time for a schedule that never fires: far in the past.
    let next = schedule.next(from).unwrap_or(Timestamp::MIN);
    next.duration_since(now) + NEXT_SCHEDULE_DELTA
}

/// The name of the Job for `scheduled`: the CronJob's name and the minutes since 1970 (upstream
/// `getJobName`), so that a slot gets one Job whatever the number of syncs.
pub fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second() / 60)
}

#[cfg(test)]
#[path = "times_tests.rs"]
mod tests;
