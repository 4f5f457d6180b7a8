//! The write fence: no write for a namespace leaves this process unless this replica holds the
//! namespace's shard *now*.
//!
//! A shard's gate is open from when its caches synced (after a list that began after acquisition)
//! until its last successful renewal attempt's start plus the renew deadline: another replica can take
//! the shard over only after seeing the Lease unchanged for a lease duration, longer than that
//! (`docs/scale-out.md`, "Why two replicas can never act on one shard at once"). The gate closes
//! before a release and at once on a failed renewal. It sits in the controllers' clients inside the
//! token bucket, so a write that waited for its token is checked when it is about to go out; reads
//! pass, and so do requests that name no namespace.

use std::{collections::HashMap, sync::Arc};

use http::{Method, Request};
use informer::Shard;
use kube::client::Body;
use parking_lot::Mutex;
use tokio::time::Instant;
use tower::Layer;

use crate::guard::{Guard, Guarded};

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
    pub fn allows(&self, ns: &str, now: Instant) -> bool {
        let Ok(shard) = Shard::of_namespace(ns, self.count) else {
            return false;
        };
        self.gates
            .lock()
            .get(&shard.index())
            .is_some_and(|g| now < g.until && g.synced.iter().all(|s| s()))
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

/// A write refused by the fence: this replica does not hold the namespace's shard now. Whoever
/// holds it will make the write, from its own caches.
#[derive(Debug, thiserror::Error)]
#[error("refused {method} {path}: this replica does not hold the shard of namespace {namespace} now")]
pub struct ShardNotHeld {
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
        Guarded {
            guard: FenceGuard(self.0.clone()),
            inner,
        }
    }
}

/// The fence of one client; no fence (unsharded, or the Leases' and informers' clients) lets all pass.
#[derive(Debug, Clone)]
pub struct FenceGuard(Option<Arc<WriteFence>>);

/// A client whose writes the fence checks.
pub type Fenced<S> = Guarded<S, FenceGuard>;

impl Guard for FenceGuard {
    fn refuse(&self, req: &Request<Body>) -> Option<tower::BoxError> {
        let fence = self.0.as_ref()?;
        if req.method() == Method::GET {
            return None;
        }
        let ns = namespace_of(req.uri().path())?;
        (!fence.allows(ns, Instant::now())).then(|| {
            ShardNotHeld {
                method: req.method().clone(),
                path: req.uri().path().to_owned(),
                namespace: ns.to_owned(),
            }
            .into()
        })
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
        assert!(!fence.allows(&ns, t), "not held");
        fence.renewed(shard, t + Duration::from_secs(10));
        assert!(!fence.allows(&ns, t), "caches not synced");
        fence.caches(shard, vec![Arc::new(|| true)]);
        assert!(fence.allows(&ns, t));
        assert!(
            !fence.allows(&ns, t + Duration::from_secs(10)),
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
