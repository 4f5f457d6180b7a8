//! Sending a request again when the API server says to, as client-go's `rest.Request` does: an
//! answer that carries a `Retry-After` of whole seconds (429, or any 5xx) is retried, after the
//! seconds it names; so is a GET whose connection was lost under it (a reset, an answer cut short,
//! a GOAWAY, an unanswered ping: an API server restarting), after one second, as client-go answers
//! such errors with a made-up `Retry-After: 1`. A write whose connection was lost is not sent again:
//! it may have been applied. At most [`MAX_RETRIES`] times in all. Each attempt goes down through
//! the client's token bucket and, sharded, the write fence again (client-go `withRetry.Before`
//! throttles every retry with the client's rate limiter), so a retry that comes after the shard
//! moved is refused. Those rules are one [`Policy`]; the delegated reviews' backoff
//! (`crate::review_retry`) is another over the same [`Retry`].
//!
//! Why not kube's `RetryPolicy::server_retry`, which kcm-rs used before: it retries 429, 503 and 504
//! whether the answer says to or not, 15 times with a backoff of its own, and sat in the shared
//! transport, below the token bucket and the fence. So a write that passed the fence once was re-sent
//! after the fence had closed, and a POST answered 504 by kube-apiserver's timeout filter (no
//! `Retry-After`, while its handler may still commit) was sent again: a `generateName` pod create
//! could make two pods. Here a POST answered 504 is never sent again, `Retry-After` or not: stricter
//! than client-go, which would retry one that carried the header; kube-apiserver's own 504s do not.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use http::{Method, Request, Response, StatusCode, header::RETRY_AFTER};
use kube::client::Body;
use tower::{BoxError, Layer, Service, ServiceExt as _};

/// How often one request is sent again at most (client-go rest: `NewRequest` sets `maxRetries: 10`).
pub const MAX_RETRIES: u32 = 10;
/// The wait before a GET goes again after its connection was lost (client-go rest:
/// `retryAfterResponse`, a `Retry-After` of "1").
pub const CONNECTION_LOST_WAIT: Duration = Duration::from_secs(1);

/// How long to wait before sending `method` again after `resp`, or `None` when it must not be sent
/// again: client-go's `checkWait` (429 or 5xx, with `Retry-After` in whole seconds), less a POST
/// answered 504.
pub fn retry_after<B>(method: &Method, resp: &Response<B>) -> Option<Duration> {
    let status = resp.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    if method == Method::POST && status == StatusCode::GATEWAY_TIMEOUT {
        return None;
    }
    let seconds: i64 = resp.headers().get(RETRY_AFTER)?.to_str().ok()?.parse().ok()?;
    Some(Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
}

/// How long to wait before sending `method` again after `outcome`, or `None` when it must not be
/// sent again: [`retry_after`] for an answer; for a failure, [`CONNECTION_LOST_WAIT`] when a GET lost
/// its connection (client-go retries a GET after `IsConnectionReset`, `IsProbableEOF` and
/// `IsHTTP2ConnectionLost`, and nothing else; a refused connection sent nothing and is not one).
fn retry_wait<B>(method: &Method, outcome: &Result<Response<B>, BoxError>) -> Option<Duration> {
    match outcome {
        Ok(resp) => retry_after(method, resp),
        Err(e) => (method == Method::GET && connection_lost(&**e)).then_some(CONNECTION_LOST_WAIT),
    }
}

/// Whether `err`, or an error under it, says the connection went away with the request on it.
pub fn connection_lost(err: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    any_cause(
        err,
        |io| {
            matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            )
        },
        |h| h.is_incomplete_message() || h.is_canceled() || h.is_timeout(),
        |h2| h2.is_go_away() || h2.reason() == Some(h2::Reason::REFUSED_STREAM),
    )
}

/// The narrower set k8s.io/apiserver's webhooks send a review again after
/// (`webhook.DefaultShouldRetry`: `IsConnectionReset` and `IsHTTP2ConnectionLost`): a reset, or a
/// connection closed for pings it left unanswered.
pub fn connection_reset(err: &(dyn std::error::Error + 'static)) -> bool {
    any_cause(
        err,
        |io| io.kind() == std::io::ErrorKind::ConnectionReset,
        hyper::Error::is_timeout,
        |_| false,
    )
}

/// Whether `err` or an error under it is an I/O error `io` accepts, a hyper error `hyper` accepts, or
/// an h2 error `h2` accepts (or carrying an I/O error `io` accepts: h2's errors name no source).
fn any_cause(
    err: &(dyn std::error::Error + 'static),
    io: impl Fn(&std::io::Error) -> bool,
    hyper: impl Fn(&hyper::Error) -> bool,
    h2: impl Fn(&h2::Error) -> bool,
) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>().is_some_and(&io)
            || e.downcast_ref::<hyper::Error>().is_some_and(&hyper)
            || e.downcast_ref::<h2::Error>()
                .is_some_and(|e| h2(e) || e.get_io().is_some_and(&io))
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Marks an attempt after the first, which the token bucket throttles even for a watch.
#[derive(Debug, Clone, Copy)]
pub struct Retried;

/// Whether `req` is the first attempt of a watch, which client-go sends without waiting for the
/// client's rate limiter (`Request.Watch` skips `tryThrottle`; its retries do wait). Here it takes
/// no token of its own, but it still waits while a request queued before it in the client waits for
/// one (kube's `Buffer` takes requests in order, and a tower service waits for its token before it
/// sees the request): a run of watches, streaming lists among them, goes out at once; a watch
/// behind a throttled write does not.
pub fn unthrottled<B>(req: &Request<B>) -> bool {
    is_watch(req) && req.extensions().get::<Retried>().is_none()
}

/// Whether `req` asks for a watch (`?watch=true`, or `1`).
pub fn is_watch<B>(req: &Request<B>) -> bool {
    req.uri().query().is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == "watch" && (v == "true" || v == "1"))
    })
}

/// When a request is sent again: how long to wait before retry `attempt` (1 for the first) of
/// `method` after `outcome`, or `None` to stop there.
pub trait Policy: Clone + Send + Sync + 'static {
    fn wait<B>(
        &self,
        attempt: u32,
        method: &Method,
        outcome: &Result<Response<B>, BoxError>,
    ) -> Option<Duration>;
}

/// client-go's rules ([`retry_wait`]), at most `max_retries` times.
#[derive(Debug, Clone, Copy)]
pub struct AsTheServerSays {
    pub max_retries: u32,
}

impl Default for AsTheServerSays {
    fn default() -> Self {
        Self {
            max_retries: MAX_RETRIES,
        }
    }
}

impl Policy for AsTheServerSays {
    fn wait<B>(
        &self,
        attempt: u32,
        method: &Method,
        outcome: &Result<Response<B>, BoxError>,
    ) -> Option<Duration> {
        (attempt <= self.max_retries)
            .then(|| retry_wait(method, outcome))
            .flatten()
    }
}

/// Adds [`Retry`] to a client.
#[derive(Debug, Clone, Copy, Default)]
pub struct RetryLayer<P = AsTheServerSays> {
    pub policy: P,
}

impl<S, P: Clone> Layer<S> for RetryLayer<P> {
    type Service = Retry<S, P>;
    fn layer(&self, inner: S) -> Self::Service {
        Retry {
            inner,
            policy: self.policy.clone(),
        }
    }
}

/// Retries what `policy` allows over `inner`, which is cloned for each request so that each attempt
/// waits for `inner`'s readiness (the token bucket) again.
#[derive(Debug, Clone)]
pub struct Retry<S, P = AsTheServerSays> {
    inner: S,
    policy: P,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, P> Service<Request<Body>> for Retry<S, P>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
    P: Policy,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let mut again = copy(&req);
        // The first attempt uses the service made ready by `poll_ready`. A watch's takes no token,
        // so that service keeps the one it holds for the next request, and the retries use a
        // fresh clone; otherwise this one keeps the fresh clone.
        let (first, mut svc) = if unthrottled(&req) {
            (self.inner.call(req), self.inner.clone())
        } else {
            let fresh = self.inner.clone();
            let mut svc = std::mem::replace(&mut self.inner, fresh);
            (svc.call(req), svc)
        };
        let policy = self.policy.clone();
        Box::pin(async move {
            let mut outcome = first.await.map_err(Into::into);
            for attempt in 1.. {
                let Some(next) = again.take() else { break };
                let Some(wait) = policy.wait(attempt, next.method(), &outcome) else {
                    break;
                };
                match &outcome {
                    Ok(resp) => tracing::debug!(
                        method = %next.method(),
                        path = next.uri().path(),
                        status = resp.status().as_u16(),
                        ?wait,
                        attempt,
                        "retrying after the API server's answer"
                    ),
                    Err(e) => tracing::debug!(
                        method = %next.method(),
                        path = next.uri().path(),
                        ?wait,
                        attempt,
                        "the connection was lost, retrying: {e}"
                    ),
                }
                drop(outcome);
                tokio::time::sleep(wait).await;
                let mut next = next;
                next.extensions_mut().insert(Retried);
                again = copy(&next);
                let ready = svc.ready().await.map_err(Into::into);
                outcome = match ready {
                    Ok(ready) => ready.call(next).await.map_err(Into::into),
                    Err(e) => Err(e),
                };
            }
            outcome
        })
    }
}

/// A copy of `req` to send again, if its body can be copied (kube's request bodies are bytes; a
/// streamed body cannot be sent twice).
fn copy(req: &Request<Body>) -> Option<Request<Body>> {
    let mut copy = Request::new(req.body().try_clone()?);
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    *copy.extensions_mut() = req.extensions().clone();
    Some(copy)
}

#[cfg(test)]
#[path = "retry_tests.rs"]
pub(crate) mod tests;
