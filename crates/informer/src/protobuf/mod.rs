//! Listing and watching in the API server's protobuf encoding, which KCM asks for by default
//! (`--kube-api-content-type=application/vnd.kubernetes.protobuf`).
//!
//! Why: a reflector spends most of its time receiving and decoding watch events, and a pod is about
//! half the bytes in protobuf that it is in JSON, with every field length-prefixed, so a decoder that
//! declares only the fields it keeps steps over the rest (managedFields, container specs) without
//! reading them. Neither kube nor k8s-openapi speak protobuf; k8s-pb has the generated types but decodes
//! every field into full objects, which is the cost this avoids. So the envelope (`runtime.Unknown`,
//! `WatchEvent`, lists, `Status`) is declared here with prost, and each kind brings its own decoder
//! ([`ProtobufObject`]); the reflector sees the same kube types as on the JSON path.
//!
//! Behaviour, and the tests that cover it (`crates/controller/src/compact_pod/protobuf_tests.rs`
//! unless named otherwise):
//! - lists and watch events decode to the same objects as their JSON, however the stream is cut into
//!   chunks: `recorded_pods_decode_as_their_json`, `recorded_watch_decodes_as_the_list_whatever_the_chunking`;
//! - bookmarks keep their annotations, so a streaming list ends where it should:
//!   `a_streaming_list_in_protobuf_ends_at_its_bookmark`;
//! - an ERROR event or an error answer carries the server's `Status`, so 410 Gone relists:
//!   `an_expired_watch_in_protobuf_relists`, `an_error_answer_carries_its_status`;
//! - a JSON answer to the same request (a server that cannot encode the kind) is decoded as JSON:
//!   `a_json_answer_is_still_read`;
//! - bytes that are not what they claim are an error naming the request, never a panic:
//!   `undecodable_bytes_are_an_error_naming_the_request`, `garbage_is_an_error_not_a_panic` (a
//!   property test).
//!
//! The cost, in `benches/results/`: `cargo bench --bench wire_decode` for one event, and the
//! side-by-side runs with `--kube-api-content-type` either way.

pub mod decode;
mod listwatch;
pub mod wire;

use bytes::Bytes;

pub use wire::WireError;

pub use listwatch::{CONTENT_TYPE_PROTOBUF, ProtobufError, ProtobufListWatch};

/// A kind whose own protobuf message (what a `runtime.Unknown` envelope's `raw` holds) decodes to
/// `Self`.
pub trait ProtobufObject: Sized + Clone {
    fn decode_protobuf(raw: Bytes) -> Result<Self, WireError>;
}

/// Encoders for tests and benches that play the API server.
#[cfg(any(test, feature = "testing"))]
pub mod encode {
    use bytes::{BufMut as _, Bytes, BytesMut};
    use prost::Message as _;

    use super::wire;

    /// An object as the server encodes it outside a watch frame: magic, then `runtime.Unknown`.
    pub fn object(api_version: &str, kind: &str, raw: impl Into<Bytes>) -> Bytes {
        let unknown = wire::Unknown {
            type_meta: Some(wire::TypeMeta {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            }),
            raw: raw.into(),
            content_encoding: String::new(),
        };
        let mut out = BytesMut::from(wire::MAGIC.as_slice());
        unknown.encode(&mut out).expect("BytesMut grows");
        out.freeze()
    }

    /// One length-prefixed watch frame.
    pub fn frame(event_type: &str, object: Bytes) -> Bytes {
        let event = wire::WatchEvent {
            r#type: event_type.to_owned(),
            object: Some(wire::RawExtension { raw: object }),
        };
        let body = event.encode_to_vec();
        let mut out = BytesMut::with_capacity(body.len() + 4);
        out.put_u32(u32::try_from(body.len()).expect("frame under 4 GiB"));
        out.put_slice(&body);
        out.freeze()
    }

    /// A `...List` of already encoded items.
    pub fn list(kind: &str, resource_version: &str, items: Vec<Bytes>) -> Bytes {
        let list = wire::List {
            metadata: Some(wire::ListMeta {
                resource_version: resource_version.to_owned(),
                ..wire::ListMeta::default()
            }),
            items,
        };
        object("v1", kind, list.encode_to_vec())
    }

    /// A bookmark's object: only metadata.
    pub fn bookmark(kind: &str, resource_version: &str, initial_events_end: bool) -> Bytes {
        let mut meta = wire::MetaHead {
            resource_version: resource_version.to_owned(),
            ..wire::MetaHead::default()
        };
        if initial_events_end {
            meta.annotations.insert(
                crate::reflector::INITIAL_EVENTS_END_ANNOTATION.to_owned(),
                "true".to_owned(),
            );
        }
        object(
            "v1",
            kind,
            wire::ObjectHead { metadata: Some(meta) }.encode_to_vec(),
        )
    }

    /// A failure `Status`.
    pub fn status(code: i32, reason: &str, message: &str) -> Bytes {
        let status = wire::Status {
            status: "Failure".to_owned(),
            message: message.to_owned(),
            reason: reason.to_owned(),
            details: None,
            code,
        };
        object("v1", "Status", status.encode_to_vec())
    }
}
