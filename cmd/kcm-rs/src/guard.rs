//! A client middleware that refuses some requests before they leave the process: shadow mode's
//! read-only guard and the sharded write fence are both one of these. A refused request fails like a
//! transport error, so the controller retries it (and whoever may write then does); the event
//! recorder does not, for a refusal marked `controller::RefusedHere`.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use http::Request;
use kube::client::Body;
use tower::Service;

/// Decides, just before a request is sent, whether it may go.
pub trait Guard {
    /// `Some(why)` refuses the request.
    fn refuse(&self, req: &Request<Body>) -> Option<tower::BoxError>;
}

/// `inner` behind `guard`.
#[derive(Debug, Clone)]
pub struct Guarded<S, G> {
    pub guard: G,
    pub inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, G> Service<Request<Body>> for Guarded<S, G>
where
    S: Service<Request<Body>>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    G: Guard,
{
    type Response = S::Response;
    type Error = tower::BoxError;
    type Future = BoxFuture<Result<S::Response, tower::BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if let Some(err) = self.guard.refuse(&req) {
            return Box::pin(async move { Err(err) });
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}
