//! Delegated reviews sent again after a transient failure, as k8s.io/apiserver's delegating
//! authenticator and authorizer send theirs (`webhook.WithExponentialBackoff` with
//! `DefaultAuthWebhookRetryBackoff`, retrying what `webhook.DefaultShouldRetry` calls transient).
//!
//! Transient: a connection lost under the review (an API server restarting), or an answer of 500,
//! 504 or 429, or any 5xx that carries `Retry-After` once the client's own retries ([`crate::retry`],
//! beneath this layer) gave up on it. [`REVIEW_ATTEMPTS`] attempts in all, the waits between them
//! growing from [`REVIEW_BACKOFF_INITIAL`]. The review's own timeout (secure-serving's 10 s) bounds
//! the whole, as upstream's request timeout bounds its backoff. A TokenReview or SubjectAccessReview
//! changes nothing, so a review whose connection was lost may be sent again where a write may not.
//! Without this, a `/metrics` scrape during an API server's restart got a 401 or 403 that KCM's
//! retries would have turned into an answer.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use http::{Request, Response, StatusCode, header::RETRY_AFTER};
use kube::client::Body;
use rand::Rng as _;
use tower::{BoxError, Layer, Service, ServiceExt as _};

use crate::retry::{connection_lost, copy};

/// Attempts of one review, the first included (apiserver `DefaultAuthWebhookRetryBackoff`: `Steps`).
pub const REVIEW_ATTEMPTS: u32 = 5;
/// The first wait (`Duration`), growing by [`REVIEW_BACKOFF_FACTOR`] after each, each lengthened by
/// up to [`REVIEW_BACKOFF_JITTER`] of itself (`Factor`, `Jitter`), as `wait.Backoff.Step` does.
pub const REVIEW_BACKOFF_INITIAL: Duration = Duration::from_millis(500);
pub const REVIEW_BACKOFF_FACTOR: f64 = 1.5;
pub const REVIEW_BACKOFF_JITTER: f64 = 0.2;

/// Whether `outcome` is worth another attempt of the review.
fn transient<B>(outcome: &Result<Response<B>, BoxError>) -> bool {
    match outcome {
        Ok(resp) => {
            let status = resp.status();
            matches!(
                status,
                StatusCode::INTERNAL_SERVER_ERROR
                    | StatusCode::GATEWAY_TIMEOUT
                    | StatusCode::TOO_MANY_REQUESTS
            ) || (status.is_server_error() && resp.headers().contains_key(RETRY_AFTER))
        }
        Err(e) => connection_lost(&**e),
    }
}

/// The wait after `step` failed attempts (1-based).
fn wait(step: u32) -> Duration {
    let base = REVIEW_BACKOFF_INITIAL.mul_f64(REVIEW_BACKOFF_FACTOR.powi(step.saturating_sub(1) as i32));
    base.mul_f64(1.0 + REVIEW_BACKOFF_JITTER * rand::rng().random::<f64>())
}

/// Adds [`ReviewRetry`] to a client.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReviewRetryLayer;

impl<S> Layer<S> for ReviewRetryLayer {
    type Service = ReviewRetry<S>;
    fn layer(&self, inner: S) -> Self::Service {
        ReviewRetry { inner }
    }
}

/// Sends a request again while [`transient`] says so, at most [`REVIEW_ATTEMPTS`] times in all.
#[derive(Debug, Clone)]
pub struct ReviewRetry<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<Body>> for ReviewRetry<S>
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
        let mut again = copy(&req);
        // The first attempt uses the service made ready by `poll_ready`; the rest wait for a clone.
        let fresh = self.inner.clone();
        let mut svc = std::mem::replace(&mut self.inner, fresh);
        let first = svc.call(req);
        Box::pin(async move {
            let mut outcome = first.await.map_err(Into::into);
            for step in 1..REVIEW_ATTEMPTS {
                if !transient(&outcome) {
                    break;
                }
                let Some(next) = again.take() else { break };
                let wait = wait(step);
                tracing::debug!(
                    path = next.uri().path(),
                    ?wait,
                    step,
                    "retrying a delegated review"
                );
                drop(outcome);
                tokio::time::sleep(wait).await;
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

#[cfg(test)]
#[path = "review_retry_tests.rs"]
mod tests;
