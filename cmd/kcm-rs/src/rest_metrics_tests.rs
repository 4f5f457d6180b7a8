//! The families as client-go fills them, through a client's whole stack over a scripted server.

use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Method, Response, StatusCode, header::RETRY_AFTER};
use kube::{Client, client::ClientBuilder};

use crate::{client::Clients, metrics::Metrics};

/// Answers the first request 429 with `Retry-After: 0`, a POST to `/fail` with a transport error,
/// and everything else 200.
fn scripted() -> impl tower::Service<
    http::Request<kube::client::Body>,
    Response = Response<kube::client::Body>,
    Error = std::io::Error,
    Future = impl Send + 'static,
> + Clone
+ Send
+ 'static {
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let fail = req.uri().path() == "/fail";
        async move {
            if fail {
                return Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
            }
            let mut resp = Response::new(kube::client::Body::empty());
            if n == 0 {
                *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                resp.headers_mut()
                    .insert(RETRY_AFTER, "0".parse().expect("a header"));
            }
            Ok(resp)
        }
    })
}

fn request(method: Method, uri: &str, body: &[u8]) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(uri)
        .body(body.to_vec())
        .expect("a request")
}

/// A controller's client of `https://10.0.0.1:6443` over [`scripted`], limited to `qps` and `burst`,
/// and the page its metrics are on.
fn client(qps: f64, burst: i32) -> (Client, Metrics) {
    let config = kube::Config::new("https://10.0.0.1:6443".parse().expect("a URL"));
    let clients = Clients::new(config, qps, burst, false).expect("clients");
    let metrics = Metrics::new();
    metrics.register_rest_client(&clients.rest_metrics());
    let layers = clients.layers_for("job-controller").expect("layers");
    let client = ClientBuilder::new(scripted(), "default")
        .with_layer(&layers)
        .build();
    (client, metrics)
}

/// The value of the sample whose line starts with `prefix` (name and labels).
fn sample(page: &str, prefix: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn attempts_retries_waits_and_sizes_are_counted_as_client_go_counts_them() {
    // 20 per second, burst 1: every request after the first waits for its token.
    let (client, metrics) = client(20.0, 1);

    client
        .request_text(request(Method::GET, "/api/v1/pods", b""))
        .await
        .expect("answered 200 after a 429");
    client
        .request_text(request(Method::GET, "/api/v1/pods?watch=true", b""))
        .await
        .expect("a watch");
    client
        .request_text(request(
            Method::POST,
            "/api/v1/namespaces/a/pods",
            b"{\"kind\":\"Pod\"}",
        ))
        .await
        .expect("a create");
    assert!(
        client
            .request_text(request(Method::POST, "/fail", b"{}"))
            .await
            .is_err(),
        "a reset is not sent again for a write"
    );

    let page = metrics.encode();
    let host = "host=\"10.0.0.1:6443\"";
    let at = |name: &str, labels: &str| sample(&page, &format!("{name}{{{labels}}}"));
    let requests = |code: &str, method: &str| {
        at(
            "rest_client_requests_total",
            &format!("code=\"{code}\",{host},method=\"{method}\""),
        )
    };
    assert_eq!(requests("429", "GET"), Some(1.0), "{page}");
    assert_eq!(requests("200", "GET"), Some(2.0), "the retry and the watch");
    assert_eq!(requests("200", "POST"), Some(1.0));
    assert_eq!(requests("<error>", "POST"), Some(1.0));
    assert_eq!(
        at(
            "rest_client_request_retries_total",
            &format!("code=\"200\",{host},verb=\"GET\"")
        ),
        Some(1.0)
    );
    let count = |family: &str, verb: &str| at(&format!("{family}_count"), &format!("{host},verb=\"{verb}\""));
    // The list and its retry; the watch is left out of both.
    assert_eq!(count("rest_client_request_duration_seconds", "GET"), Some(1.0));
    assert_eq!(count("rest_client_request_size_bytes", "GET"), Some(2.0));
    assert_eq!(count("rest_client_request_duration_seconds", "POST"), Some(2.0));
    assert_eq!(
        at(
            "rest_client_request_size_bytes_sum",
            &format!("{host},verb=\"POST\"")
        ),
        Some(16.0),
        "14 and 2 bytes"
    );
    // Tokens: the list, its retry and the two writes; the watch's first attempt takes none.
    assert_eq!(
        count("rest_client_rate_limiter_duration_seconds", "GET"),
        Some(2.0)
    );
    assert_eq!(
        count("rest_client_rate_limiter_duration_seconds", "POST"),
        Some(2.0)
    );
    let waited = at(
        "rest_client_rate_limiter_duration_seconds_sum",
        &format!("{host},verb=\"POST\""),
    );
    assert!(
        waited.is_some_and(|s| s >= 0.04),
        "the writes waited for tokens: {waited:?}"
    );
}

/// Without a token bucket (a negative `--kube-api-qps`) there is no wait to observe, as client-go
/// observes none without a rate limiter.
#[tokio::test]
async fn no_bucket_no_limiter_latency() {
    let (client, metrics) = client(-1.0, 0);
    let _ = client.request_text(request(Method::GET, "/version", b"")).await;
    let page = metrics.encode();
    assert!(
        !page.contains("rest_client_rate_limiter_duration_seconds_count{"),
        "{page}"
    );
    assert!(page.contains("rest_client_requests_total{"), "{page}");
}
