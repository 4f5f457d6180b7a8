//! The fence as a tower middleware in the controllers' clients ([`super::WriteFence`] keeps the
//! gates): it sits below the retries and the token bucket, so every attempt of a write is checked
//! when it is about to go out; an attempt is bounded by the window it left in (it carries `?timeout=`
//! of what is left, less [`ANSWER_MARGIN`], and is dropped when the window ends without an answer),
//! and counted in flight until it ends, so that a released shard's Lease goes only after every write
//! of the hold was answered. Reads pass, and so do requests that name no namespace.
//!
//! Why the margin: kube-apiserver counts `?timeout=` from when the request arrived, so a deadline
//! equal to the window ran out after the window did, and a write applied late in the window (a 201 on
//! the server's side) could still be dropped here unanswered. Its controller, like upstream's after
//! any failed create, then takes the object as not made and makes another: under load, the sharded
//! e2e suite saw one extra pod this way, with no 504 to account for it. With the margin the server's
//! answer, the object or its timeout filter's 504, is back before the window ends unless the request
//! spent longer than the margin on the way there and back.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use http::{Method, Request, StatusCode};
use kube::client::Body;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::{Closed, WriteFence};

/// The namespace a request path names: `/api/v1/namespaces/<ns>/…` or `/apis/<g>/<v>/namespaces/<ns>/…`.
/// A namespace object itself (`/api/v1/namespaces/<ns>`) names none.
fn namespace_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/v1/namespaces/").or_else(|| {
        let after = path.strip_prefix("/apis/")?;
        let mut parts = after.splitn(3, '/');
        let (_, _, rest) = (parts.next()?, parts.next()?, parts.next()?);
        rest.strip_prefix("namespaces/")
    })?;
    let (ns, below) = rest.split_once('/')?;
    (!below.is_empty()).then_some(ns)
}

/// A write refused by the fence: this replica may not write the namespace now. Whoever holds its
/// shard will make the write, from its own caches (or this replica, once its caches synced).
#[derive(Debug, thiserror::Error)]
#[error("refused {method} {path}: {why} of namespace {namespace}")]
pub struct ShardNotHeld {
    method: Method,
    path: String,
    namespace: String,
    why: Closed,
    /// Marks a refusal for a shard this replica does not hold as final: nothing sends it again (the
    /// event recorder's tries). A shard still syncing, or whose renewal is not yet confirmed, may
    /// take the write a few seconds later, so those refusals carry no mark.
    #[source]
    refused: Option<controller::RefusedHere>,
}

/// A write that passed the fence but had no answer when the shard's window closed: it was dropped,
/// unsent if it still waited for a connection, a stream or credentials. Whether the server applied
/// it is unknown, as after any timeout; the controller's next sync reads what happened.
#[derive(Debug, thiserror::Error)]
#[error("dropped {method} {path}: the write window of namespace {namespace}'s shard closed before an answer")]
pub struct WindowClosed {
    method: Method,
    path: String,
    namespace: String,
}

/// Adds the fence to a client.
#[derive(Debug, Clone)]
pub struct FenceLayer(pub Option<Arc<WriteFence>>);

impl<S> Layer<S> for FenceLayer {
    type Service = Fenced<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Fenced {
            fence: self.0.clone(),
            inner,
        }
    }
}

/// A client whose writes the fence checks, one attempt at a time (it sits below the retries): a
/// write leaves only while its shard's gate is open, carries `?timeout=` of the window that is left
/// less [`ANSWER_MARGIN`] so that the API server gives it up and answers before the window's end,
/// and is dropped if no answer came by then.
/// No fence (unsharded, or the Leases' and informers' clients) lets all pass.
#[derive(Debug, Clone)]
pub struct Fenced<S> {
    fence: Option<Arc<WriteFence>>,
    inner: S,
}

/// How much sooner than its window a write's `?timeout=` ends (see the module's docs). A second is
/// many times a loaded API server's round trip, and a tenth of the renew deadline a window lasts.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(1);

/// The `?timeout=` of a write with `left` of its window: [`ANSWER_MARGIN`] less, or half of a window
/// shorter than two margins, and never zero (which kube-apiserver reads as its own 60 s default).
fn server_timeout(left: Duration) -> Duration {
    let timeout = if left > ANSWER_MARGIN * 2 {
        left - ANSWER_MARGIN
    } else {
        left / 2
    };
    timeout.max(Duration::from_millis(1))
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<Body>> for Fenced<S>
where
    S: Service<Request<Body>, Response = http::Response<B>>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = tower::BoxError;
    type Future = BoxFuture<Result<S::Response, tower::BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let fenced = self
            .fence
            .as_ref()
            .filter(|_| req.method() != Method::GET)
            .and_then(|f| Some((f, namespace_of(req.uri().path())?.to_owned())));
        let Some((fence, namespace)) = fenced else {
            let fut = self.inner.call(req);
            return Box::pin(async move { fut.await.map_err(Into::into) });
        };
        let now = Instant::now();
        let window = fence.begin(&namespace, now).and_then(|(until, write)| {
            let left = until - now;
            if left.as_millis() > 0 {
                Ok((until, left, write))
            } else {
                write.answered(); // never sent
                Err(Closed::Unconfirmed)
            }
        });
        let (until, left, write) = match window {
            Ok(w) => w,
            Err(why) => {
                let err = ShardNotHeld {
                    method: req.method().clone(),
                    path: req.uri().path().to_owned(),
                    namespace,
                    refused: matches!(why, Closed::NotHeld).then_some(controller::RefusedHere),
                    why,
                };
                return Box::pin(async move { Err(err.into()) });
            }
        };
        with_timeout(&mut req, server_timeout(left));
        let (method, path) = (req.method().clone(), req.uri().path().to_owned());
        let fut = self.inner.call(req);
        Box::pin(async move {
            match tokio::time::timeout_at(until, fut).await {
                Ok(answer) => {
                    // A 504 is kube-apiserver's timeout filter giving up while the handler may still
                    // commit; an error is a lost connection. Neither says the write will not land.
                    if answer
                        .as_ref()
                        .is_ok_and(|r| r.status() != StatusCode::GATEWAY_TIMEOUT)
                    {
                        write.answered();
                    }
                    answer.map_err(Into::into)
                }
                Err(_) => {
                    // Whether the server applied it is unknown: said once per write, so that an
                    // object made twice can be traced to it.
                    tracing::warn!(%method, %path, %namespace, "write dropped unanswered: its shard's window closed");
                    Err(WindowClosed {
                        method,
                        path,
                        namespace,
                    }
                    .into())
                }
            }
        })
    }
}

/// Sets the request's `timeout` query parameter (kube-apiserver's request deadline, a Go duration)
/// to `left`, in whole milliseconds, replacing one an earlier attempt set.
fn with_timeout<B>(req: &mut Request<B>, left: Duration) {
    let uri = req.uri();
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("timeout="))
        .collect();
    let timeout = format!("timeout={}ms", left.as_millis());
    query.push(&timeout);
    let path_and_query = format!("{}?{}", uri.path(), query.join("&"));
    let mut parts = uri.clone().into_parts();
    match path_and_query.parse() {
        Ok(pq) => parts.path_and_query = Some(pq),
        Err(_) => return,
    }
    if let Ok(new) = http::Uri::from_parts(parts) {
        *req.uri_mut() = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_gives_a_write_up_before_its_window_ends() {
        let s = Duration::from_secs;
        assert_eq!(server_timeout(s(10)), s(9));
        assert_eq!(server_timeout(s(2)), s(1));
        assert_eq!(
            server_timeout(Duration::from_millis(500)),
            Duration::from_millis(250)
        );
        assert_eq!(server_timeout(Duration::from_millis(1)), Duration::from_millis(1));
    }

    #[test]
    fn the_namespace_is_read_from_namespaced_paths_only() {
        assert_eq!(namespace_of("/api/v1/namespaces/ns1/pods"), Some("ns1"));
        assert_eq!(namespace_of("/api/v1/namespaces/ns1/pods/p/status"), Some("ns1"));
        assert_eq!(
            namespace_of("/apis/apps/v1/namespaces/ns2/replicasets/r"),
            Some("ns2")
        );
        assert_eq!(
            namespace_of("/apis/events.k8s.io/v1/namespaces/ns3/events"),
            Some("ns3")
        );
        assert_eq!(namespace_of("/api/v1/namespaces/ns1"), None);
        assert_eq!(
            namespace_of("/apis/authorization.k8s.io/v1/subjectaccessreviews"),
            None
        );
        assert_eq!(namespace_of("/api/v1/nodes/n"), None);
    }
}
