use std::{
    convert::Infallible,
    io::{Read as _, Write as _},
};

use http::Response;
use tokio::sync::mpsc;

use super::*;

fn config(url: &str) -> kube::Config {
    kube::Config::new(url.parse().unwrap())
}

/// A client over a fake API server that answers 200 to everything and reports each request's
/// method and User-Agent.
fn fake_client(layers: &ClientLayers) -> (Client, mpsc::UnboundedReceiver<(Method, Option<HeaderValue>)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = tower::service_fn(move |req: Request<Body>| {
        let seen = (req.method().clone(), req.headers().get(USER_AGENT).cloned());
        let _ = tx.send(seen);
        async { Ok::<_, Infallible>(Response::new(Body::empty())) }
    });
    (
        ClientBuilder::new(server, "default").with_layer(layers).build(),
        rx,
    )
}

fn get() -> Request<Vec<u8>> {
    Request::get("/version").body(Vec::new()).unwrap()
}

#[tokio::test]
async fn each_client_names_itself_in_its_user_agent() {
    let clients = Clients::new(config("http://127.0.0.1:1"), 20.0, 30, false).unwrap();
    let (client, mut seen) = fake_client(&clients.layers_for("replicaset-controller").unwrap());
    client.request_text(get()).await.unwrap();
    let (_, agent) = seen.recv().await.unwrap();
    assert_eq!(agent.unwrap(), "kcm-rs/replicaset-controller");
}

/// Through kube's whole stack to a real socket: nothing below the layer drops or replaces the header.
#[tokio::test]
async fn the_user_agent_reaches_the_wire() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "connection closed before the headers ended");
            head.extend_from_slice(&buf[..n]);
        }
        conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            .unwrap();
        String::from_utf8(head).unwrap().to_ascii_lowercase()
    });
    let clients = Clients::new(config(&url), 20.0, 30, false).unwrap();
    let client = clients.client_for(LEADER_ELECTION).unwrap();
    assert_eq!(client.request_text(get()).await.unwrap(), "{}");
    let head = tokio::task::spawn_blocking(move || server.join().unwrap())
        .await
        .unwrap();
    assert_eq!(
        head.matches("user-agent:").count(),
        1,
        "exactly one User-Agent: {head}"
    );
    assert!(head.contains("user-agent: kcm-rs/leader-election\r\n"), "{head}");
}

#[tokio::test]
async fn clients_have_independent_token_buckets() {
    // One request per 10 s, burst 1: a second request on the same client waits ~10 s.
    let clients = Clients::new(config("http://127.0.0.1:1"), 0.1, 1, false).unwrap();
    let (busy, _a) = fake_client(&clients.layers_for("replicaset-controller").unwrap());
    let (lease, _b) = fake_client(&clients.layers_for(LEADER_ELECTION).unwrap());
    busy.request_text(get()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(500), busy.request_text(get())).await;
    assert!(waited.is_err(), "the busy client's bucket is empty");
    let other = tokio::time::timeout(Duration::from_secs(5), lease.request_text(get())).await;
    assert!(
        matches!(other, Ok(Ok(_))),
        "another client is not held back by it: {other:?}"
    );
}

#[tokio::test]
async fn a_scaled_client_has_the_larger_bucket() {
    // Burst 1 at one request per 10 s; the namespace controller's client bursts 100 times that.
    let clients = Clients::new(config("http://127.0.0.1:1"), 0.1, 1, false).unwrap();
    let (scaled, _a) = fake_client(
        &clients
            .layers_with("namespace-controller", RateScale::NAMESPACE_CONTROLLER)
            .unwrap(),
    );
    for _ in 0..100 {
        let sent = tokio::time::timeout(Duration::from_secs(5), scaled.request_text(get())).await;
        assert!(matches!(sent, Ok(Ok(_))), "within the burst of 100: {sent:?}");
    }
    let (plain, _b) = fake_client(&clients.layers_for("replicaset-controller").unwrap());
    plain.request_text(get()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(500), plain.request_text(get())).await;
    assert!(waited.is_err(), "the usual client's burst is 1");
}

#[tokio::test]
async fn shadow_clients_send_only_gets() {
    let clients = Clients::new(config("http://127.0.0.1:1"), 20.0, 30, true).unwrap();
    let (client, mut seen) = fake_client(&clients.layers_for(SHARED_INFORMERS).unwrap());
    let post = Request::post("/api/v1/namespaces/default/pods")
        .body(b"{}".to_vec())
        .unwrap();
    let err = client.request_text(post).await.unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    client.request_text(get()).await.unwrap();
    assert_eq!(seen.recv().await.unwrap().0, Method::GET);
    assert!(seen.try_recv().is_err(), "the POST never reached the server");
}

#[test]
fn quotas_out_of_range_are_errors() {
    let cfg = config("http://127.0.0.1:1");
    assert!(matches!(
        Clients::new(cfg.clone(), 1e-300, 30, false),
        Err(ClientError::Qps { .. })
    ));
    // Too high for a period of a nanosecond: no bucket, as client-go's `rate.Inf`. With no bucket
    // the burst is not read, a negative one included, as client-go's.
    for unlimited in [1e300, f64::INFINITY, -1.0, f64::NAN] {
        assert!(
            Clients::new(cfg.clone(), unlimited, 30, false).is_ok(),
            "{unlimited}"
        );
        assert!(
            Clients::new(cfg.clone(), unlimited, -1, false).is_ok(),
            "{unlimited}"
        );
    }
    assert!(matches!(
        Clients::new(cfg, 20.0, -1, false),
        Err(ClientError::Burst { burst: -1 })
    ));
}

/// client-go's defaults for a zero QPS and burst (5 and 10), which KCM's flags reach unchecked,
/// and no bucket at all for a negative QPS.
#[tokio::test]
async fn zero_takes_client_gos_defaults_and_a_negative_qps_no_limit() {
    let sent_at_once = |qps: f64, burst: i32| async move {
        let clients = Clients::new(config("http://127.0.0.1:1"), qps, burst, false).unwrap();
        let (client, _seen) = fake_client(&clients.layers_for("replicaset-controller").unwrap());
        let mut sent = 0;
        while sent < 50
            && tokio::time::timeout(Duration::from_millis(100), client.request_text(get()))
                .await
                .is_ok()
        {
            sent += 1;
        }
        sent
    };
    // Burst 10; one more token comes within the first 200 ms at 5 QPS.
    assert!((10..=11).contains(&sent_at_once(0.0, 0).await));
    assert!((10..=11).contains(&sent_at_once(0.001, 0).await));
    assert_eq!(sent_at_once(-1.0, 0).await, 50);
    assert_eq!(sent_at_once(0.001, 3).await, 3);
}
