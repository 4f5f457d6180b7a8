//! The write fence: no write for a namespace leaves this process unless this replica holds the
//! namespace's shard *now*.
//!
//! A shard's gate is open from when its caches synced (after a list that began after acquisition)
//! until its last successful renewal attempt's start plus the renew deadline: another replica can take
//! the shard over only after seeing the Lease unchanged for a lease duration, longer than that
//! (`docs/scale-out.md`, "Why two replicas can never act on one shard at once"). The gate closes
//! before a release and at once on a failed renewal. It sits in the controllers' clients below the
//! retries and the token bucket, so every attempt of a write is checked when it is about to go out,
//! and an attempt is bounded by the window it left in: it carries `?timeout=` of what is left, and is
//! dropped when the window ends without an answer. Reads pass, and so do requests that name no
//! namespace.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use http::{Method, Request};
use informer::Shard;
use kube::client::Body;
use parking_lot::Mutex;
use tokio::time::Instant;
use tower::{Layer, Service};

type SyncedFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// The gates of one replica's shards, by index.
pub struct WriteFence {
    count: u32,
    gates: Mutex<HashMap<u32, Gate>>,
}

struct Gate {
    /// Writes may leave until then.
    until: Instant,
    /// The shard's controllers' cache checks; writes wait for all of them.
    synced: Vec<SyncedFn>,
}

impl std::fmt::Debug for WriteFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open: Vec<u32> = self.gates.lock().keys().copied().collect();
        f.debug_struct("WriteFence")
            .field("count", &self.count)
            .field("gates", &open)
            .finish()
    }
}

impl WriteFence {
    pub fn new(count: u32) -> Self {
        Self {
            count,
            gates: Mutex::new(HashMap::new()),
        }
    }

    /// A renewal of `shard` that started at some t0 succeeded: writes may leave until `until`
    /// (t0 + renew deadline).
    pub fn renewed(&self, shard: Shard, until: Instant) {
        let mut gates = self.gates.lock();
        let gate = gates.entry(shard.index()).or_insert_with(|| Gate {
            until,
            synced: vec![Arc::new(|| false)],
        });
        gate.until = gate.until.max(until);
    }

    /// The shard's controllers are running: writes wait for these caches.
    pub fn caches(&self, shard: Shard, synced: Vec<SyncedFn>) {
        if let Some(gate) = self.gates.lock().get_mut(&shard.index()) {
            gate.synced = synced;
        }
    }

    pub fn close(&self, shard: Shard) {
        self.gates.lock().remove(&shard.index());
    }

    /// Whether a write to namespace `ns` may leave at `now`.
    #[cfg(test)]
    pub fn allows(&self, ns: &str, now: Instant) -> bool {
        self.open_until(ns, now).is_ok()
    }

    /// Until when writes to namespace `ns` may leave, if they may at `now`; else why not.
    pub fn open_until(&self, ns: &str, now: Instant) -> Result<Instant, Closed> {
        let shard = Shard::of_namespace(ns, self.count).map_err(|_| Closed::NotHeld)?;
        let gates = self.gates.lock();
        let gate = gates.get(&shard.index()).ok_or(Closed::NotHeld)?;
        if now >= gate.until {
            Err(Closed::Unconfirmed)
        } else if !gate.synced.iter().all(|s| s()) {
            Err(Closed::Syncing)
        } else {
            Ok(gate.until)
        }
    }
}

/// Why the fence refuses a write now: said in the error, so that a failed sync's log tells a shard
/// that moved from one still syncing after a takeover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// This replica does not hold the namespace's shard.
    NotHeld,
    /// It holds it, but not every controller's caches have synced yet.
    Syncing,
    /// Its hold was last confirmed longer than the renew deadline ago.
    Unconfirmed,
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Closed::NotHeld => "this replica does not hold the shard",
            Closed::Syncing => "this replica holds the shard and waits for its caches to sync",
            Closed::Unconfirmed => "this replica's hold on the shard is not confirmed renewed",
        })
    }
}

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
/// so that the API server gives it up at the window's end, and is dropped if no answer came by then.
/// No fence (unsharded, or the Leases' and informers' clients) lets all pass.
#[derive(Debug, Clone)]
pub struct Fenced<S> {
    fence: Option<Arc<WriteFence>>,
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> Service<Request<Body>> for Fenced<S>
where
    S: Service<Request<Body>>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
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
        let window = fence
            .open_until(&namespace, now)
            .map(|until| (until, until - now))
            .and_then(|(until, left)| {
                if left.as_millis() > 0 {
                    Ok((until, left))
                } else {
                    Err(Closed::Unconfirmed)
                }
            });
        let (until, left) = match window {
            Ok(w) => w,
            Err(why) => {
                let err = ShardNotHeld {
                    method: req.method().clone(),
                    path: req.uri().path().to_owned(),
                    namespace,
                    why,
                };
                return Box::pin(async move { Err(err.into()) });
            }
        };
        with_timeout(&mut req, left);
        let (method, path) = (req.method().clone(), req.uri().path().to_owned());
        let fut = self.inner.call(req);
        Box::pin(async move {
            match tokio::time::timeout_at(until, fut).await {
                Ok(answer) => answer.map_err(Into::into),
                Err(_) => Err(WindowClosed {
                    method,
                    path,
                    namespace,
                }
                .into()),
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
    use std::time::Duration;

    use super::*;

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

    #[test]
    fn a_write_passes_only_while_the_shard_is_held_synced_and_renewed() {
        let fence = WriteFence::new(2);
        let ns = (0..)
            .map(|i| format!("ns-{i}"))
            .find(|n| Shard::new(0, 2).unwrap().contains_namespace(n))
            .unwrap();
        let shard = Shard::new(0, 2).unwrap();
        let t = Instant::now();
        assert_eq!(fence.open_until(&ns, t), Err(Closed::NotHeld));
        fence.renewed(shard, t + Duration::from_secs(10));
        assert_eq!(
            fence.open_until(&ns, t),
            Err(Closed::Syncing),
            "caches not synced"
        );
        fence.caches(shard, vec![Arc::new(|| true)]);
        assert!(fence.allows(&ns, t));
        assert_eq!(
            fence.open_until(&ns, t + Duration::from_secs(10)),
            Err(Closed::Unconfirmed),
            "past the renewal's window"
        );
        fence.renewed(shard, t + Duration::from_secs(12));
        assert!(fence.allows(&ns, t + Duration::from_secs(11)));
        fence.close(shard);
        assert!(!fence.allows(&ns, t));
        let other = (0..)
            .map(|i| format!("ns-{i}"))
            .find(|n| !shard.contains_namespace(n))
            .unwrap();
        assert!(!fence.allows(&other, t), "another shard");
    }
}
