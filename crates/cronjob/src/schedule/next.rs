//! When a five-field schedule fires next: robfig's `SpecSchedule.Next`, field by field from the
//! month down, in wall-clock time of the schedule's zone, with Go's rules for building a wall-clock
//! time that a daylight-saving transition skips or repeats (`time.Date`).

use jiff::{Timestamp, civil, tz::TimeZone};

use super::{Spec, parse::STAR};

/// How far ahead the walk looks before it gives up (robfig: five years).
const YEARS_AHEAD: i16 = 5;
const MINUTE: i64 = 60;
const HOUR: i64 = 3_600;

/// The instant in wall-clock terms of its zone.
struct Wall {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    weekday: i8,
}

fn wall(t: Timestamp, zone: &TimeZone) -> Wall {
    let z = t.to_zoned(zone.clone());
    Wall {
        year: z.year(),
        month: z.month(),
        day: z.day(),
        hour: z.hour(),
        minute: z.minute(),
        second: z.second(),
        weekday: z.weekday().to_sunday_zero_offset(),
    }
}

fn has(bits: u64, value: i8) -> bool {
    u32::try_from(value).is_ok_and(|v| v < 63 && bits & (1 << v) != 0)
}

fn day_matches(spec: &Spec, w: &Wall) -> bool {
    let dom = has(spec.day_of_month, w.day);
    let dow = has(spec.day_of_week, w.weekday);
    if spec.day_of_month & STAR != 0 || spec.day_of_week & STAR != 0 {
        dom && dow
    } else {
        dom || dow
    }
}

fn plus(t: Timestamp, seconds: i64) -> Option<Timestamp> {
    Timestamp::from_second(t.as_second().checked_add(seconds)?).ok()
}

/// Go's `time.Date(year, month, day, hour, minute, second, 0, zone)`: out-of-range values carry
/// over (month 13 is January of the next year, day 32 the next month's first), and a wall-clock
/// time is placed with the offset in force at that wall clock read as UTC, unless the instant that
/// gives lies outside that offset's period, then with the offset at that instant.
fn go_date(
    zone: &TimeZone,
    year: i16,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
) -> Option<Timestamp> {
    let months = i64::from(year) * 12 + (month - 1);
    let year = i16::try_from(months.div_euclid(12)).ok()?;
    let month = i8::try_from(months.rem_euclid(12) + 1).ok()?;
    let first = civil::Date::new(year, month, 1).ok()?;
    let midnight = first.to_zoned(TimeZone::UTC).ok()?.timestamp().as_second();
    let local = midnight + (day - 1) * 24 * HOUR + hour * HOUR + minute * MINUTE + second;
    let guess = zone.to_offset(Timestamp::from_second(local).ok()?).seconds();
    let utc = local - i64::from(guess);
    let actual = zone.to_offset(Timestamp::from_second(utc).ok()?).seconds();
    Timestamp::from_second(if actual == guess {
        utc
    } else {
        local - i64::from(actual)
    })
    .ok()
}

/// Go's `t.AddDate(0, months, days)`: the wall clock kept, the date carried over as `go_date` does.
fn add_date(zone: &TimeZone, t: Timestamp, months: i64, days: i64) -> Option<Timestamp> {
    let w = wall(t, zone);
    go_date(
        zone,
        w.year,
        i64::from(w.month) + months,
        i64::from(w.day) + days,
        i64::from(w.hour),
        i64::from(w.minute),
        i64::from(w.second),
    )
}

/// Go's `Truncate` to a multiple of `unit` seconds since the zero time (UTC-based, as Go's).
fn truncate(t: Timestamp, unit: i64) -> Option<Timestamp> {
    let s = t.as_second();
    Timestamp::from_second(s - s.rem_euclid(unit)).ok()
}

/// The first instant after `after` (from the next whole second) the schedule matches, or `None`
/// past five years.
pub(super) fn next(spec: &Spec, after: Timestamp) -> Option<Timestamp> {
    let zone = &spec.zone;
    // The upcoming whole second.
    let mut t = plus(Timestamp::from_second(after.as_second()).ok()?, 1)?;
    let mut added = false;
    let year_limit = wall(t, zone).year.checked_add(YEARS_AHEAD)?;
    'wrap: loop {
        let mut w = wall(t, zone);
        if w.year > year_limit {
            return None;
        }
        while !has(spec.month, w.month) {
            if !added {
                added = true;
                t = go_date(zone, w.year, w.month.into(), 1, 0, 0, 0)?;
            }
            t = add_date(zone, t, 1, 0)?;
            w = wall(t, zone);
            if w.month == 1 {
                continue 'wrap;
            }
        }
        while !day_matches(spec, &w) {
            if !added {
                added = true;
                t = go_date(zone, w.year, w.month.into(), w.day.into(), 0, 0, 0)?;
            }
            t = add_date(zone, t, 0, 1)?;
            // A day that did not start at midnight (a transition at 00:00): back to it.
            let hour = i64::from(wall(t, zone).hour);
            if hour != 0 {
                t = plus(
                    t,
                    if hour > 12 {
                        (24 - hour) * HOUR
                    } else {
                        -hour * HOUR
                    },
                )?;
            }
            w = wall(t, zone);
            if w.day == 1 {
                continue 'wrap;
            }
        }
        while !has(spec.hour, w.hour) {
            if !added {
                added = true;
                t = go_date(zone, w.year, w.month.into(), w.day.into(), w.hour.into(), 0, 0)?;
            }
            t = plus(t, HOUR)?;
            w = wall(t, zone);
            if w.hour == 0 {
                continue 'wrap;
            }
        }
        while !has(spec.minute, w.minute) {
            if !added {
                added = true;
                t = truncate(t, MINUTE)?;
            }
            t = plus(t, MINUTE)?;
            w = wall(t, zone);
            if w.minute == 0 {
                continue 'wrap;
            }
        }
        // The standard parser's seconds field is 0.
        while w.second != 0 {
            if !added {
                added = true;
                t = truncate(t, 1)?;
            }
            t = plus(t, 1)?;
            w = wall(t, zone);
            if w.second == 0 {
                continue 'wrap;
            }
        }
        return Some(t);
    }
}
