//! Accepting connections: TLS handshakes with a deadline, plain HTTP answered as Go answers it,
//! each connection served by hyper with its client certificates attached to every request, a
//! connection closed gracefully when a request asks for it ([`CloseConnection`]), and a graceful stop.

use std::{sync::Arc, time::Duration};

use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
    service::TowerToHyperService,
};
use tokio::{io::AsyncWriteExt as _, net::TcpListener};
use tokio_rustls::TlsAcceptor;
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tower::ServiceExt as _;

use crate::authn::PeerCertificates;

/// How long a client may take to finish the TLS handshake (Go's `net/http` has none by default;
/// a bound keeps idle half-open connections from piling up).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections get to finish when serving stops.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// What Go's `net/http` writes to a client speaking plain HTTP to a TLS port, then closes.
pub const PLAIN_HTTP_RESPONSE: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
/// The first byte of every TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// In every request's extensions: cancelling it closes the request's connection once its requests
/// in flight are answered (HTTP/2: a GOAWAY), as Go's server does after a handler's
/// `Connection: close`.
#[derive(Debug, Clone)]
pub struct CloseConnection(pub CancellationToken);

/// Serves `app` over TLS on `listener` until `cancel` fires.
pub async fn accept_loop(listener: TcpListener, tls: TlsAcceptor, app: Router, cancel: CancellationToken) {
    let connections = TaskTracker::new();
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    loop {
        let (tcp, remote) = tokio::select! {
            () = cancel.cancelled() => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (tls, app, builder, stop) = (tls.clone(), app.clone(), builder.clone(), cancel.clone());
        connections.spawn(async move {
            let mut tcp = tcp;
            if looks_like_plain_http(&tcp).await {
                tracing::debug!(%remote, "TLS handshake error: client sent an HTTP request to an HTTPS server");
                let _ = tcp.write_all(PLAIN_HTTP_RESPONSE).await;
                let _ = tcp.shutdown().await;
                return;
            }
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%remote, error = %e, "TLS handshake error");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%remote, "TLS handshake timed out");
                    return;
                }
            };
            let peer = PeerCertificates(Arc::new(
                stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
                    .unwrap_or_default(),
            ));
            // A child of the stop: serving's end closes every connection the same way.
            let close = CloseConnection(stop.child_token());
            let closing = close.0.clone();
            let svc = app.map_request(move |mut req: http::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(peer.clone());
                req.extensions_mut().insert(close.clone());
                req
            });
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(svc))
                .into_owned();
            let mut conn = std::pin::pin!(conn);
            // The close first: a request's GOAWAY then leaves before its answer does, so that the
            // client sends nothing more on the connection.
            let ended = tokio::select! {
                biased;
                () = closing.cancelled() => {
                    tracing::debug!(%remote, "closing the connection");
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
                ended = conn.as_mut() => ended,
            };
            if let Err(e) = ended {
                tracing::debug!(%remote, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
        .await
        .is_err()
    {
        tracing::info!("connections still open after the shutdown grace period; dropping them");
    }
}

/// Go's test: the first five bytes spell the start of an HTTP request, not a TLS record.
async fn looks_like_plain_http(tcp: &tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 5];
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    loop {
        let n = match tokio::time::timeout_at(deadline, tcp.peek(&mut buf)).await {
            Ok(Ok(n)) => n,
            _ => return false,
        };
        if n == 0 || buf[0] == TLS_HANDSHAKE_RECORD {
            return false;
        }
        if n >= 5 {
            return matches!(&buf, b"GET /" | b"HEAD " | b"POST " | b"PUT /" | b"OPTIO");
        }
        // Fewer than five bytes so far: wait for more.
        tokio::time::sleep(Duration::from_millis(10)).await;
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
    }
}
