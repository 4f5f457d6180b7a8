//! The envelope messages of the API server's protobuf encoding (apimachinery `runtime.Unknown`,
//! `meta/v1` `WatchEvent`, `ListMeta`, `Status`), declared with only the fields a reflector reads.
//! Tags are those of apimachinery's `generated.proto`; prost skips every field not declared here.

use bytes::Bytes;
use prost::Message as _;

/// Every object the server encodes as protobuf, outside a watch frame, starts with these bytes
/// (apimachinery `protoEncodingPrefix`), followed by a `runtime.Unknown`.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// `runtime.Unknown`: the kind of the object and its own encoding.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Unknown {
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    #[prost(bytes = "bytes", tag = "2")]
    pub raw: Bytes,
    /// Set when `raw` is compressed; the API server never sets it today, and a decoder that met it
    /// would have to refuse rather than misread the bytes.
    #[prost(string, tag = "3")]
    pub content_encoding: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeMeta {
    #[prost(string, tag = "1")]
    pub api_version: String,
    #[prost(string, tag = "2")]
    pub kind: String,
}

/// `meta/v1.WatchEvent`, one per frame of a watch stream; `object` holds a `MAGIC`-prefixed object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchEvent {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(message, optional, tag = "2")]
    pub object: Option<RawExtension>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RawExtension {
    #[prost(bytes = "bytes", tag = "1")]
    pub raw: Bytes,
}

/// Any `...List`: the items are length-delimited messages, read here as bytes (the same wire type)
/// and decoded one by one by the kind's own decoder.
#[derive(Clone, PartialEq, prost::Message)]
pub struct List {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ListMeta>,
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub items: Vec<Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ListMeta {
    #[prost(string, tag = "2")]
    pub resource_version: String,
    #[prost(string, tag = "3")]
    pub r#continue: String,
    #[prost(int64, optional, tag = "4")]
    pub remaining_item_count: Option<i64>,
    /// Set when a shard selector filtered the list (1.36 `ShardedListAndWatch`, alpha): the sharded
    /// lister-watcher reads from it whether the server filters (`crate::sharded`).
    #[prost(message, optional, tag = "5")]
    pub shard_info: Option<ShardInfo>,
}

/// The shard selector the server applied, echoed back (`meta/v1` `ShardInfo`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ShardInfo {
    #[prost(string, tag = "1")]
    pub selector: String,
}

/// The metadata of any object (always field 1), as much as a bookmark carries.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ObjectHead {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<MetaHead>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetaHead {
    #[prost(string, tag = "6")]
    pub resource_version: String,
    #[prost(btree_map = "string, string", tag = "12")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// `meta/v1.Status`: what an error answer or a watch's ERROR event carries.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub status: String,
    #[prost(string, tag = "3")]
    pub message: String,
    #[prost(string, tag = "4")]
    pub reason: String,
    #[prost(message, optional, tag = "5")]
    pub details: Option<StatusDetails>,
    #[prost(int32, tag = "6")]
    pub code: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusDetails {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub group: String,
    #[prost(string, tag = "3")]
    pub kind: String,
    #[prost(int32, tag = "5")]
    pub retry_after_seconds: i32,
    #[prost(string, tag = "6")]
    pub uid: String,
}

/// Why bytes the server sent could not be read as protobuf.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("not a protobuf-encoded object (no k8s magic prefix)")]
    NoMagic,
    #[error("object encoded with {0:?}, which this client does not decode")]
    ContentEncoding(String),
    #[error("expected a {expected}, got a {got}")]
    Kind { expected: &'static str, got: String },
    #[error("watch event of unknown type {0:?}")]
    EventType(String),
    #[error("watch event without an object")]
    NoObject,
    #[error("a string that is not UTF-8")]
    NotUtf8,
    #[error(transparent)]
    Decode(#[from] prost::DecodeError),
}

/// Opens a `MAGIC`-prefixed object: its kind and its own bytes.
pub fn unwrap(bytes: &Bytes) -> Result<Unknown, WireError> {
    let body = bytes.strip_prefix(MAGIC.as_slice()).ok_or(WireError::NoMagic)?;
    let unknown = Unknown::decode(bytes.slice_ref(body))?;
    if !unknown.content_encoding.is_empty() {
        return Err(WireError::ContentEncoding(unknown.content_encoding));
    }
    Ok(unknown)
}

impl Unknown {
    pub fn kind(&self) -> &str {
        self.type_meta.as_ref().map_or("", |t| t.kind.as_str())
    }
}

impl From<Status> for kube::core::Status {
    fn from(s: Status) -> Self {
        use kube::core::response::{StatusDetails as Details, StatusSummary};
        kube::core::Status {
            status: match s.status.as_str() {
                "Success" => Some(StatusSummary::Success),
                "Failure" => Some(StatusSummary::Failure),
                _ => None,
            },
            code: u16::try_from(s.code).unwrap_or_default(),
            message: s.message,
            metadata: None,
            reason: s.reason,
            details: s.details.map(|d| Details {
                name: d.name,
                group: d.group,
                kind: d.kind,
                uid: d.uid,
                causes: Vec::new(),
                retry_after_seconds: u32::try_from(d.retry_after_seconds).unwrap_or_default(),
            }),
        }
    }
}
