//! Decoding a pod's metadata into the `ObjectMeta` a cached pod keeps.

use std::{collections::BTreeMap, fmt};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, Visitor},
};

/// The pod annotations some controller reads; the others (often the largest part of a pod's metadata:
/// `kubectl.kubernetes.io/last-applied-configuration`, tooling's notes) are dropped while decoding.
/// Each controller crate has a test that the annotations it reads are listed here.
pub const KEPT_ANNOTATIONS: &[&str] = &[
    // ReplicaSet scale-down ranking (upstream `controller.kubernetes.io/pod-deletion-cost`).
    "controller.kubernetes.io/pod-deletion-cost",
    // Job: the index of an Indexed Job's pod and its per-index failure counts.
    "batch.kubernetes.io/job-completion-index",
    "batch.kubernetes.io/job-index-failure-count",
    "batch.kubernetes.io/job-index-ignored-failure-count",
];

/// The metadata fields a controller reads; everything else (managedFields above all) is skipped by
/// the parser without being built.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "kept_annotations")]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "super::shrunk")]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default, deserialize_with = "super::shrunk")]
    finalizers: Option<Vec<String>>,
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let w = Wire::deserialize(d)?;
    Ok(ObjectMeta {
        name: w.name,
        namespace: w.namespace,
        uid: w.uid,
        resource_version: w.resource_version,
        generation: w.generation,
        creation_timestamp: w.creation_timestamp,
        deletion_timestamp: w.deletion_timestamp,
        deletion_grace_period_seconds: w.deletion_grace_period_seconds,
        labels: w.labels,
        annotations: w.annotations,
        owner_references: w.owner_references,
        finalizers: w.finalizers,
        ..ObjectMeta::default()
    })
}

/// The annotations in [`KEPT_ANNOTATIONS`]; `None` when the pod has none of them.
fn kept_annotations<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct Kept;
    impl<'de> Visitor<'de> for Kept {
        type Value = Option<BTreeMap<String, String>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map of annotations or null")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut kept = BTreeMap::new();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match KEPT_ANNOTATIONS.iter().find(|k| **k == key) {
                    Some(k) => {
                        kept.insert((*k).to_owned(), map.next_value()?);
                    }
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok((!kept.is_empty()).then_some(kept))
        }
    }
    d.deserialize_option(Kept)
}
