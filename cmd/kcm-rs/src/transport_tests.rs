//! The shared transport against a local TLS server that, like the API server, takes HTTP/2 and
//! HTTP/1.1 by ALPN, counting the connections it accepts and the protocol of each request.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use http::{Request, Response, Version};
use hyper_util::{rt::TokioIo, server::conn::auto};
use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::client::{Clients, LEADER_ELECTION, SHARED_INFORMERS};

struct Server {
    url: String,
    ca: Vec<u8>,
    connections: Arc<AtomicUsize>,
    versions: Arc<Mutex<Vec<Version>>>,
}

/// Answers 429 (Retry-After: 0) to the first `throttled` requests, then 200 `{}`.
async fn serve(alpn: &[&[u8]], throttled: usize) -> Server {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let ca = cert.der().to_vec();
    let mut tls =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(ca.clone())],
                PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
    tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let versions = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (connections.clone(), versions.clone());
    let answered = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            let (acceptor, seen, answered) = (acceptor.clone(), seen.clone(), answered.clone());
            tokio::spawn(async move {
                let tls = acceptor.accept(tcp).await.unwrap();
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    seen.lock().push(req.version());
                    let throttle = answered.fetch_add(1, Ordering::SeqCst) < throttled;
                    async move {
                        let mut resp = Response::new("{}".to_owned());
                        if throttle {
                            *resp.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
                            resp.headers_mut()
                                .insert("retry-after", http::HeaderValue::from_static("0"));
                        }
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Server {
        url,
        ca,
        connections,
        versions,
    }
}

fn clients(server: &Server) -> Clients {
    let mut config = kube::Config::new(server.url.parse().unwrap());
    config.root_cert = Some(vec![server.ca.clone()]);
    Clients::new(config, 1000.0, 1000, false).unwrap()
}

/// Sends `n` concurrent requests, alternating between two clients of the same `Clients`.
async fn burst(clients: &Clients, n: usize) {
    let a = clients.client_for(SHARED_INFORMERS).unwrap();
    let b = clients.client_for(LEADER_ELECTION).unwrap();
    let requests = (0..n).map(|i| {
        let client = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move {
            let req = Request::get("/version").body(Vec::new()).unwrap();
            client.request_text(req).await.unwrap()
        }
    });
    futures::future::join_all(requests).await;
}

/// After the first request (kcm-rs's first are the leader election's and the informers' at start),
/// bursts from every client go over the one connection. (Requests sent together before any connection
/// exists each open one, as the pool learns the protocol only from ALPN; those stay pooled too.)
#[tokio::test]
async fn every_client_shares_one_http2_connection() {
    let server = serve(&[b"h2", b"http/1.1"], 0).await;
    let clients = clients(&server);
    burst(&clients, 1).await;
    burst(&clients, 50).await;
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    let versions = server.versions.lock().clone();
    assert_eq!(versions.len(), 51);
    assert!(versions.iter().all(|v| *v == Version::HTTP_2), "{versions:?}");
}

#[tokio::test]
async fn a_server_without_http2_is_spoken_to_in_http1() {
    let server = serve(&[b"http/1.1"], 0).await;
    burst(&clients(&server), 4).await;
    let versions = server.versions.lock().clone();
    assert_eq!(versions.len(), 4);
    assert!(versions.iter().all(|v| *v == Version::HTTP_11), "{versions:?}");
}

/// kube's default retry stays: a throttled request is sent again, after the server's Retry-After.
#[tokio::test]
async fn throttled_requests_are_retried() {
    let server = serve(&[b"h2", b"http/1.1"], 2).await;
    burst(&clients(&server), 1).await;
    assert_eq!(server.versions.lock().len(), 3);
}

#[test]
fn a_bad_tls_server_name_is_named() {
    let mut config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
    config.tls_server_name = Some("not a name".to_owned());
    let err = Clients::new(config, 20.0, 30, false).unwrap_err().to_string();
    assert!(err.contains("\"not a name\""), "{err}");
}
