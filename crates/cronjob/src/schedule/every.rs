//! `@every <duration>`: a constant delay, with Go's duration syntax and robfig's rounding.

use std::time::Duration;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// robfig's `Every`: at least a second, whole seconds (the fraction dropped).
pub(super) fn delay(nanos: i128) -> Duration {
    let nanos = u128::try_from(nanos).unwrap_or(0).max(NANOS_PER_SECOND);
    let whole = nanos - nanos % NANOS_PER_SECOND;
    Duration::from_secs(u64::try_from(whole / NANOS_PER_SECOND).unwrap_or(u64::MAX))
}

/// Go's `time.ParseDuration` in nanoseconds: an optional sign, then one or more decimal numbers each
/// with a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`); `0` alone needs no unit. Errors read as
/// Go's.
pub(super) fn go_duration(text: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (whole, after) = rest.split_at(digits);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(f) => {
                let n = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
                f.split_at(n)
            }
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("time: unknown unit {unit:?} in duration {text:?}")),
        };
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        let mut place = scale;
        for digit in fraction.bytes() {
            place /= 10;
            value += i128::from(digit - b'0') * place;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        // Go's Duration is an int64 of nanoseconds.
        if total > i128::from(i64::MAX) + i128::from(negative) {
            return Err(invalid());
        }
        rest = after;
    }
    Ok(if negative { -total } else { total })
}
