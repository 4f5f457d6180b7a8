//! A `resource.Quantity` in upstream's dump. The Go struct holds what `ParseQuantity` made of the
//! string it was sent, not the string: a scaled int64 when that is exact, else an arbitrary
//! precision decimal rounded up to nanos, the string itself only when it was already canonical,
//! and the format of its suffix. So the parse is carried over here step for step; any difference
//! in the internal form would change the hash. The API server sends quantities in canonical form,
//! which takes the int64 path unless the number has more than 18 digits; the decimal path is
//! carried over all the same, short of numbers with thousands of digits ([`MAX_POW10`]).

use std::fmt::Write as _;

const DECIMAL_SI: &str = "DecimalSI";
const BINARY_SI: &str = "BinarySI";
const DECIMAL_EXPONENT: &str = "DecimalExponent";

/// The finest scale a quantity keeps (nano).
const NANO: i32 = -9;
/// Scaling a quantity to nanos by a larger power of ten is refused (written as the zero quantity,
/// unlike upstream): only a number of more than 18 digits with an exponent in the thousands needs
/// it, and the number would be thousands of digits long.
const MAX_POW10: i32 = 4096;

/// Go's parsed form: `i` (value, scale) when `d` is `None`.
#[derive(Debug, Default, PartialEq)]
struct Parsed {
    i: (i64, i32),
    d: Option<Dec>,
    s: String,
    format: &'static str,
}

/// `inf.Dec`: sign, magnitude as little-endian 32-bit limbs without leading zeros, scale.
#[derive(Debug, PartialEq)]
struct Dec {
    neg: bool,
    abs: Vec<u32>,
    scale: i32,
}

/// Writes the quantity `s` parses to (the zero quantity for none, or one Go refuses to decode).
pub fn write(out: &mut String, s: Option<&str>) {
    let q = s.and_then(|s| parse(s.trim())).unwrap_or_default();
    let _ = write!(
        out,
        "{{i:(resource.int64Amount){{value:(int64){} scale:(resource.Scale){}}} d:(resource.infDecAmount){{Dec:",
        q.i.0, q.i.1
    );
    match &q.d {
        None => out.push_str("(*inf.Dec)<nil>"),
        Some(d) => {
            let _ = write!(
                out,
                "(*inf.Dec){{unscaled:(big.Int){{neg:(bool){} abs:(big.nat)",
                d.neg
            );
            if d.abs.is_empty() {
                out.push_str("<nil>");
            } else {
                // big.Word is 64 bits wide on the platforms upstream ships.
                let words: Vec<String> = d
                    .abs
                    .chunks(2)
                    .map(|c| (u64::from(c[0]) | c.get(1).map_or(0, |&h| u64::from(h) << 32)).to_string())
                    .collect();
                let _ = write!(out, "[{}]", words.join(" "));
            }
            let _ = write!(out, "}} scale:(inf.Scale){}}}", d.scale);
        }
    }
    let _ = write!(out, "}} s:(string){} Format:(resource.Format){}}}", q.s, q.format);
}

/// Sign, the number as written (sign, digits, point), integer digits without leading zeros,
/// fraction digits, suffix.
fn split(s: &str) -> Option<(bool, &str, &str, &str, &str)> {
    let b = s.as_bytes();
    let end = b.len();
    let (positive, mut pos) = match b.first() {
        Some(b'-') => (false, 1),
        Some(b'+') => (true, 1),
        _ => (true, 0),
    };
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos == end {
        return Some((positive, "0", "0", "", ""));
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos == end {
        return Some((positive, s, &s[start..], "", ""));
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let from = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos == end {
            return Some((positive, s, num, &s[from..], ""));
        }
        denom = &s[from..pos];
    }
    let value = &s[..pos];
    let suffix = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    (pos == end).then(|| (positive, value, num, denom, &s[suffix..]))
}

/// Base, exponent and format of a suffix.
fn interpret(suffix: &str) -> Option<(u32, i32, &'static str)> {
    let decimal = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
    if let Some(i) = decimal.iter().position(|d| *d == suffix) {
        return Some((10, 3 * i32::try_from(i).ok()? - 9, DECIMAL_SI));
    }
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(i) = binary.iter().position(|d| *d == suffix) {
        return Some((2, 10 * (i32::try_from(i).ok()? + 1), BINARY_SI));
    }
    let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
    // Go narrows the parsed int64 to int32.
    Some((10, rest.parse::<i64>().ok()? as i32, DECIMAL_EXPONENT))
}

fn parse(s: &str) -> Option<Parsed> {
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(Parsed {
            s: s.into(),
            format: DECIMAL_SI,
            ..Parsed::default()
        });
    }
    let (positive, value, num, denom, suffix) = split(s)?;
    let (base, exponent, mut format) = interpret(suffix)?;
    // Lengths in i64 and the scale wrapping as Go's int32 does: no string can overflow either.
    let (num_len, denom_len) = (num.len() as i64, denom.len() as i64);
    let (mut scale, precision, mantissa) = if format == BINARY_SI {
        if denom.is_empty() {
            (
                0,
                15 - num_len - i64::from(exponent) * 3 / 10 - 1,
                1i64 << exponent,
            )
        } else {
            (0, -1, 1)
        }
    } else {
        (exponent, 18 - num_len - denom_len, 1)
    };
    if precision >= 0 {
        scale = scale.wrapping_sub(denom_len as i32);
        if scale >= NANO {
            let shifted = format!("{num}{denom}");
            let v: i64 = shifted.parse().ok()?;
            if let Some(r) = int64_multiply(v, mantissa) {
                let canonical = if format == BINARY_SI {
                    exponent % 10 == 0 && v & 7 != 0
                } else {
                    scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                };
                return Some(Parsed {
                    i: (if positive { r } else { r.wrapping_neg() }, scale),
                    d: None,
                    s: if canonical { s.into() } else { String::new() },
                    format,
                });
            }
        }
    }

    let mut d = dec_from_str(value)?;
    if base == 10 {
        d.scale = d.scale.wrapping_sub(exponent);
    } else {
        mul_small(&mut d.abs, 1 << (exponent / 2));
        mul_small(&mut d.abs, 1 << (exponent - exponent / 2));
    }
    let negative = d.neg;
    d.neg = false;
    if !d.abs.is_empty() {
        // Round up (away from zero) to nanos.
        if d.scale <= -NANO {
            mul_pow10(&mut d.abs, (-NANO).saturating_sub(d.scale))?;
        } else {
            let mut inexact = false;
            for _ in 0..d.scale.wrapping_add(NANO) {
                if d.abs.is_empty() {
                    break;
                }
                inexact |= div_small(&mut d.abs, 10) != 0;
            }
            if inexact {
                add_small(&mut d.abs, 1);
            }
        }
        d.scale = -NANO;
    }
    if format == BINARY_SI && !d.abs.is_empty() {
        // The cap is MaxInt64 at scale 0; d is at nanos here.
        let mut max = vec![u32::MAX, 0x7fff_ffff];
        mul_pow10(&mut max, -NANO)?;
        if cmp(&d.abs, &max).is_gt() {
            d = Dec {
                neg: false,
                abs: vec![u32::MAX, 0x7fff_ffff],
                scale: 0,
            };
        } else {
            let mut one = vec![1];
            mul_pow10(&mut one, -NANO)?;
            if cmp(&d.abs, &one).is_lt() {
                format = DECIMAL_SI;
            }
        }
    }
    d.neg = negative && !d.abs.is_empty();
    Some(Parsed {
        d: Some(d),
        format,
        ..Parsed::default()
    })
}

/// Go's overflow-checked int64 product (`a` is never negative here).
fn int64_multiply(a: i64, b: i64) -> Option<i64> {
    if a == 0 || b == 0 || a == 1 || b == 1 {
        return Some(a.wrapping_mul(b));
    }
    a.checked_mul(b)
}

/// `inf.Dec`'s parse of a sign, digits and at most one point.
fn dec_from_str(s: &str) -> Option<Dec> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut abs = Vec::new();
    for c in int.bytes().chain(frac.bytes()) {
        if !c.is_ascii_digit() {
            return None;
        }
        mul_small(&mut abs, 10);
        add_small(&mut abs, u32::from(c - b'0'));
    }
    Some(Dec {
        neg: neg && !abs.is_empty(),
        abs,
        scale: i32::try_from(frac.len()).ok()?,
    })
}

fn mul_small(n: &mut Vec<u32>, m: u32) {
    let mut carry = 0u64;
    for limb in n.iter_mut() {
        let v = u64::from(*limb) * u64::from(m) + carry;
        *limb = v as u32;
        carry = v >> 32;
    }
    if carry != 0 {
        n.push(carry as u32);
    }
    while n.last() == Some(&0) {
        n.pop();
    }
}

fn mul_pow10(n: &mut Vec<u32>, k: i32) -> Option<()> {
    if k > MAX_POW10 {
        return None;
    }
    for _ in 0..k {
        mul_small(n, 10);
    }
    Some(())
}

fn add_small(n: &mut Vec<u32>, a: u32) {
    let mut carry = u64::from(a);
    for limb in n.iter_mut() {
        if carry == 0 {
            return;
        }
        let v = u64::from(*limb) + carry;
        *limb = v as u32;
        carry = v >> 32;
    }
    if carry != 0 {
        n.push(carry as u32);
    }
}

/// Divides in place, returning the remainder.
fn div_small(n: &mut Vec<u32>, d: u32) -> u32 {
    let mut rem = 0u64;
    for limb in n.iter_mut().rev() {
        let v = (rem << 32) | u64::from(*limb);
        *limb = (v / u64::from(d)) as u32;
        rem = v % u64::from(d);
    }
    while n.last() == Some(&0) {
        n.pop();
    }
    rem as u32
}

fn cmp(a: &[u32], b: &[u32]) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}
