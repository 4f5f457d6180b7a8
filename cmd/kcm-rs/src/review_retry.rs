//! Delegated reviews sent again after a transient failure, as k8s.io/apiserver's delegating
//! authenticator and authorizer send theirs (`webhook.WithExponentialBackoff` with
//! `DefaultAuthWebhookRetryBackoff`, retrying what `webhook.DefaultShouldRetry` calls transient;
//! see [`transient`]). [`REVIEW_ATTEMPTS`] attempts in all, the waits between them growing from
//! [`REVIEW_BACKOFF_INITIAL`], each attempt through the client's own Retry-After rules
//! ([`crate::retry`], beneath this policy's layer). The TokenReview's 10 s timeout bounds the whole
//! sequence and the SubjectAccessReview's each attempt, as upstream's request timeout and client
//! timeout do. A review changes nothing, so one whose connection was reset may be sent again where a
//! write may not. Without this, a `/metrics` scrape during an API server's restart failed (401, or
//! 500 for an authorization) where KCM's retries would have got it answered.

use std::time::Duration;

use http::{Method, Response, StatusCode};
use rand::Rng as _;
use tower::BoxError;

use crate::retry::{Policy, RetryLayer, connection_reset};

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

/// Whether `outcome` is worth another attempt of the review (`webhook.DefaultShouldRetry` on
/// client-go's errors): 429; any 5xx but 503 (500 and a body-less 502 read as InternalError, 504 as
/// Timeout; a 503 is ServiceUnavailable, which the client's own Retry-After rules may have retried
/// beneath); a connection reset, or closed for unanswered pings.
fn transient<B>(outcome: &Result<Response<B>, BoxError>) -> bool {
    match outcome {
        Ok(resp) => {
            let status = resp.status();
            status == StatusCode::TOO_MANY_REQUESTS
                || (status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE)
        }
        Err(e) => connection_reset(&**e),
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
