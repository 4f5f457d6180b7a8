//! Cron schedules with the semantics of `github.com/robfig/cron/v3`'s standard parser, which
//! upstream's CronJob controller uses: what is accepted ([`Schedule::parse`]) and when a schedule
//! fires next ([`Schedule::next`]), daylight-saving transitions included.
//!
//! Hand-written rather than taken from a crate: `cron` needs a seconds field, `croner` and `saffron`
//! accept forms robfig refuses (`L`, `W`, `#`, a day-of-week 7) and differ from it on when
//! day-of-month and day-of-week combine with AND, on `@every`, and across daylight-saving gaps,
//! where robfig's walk field by field in wall-clock time gives its own answers. A CronJob must fire
//! at the same instants under kcm-rs as under upstream, so the walk is robfig's, step for step, on
//! [`jiff`]'s time zones.

mod every;
mod next;
mod parse;

use std::time::Duration;

use jiff::{Timestamp, tz::TimeZone};

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// The five fields (or an `@yearly`-style descriptor) in a time zone.
    Spec(Spec),
    /// `@every <duration>`: fires `delay` after the instant asked about, in whole seconds.
    Every(Duration),
}

/// The five fields as bit sets (bit `n` set: value `n` matches; [`parse::STAR`] marks `*`/`?`), and
/// the zone they are read in. The seconds field of the standard parser is always 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    minute: u64,
    hour: u64,
    day_of_month: u64,
    month: u64,
    day_of_week: u64,
    zone: TimeZone,
}

/// Why a schedule was refused, in robfig's words (they end up in the `UnparseableSchedule` event).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ScheduleError {
    message: String,
}

impl ScheduleError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl Schedule {
    /// Parses `text`; `local` is the zone of a schedule without a `TZ=` or `CRON_TZ=` prefix (the
    /// controller manager's own zone, as Go's `time.Local`).
    pub fn parse(text: &str, local: &TimeZone) -> Result<Self, ScheduleError> {
        parse::parse(text, local)
    }

    /// The first time after `after` (at least one second later) the schedule fires; `None` when it
    /// does not within five years (robfig's zero time: `30 2 31 2 *` never comes).
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Spec(spec) => next::next(spec, after),
            // `after` plus the delay, less its fraction of a second.
            Schedule::Every(delay) => {
                let delay = i64::try_from(delay.as_secs()).ok()?;
                Timestamp::from_second(after.as_second().checked_add(delay)?).ok()
            }
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
