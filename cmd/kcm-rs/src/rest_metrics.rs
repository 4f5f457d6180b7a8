//! client-go's `rest_client_*` metrics, which every KCM exports for its clients: requests by answer,
//! retries, latency, the wait at the client's token bucket, and request sizes. Dashboards for KCM
//! read API traffic and client-side throttling from them; under kcm-rs they read the same.
//!
//! Where client-go takes each one (`rest.Request` and `withRetry`), and where kcm-rs does:
//! - `rest_client_requests_total` counts every attempt that reached the connection, by its answer's
//!   code (`<error>` when none came), and `rest_client_request_retries_total` those after the first:
//!   [`Attempts`], the innermost layer, below the write fence (a write the fence refused never left).
//! - `rest_client_request_duration_seconds` is a request's whole time, throttling and retries
//!   included, for all but watches (client-go's `Watch` does not observe it): [`Timed`], outermost.
//! - `rest_client_rate_limiter_duration_seconds` is the wait for a token, observed whenever one is
//!   taken (not by a watch's first attempt, which takes none) and only when there is a bucket:
//!   the token bucket's layer (`crate::qps`).
//! - `rest_client_request_size_bytes` is an attempt's body length (0 for a GET), for all but watches.
//!
//! Where the figures differ from client-go's:
//! - The clock starts when the client's queue (kube's `Buffer`, which takes one request at a time)
//!   reaches the request, not when it was sent: client-go's goroutines each wait for a token from
//!   their own start. Behind a throttled queue of N requests, client-go's k-th wait reads k/qps,
//!   kcm-rs's about 1/qps; both latency families are low by the time spent queued.
//! - A request's time ends with its answer's headers; client-go's ends once it read the body. The
//!   difference is the body's transfer, which matters for a large LIST.
//! - `host` is the server URL's authority as kube holds it: in a pod, kube's in-cluster URL leaves
//!   out `:443`, which client-go's keeps.
//!
//! Not exported: response sizes (kube reads the bodies), DNS latency, exec plugins, the transport
//! cache; the delegated reviews' clients are not counted.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use http::{Request, Response};
use http_body::Body as _;
use kube::client::Body;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};
use tokio::time::Instant;
use tower::{BoxError, Service};

use crate::retry::{Retried, is_watch};

/// Latency buckets, seconds (component-base `restclient` metrics: 5 ms to 60 s).
const LATENCY_BUCKETS: [f64; 12] = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0];
/// Size buckets, bytes (component-base: 64 B to 16 MiB).
const SIZE_BUCKETS: [f64; 11] = [
    64.0,
    256.0,
    512.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
];

/// Labels in the order Go's encoder writes them (sorted by name).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answer {
    code: String,
    host: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Retry {
    code: String,
    host: String,
    verb: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Verb {
    host: String,
    verb: String,
}

type Histograms = Family<Verb, Histogram, fn() -> Histogram>;

/// The families, shared by every client of one API server (`host`).
#[derive(Debug)]
pub struct RestClientMetrics {
    /// The API server's `host:port`, client-go's `host` label.
    host: String,
    requests: Family<Answer, Counter>,
    retries: Family<Retry, Counter>,
    duration: Histograms,
    rate_limiter: Histograms,
    request_size: Histograms,
}

fn latency() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

fn size() -> Histogram {
    Histogram::new(SIZE_BUCKETS)
}

impl RestClientMetrics {
    /// Families for clients of the API server at `server`.
    pub fn new(server: &http::Uri) -> Arc<Self> {
        Arc::new(Self {
            host: server
                .authority()
                .map(ToString::to_string)
                .unwrap_or_else(|| "none".to_owned()),
            requests: Family::default(),
            retries: Family::default(),
            duration: Family::new_with_constructor(latency),
            rate_limiter: Family::new_with_constructor(latency),
            request_size: Family::new_with_constructor(size),
        })
    }

    /// Adds the families to `registry`, with component-base's names and help texts.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rest_client_requests",
            "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
            self.requests.clone(),
        );
        registry.register(
            "rest_client_request_retries",
            "[ALPHA] Number of request retries, partitioned by status code, verb, and host.",
            self.retries.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "[ALPHA] Request latency in seconds. Broken down by verb, and host.",
            self.duration.clone(),
        );
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "[ALPHA] Client side rate limiter latency in seconds. Broken down by verb, and host.",
            self.rate_limiter.clone(),
        );
        registry.register(
            "rest_client_request_size_bytes",
            "[ALPHA] Request size in bytes. Broken down by verb and host.",
            self.request_size.clone(),
        );
    }

    fn verb(&self, verb: &http::Method) -> Verb {
        Verb {
            host: self.host.clone(),
            verb: verb.to_string(),
        }
    }

    /// A token taken for a request of `verb` after `waited`.
    pub fn throttled(&self, verb: &http::Method, waited: Duration) {
        self.rate_limiter
            .get_or_create(&self.verb(verb))
            .observe(waited.as_secs_f64());
    }

    fn attempted(&self, verb: &http::Method, code: String, retried: bool) {
        if retried {
            let retry = Retry {
                code: code.clone(),
                host: self.host.clone(),
                verb: verb.to_string(),
            };
            self.retries.get_or_create(&retry).inc();
        }
        let answer = Answer {
            code,
            host: self.host.clone(),
            method: verb.to_string(),
        };
        self.requests.get_or_create(&answer).inc();
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The code label of an attempt's outcome: the answer's status, or `<error>` without one.
fn code<B, E>(outcome: &Result<Response<B>, E>) -> String {
    match outcome {
        Ok(resp) => resp.status().as_u16().to_string(),
        Err(_) => "<error>".to_owned(),
    }
}

/// Counts each attempt and its body's size; the innermost layer of a client.
#[derive(Debug, Clone)]
pub struct Attempts<S> {
    pub inner: S,
    pub metrics: Option<Arc<RestClientMetrics>>,
}

impl<S, B> Service<Request<Body>> for Attempts<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    B: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<B>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let Some(m) = self.metrics.clone() else {
            return Box::pin(self.inner.call(req));
        };
        let verb = req.method().clone();
        let retried = req.extensions().get::<Retried>().is_some();
        if !is_watch(&req) {
            #[expect(clippy::cast_precision_loss, reason = "Prometheus values are floats")]
            let bytes = req.body().size_hint().exact().unwrap_or(0) as f64;
            m.request_size.get_or_create(&m.verb(&verb)).observe(bytes);
        }
        let sent = self.inner.call(req);
        Box::pin(async move {
            let outcome = sent.await;
            m.attempted(&verb, code(&outcome), retried);
            outcome
        })
    }
}

/// Times each request but a watch, throttling and retries included; the outermost layer.
#[derive(Debug, Clone)]
pub struct Timed<S> {
    pub inner: S,
    pub metrics: Option<Arc<RestClientMetrics>>,
}

impl<S, B> Service<Request<Body>> for Timed<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<B>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let m = self.metrics.clone().filter(|_| !is_watch(&req));
        let Some(m) = m else {
            return Box::pin(self.inner.call(req));
        };
        let labels = m.verb(req.method());
        let start = Instant::now();
        let answered = self.inner.call(req);
        Box::pin(async move {
            let outcome = answered.await;
            m.duration
                .get_or_create(&labels)
                .observe(start.elapsed().as_secs_f64());
            outcome
        })
    }
}

#[cfg(test)]
#[path = "rest_metrics_tests.rs"]
mod tests;
