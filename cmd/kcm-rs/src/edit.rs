//! A client middleware that changes each request before it goes on: the User-Agent every client sets
//! and the `shardSelector` a shard's informers add are both one of these.

use std::task::{Context, Poll};

use http::Request;
use tower::Service;

/// Changes one request in place.
pub trait Edit {
    fn edit<B>(&self, req: &mut Request<B>);
}

/// `inner` behind `edit`.
#[derive(Debug, Clone)]
pub struct Edited<S, E> {
    pub edit: E,
    pub inner: S,
}

impl<S, B, E> Service<Request<B>> for Edited<S, E>
where
    S: Service<Request<B>>,
    E: Edit,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        self.edit.edit(&mut req);
        self.inner.call(req)
    }
}
