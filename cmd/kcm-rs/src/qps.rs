//! The token bucket in front of each client (client-go's `tokenBucketRateLimiter`, KCM's
//! `--kube-api-qps` and `--kube-api-burst`), as a tower layer over governor's limiter.

use std::{
    future::Future as _,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::Duration,
};

use governor::{DefaultDirectRateLimiter, clock::Clock as _};
use http::Request;
use tower::Service;

use crate::rest_metrics::RestClientMetrics;

/// Waits for a token in `poll_ready`, so no request is sent beyond the rate. A clone shares the
/// bucket but has taken no token. The first attempt of a watch uses none (`retry::unthrottled`, as
/// client-go): the token taken for it stays for the next request, so a run of watches waits for
/// one token at most, where client-go's wait for none; unlike client-go's, a watch queued behind a
/// request that waits for a token waits with it.
pub struct Qps<S> {
    inner: S,
    /// `None`: every request passes at once.
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A token was taken for the next call.
    permitted: bool,
    /// When the wait for the next token began.
    since: Option<tokio::time::Instant>,
    /// How long the token held for the next call was waited for.
    waited: Duration,
    /// Where that wait is observed, when the token is used.
    metrics: Option<Arc<RestClientMetrics>>,
}

impl<S> Qps<S> {
    /// `inner` behind `limiter` (none: no limit), observing each token's wait in `metrics`.
    pub fn new(
        inner: S,
        limiter: Option<Arc<DefaultDirectRateLimiter>>,
        metrics: Option<Arc<RestClientMetrics>>,
    ) -> Self {
        Self {
            inner,
            limiter,
            wait: None,
            permitted: false,
            since: None,
            waited: Duration::ZERO,
            metrics,
        }
    }
}

impl<S: Clone> Clone for Qps<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            limiter: self.limiter.clone(),
            wait: None,
            permitted: false,
            since: None,
            waited: Duration::ZERO,
            metrics: self.metrics.clone(),
        }
    }
}

impl<S> std::fmt::Debug for Qps<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qps")
            .field("permitted", &self.permitted)
            .finish_non_exhaustive()
    }
}

impl<S, B> Service<Request<B>> for Qps<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while let Some(limiter) = self.limiter.as_ref().filter(|_| !self.permitted) {
            let since = *self.since.get_or_insert_with(tokio::time::Instant::now);
            if let Some(wait) = self.wait.as_mut() {
                ready!(wait.as_mut().poll(cx));
                self.wait = None;
            }
            match limiter.check() {
                Ok(()) => {
                    self.permitted = true;
                    self.since = None;
                    self.waited = since.elapsed();
                }
                Err(not_until) => {
                    let delay = not_until.wait_time_from(limiter.clock().now());
                    self.wait = Some(Box::pin(tokio::time::sleep(delay)));
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if !crate::retry::unthrottled(&req) {
            if let Some(m) = self.metrics.as_ref().filter(|_| self.permitted) {
                m.throttled(req.method(), self.waited);
            }
            self.permitted = false;
        }
        self.inner.call(req)
    }
}
