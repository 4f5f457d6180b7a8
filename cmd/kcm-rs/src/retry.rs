//! Sending a request again when the API server says to, as client-go's `rest.Request` does: only an
//! answer that carries a `Retry-After` of whole seconds (429, or any 5xx) is retried, after the
//! seconds it names, at most [`MAX_RETRIES`] times. Each attempt goes down through the client's
//! token bucket and, sharded, the write fence again (client-go `withRetry.Before` throttles every
//! retry with the client's rate limiter), so a retry that comes after the shard moved is refused.
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

/// Adds [`Retry`] to a client.
#[derive(Debug, Clone, Copy)]
pub struct RetryLayer {
    pub max_retries: u32,
}

impl Default for RetryLayer {
    fn default() -> Self {
        Self {
            max_retries: MAX_RETRIES,
        }
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Retry {
            inner,
            max_retries: self.max_retries,
        }
    }
}

/// Retries what [`retry_after`] allows over `inner`, which is cloned for each request so that each
/// attempt waits for `inner`'s readiness (the token bucket) again.
#[derive(Debug, Clone)]
pub struct Retry<S> {
    inner: S,
    max_retries: u32,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<Body>> for Retry<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        // The first attempt uses the service made ready by `poll_ready`; this one keeps a fresh clone.
        let fresh = self.inner.clone();
        let mut svc = std::mem::replace(&mut self.inner, fresh);
        let max_retries = self.max_retries;
        Box::pin(async move {
            let mut again = copy(&req);
            let mut resp = svc.call(req).await.map_err(Into::into)?;
            for attempt in 1..=max_retries {
                let Some(next) = again.take() else { break };
                let Some(wait) = retry_after(next.method(), &resp) else {
                    break;
                };
                tracing::debug!(
                    method = %next.method(),
                    path = next.uri().path(),
                    status = resp.status().as_u16(),
                    ?wait,
                    attempt,
                    "the API server asked to retry"
                );
                drop(resp);
                tokio::time::sleep(wait).await;
                again = copy(&next);
                resp = svc
                    .ready()
                    .await
                    .map_err(Into::into)?
                    .call(next)
                    .await
                    .map_err(Into::into)?;
            }
            Ok(resp)
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
mod tests;
