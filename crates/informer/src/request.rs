//! What the JSON and protobuf lister-watchers share of a list or watch request sent through kube's
//! `Client` (its auth, rate limiting and HTTP/2 connection): sending it with an `Accept`, turning an
//! error answer into the `kube::Error::Api` kube's own calls return, and reading a watch body.

use std::io;

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use http::{HeaderMap, HeaderValue, header};
use http_body_util::BodyExt as _;
use kube::{
    Client,
    api::{ListParams, WatchEvent, WatchParams},
    client::Body,
    core::{Request, Status},
};
use tokio::io::AsyncRead;
use tokio_util::io::StreamReader;

use crate::listwatch::WatchStream;

/// Reads an error answer's `Status` from an encoding other than JSON (the protobuf path's), before
/// JSON is tried; so that this module need not know the encodings its callers ask for.
pub(crate) type StatusDecoder = fn(&HeaderMap, &Bytes) -> Option<Status>;

/// One collection (`/api/v1/pods`, `/apis/apps/v1/namespaces/ns/replicasets`) and the client that
/// lists and watches it.
pub(crate) struct Collection {
    client: Client,
    path: String,
    status: Option<StatusDecoder>,
}

impl Collection {
    pub(crate) fn new(client: Client, path: String) -> Self {
        Collection {
            client,
            path,
            status: None,
        }
    }

    /// Error answers are read with `decoder` first.
    pub(crate) fn with_status_decoder(mut self, decoder: StatusDecoder) -> Self {
        self.status = Some(decoder);
        self
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Lists the collection, accepting `accept`.
    pub(crate) async fn list(
        &self,
        params: &ListParams,
        accept: &'static str,
    ) -> kube::Result<http::Response<Body>> {
        let mut req = Request::new(&self.path)
            .list(params)
            .map_err(kube::Error::BuildRequest)?;
        // kube leaves `resourceVersion=0` out of a list with a limit, which makes it a consistent
        // read from etcd; client-go's reflector sends both (a ready watch cache ignores the limit).
        if params.resource_version.as_deref() == Some("0")
            && params.limit.is_some()
            && params.continue_token.is_none()
        {
            let uri = format!("{}&resourceVersion=0", req.uri());
            *req.uri_mut() = uri.parse().map_err(|e: http::uri::InvalidUri| {
                kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e.into()))
            })?;
        }
        self.send(req, accept).await
    }

    /// Watches the collection from `version`, accepting `accept`: as kube does for its own watches,
    /// uncompressed (a compressed stream is decoded only up to its first gzip member).
    pub(crate) async fn watch(
        &self,
        params: &WatchParams,
        version: &str,
        accept: &'static str,
    ) -> kube::Result<http::Response<Body>> {
        let mut req = Request::new(&self.path)
            .watch(params, version)
            .map_err(kube::Error::BuildRequest)?;
        req.headers_mut()
            .insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        self.send(req, accept).await
    }

    /// Sends `req` accepting `accept`; an error status becomes `kube::Error::Api` with the server's
    /// `Status`, as kube's own calls report it, so the reflector reads 410 Gone and refusals alike on
    /// either path.
    async fn send(
        &self,
        mut req: http::Request<Vec<u8>>,
        accept: &'static str,
    ) -> kube::Result<http::Response<Body>> {
        req.headers_mut()
            .insert(header::ACCEPT, HeaderValue::from_static(accept));
        let res = self.client.send(req.map(Body::from)).await?;
        if !(res.status().is_client_error() || res.status().is_server_error()) {
            return Ok(res);
        }
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await?.to_bytes();
        let status = self
            .status
            .and_then(|decode| decode(&parts.headers, &bytes))
            .unwrap_or_else(|| error_status(parts.status, &bytes));
        Err(kube::Error::Api(Box::new(status)))
    }
}

/// The whole body of a list answer.
pub(crate) async fn body(res: http::Response<Body>) -> kube::Result<Bytes> {
    Ok(res.into_body().collect().await?.to_bytes())
}

/// A watch answer's body as a byte stream, a cut connection as `UnexpectedEof`.
pub(crate) fn reader(res: http::Response<Body>) -> impl AsyncRead + Send + 'static {
    StreamReader::new(res.into_body().into_data_stream().map_err(to_io))
}

/// Ends the stream, rather than failing it, where the connection was cut mid-event (the watch is
/// resumed from the last resourceVersion either way; kube's watches do the same).
pub(crate) fn until_eof<K: Send + 'static>(
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

/// The `Status` of an error answer in JSON, or one made from the HTTP status and the body's text (a
/// proxy's error page).
fn error_status(code: http::StatusCode, body: &Bytes) -> Status {
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
