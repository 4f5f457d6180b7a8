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

/// What a test proxy saw of one tunnel: its target (`host:port`) and the credentials it was given.
type Tunnels = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A proxy on a loopback port, `handshake` taking each connection up to the tunnel: it records the
/// tunnel and returns the target, which the proxy then connects the client to.
async fn proxy<H, F>(handshake: H) -> (u16, Tunnels)
where
    H: Fn(tokio::net::TcpStream, Tunnels) -> F + Send + Sync + 'static,
    F: Future<Output = (tokio::net::TcpStream, String)> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Tunnels::default();
    let tunnels = seen.clone();
    tokio::spawn(async move {
        loop {
            let (client, _) = listener.accept().await.unwrap();
            let handshaking = handshake(client, tunnels.clone());
            tokio::spawn(async move {
                let (mut client, target) = handshaking.await;
                let mut upstream = tokio::net::TcpStream::connect(&target).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (port, seen)
}

/// An HTTP CONNECT proxy: each tunnel's target and `Proxy-Authorization`.
async fn connect_proxy() -> (u16, Tunnels) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    proxy(|mut client, tunnels| async move {
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(client.read_u8().await.unwrap());
        }
        let head = String::from_utf8(head).unwrap();
        let target = head
            .strip_prefix("CONNECT ")
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_owned();
        let auth = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("Proxy-Authorization: ")
                    .or(l.strip_prefix("proxy-authorization: "))
            })
            .map(str::to_owned);
        tunnels.lock().push((target.clone(), auth));
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .unwrap();
        (client, target)
    })
    .await
}

/// A SOCKS5 proxy taking user/password authentication (RFC 1928, 1929): each tunnel's target and
/// `user:password`.
async fn socks5_proxy() -> (u16, Tunnels) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    proxy(|mut c, tunnels| async move {
        let field = async |c: &mut tokio::net::TcpStream| {
            let mut buf = vec![0; usize::from(c.read_u8().await.unwrap())];
            c.read_exact(&mut buf).await.unwrap();
            String::from_utf8(buf).unwrap()
        };
        let (version, methods) = (c.read_u8().await.unwrap(), c.read_u8().await.unwrap());
        assert_eq!(version, 5);
        let mut offered = vec![0; usize::from(methods)];
        c.read_exact(&mut offered).await.unwrap();
        assert!(offered.contains(&2), "user/password offered: {offered:?}");
        c.write_all(&[5, 2]).await.unwrap();
        assert_eq!(c.read_u8().await.unwrap(), 1);
        let credentials = format!("{}:{}", field(&mut c).await, field(&mut c).await);
        c.write_all(&[1, 0]).await.unwrap();
        let mut request = [0; 4];
        c.read_exact(&mut request).await.unwrap();
        assert_eq!(request[..3], [5, 1, 0], "CONNECT");
        let host = match request[3] {
            1 => {
                let mut ip = [0; 4];
                c.read_exact(&mut ip).await.unwrap();
                std::net::Ipv4Addr::from(ip).to_string()
            }
            3 => field(&mut c).await,
            other => panic!("address type {other}"),
        };
        let target = format!("{host}:{}", c.read_u16().await.unwrap());
        tunnels.lock().push((target.clone(), Some(credentials)));
        c.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await.unwrap();
        (c, target)
    })
    .await
}

fn clients_via(server: &Server, proxy_url: &str) -> Clients {
    let mut config = kube::Config::new(server.url.parse().unwrap());
    config.root_cert = Some(vec![server.ca.clone()]);
    config.proxy_url = Some(proxy_url.parse().unwrap());
    Clients::new(config, 1000.0, 1000, false).unwrap()
}

/// A kubeconfig's `proxy-url` carries every request, a loopback server's too, over one tunnel that
/// still speaks HTTP/2 to the server inside it.
#[tokio::test]
async fn requests_go_through_an_http_connect_proxy() {
    let server = serve(&[b"h2", b"http/1.1"], 0).await;
    let (port, tunnels) = connect_proxy().await;
    let clients = clients_via(&server, &format!("http://al%40ice:s3cret@127.0.0.1:{port}"));
    burst(&clients, 1).await;
    burst(&clients, 10).await;
    let target = server.url.strip_prefix("https://").unwrap().to_owned();
    // base64("al@ice:s3cret")
    let auth = Some("Basic YWxAaWNlOnMzY3JldA==".to_owned());
    assert_eq!(*tunnels.lock(), vec![(target, auth)]);
    let versions = server.versions.lock().clone();
    assert_eq!(versions.len(), 11);
    assert!(versions.iter().all(|v| *v == Version::HTTP_2), "{versions:?}");
}

#[tokio::test]
async fn requests_go_through_a_socks5_proxy() {
    let server = serve(&[b"h2", b"http/1.1"], 0).await;
    let (port, tunnels) = socks5_proxy().await;
    let clients = clients_via(&server, &format!("socks5://bob:pw@127.0.0.1:{port}"));
    burst(&clients, 1).await;
    burst(&clients, 3).await;
    let target = server.url.strip_prefix("https://").unwrap().to_owned();
    assert_eq!(*tunnels.lock(), vec![(target, Some("bob:pw".to_owned()))]);
    assert_eq!(server.versions.lock().len(), 4);
}

#[test]
fn a_proxy_url_no_transport_speaks_is_named() {
    let mut config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
    config.proxy_url = Some("ftp://proxy:21".parse().unwrap());
    let err = Clients::new(config, 20.0, 30, false).unwrap_err().to_string();
    assert!(
        err.contains("proxy-url") && err.contains("ftp://proxy:21"),
        "{err}"
    );
}

/// hyper-util's tunnels read a target without a port as port 443; an `http://` server's is 80.
#[test]
fn tunnel_targets_carry_their_port() {
    use super::with_port;
    for (uri, want) in [
        ("http://api.example.com/", "http://api.example.com:80/"),
        ("https://api.example.com", "https://api.example.com:443/"),
        ("https://api.example.com:6443/", "https://api.example.com:6443/"),
        ("http://[fd00::5]/", "http://[fd00::5]:80/"),
    ] {
        assert_eq!(with_port(uri.parse().unwrap()).to_string(), want, "{uri}");
    }
}
