//! A bound on setting a connection up, TCP and TLS together. client-go's transport bounds the TCP
//! dial at 30 s and the TLS handshake at 10 s (`TLSHandshakeTimeout`); hyper's connector bounds only
//! the dial, and rustls's handshake waits as long as the peer does. Every client shares one
//! connection (`crate::transport`), so a peer that takes the TCP connection and never completes the
//! handshake (a load balancer in front of a stopped API server) would hold every request, watch and
//! Lease renewal. kube's own client puts `hyper-timeout`'s connector there; its streams also wrap
//! every read and write, so the one-line bound here is written out instead.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use http::Uri;
use tower::{BoxError, Service};

/// The dial's bound and the handshake's after it (client-go transport/cache.go: `Dialer.Timeout`
/// 30 s, `TLSHandshakeTimeout` 10 s): the whole set-up may take their sum.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30 + 10);

/// No connection within the bound.
#[derive(Debug, thiserror::Error)]
#[error("connecting to the API server took longer than {0:?} (TCP, any proxy handshake, TLS)")]
pub struct ConnectTimedOut(pub Duration);

/// A connector whose connections are set up within `limit`, or fail.
#[derive(Debug, Clone)]
pub struct ConnectTimeout<C> {
    inner: C,
    limit: Duration,
}

impl<C> ConnectTimeout<C> {
    pub fn new(inner: C, limit: Duration) -> Self {
        Self { inner, limit }
    }
}

impl<C> Service<Uri> for ConnectTimeout<C>
where
    C: Service<Uri>,
    C::Response: Send + 'static,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (limit, connecting) = (self.limit, self.inner.call(uri));
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(connected) => connected.map_err(Into::into),
                Err(_) => Err(ConnectTimedOut(limit).into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_never_completes_fails_at_the_bound() {
        let never = tower::service_fn(|_: Uri| std::future::pending::<Result<(), BoxError>>());
        let started = tokio::time::Instant::now();
        let err = ConnectTimeout::new(never, CONNECT_TIMEOUT)
            .oneshot(Uri::from_static("https://127.0.0.1:6443"))
            .await
            .unwrap_err();
        assert!(err.is::<ConnectTimedOut>(), "{err}");
        assert_eq!(started.elapsed(), CONNECT_TIMEOUT);
    }
}
