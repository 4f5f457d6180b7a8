//! The text upstream hashes: `k8s.io/utils/dump.ForHash`, which is go-spew's `%#v` formatter with
//! methods disabled, pointer addresses and capacities hidden and map keys sorted.
//!
//! The bytes come from Go's reflection over the struct, not from any wire format, so the writer
//! needs Go's view of the types: field order, Go field names and printed type names, and which
//! fields are pointers (printed with their type, `<nil>` when unset), values (printed as their zero
//! value when unset), slices and maps (`<nil>` when unset). That view is `go_types.txt`, taken by
//! reflection from k8s.io/api v0.36.3's `PodTemplateSpec`: one line per struct,
//! `S <type> <GoName>:<json name, or - when embedded inline>:<type>...`, and one per other named type,
//! `N <type> <underlying type>`. A new field in a later API version has to be added there, or its
//! JSON is ignored and the hash differs from upstream's for templates that set it.
//!
//! The value itself is read from the template's JSON, which carries every field upstream sees. The
//! controller upstream reads its Deployments as protobuf, which has no empty list or map distinct
//! from an absent one, so both print as `<nil>` here as they do there (a controller configured to
//! read JSON would hold such a field, one without `omitempty`, as an empty list instead).
//!
//! Followed only under an assumption, since the Go value holds what the template's JSON does not:
//! * a set `metav1.Time` (a template's `creationTimestamp`, normally null) points to the process's
//!   local zone, whose whole state is dumped. Written here is the zone Go falls back to without
//!   `/etc/localtime` or with `TZ` empty; a controller with a zone file dumps its name and tables.
//! * `managedFields` keep the bytes the API server sent; written here are serde_json's.

use std::{collections::HashMap, fmt::Write as _, sync::OnceLock};

use serde_json::Value;

use super::quantity;

const GO_TYPES: &str = include_str!("go_types.txt");

/// Seconds from Go's internal epoch (1 January of year 1) to the Unix epoch.
const UNIX_TO_INTERNAL: i64 = 62_135_596_800;

/// The local time zone, as decoded timestamps point to it, of a controller without
/// `/etc/localtime` or with `TZ` empty (set up by then: the controller has logged).
const LOCAL_UTC: &str = "(*time.Location){name:(string)UTC zone:([]time.zone)<nil> \
    tx:([]time.zoneTrans)<nil> extend:(string) cacheStart:(int64)0 cacheEnd:(int64)0 \
    cacheZone:(*time.zone)<nil>}";

enum Def {
    Struct(Vec<Field>),
    Named(&'static str),
}

struct Field {
    go: &'static str,
    /// `None` for a struct embedded inline: its fields are the parent's JSON object's.
    json: Option<&'static str>,
    ty: &'static str,
}

fn defs() -> &'static HashMap<&'static str, Def> {
    static DEFS: OnceLock<HashMap<&'static str, Def>> = OnceLock::new();
    DEFS.get_or_init(|| {
        let mut defs = HashMap::new();
        for line in GO_TYPES.lines() {
            let mut words = line.split(' ');
            let (Some(kind), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            let def = if kind == "N" {
                Def::Named(words.next().unwrap_or("string"))
            } else {
                Def::Struct(
                    words
                        .filter_map(|w| {
                            let mut parts = w.splitn(3, ':');
                            let (go, json, ty) = (parts.next()?, parts.next()?, parts.next()?);
                            Some(Field {
                                go,
                                json: (json != "-").then_some(json),
                                ty,
                            })
                        })
                        .collect(),
                )
            };
            defs.insert(name, def);
        }
        defs
    })
}

/// The dump of a value of Go type `ty` (a name from `go_types.txt`) held as JSON.
pub fn dump(ty: &str, json: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, ty, Some(json), true);
    out
}

/// One value: its type in parentheses when `typed` (struct fields and the top level; not slice
/// elements or map entries), then its contents.
fn write_value(out: &mut String, ty: &str, v: Option<&Value>, typed: bool) {
    let v = v.filter(|v| !v.is_null());
    if let Some(elem) = ty.strip_prefix('*') {
        match (v, typed) {
            (None, true) => {
                let _ = write!(out, "({ty})<nil>");
            }
            (None, false) => out.push_str("<nil>"),
            (Some(v), _) => {
                if typed {
                    let _ = write!(out, "({ty})");
                } else {
                    out.push_str("<*>");
                }
                write_body(out, elem, Some(v));
            }
        }
        return;
    }
    if typed {
        let _ = write!(out, "({ty})");
    }
    write_body(out, ty, v);
}

fn write_body(out: &mut String, ty: &str, v: Option<&Value>) {
    if let Some(elem) = ty.strip_prefix("[]") {
        match v.and_then(Value::as_array).filter(|a| !a.is_empty()) {
            None => out.push_str("<nil>"),
            Some(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    write_value(out, elem, Some(item), false);
                }
                out.push(']');
            }
        }
        return;
    }
    if let Some((_, elem)) = ty.strip_prefix("map[").and_then(|t| t.split_once(']')) {
        match v.and_then(Value::as_object).filter(|m| !m.is_empty()) {
            None => out.push_str("<nil>"),
            Some(map) => {
                // Go sorts string keys bytewise, as `str`'s ordering does.
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push_str("map[");
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    write_value(out, elem, map.get(k), false);
                }
                out.push(']');
            }
        }
        return;
    }
    match ty {
        "string" => out.push_str(v.and_then(Value::as_str).unwrap_or("")),
        "bool" => out.push_str(if v.and_then(Value::as_bool).unwrap_or(false) {
            "true"
        } else {
            "false"
        }),
        "int" | "int32" | "int64" | "uint8" => match v.and_then(Value::as_number) {
            Some(n) => {
                let _ = write!(out, "{n}");
            }
            None => out.push('0'),
        },
        "resource.Quantity" => quantity::write(out, v.and_then(Value::as_str)),
        "intstr.IntOrString" => {
            let (kind, int, string) = match v {
                Some(Value::String(s)) => (1, 0, s.as_str()),
                Some(Value::Number(n)) => (0, n.as_i64().unwrap_or(0), ""),
                _ => (0, 0, ""),
            };
            let _ = write!(
                out,
                "{{Type:(intstr.Type){kind} IntVal:(int32){int} StrVal:(string){string}}}"
            );
        }
        "v1.Time" => write_time(out, v.and_then(Value::as_str)),
        "v1.FieldsV1" => {
            // Go keeps the bytes it was sent; these are serde_json's, equal only for compact
            // objects with sorted keys. Pod templates carry no managed fields.
            let raw = v.map(Value::to_string).unwrap_or_default();
            out.push_str("{Raw:([]uint8)");
            write_body(out, "[]uint8", Some(&Value::from(raw.into_bytes())));
            out.push('}');
        }
        _ => match defs().get(ty) {
            Some(Def::Named(underlying)) => write_body(out, underlying, v),
            Some(Def::Struct(fields)) => {
                out.push('{');
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let fv = match f.json {
                        None => v,
                        Some(name) => v.and_then(|v| v.get(name)),
                    };
                    let _ = write!(out, "{}:", f.go);
                    write_value(out, f.ty, fv, true);
                }
                out.push('}');
            }
            None => debug_assert!(false, "Go type {ty} is not in go_types.txt"),
        },
    }
}

/// A `metav1.Time` as the protobuf decoding leaves it: second and nanosecond in the local zone,
/// and the zero time for the Unix epoch itself (its message is empty).
fn write_time(out: &mut String, v: Option<&str>) {
    let ts = v.and_then(|s| s.parse::<k8s_openapi::jiff::Timestamp>().ok());
    let (secs, nanos) = ts.map_or((0, 0), |t| (t.as_second(), t.subsec_nanosecond()));
    out.push_str("{Time:(time.Time){");
    if secs == 0 && nanos == 0 {
        out.push_str("wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>");
    } else {
        // Without a monotonic reading Go keeps the nanoseconds in `wall` and the seconds since
        // its epoch in `ext`.
        let (secs, nanos) = if nanos < 0 {
            (secs - 1, nanos + 1_000_000_000)
        } else {
            (secs, nanos)
        };
        let _ = write!(
            out,
            "wall:(uint64){nanos} ext:(int64){} loc:{LOCAL_UTC}",
            secs + UNIX_TO_INTERNAL
        );
    }
    out.push_str("}}");
}
