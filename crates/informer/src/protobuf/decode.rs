//! From protobuf bytes to what the reflector takes: kube's `ObjectList`, `WatchEvent` and `Status`,
//! the same values the JSON path yields, so the reflector cannot tell the two apart.

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ShardInfo;
use kube::core::{
    ListMeta as KubeListMeta, ObjectList, TypeMeta,
    watch::{Bookmark, BookmarkMeta},
};
use prost::Message as _;

use super::{
    ProtobufObject,
    wire::{self, WireError},
};

/// A list answer (`...List` in its envelope).
pub fn list<K: ProtobufObject>(body: &Bytes) -> Result<ObjectList<K>, WireError> {
    let unknown = wire::unwrap(body)?;
    if !unknown.kind().ends_with("List") {
        return Err(WireError::Kind {
            expected: "list",
            got: unknown.kind().to_owned(),
        });
    }
    let types = types(&unknown);
    let list = wire::List::decode(unknown.raw)?;
    let meta = list.metadata.unwrap_or_default();
    let items = list
        .items
        .into_iter()
        .map(K::decode_protobuf)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ObjectList {
        types,
        metadata: KubeListMeta {
            continue_: non_empty(meta.r#continue),
            remaining_item_count: meta.remaining_item_count,
            resource_version: non_empty(meta.resource_version),
            self_link: None,
            shard_info: meta.shard_info.map(|s| ShardInfo { selector: s.selector }),
        },
        items,
    })
}

/// One frame of a watch stream.
pub fn event<K: ProtobufObject>(frame: Bytes) -> Result<kube::core::WatchEvent<K>, WireError> {
    use kube::core::WatchEvent as E;
    let event = wire::WatchEvent::decode(frame)?;
    let raw = event.object.ok_or(WireError::NoObject)?.raw;
    let object = wire::unwrap(&raw)?;
    Ok(match event.r#type.as_str() {
        "ADDED" => E::Added(K::decode_protobuf(object.raw)?),
        "MODIFIED" => E::Modified(K::decode_protobuf(object.raw)?),
        "DELETED" => E::Deleted(K::decode_protobuf(object.raw)?),
        "BOOKMARK" => {
            let types = types(&object);
            let meta = wire::ObjectHead::decode(object.raw)?.metadata.unwrap_or_default();
            E::Bookmark(Bookmark {
                types,
                metadata: BookmarkMeta {
                    resource_version: meta.resource_version,
                    annotations: meta.annotations,
                },
            })
        }
        "ERROR" => E::Error(Box::new(status_of(&object)?)),
        other => return Err(WireError::EventType(other.to_owned())),
    })
}

/// An error answer's `Status`.
pub fn status(body: &Bytes) -> Result<kube::core::Status, WireError> {
    status_of(&wire::unwrap(body)?)
}

fn status_of(object: &wire::Unknown) -> Result<kube::core::Status, WireError> {
    if object.kind() != "Status" {
        return Err(WireError::Kind {
            expected: "Status",
            got: object.kind().to_owned(),
        });
    }
    Ok(wire::Status::decode(object.raw.clone())?.into())
}

fn types(unknown: &wire::Unknown) -> TypeMeta {
    let t = unknown.type_meta.clone().unwrap_or_default();
    TypeMeta {
        api_version: t.api_version,
        kind: t.kind,
    }
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}
