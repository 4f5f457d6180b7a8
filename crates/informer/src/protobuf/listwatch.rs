//! Lists and watches through kube's `Client` (its auth, rate limiting and HTTP/2 connection), asking
//! for protobuf and decoding whichever of protobuf or JSON the server answers with.

use std::marker::PhantomData;

use bytes::Bytes;
use futures::{StreamExt as _, future::BoxFuture};
use http::{HeaderMap, header};
use kube::{
    Client,
    api::{ListParams, ObjectList, WatchParams},
    core::Status,
};
use serde::de::DeserializeOwned;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};

use super::{ProtobufObject, decode, wire::WireError};
use crate::{
    json,
    listwatch::{ListerWatcher, WatchStream},
    request::{self, Collection},
};

/// The media type of the API server's protobuf encoding (apimachinery `runtime.ContentTypeProtobuf`).
pub const CONTENT_TYPE_PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What list and watch requests accept: protobuf, else JSON (the `Accept` client-go sends for a
/// protobuf client; a server that cannot encode the kind as protobuf answers JSON).
const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";
/// The longest watch frame read: one object, which etcd caps at 1.5 MiB (`--max-request-bytes`), with
/// room for the envelope.
const MAX_FRAME_BYTES: usize = 16 << 20;

/// A list or watch answer that could not be decoded, naming the request.
#[derive(Debug, thiserror::Error)]
#[error("{path}: undecodable protobuf answer: {source}")]
pub struct ProtobufError {
    pub path: String,
    #[source]
    pub source: WireError,
}

/// Lists and watches `K` at one collection path (`/api/v1/pods`, `/api/v1/namespaces/ns/pods`).
pub struct ProtobufListWatch<K> {
    collection: Collection,
    _kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for ProtobufListWatch<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtobufListWatch")
            .field("path", &self.collection.path())
            .finish()
    }
}

impl<K> ProtobufListWatch<K> {
    pub fn new(client: Client, path: impl Into<String>) -> Self {
        ProtobufListWatch {
            collection: Collection::new(client, path.into()).with_status_decoder(protobuf_status),
            _kind: PhantomData,
        }
    }
}

impl<K> ListerWatcher<K> for ProtobufListWatch<K>
where
    K: ProtobufObject + DeserializeOwned + Clone + Send + Sync + 'static,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(async move {
            let res = self.collection.list(params, ACCEPT).await?;
            let protobuf = is_protobuf(res.headers());
            let body = request::body(res).await?;
            if protobuf {
                decode::list(&body).map_err(|e| undecodable(self.collection.path(), e))
            } else {
                json::list(&body)
            }
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        Box::pin(async move {
            let res = self.collection.watch(params, version, ACCEPT).await?;
            let protobuf = is_protobuf(res.headers());
            let reader = request::reader(res);
            if !protobuf {
                return Ok(json::events(reader));
            }
            let codec = LengthDelimitedCodec::builder()
                .length_field_length(4)
                .max_frame_length(MAX_FRAME_BYTES)
                .new_codec();
            let path = self.collection.path().to_owned();
            let events = FramedRead::new(reader, codec).map(move |frame| {
                let frame = frame.map_err(kube::Error::ReadEvents)?;
                decode::event(frame.freeze()).map_err(|e| undecodable(&path, e))
            });
            Ok(request::until_eof(events))
        })
    }
}

/// An answer that could not be decoded, as the kube error the reflector logs and retries on.
fn undecodable(path: &str, source: WireError) -> kube::Error {
    kube::Error::Service(Box::new(ProtobufError {
        path: path.to_owned(),
        source,
    }))
}

fn is_protobuf(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(CONTENT_TYPE_PROTOBUF))
}

/// The `Status` of an error answer the server encoded in protobuf.
fn protobuf_status(headers: &HeaderMap, body: &Bytes) -> Option<Status> {
    is_protobuf(headers).then(|| decode::status(body).ok()).flatten()
}
