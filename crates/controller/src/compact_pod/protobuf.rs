//! Decoding a cached pod straight from the API server's protobuf, as KCM receives pods.
//!
//! The messages below declare only the fields [`Pod`] holds, with the tags of `k8s.io/api/core/v1`
//! and `apimachinery/pkg/apis/meta/v1` `generated.proto`; prost steps over every other field by its
//! length prefix (managedFields, the containers' specs, volumes), so what a pod costs to decode no
//! longer grows with what it carries but does not matter here.
//!
//! The result is the pod its JSON would decode to, which `protobuf_tests` checks on recorded pods.
//! Two rules make that hold. Go writes a non-pointer string or list even when empty, where its JSON
//! omits it (`omitempty`): an empty one is `None` here. A zero `metav1.Time` is an empty message
//! (JSON `null`); any other keeps only its seconds, as apimachinery's own decoder does (`time_proto.go`)
//! and as JSON's RFC 3339 text does.
//!
//! Every string is declared as bytes and copied out at its exact length, as serde copies a JSON
//! string: prost's own strings start at 8 bytes, which cost a pod's short names and values (`Job`,
//! `app`, a container `c`) about 40 bytes more than the same pod from JSON.

use bytes::Bytes;
use informer::protobuf::WireError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use prost::Message as _;

use super::{ApiStr, Container, ContainerState, ContainerStateTerminated, ContainerStatus, KEPT_ANNOTATIONS};

impl informer::protobuf::ProtobufObject for super::Pod {
    fn decode_protobuf(raw: Bytes) -> Result<Self, WireError> {
        let pod = WirePod::decode(raw)?;
        Ok(super::Pod {
            metadata: pod
                .metadata
                .map(WireMeta::into_meta)
                .transpose()?
                .unwrap_or_default(),
            spec: pod.spec.map(WireSpec::into_spec).transpose()?,
            status: pod.status.map(WireStatus::into_status).transpose()?,
        })
    }
}

#[derive(Clone, PartialEq, prost::Message)]
struct WirePod {
    #[prost(message, optional, tag = "1")]
    metadata: Option<WireMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<WireSpec>,
    #[prost(message, optional, tag = "3")]
    status: Option<WireStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireMeta {
    #[prost(bytes = "bytes", tag = "1")]
    name: Bytes,
    #[prost(bytes = "bytes", tag = "3")]
    namespace: Bytes,
    #[prost(bytes = "bytes", tag = "5")]
    uid: Bytes,
    #[prost(bytes = "bytes", tag = "6")]
    resource_version: Bytes,
    #[prost(int64, optional, tag = "7")]
    generation: Option<i64>,
    #[prost(message, optional, tag = "8")]
    creation_timestamp: Option<WireTime>,
    #[prost(message, optional, tag = "9")]
    deletion_timestamp: Option<WireTime>,
    #[prost(int64, optional, tag = "10")]
    deletion_grace_period_seconds: Option<i64>,
    #[prost(message, repeated, tag = "11")]
    labels: Vec<WireEntry>,
    /// Map entries read as bytes, so that annotations nobody reads are never copied into strings.
    #[prost(message, repeated, tag = "12")]
    annotations: Vec<WireEntry>,
    #[prost(message, repeated, tag = "13")]
    owner_references: Vec<WireOwnerReference>,
    #[prost(bytes = "bytes", repeated, tag = "14")]
    finalizers: Vec<Bytes>,
}

/// A `map<string, string>` entry on the wire.
#[derive(Clone, PartialEq, prost::Message)]
struct WireEntry {
    #[prost(bytes = "bytes", tag = "1")]
    key: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    value: Bytes,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireOwnerReference {
    #[prost(bytes = "bytes", tag = "1")]
    kind: Bytes,
    #[prost(bytes = "bytes", tag = "3")]
    name: Bytes,
    #[prost(bytes = "bytes", tag = "4")]
    uid: Bytes,
    #[prost(bytes = "bytes", tag = "5")]
    api_version: Bytes,
    #[prost(bool, optional, tag = "6")]
    controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    block_owner_deletion: Option<bool>,
}

/// `meta/v1.Time`: both fields optional so that an empty message (the zero time) is told apart from
/// the epoch.
#[derive(Clone, PartialEq, prost::Message)]
struct WireTime {
    #[prost(int64, optional, tag = "1")]
    seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    nanos: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireSpec {
    #[prost(bytes = "bytes", tag = "3")]
    restart_policy: Bytes,
    #[prost(bytes = "bytes", tag = "10")]
    node_name: Bytes,
    #[prost(message, repeated, tag = "20")]
    init_containers: Vec<WireContainer>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireContainer {
    #[prost(bytes = "bytes", tag = "1")]
    name: Bytes,
    #[prost(bytes = "bytes", optional, tag = "24")]
    restart_policy: Option<Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireStatus {
    #[prost(bytes = "bytes", tag = "1")]
    phase: Bytes,
    #[prost(message, repeated, tag = "2")]
    conditions: Vec<WireCondition>,
    #[prost(bytes = "bytes", tag = "4")]
    reason: Bytes,
    #[prost(message, repeated, tag = "8")]
    container_statuses: Vec<WireContainerStatus>,
    #[prost(message, repeated, tag = "10")]
    init_container_statuses: Vec<WireContainerStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireCondition {
    #[prost(bytes = "bytes", tag = "1")]
    r#type: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    status: Bytes,
    #[prost(message, optional, tag = "4")]
    last_transition_time: Option<WireTime>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireContainerStatus {
    #[prost(bytes = "bytes", tag = "1")]
    name: Bytes,
    #[prost(message, optional, tag = "2")]
    state: Option<WireContainerState>,
    #[prost(bool, tag = "4")]
    ready: bool,
    #[prost(int32, tag = "5")]
    restart_count: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireContainerState {
    #[prost(message, optional, tag = "3")]
    terminated: Option<WireTerminated>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireTerminated {
    #[prost(int32, tag = "1")]
    exit_code: i32,
    #[prost(message, optional, tag = "6")]
    finished_at: Option<WireTime>,
}

impl WireMeta {
    fn into_meta(self) -> Result<ObjectMeta, WireError> {
        let mut annotations = std::collections::BTreeMap::new();
        for entry in self.annotations {
            if let Some(key) = KEPT_ANNOTATIONS.iter().find(|k| k.as_bytes() == entry.key) {
                annotations.insert((*key).to_owned(), text(&entry.value)?);
            }
        }
        let labels = self
            .labels
            .iter()
            .map(|e| Ok((text(&e.key)?, text(&e.value)?)))
            .collect::<Result<std::collections::BTreeMap<_, _>, WireError>>()?;
        Ok(ObjectMeta {
            name: non_empty(&self.name)?,
            namespace: non_empty(&self.namespace)?,
            uid: non_empty(&self.uid)?,
            resource_version: non_empty(&self.resource_version)?,
            generation: self.generation,
            creation_timestamp: self.creation_timestamp.and_then(WireTime::into_time),
            deletion_timestamp: self.deletion_timestamp.and_then(WireTime::into_time),
            deletion_grace_period_seconds: self.deletion_grace_period_seconds,
            labels: (!labels.is_empty()).then_some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            owner_references: non_empty_list(self.owner_references, |o| {
                Ok(OwnerReference {
                    api_version: text(&o.api_version)?,
                    kind: text(&o.kind)?,
                    name: text(&o.name)?,
                    uid: text(&o.uid)?,
                    controller: o.controller,
                    block_owner_deletion: o.block_owner_deletion,
                })
            })?,
            finalizers: non_empty_list(self.finalizers, |f| text(&f))?,
            ..ObjectMeta::default()
        })
    }
}

impl WireTime {
    fn into_time(self) -> Option<Time> {
        if self.seconds.is_none() && self.nanos.is_none() {
            return None;
        }
        k8s_openapi::jiff::Timestamp::from_second(self.seconds.unwrap_or_default())
            .ok()
            .map(Time)
    }
}

impl WireSpec {
    fn into_spec(self) -> Result<super::PodSpec, WireError> {
        Ok(super::PodSpec {
            node_name: non_empty(&self.node_name)?,
            restart_policy: interned_non_empty(&self.restart_policy)?,
            init_containers: non_empty_list(self.init_containers, |c| {
                Ok(Container {
                    name: text(&c.name)?,
                    restart_policy: c.restart_policy.as_deref().map(interned).transpose()?,
                })
            })?,
        })
    }
}

impl WireStatus {
    fn into_status(self) -> Result<super::PodStatus, WireError> {
        Ok(super::PodStatus {
            phase: interned_non_empty(&self.phase)?,
            reason: interned_non_empty(&self.reason)?,
            conditions: non_empty_list(self.conditions, |c| {
                Ok(super::PodCondition {
                    type_: interned(&c.r#type)?,
                    status: interned(&c.status)?,
                    last_transition_time: c.last_transition_time.and_then(WireTime::into_time),
                })
            })?,
            container_statuses: non_empty_list(self.container_statuses, container_status)?,
            init_container_statuses: non_empty_list(self.init_container_statuses, container_status)?,
        })
    }
}

fn container_status(s: WireContainerStatus) -> Result<ContainerStatus, WireError> {
    Ok(ContainerStatus {
        name: text(&s.name)?,
        ready: s.ready,
        restart_count: s.restart_count,
        state: s.state.map(|st| ContainerState {
            terminated: st.terminated.map(|t| ContainerStateTerminated {
                exit_code: t.exit_code,
                finished_at: t.finished_at.and_then(WireTime::into_time),
            }),
        }),
    })
}

/// The converted list, `None` when empty, holding no spare room as the JSON path's lists (`shrunk`):
/// prost grows a repeated field by doubling, and collecting a `Vec` into another may reuse its
/// allocation, so five conditions would otherwise hold room for eight.
fn non_empty_list<W, T>(
    items: Vec<W>,
    convert: impl FnMut(W) -> Result<T, WireError>,
) -> Result<Option<Vec<T>>, WireError> {
    let mut items = items.into_iter().map(convert).collect::<Result<Vec<T>, _>>()?;
    items.shrink_to_fit();
    Ok((!items.is_empty()).then_some(items))
}

fn non_empty(b: &[u8]) -> Result<Option<String>, WireError> {
    if b.is_empty() { Ok(None) } else { text(b).map(Some) }
}

/// An owned copy at its exact length.
fn text(b: &[u8]) -> Result<String, WireError> {
    utf8(b).map(str::to_owned)
}

fn utf8(b: &[u8]) -> Result<&str, WireError> {
    std::str::from_utf8(b).map_err(|_| WireError::NotUtf8)
}

fn interned(b: &[u8]) -> Result<ApiStr, WireError> {
    utf8(b).map(super::intern)
}

fn interned_non_empty(b: &[u8]) -> Result<Option<ApiStr>, WireError> {
    if b.is_empty() {
        Ok(None)
    } else {
        interned(b).map(Some)
    }
}
