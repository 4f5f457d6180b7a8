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

use std::time::Duration;

use http::{Method, Response, StatusCode, header::RETRY_AFTER};
use rand::Rng as _;
use tower::BoxError;

use crate::retry::{Policy, RetryLayer, connection_lost};

/// Attempts of one review, the first included (apiserver `DefaultAuthWebhookRetryBackoff`: `Steps`).
pub const REVIEW_ATTEMPTS: u32 = 5;
/// The first wait (`Duration`), growing by [`REVIEW_BACKOFF_FACTOR`] after each, each lengthened by
/// up to [`REVIEW_BACKOFF_JITTER`] of itself (`Factor`, `Jitter`), as `wait.Backoff.Step` does.
pub const REVIEW_BACKOFF_INITIAL: Duration = Duration::from_millis(500);
pub const REVIEW_BACKOFF_FACTOR: f64 = 1.5;
pub const REVIEW_BACKOFF_JITTER: f64 = 0.2;

/// The backoff of [`crate::retry::Retry`] for the review clients.
pub type ReviewRetryLayer = RetryLayer<ReviewBackoff>;

/// Upstream's review backoff: another attempt while [`transient`] says so, at most
/// [`REVIEW_ATTEMPTS`] in all.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReviewBackoff;

impl Policy for ReviewBackoff {
    fn wait<B>(&self, attempt: u32, _: &Method, outcome: &Result<Response<B>, BoxError>) -> Option<Duration> {
        (attempt < REVIEW_ATTEMPTS && transient(outcome)).then(|| wait(attempt))
    }
}

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

#[cfg(test)]
#[path = "review_retry_tests.rs"]
mod tests;
