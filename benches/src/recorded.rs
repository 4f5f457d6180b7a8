//! One recorded pod in both encodings the API server speaks, made unique per index the same way in
//! each, so that a bench can put the JSON path and the protobuf path (KCM's default content type, and
//! kcm-rs's since `--kube-api-content-type`) side by side on the same object.
//!
//! The pod is item [`WEB_POD`] of `benches/fixtures/pods.json` and `pods.pb`: the same list taken at one
//! resourceVersion from the local control plane, managedFields included. It is a Deployment's pod
//! that KWOK runs: one container, a sidecar and a plain init container, five conditions, three
//! container statuses. Editing protobuf needs no schema here: only length-delimited fields are
//! replaced, and every other byte is copied as recorded.

use std::sync::LazyLock;

use bytes::Bytes;
use informer::protobuf::wire;
use prost::{
    Message as _,
    encoding::{WireType, decode_key, decode_varint, encode_key, encode_varint},
};
use serde_json::Value;

/// The recorded list as JSON.
pub const PODS_JSON: &str = include_str!("../fixtures/pods.json");
/// The same list as protobuf: magic, then a `runtime.Unknown` holding the `PodList`.
const PODS_PB: &[u8] = include_bytes!("../fixtures/pods.pb");
/// `web-78bb96cb8d-6r2ff`, the first of the Deployment's three pods in the list.
const WEB_POD: usize = 8;

/// The web pod's JSON, parsed once for every copy.
static WEB_JSON: LazyLock<Value> = LazyLock::new(|| {
    let list: Value = serde_json::from_str(PODS_JSON).expect("fixture is valid JSON");
    list["items"][WEB_POD].clone()
});

/// The web pod's `Pod` message, cut out of the list once for every copy.
static WEB_PB: LazyLock<Bytes> = LazyLock::new(|| {
    let unknown = wire::Unknown::decode(&PODS_PB[4..]).expect("fixture is runtime.Unknown");
    let list = wire::List::decode(unknown.raw).expect("fixture holds a PodList");
    list.items[WEB_POD].clone()
});

/// Field numbers from `k8s.io/api/core/v1/generated.proto` and apimachinery's `meta/v1`.
const POD_METADATA: u32 = 1;
const META_NAME: u32 = 1;
const META_NAMESPACE: u32 = 3;
const META_UID: u32 = 5;
const META_RESOURCE_VERSION: u32 = 6;
const META_OWNER_REFERENCES: u32 = 13;
const OWNER_UID: u32 = 4;

/// What makes copy `i` distinct: the same values in both encodings.
struct Identity {
    name: String,
    namespace: String,
    uid: String,
    resource_version: String,
    owner_uid: String,
}

impl Identity {
    fn of(i: usize, namespaces: usize, owners: usize, resource_version: usize) -> Self {
        Identity {
            name: format!("web-78bb96cb8d-{i:06}"),
            namespace: format!("ns-{}", i % namespaces.max(1)),
            uid: format!("00000000-0000-0000-0000-{i:012}"),
            resource_version: resource_version.to_string(),
            owner_uid: format!("owner-{}", i % owners.max(1)),
        }
    }
}

/// The recorded web pod as JSON, copy `i` of it (spread over `namespaces` namespaces, owned by one of
/// `owners` ReplicaSets) at `resource_version`.
pub fn web_pod_json(i: usize, namespaces: usize, owners: usize, resource_version: usize) -> Value {
    let id = Identity::of(i, namespaces, owners, resource_version);
    let mut v = WEB_JSON.clone();
    let meta = &mut v["metadata"];
    meta["name"] = id.name.into();
    meta["namespace"] = id.namespace.into();
    meta["uid"] = id.uid.into();
    meta["resourceVersion"] = id.resource_version.into();
    meta["ownerReferences"][0]["uid"] = id.owner_uid.into();
    v
}

/// The same copy as the `Pod` message a `runtime.Unknown` carries (no magic, no envelope).
pub fn web_pod_protobuf(i: usize, namespaces: usize, owners: usize, resource_version: usize) -> Bytes {
    let id = Identity::of(i, namespaces, owners, resource_version);
    let mut first_owner = true;
    Bytes::from(replace(&WEB_PB, |field, meta| {
        (field == POD_METADATA).then(|| {
            replace(meta, |field, value| match field {
                META_NAME => Some(id.name.clone().into_bytes()),
                META_NAMESPACE => Some(id.namespace.clone().into_bytes()),
                META_UID => Some(id.uid.clone().into_bytes()),
                META_RESOURCE_VERSION => Some(id.resource_version.clone().into_bytes()),
                META_OWNER_REFERENCES if std::mem::take(&mut first_owner) => Some(replace(value, |f, _| {
                    (f == OWNER_UID).then(|| id.owner_uid.clone().into_bytes())
                })),
                _ => None,
            })
        })
    }))
}

/// `message` with the payload of each length-delimited field for which `edit` answers replaced by
/// that answer; every other field is copied byte for byte, in order.
fn replace(message: &[u8], mut edit: impl FnMut(u32, &[u8]) -> Option<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 64);
    let mut rest = message;
    while !rest.is_empty() {
        let start = rest;
        let (field, wire_type) = decode_key(&mut rest).expect("a field key");
        let payload = match wire_type {
            WireType::Varint => {
                decode_varint(&mut rest).expect("a varint");
                None
            }
            WireType::SixtyFourBit => Some(8),
            WireType::ThirtyTwoBit => Some(4),
            WireType::LengthDelimited => {
                let len = usize::try_from(decode_varint(&mut rest).expect("a length")).expect("fits");
                let value = &rest[..len];
                if let Some(new) = edit(field, value) {
                    encode_key(field, WireType::LengthDelimited, &mut out);
                    encode_varint(new.len() as u64, &mut out);
                    out.extend_from_slice(&new);
                    rest = &rest[len..];
                    continue;
                }
                Some(len)
            }
            WireType::StartGroup | WireType::EndGroup => panic!("Kubernetes messages use no groups"),
        };
        rest = &rest[payload.unwrap_or(0)..];
        out.extend_from_slice(&start[..start.len() - rest.len()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use controller::CompactPod;
    use informer::protobuf::ProtobufObject as _;

    use super::*;

    /// Both encodings of a copy decode to the same cached pod, with the copy's identity.
    #[test]
    fn a_copy_is_the_same_pod_in_both_encodings() {
        for i in [0, 7, 12_345] {
            let from_json: CompactPod =
                serde_json::from_value(web_pod_json(i, 10, 100, 42)).expect("decodes");
            let from_pb = CompactPod::decode_protobuf(web_pod_protobuf(i, 10, 100, 42)).expect("decodes");
            assert_eq!(from_json, from_pb);
            let meta = &from_pb.metadata;
            assert_eq!(
                meta.name.as_deref(),
                Some(format!("web-78bb96cb8d-{i:06}").as_str())
            );
            assert_eq!(meta.namespace.as_deref(), Some(format!("ns-{}", i % 10).as_str()));
            assert_eq!(meta.resource_version.as_deref(), Some("42"));
            let owner = &meta.owner_references.as_ref().expect("owned")[0];
            assert_eq!(owner.uid, format!("owner-{}", i % 100));
            assert_eq!(owner.kind, "ReplicaSet");
        }
    }
}
