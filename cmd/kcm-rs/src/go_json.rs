//! JSON as Go's `encoding/json` writes it, where serde_json writes it otherwise: `float32` numbers
//! and the escaping of characters that are unsafe in HTML.
//!
//! Why: `/configz` answers what KCM's `json.Marshal` would for the same configuration, byte for
//! byte, so that a script comparing the two answers as text sees no difference that is only the
//! encoder's. serde_json writes `20.0` where Go writes `20`, `2e21` where Go writes `2e+21`, and
//! leaves `<`, `>` and `&` unescaped.

use std::io;

use serde::{Serialize, Serializer, ser::Error as _};
use serde_json::ser::{CompactFormatter, Formatter};

/// The smallest and the first too large magnitude Go writes without an exponent
/// (`floatEncoder.encode`, encoding/json/encode.go).
const PLAIN_FROM: f32 = 1e-6;
const PLAIN_BELOW: f32 = 1e21;

/// `value` as compact JSON, with its [`Float32`] fields and its strings written as Go writes them.
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, GoFormatter))?;
    Ok(out)
}

/// A Go `float32` field: the shortest digits that read back as the same `float32`, in plain
/// notation between 1e-6 and 1e21 and in Go's exponent form (`2e+21`, `1e-7`) outside; NaN and the
/// infinities are an error, as in Go (`json: unsupported value: NaN`), where serde_json writes null.
#[derive(Debug)]
pub struct Float32(pub f32);

impl Serialize for Float32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f32(self.0)
        } else {
            Err(S::Error::custom(format!(
                "json: unsupported value: {}",
                unsupported(self.0)
            )))
        }
    }
}

/// serde_json's compact output but for Go's floats and Go's escapes.
struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        match float32(value) {
            Some(text) => writer.write_all(text.as_bytes()),
            None => CompactFormatter.write_f32(writer, value),
        }
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        writer.write_all(html_escaped(fragment).as_bytes())
    }
}

/// `f` as Go's encoder writes a `float32`; `None` for NaN and the infinities.
pub fn float32(f: f32) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    // Rust's `{:e}` writes the shortest digits that read back as the same f32, as Go's
    // `strconv.FormatFloat(f, _, -1, 32)` chooses them: `-1.2345679e8`, `3.3e1`, `0e0`.
    let shortest = format!("{f:e}");
    let (mantissa, exponent) = shortest.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let magnitude = f.abs();
    if magnitude != 0.0 && !(PLAIN_FROM..PLAIN_BELOW).contains(&magnitude) {
        // Go's 'e' form: at least two exponent digits with its sign, then `e-07` shortened to `e-7`.
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let exp = match exponent {
            -9..=-1 => format!("-{}", -exponent),
            e if e < 0 => e.to_string(),
            e => format!("+{e:02}"),
        };
        return Some(format!("{sign}{first}{point}{rest}e{exp}"));
    }
    let point = exponent + 1;
    let body = match usize::try_from(point) {
        Err(_) | Ok(0) => format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize)),
        Ok(p) if p >= digits.len() => format!("{digits}{}", "0".repeat(p - digits.len())),
        Ok(p) => format!("{}.{}", &digits[..p], &digits[p..]),
    };
    Some(format!("{sign}{body}"))
}

/// How Go names an unsupported float in its error (`strconv.FormatFloat(f, 'g', -1, 32)`).
fn unsupported(f: f32) -> &'static str {
    match f {
        f if f.is_nan() => "NaN",
        f if f > 0.0 => "+Inf",
        _ => "-Inf",
    }
}

/// A string's text with `<`, `>`, `&`, U+2028 and U+2029 escaped, as Go's `json.Marshal` writes
/// them (`\u003c`, …).
fn html_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go 1.26's `json.Marshal(float32(x))` writes for each.
    #[test]
    fn floats_as_go_writes_them() {
        for (f, want) in [
            (20.0, "20"),
            (33.3, "33.3"),
            (0.5, "0.5"),
            (-1.0, "-1"),
            (0.0, "0"),
            (-0.0, "-0"),
            (123_456_789.0, "123456790"),
            (3e10, "30000000000"),
            (1e18, "1000000000000000000"),
            (1e20, "100000000000000000000"),
            (2e21, "2e+21"),
            (1.5e22, "1.5e+22"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.25e-10, "1.25e-10"),
            (-3.4028235e38, "-3.4028235e+38"),
        ] {
            assert_eq!(float32(f).as_deref(), Some(want), "{f:e}");
        }
        assert_eq!(float32(f32::NAN), None);
        assert_eq!(float32(f32::INFINITY), None);
    }

    #[test]
    fn unsupported_values_are_named_as_go_names_them() {
        for (f, want) in [
            (f32::NAN, "json: unsupported value: NaN"),
            (f32::INFINITY, "json: unsupported value: +Inf"),
            (f32::NEG_INFINITY, "json: unsupported value: -Inf"),
        ] {
            let err = serde_json::to_string(&Float32(f)).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn html_characters_are_escaped_inside_strings() {
        #[derive(Serialize)]
        struct Connection {
            kubeconfig: &'static str,
            qps: Float32,
        }
        let written = to_vec(&Connection {
            kubeconfig: "/a<b>&c\"\u{2028}",
            qps: Float32(20.0),
        });
        assert_eq!(
            String::from_utf8(written.unwrap()).unwrap(),
            r#"{"kubeconfig":"/a\u003cb\u003e\u0026c\"\u2028","qps":20}"#
        );
    }

    proptest::proptest! {
        /// Whatever is written reads back as the same float32.
        #[test]
        fn written_floats_read_back(bits in proptest::num::u32::ANY) {
            let f = f32::from_bits(bits);
            if let Some(text) = float32(f) {
                let back: f32 = text.parse().expect("a number");
                proptest::prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", text);
            }
        }
    }
}
