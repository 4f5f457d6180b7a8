//! Decoding of API strings from a small fixed set without allocating.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

use super::ApiStr;

/// The values a cached pod's phase, condition types and statuses, and restart policies take in
/// practice (core/v1 `PodPhase`, `PodConditionType`, `ConditionStatus`, `RestartPolicy`, and the
/// conditions the kubelet, scheduler and disruption controller set). Others are kept owned.
const KNOWN: &[&str] = &[
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "Unknown",
    "True",
    "False",
    "Ready",
    "ContainersReady",
    "Initialized",
    "PodScheduled",
    "PodReadyToStartContainers",
    "DisruptionTarget",
    "PodResizePending",
    "PodResizeInProgress",
    // Status reasons.
    "Evicted",
    "Always",
    "OnFailure",
    "Never",
];

/// `s` as a cached pod holds it: a static string when it is one of the known values.
pub fn intern(s: &str) -> ApiStr {
    match KNOWN.iter().find(|k| **k == s) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(s.to_owned()),
    }
}

/// A string borrowed from the input where the parser can (no escapes), owned otherwise; either way
/// it is looked up without a copy.
struct Str<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

pub(super) fn req<'de, D: Deserializer<'de>>(d: D) -> Result<ApiStr, D::Error> {
    Str::deserialize(d).map(|s| intern(&s.0))
}

pub(super) fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ApiStr>, D::Error> {
    Option::<Str<'_>>::deserialize(d).map(|s| s.map(|s| intern(&s.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_static_and_others_owned() {
        assert!(matches!(intern("Running"), Cow::Borrowed("Running")));
        assert!(matches!(intern("DisruptionTarget"), Cow::Borrowed(_)));
        assert_eq!(intern("CustomGate"), Cow::<str>::Owned("CustomGate".into()));
    }
}
