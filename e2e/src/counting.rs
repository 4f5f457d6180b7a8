//! A kube client that counts its LIST and WATCH requests per resource path, to check that informers
//! share watches.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use http::Request;
use kube::{Client, client::ClientBuilder};
use tower::Service;

/// LIST and WATCH requests seen for paths ending in `suffix` (e.g. `/pods`).
#[derive(Debug)]
pub struct RequestCounter {
    suffix: String,
    lists: AtomicUsize,
    watches: AtomicUsize,
}

impl RequestCounter {
    pub fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }
    pub fn watches(&self) -> usize {
        self.watches.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct Counting<S> {
    inner: S,
    counter: Arc<RequestCounter>,
}

impl<S, B> Service<Request<B>> for Counting<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if req.method() == http::Method::GET && req.uri().path().ends_with(&self.counter.suffix) {
            let watch = req
                .uri()
                .query()
                .unwrap_or_default()
                .split('&')
                .any(|p| p == "watch=true");
            let n = if watch {
                &self.counter.watches
            } else {
                &self.counter.lists
            };
            n.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.call(req)
    }
}

/// A client for `config` that counts LIST/WATCH requests on paths ending in `suffix`.
pub fn counting_client(config: kube::Config, suffix: &str) -> (Client, Arc<RequestCounter>) {
    let counter = Arc::new(RequestCounter {
        suffix: suffix.to_owned(),
        lists: AtomicUsize::new(0),
        watches: AtomicUsize::new(0),
    });
    let c = counter.clone();
    let builder = ClientBuilder::try_from(config).expect("client from kubeconfig");
    let client = builder
        .with_layer(&tower::layer::layer_fn(move |inner| Counting {
            inner,
            counter: c.clone(),
        }))
        .build();
    (client, counter)
}
