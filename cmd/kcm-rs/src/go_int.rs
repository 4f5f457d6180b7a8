//! Integer flags in Go's syntax, as KCM's `Int32` flags take them (pflag: `strconv.ParseInt(s, 0,
//! 32)`): an optional sign, then decimal, `0x` hexadecimal, `0o` or a leading `0` octal, or `0b`
//! binary, with `_` allowed between digits. `--concurrent-deployment-syncs=0x10` is 16 to KCM and
//! must be to kcm-rs too, not a refused flag.

/// `s` as `strconv.ParseInt(s, 0, 32)` reads it; `None` where Go returns an error (syntax or range).
pub fn parse_i32(s: &str) -> Option<i32> {
    let (negative, unsigned) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let lower = unsigned.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits, prefixed) = match lower.as_deref() {
        Some("0x") => (16, &unsigned[2..], true),
        Some("0o") => (8, &unsigned[2..], true),
        Some("0b") => (2, &unsigned[2..], true),
        _ if unsigned.len() > 1 && unsigned.starts_with('0') => (8, &unsigned[1..], true),
        _ => (10, unsigned, false),
    };
    if !underscores_ok(digits, prefixed) {
        return None;
    }
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    // `from_str_radix` would take a sign of its own; Go takes one only before the prefix.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i64::from_str_radix(&digits, radix).ok()?;
    i32::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// Go's `underscoreOK`: each `_` between two digits, or right after a base prefix.
fn underscores_ok(digits: &str, prefixed: bool) -> bool {
    let mut after_digit = prefixed;
    let mut after_underscore = false;
    for c in digits.chars() {
        if c == '_' {
            if !after_digit {
                return false;
            }
            (after_digit, after_underscore) = (false, true);
        } else {
            (after_digit, after_underscore) = (true, false);
        }
    }
    !after_underscore
}

#[cfg(test)]
mod tests {
    use super::parse_i32;

    /// Go's answers, from `strconv.ParseInt(s, 0, 32)`.
    #[test]
    fn reads_what_go_reads() {
        for (s, want) in [
            ("5", Some(5)),
            ("+5", Some(5)),
            ("-5", Some(-5)),
            ("0", Some(0)),
            ("-0", Some(0)),
            ("0x10", Some(16)),
            ("0X1f", Some(31)),
            ("010", Some(8)),
            ("0o17", Some(15)),
            ("0b101", Some(5)),
            ("1_000", Some(1000)),
            ("0x_10", Some(16)),
            ("0_7", Some(7)),
            ("2147483647", Some(i32::MAX)),
            ("-2147483648", Some(i32::MIN)),
            ("2147483648", None),
            ("0x80000000", None),
            ("", None),
            ("+", None),
            ("0x", None),
            ("08", None),
            ("0b2", None),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("+-1", None),
            ("1.0", None),
            (" 1", None),
            ("99999999999999999999999", None),
        ] {
            assert_eq!(parse_i32(s), want, "{s:?}");
        }
    }
}
