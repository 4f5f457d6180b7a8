//! The pod as the workload controllers cache it: a typed projection of `core/v1` Pod holding only what
//! the ReplicaSet, Deployment and Job controllers and the pod garbage collector read.
//!
//! Why a type of our own rather than a transform: `k8s-openapi`'s `Pod` keeps every optional field
//! inline (2.4 KiB for the struct, 2.1 KiB per `Container`, 3.2 KiB per `Volume`, before any content),
//! so even a pod stripped to the fields we read costs several KiB (the `pod_memory` bench), and decoding it first allocates
//! everything the API sent. [`Pod`] is decoded straight from the watch event's JSON: fields it
//! does not hold are skipped by the parser without being allocated (managedFields, the containers'
//! specs, volumes, ...), strings drawn from a small set of API values (phase, condition type and
//! status, restart policy) point at static strings, and only the annotations some controller reads
//! are kept ([`KEPT_ANNOTATIONS`]). See `benches/results/` for the bytes per pod and the decoding rate.
//! It decodes as well from the API server's protobuf (`protobuf`, KCM's default content type), into
//! the same values as from JSON, every string and list at its exact length as from JSON, so that a
//! pod costs the same bytes whichever way it came (`protobuf_tests::recorded_pods_decode_as_their_json`;
//! `cargo bench --bench pod_memory` measures both on one recorded pod).
//!
//! The field names and shapes are those of `k8s-openapi`'s types, so controller code reads a cached
//! pod as it would read the full object; a field the projection drops is simply not there, and code
//! that reads one does not compile. Writes (creating a pod from a template, patches) still use the
//! full types. `metadata` is `k8s-openapi`'s `ObjectMeta`, so the pod is a `kube::Resource` and the
//! informer, claims and events take it as any other kind.

mod intern;
mod meta;
mod protobuf;
#[cfg(test)]
mod protobuf_tests;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use k8s_openapi::{
    NamespaceResourceScope,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
};
use serde::{Deserialize, Serialize};

pub use intern::intern;
pub use meta::KEPT_ANNOTATIONS;

/// An API string from a small fixed set (a phase, a condition type or status, a restart policy):
/// the known values borrow a static string, anything else is owned.
pub type ApiStr = Cow<'static, str>;

/// A cached pod (exported as `controller::CompactPod`): see the module docs for what it holds and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    #[serde(default, deserialize_with = "meta::deserialize")]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

/// `spec`: where the pod runs and, for the sidecar restart count of the deletion ranking, which init
/// containers restart always.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(
        default,
        deserialize_with = "intern::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub restart_policy: Option<ApiStr>,
    #[serde(default, deserialize_with = "shrunk", skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<Container>>,
}

/// An init container's name and restart policy (`Always` makes it a sidecar).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    #[serde(
        default,
        deserialize_with = "intern::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub restart_policy: Option<ApiStr>,
}

/// `status`: the phase, the conditions, and the containers' readiness, restarts and terminations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(
        default,
        deserialize_with = "intern::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub phase: Option<ApiStr>,
    /// Why the pod is in its phase (`Evicted`: the pod garbage collector deletes evicted pods
    /// first).
    #[serde(
        default,
        deserialize_with = "intern::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<ApiStr>,
    #[serde(default, deserialize_with = "shrunk", skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodCondition>>,
    #[serde(default, deserialize_with = "shrunk", skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Vec<ContainerStatus>>,
    #[serde(default, deserialize_with = "shrunk", skip_serializing_if = "Option::is_none")]
    pub init_container_statuses: Option<Vec<ContainerStatus>>,
}

/// A pod condition without its reason and message, which no controller reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodCondition {
    #[serde(rename = "type", deserialize_with = "intern::req")]
    pub type_: ApiStr,
    #[serde(deserialize_with = "intern::req")]
    pub status: ApiStr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatus {
    pub name: String,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub restart_count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
}

/// Only the terminated state is read (exit codes for the pod failure policy, finish times for the
/// Job's backoff); a running or waiting container is one whose `terminated` is `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminated: Option<ContainerStateTerminated>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStateTerminated {
    #[serde(default)]
    pub exit_code: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
}

/// A list decoded at its exact length: serde grows a vector by doubling, and a pod's five conditions
/// or single owner reference would otherwise hold room for eight or four, a third of the pod's heap.
pub(crate) fn shrunk<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut v = Option::<Vec<T>>::deserialize(d)?;
    if let Some(v) = &mut v {
        v.shrink_to_fit();
    }
    Ok(v)
}

impl kube::Resource for Pod {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Pod".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "pods".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The projection of a full pod: the same as decoding the pod's JSON from a watch, so tests that
/// build full pods see what the informer would cache.
impl From<&k8s_openapi::api::core::v1::Pod> for Pod {
    fn from(pod: &k8s_openapi::api::core::v1::Pod) -> Self {
        let json = serde_json::to_value(pod).expect("a Pod serializes");
        serde_json::from_value(json).expect("a serialized Pod decodes as a Pod")
    }
}

impl From<k8s_openapi::api::core::v1::Pod> for Pod {
    fn from(pod: k8s_openapi::api::core::v1::Pod) -> Self {
        Self::from(&pod)
    }
}
