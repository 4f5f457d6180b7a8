//! Lists and watches through kube's `Client` (its auth, rate limiting and HTTP/2 connection), asking
//! for protobuf and decoding whichever of protobuf or JSON the server answers with.

use std::{io, marker::PhantomData};

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _, future::BoxFuture};
use http::{HeaderMap, HeaderValue, header};
use http_body_util::BodyExt as _;
use kube::{
    Client,
    api::{ListParams, ObjectList, WatchEvent, WatchParams},
    client::Body,
    core::{Request, Status},
};
use serde::de::DeserializeOwned;
use tokio_util::{
    codec::{FramedRead, LengthDelimitedCodec, LinesCodec},
    io::StreamReader,
};

use super::{ProtobufObject, decode, wire::WireError};
use crate::listwatch::{ListerWatcher, WatchStream};

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
    client: Client,
    path: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for ProtobufListWatch<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtobufListWatch")
            .field("path", &self.path)
            .finish()
    }
}

impl<K> ProtobufListWatch<K> {
    pub fn new(client: Client, path: impl Into<String>) -> Self {
        ProtobufListWatch {
            client,
            path: path.into(),
            _kind: PhantomData,
        }
    }

    /// Sends `req`; an error status becomes `kube::Error::Api` with the server's `Status`, as kube's
    /// own calls report it, so the reflector reads 410 Gone and refusals alike on either path.
    async fn send(&self, mut req: http::Request<Vec<u8>>) -> kube::Result<http::Response<Body>> {
        req.headers_mut()
            .insert(header::ACCEPT, HeaderValue::from_static(ACCEPT));
        let res = self.client.send(req.map(Body::from)).await?;
        if !(res.status().is_client_error() || res.status().is_server_error()) {
            return Ok(res);
        }
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await?.to_bytes();
        Err(kube::Error::Api(Box::new(error_status(
            parts.status,
            &parts.headers,
            &bytes,
        ))))
    }
}

impl<K> ListerWatcher<K> for ProtobufListWatch<K>
where
    K: ProtobufObject + DeserializeOwned + Clone + Send + Sync + 'static,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(async move {
            let req = Request::new(&self.path)
                .list(params)
                .map_err(kube::Error::BuildRequest)?;
            let res = self.send(req).await?;
            let protobuf = is_protobuf(res.headers());
            let body = res.into_body().collect().await?.to_bytes();
            if protobuf {
                decode::list(&body).map_err(|e| undecodable(&self.path, e))
            } else {
                serde_json::from_slice(&body).map_err(kube::Error::SerdeError)
            }
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        Box::pin(async move {
            let mut req = Request::new(&self.path)
                .watch(params, version)
                .map_err(kube::Error::BuildRequest)?;
            // As kube does for its own watches: a compressed stream is decoded only up to its first
            // gzip member.
            req.headers_mut()
                .insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
            let res = self.send(req).await?;
            let protobuf = is_protobuf(res.headers());
            let reader = StreamReader::new(res.into_body().into_data_stream().map_err(to_io));
            if protobuf {
                let codec = LengthDelimitedCodec::builder()
                    .length_field_length(4)
                    .max_frame_length(MAX_FRAME_BYTES)
                    .new_codec();
                let path = self.path.clone();
                let events = FramedRead::new(reader, codec).map(move |frame| {
                    let frame = frame.map_err(kube::Error::ReadEvents)?;
                    decode::event(frame.freeze()).map_err(|e| undecodable(&path, e))
                });
                Ok(until_eof(events))
            } else {
                let events = FramedRead::new(reader, LinesCodec::new()).map(|line| {
                    let line = line.map_err(|e| match e {
                        tokio_util::codec::LinesCodecError::Io(e) => kube::Error::ReadEvents(e),
                        other => kube::Error::ReadEvents(io::Error::other(other)),
                    })?;
                    serde_json::from_str::<WatchEvent<K>>(&line).map_err(kube::Error::SerdeError)
                });
                Ok(until_eof(events))
            }
        })
    }
}

/// Ends the stream, rather than failing it, where the connection was cut mid-event (the watch is
/// resumed from the last resourceVersion either way; kube's watches do the same).
fn until_eof<K: Send + 'static>(
    events: impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Send + 'static,
) -> WatchStream<K> {
    events
        .take_while(|e| {
            let eof =
                matches!(e, Err(kube::Error::ReadEvents(io)) if io.kind() == io::ErrorKind::UnexpectedEof);
            futures::future::ready(!eof)
        })
        .boxed()
}

fn to_io(e: kube::Error) -> io::Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut eof = e.to_string().contains("unexpected EOF during chunk");
    while let Some(s) = source {
        if s.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::UnexpectedEof)
        {
            eof = true;
        }
        source = s.source();
    }
    if eof {
        io::Error::new(io::ErrorKind::UnexpectedEof, e)
    } else {
        io::Error::other(e)
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

/// The `Status` of an error answer in whatever encoding it came, or one made from the HTTP status and
/// the body's text (a proxy's error page).
fn error_status(code: http::StatusCode, headers: &HeaderMap, body: &Bytes) -> Status {
    if is_protobuf(headers)
        && let Ok(status) = decode::status(body)
    {
        return status;
    }
    if let Ok(status) = serde_json::from_slice::<Status>(body) {
        return status;
    }
    let mut status = Status::failure(
        &String::from_utf8_lossy(body),
        code.canonical_reason().unwrap_or_default(),
    );
    status.code = code.as_u16();
    status
}
