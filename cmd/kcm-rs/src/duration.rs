//! Duration flags in Go's syntax (`time.ParseDuration`), as KCM's flags take them.
//!
//! Parsed in integer nanoseconds as Go does, so that the range is Go's (at most 2562047h47m16.854775807s)
//! and a value beyond it is an error, never a float overflow. Negative durations, which Go accepts,
//! are refused: no kcm-rs flag means anything by them.
//!
//! [`go_string`] writes a duration back as Go's `time.Duration.String` does (`12h0m0s`, `1.5s`,
//! `500ms`), which is how KCM's `/configz` shows its durations (`metav1.Duration` marshals so).

use std::time::Duration;

/// The largest Go duration, `math.MaxInt64` nanoseconds.
const MAX_NANOS: u64 = i64::MAX as u64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?} (use Go syntax such as 15s, 1m30s, 500ms, 12h)")]
    Invalid(String),
    #[error("duration {0:?} is out of range (at most 2562047h47m16.854775807s)")]
    OutOfRange(String),
    #[error("duration {0:?} is negative")]
    Negative(String),
}

/// A Go duration such as `15s`, `1m30s`, `1.5h`, `500ms` or `0`; an optional leading `+`.
pub fn go_duration(s: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(s.to_owned());
    let out_of_range = || DurationError::OutOfRange(s.to_owned());
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let whole = leading_int(&rest[..int_len]).ok_or_else(out_of_range)?;
        rest = &rest[int_len..];
        let (fraction, scale, frac_len) = match rest.strip_prefix('.') {
            Some(after) => {
                let len = after.bytes().take_while(u8::is_ascii_digit).count();
                let (f, scale) = leading_fraction(&after[..len]);
                rest = &after[len..];
                (f, scale, Some(len))
            }
            None => (0, 1.0, None),
        };
        if int_len == 0 && frac_len.unwrap_or(0) == 0 {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = unit_nanos(&rest[..unit_len]).ok_or_else(invalid)?;
        rest = &rest[unit_len..];
        let mut v = whole.checked_mul(unit).ok_or_else(out_of_range)?;
        if fraction > 0 {
            // As Go: the fraction goes through a float, exact enough at nanosecond resolution.
            let part = (fraction as f64 * (unit as f64 / scale)) as u64;
            v = v.checked_add(part).ok_or_else(out_of_range)?;
        }
        total = total.checked_add(v).ok_or_else(out_of_range)?;
        if total > MAX_NANOS {
            return Err(out_of_range());
        }
    }
    if negative && total > 0 {
        return Err(DurationError::Negative(s.to_owned()));
    }
    Ok(Duration::from_nanos(total))
}

/// The digits as an integer; `None` beyond Go's range.
fn leading_int(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |acc, d| {
        let next = acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        (next <= MAX_NANOS).then_some(next)
    })
}

/// The fraction's digits as an integer and the power of ten that divides it; digits past what fits
/// are dropped (Go's `leadingFraction`).
fn leading_fraction(digits: &str) -> (u64, f64) {
    let mut x = 0u64;
    let mut scale = 1.0;
    for d in digits.bytes() {
        match x.checked_mul(10).and_then(|y| y.checked_add(u64::from(d - b'0'))) {
            Some(y) if y <= MAX_NANOS => {
                x = y;
                scale *= 10.0;
            }
            _ => break,
        }
    }
    (x, scale)
}

/// Go's `unitMap`, including both micro signs.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// A duration as Go's `time.Duration.String` writes it: `0s`; below a second, in the largest of
/// `ns`, `µs` and `ms` that fits, with a fraction; otherwise hours, minutes and seconds, the larger
/// units only when not zero (`1h0m0s`, `2m30s`, `15s`, `1.5s`). Beyond Go's range: Go's largest.
pub fn go_string(d: Duration) -> String {
    let nanos = u64::try_from(d.as_nanos()).map_or(MAX_NANOS, |n| n.min(MAX_NANOS));
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", decimal(nanos, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", decimal(nanos, 6));
    }
    let seconds = decimal(nanos % 60_000_000_000, 9);
    let minutes = nanos / 60_000_000_000;
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

/// `value / 10^places`, with the fraction's trailing zeros (and a bare point) left out.
fn decimal(value: u64, places: u32) -> String {
    let unit = 10u64.pow(places);
    let (whole, fraction) = (value / unit, value % unit);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:0width$}", width = places as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_syntax() {
        assert_eq!(go_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(go_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(go_duration("2.s"), Ok(Duration::from_secs(2)));
        assert_eq!(go_duration("+12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(go_duration("3µs"), Ok(Duration::from_micros(3)));
        assert_eq!(go_duration("3μs"), Ok(Duration::from_micros(3)));
        assert_eq!(go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(go_duration("-0"), Ok(Duration::ZERO));
        assert_eq!(go_duration("1.000000001s"), Ok(Duration::new(1, 1)));
    }

    #[test]
    fn go_range_is_the_limit() {
        assert_eq!(
            go_duration("2562047h47m16.854775807s"),
            Ok(Duration::from_nanos(MAX_NANOS))
        );
        for s in [
            "2562047h47m16.854775808s",
            "2562048h",
            "99999999999999999999h",
            "9223372036854775808ns",
            "18446744073709551616s",
        ] {
            assert_eq!(go_duration(s), Err(DurationError::OutOfRange(s.into())), "{s}");
        }
    }

    #[test]
    fn malformed_negative_and_nan_like_values_are_errors() {
        for s in [
            "", "15", "s", ".", ".s", "1.2.3s", "1e3s", "NaN", "NaNs", "inf", "infh", "-inf", "1h-1m", "1 s",
            "1S", "+", "-", "0x10s",
        ] {
            assert_eq!(go_duration(s), Err(DurationError::Invalid(s.into())), "{s}");
        }
        assert_eq!(go_duration("-1s"), Err(DurationError::Negative("-1s".into())));
    }

    #[test]
    fn written_as_go_writes_them() {
        for (d, want) in [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_nanos(1_000_001), "1.000001ms"),
            (Duration::from_secs(2), "2s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(300), "5m0s"),
            (Duration::from_secs(12 * 3600), "12h0m0s"),
            (Duration::new(3_601, 1), "1h0m1.000000001s"),
            (Duration::from_nanos(MAX_NANOS), "2562047h47m16.854775807s"),
            (Duration::MAX, "2562047h47m16.854775807s"),
        ] {
            assert_eq!(go_string(d), want, "{d:?}");
        }
    }

    proptest::proptest! {
        /// What `go_string` writes, `go_duration` reads back to the same duration.
        #[test]
        fn written_durations_read_back(nanos in 0..=MAX_NANOS) {
            let d = Duration::from_nanos(nanos);
            proptest::prop_assert_eq!(go_duration(&go_string(d)), Ok(d));
        }
    }
}
