//! Reading a schedule as upstream's controller does: `github.com/robfig/cron/v3`'s standard parser
//! (five fields, `@` descriptors, a `TZ=`/`CRON_TZ=` prefix), the same inputs accepted and refused
//! and the same error texts, which reach users in the `UnparseableSchedule` event.

use jiff::tz::TimeZone;

use super::{
    Schedule, ScheduleError, Spec,
    every::{self, go_duration},
};

/// Set in a field's bits when it was written `*` or `?`: the day-of-month and day-of-week fields
/// then combine with AND instead of OR (robfig's `starBit`).
pub(super) const STAR: u64 = 1 << 63;

/// A field's range of values and the names it accepts.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// The zone robfig's parser asks Go's `time.LoadLocation` for: an empty name and `UTC` are UTC,
/// `Local` is the controller manager's own zone, any other name is looked up in the time zone
/// database (with Go's error text when it is not there).
fn load_location(name: &str, local: &TimeZone) -> Result<TimeZone, ScheduleError> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        "Local" => Ok(local.clone()),
        _ => TimeZone::get(name).map_err(|_| {
            ScheduleError::new(format!("provided bad location {name}: unknown time zone {name}"))
        }),
    }
}

/// Parses `text` with `local` as the zone of a schedule without a `TZ=` prefix (the controller
/// manager's own zone, as Go's `time.Local`).
pub(super) fn parse(text: &str, local: &TimeZone) -> Result<Schedule, ScheduleError> {
    if text.is_empty() {
        return Err(ScheduleError::new("empty spec string"));
    }
    let (zone, rest) = match text.strip_prefix("TZ=").or_else(|| text.strip_prefix("CRON_TZ=")) {
        Some(after) => {
            // robfig slices up to the first space and panics without one; an error here instead.
            let Some(space) = after.find(' ') else {
                return Err(ScheduleError::new(format!(
                    "provided bad location {after}: no schedule after the time zone"
                )));
            };
            let name = &after[..space];
            (load_location(name, local)?, after[space..].trim())
        }
        None => (local.clone(), text),
    };
    if rest.starts_with('@') {
        return descriptor(rest, zone);
    }
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(ScheduleError::new(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        )));
    }
    Ok(Schedule::Spec(Spec {
        minute: field(fields[0], &MINUTES)?,
        hour: field(fields[1], &HOURS)?,
        day_of_month: field(fields[2], &DAYS_OF_MONTH)?,
        month: field(fields[3], &MONTHS)?,
        day_of_week: field(fields[4], &DAYS_OF_WEEK)?,
        zone,
    }))
}

/// The `@` forms. Matched exactly, as robfig does: `@daily ` with a trailing space is unrecognized.
fn descriptor(text: &str, zone: TimeZone) -> Result<Schedule, ScheduleError> {
    let all = |b: &Bounds| bits(b.min, b.max, 1) | STAR;
    let first = |b: &Bounds| 1u64 << b.min;
    let (minute, hour, day_of_month, month, day_of_week) = match text {
        "@yearly" | "@annually" => (
            first(&MINUTES),
            first(&HOURS),
            first(&DAYS_OF_MONTH),
            first(&MONTHS),
            all(&DAYS_OF_WEEK),
        ),
        "@monthly" => (
            first(&MINUTES),
            first(&HOURS),
            first(&DAYS_OF_MONTH),
            all(&MONTHS),
            all(&DAYS_OF_WEEK),
        ),
        "@weekly" => (
            first(&MINUTES),
            first(&HOURS),
            all(&DAYS_OF_MONTH),
            all(&MONTHS),
            first(&DAYS_OF_WEEK),
        ),
        "@daily" | "@midnight" => (
            first(&MINUTES),
            first(&HOURS),
            all(&DAYS_OF_MONTH),
            all(&MONTHS),
            all(&DAYS_OF_WEEK),
        ),
        "@hourly" => (
            first(&MINUTES),
            all(&HOURS),
            all(&DAYS_OF_MONTH),
            all(&MONTHS),
            all(&DAYS_OF_WEEK),
        ),
        _ => {
            let Some(duration) = text.strip_prefix("@every ") else {
                return Err(ScheduleError::new(format!("unrecognized descriptor: {text}")));
            };
            let nanos = go_duration(duration)
                .map_err(|e| ScheduleError::new(format!("failed to parse duration {text}: {e}")))?;
            return Ok(Schedule::Every(every::delay(nanos)));
        }
    };
    Ok(Schedule::Spec(Spec {
        minute,
        hour,
        day_of_month,
        month,
        day_of_week,
        zone,
    }))
}

/// A comma-separated list of ranges; empty items are skipped (Go's `strings.FieldsFunc`).
fn field(text: &str, bounds: &Bounds) -> Result<u64, ScheduleError> {
    text.split(',')
        .filter(|r| !r.is_empty())
        .try_fold(0, |acc, r| Ok(acc | range(r, bounds)?))
}

/// `*`, `?`, `N`, `N-M`, each optionally `/step`; `N/step` means `N-max/step`. A step above 1 drops
/// the star bit (`*/2` is not "any").
fn range(text: &str, b: &Bounds) -> Result<u64, ScheduleError> {
    // robfig reads the range's ends before it counts the slashes: `a/2/3` is a bad number.
    let parts: Vec<&str> = text.split('/').collect();
    let ends: Vec<&str> = parts[0].split('-').collect();
    let (start, mut end, mut extra) = if ends[0] == "*" || ends[0] == "?" {
        (b.min, b.max, STAR)
    } else {
        let start = int_or_name(ends[0], b)?;
        let end = match ends.len() {
            1 => start,
            2 => int_or_name(ends[1], b)?,
            _ => return Err(ScheduleError::new(format!("too many hyphens: {text}"))),
        };
        (start, end, 0)
    };
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = int(parts[1])?;
            if ends.len() == 1 {
                end = b.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(ScheduleError::new(format!("too many slashes: {text}"))),
    };
    if start < b.min {
        return Err(ScheduleError::new(format!(
            "beginning of range ({start}) below minimum ({}): {text}",
            b.min
        )));
    }
    if end > b.max {
        return Err(ScheduleError::new(format!(
            "end of range ({end}) above maximum ({}): {text}",
            b.max
        )));
    }
    if start > end {
        return Err(ScheduleError::new(format!(
            "beginning of range ({start}) beyond end of range ({end}): {text}"
        )));
    }
    if step == 0 {
        return Err(ScheduleError::new(format!(
            "step of range should be a positive number: {text}"
        )));
    }
    Ok(bits(start, end, step) | extra)
}

fn int_or_name(text: &str, b: &Bounds) -> Result<u32, ScheduleError> {
    let lower = text.to_ascii_lowercase();
    match b.names.iter().find(|(name, _)| *name == lower) {
        Some((_, value)) => Ok(*value),
        None => int(text),
    }
}

/// Go's `strconv.Atoi` (an optional sign, decimal digits), refusing negative numbers.
fn int(text: &str) -> Result<u32, ScheduleError> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(d) if !text.starts_with('+') => (true, d),
        _ => (false, digits),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(ScheduleError::new(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing {text:?}: invalid syntax"
        )));
    }
    let value: u64 = digits.parse().map_err(|_| {
        ScheduleError::new(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing {text:?}: value out of range"
        ))
    })?;
    if negative && value != 0 {
        return Err(ScheduleError::new(format!(
            "negative number (-{value}) not allowed: {text}"
        )));
    }
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

/// The bits `start, start + step, … ≤ end`.
fn bits(start: u32, end: u32, step: u32) -> u64 {
    (start..=end)
        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
        .fold(0, |acc, v| acc | (1 << v))
}
