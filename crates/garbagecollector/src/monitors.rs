//! The monitors: one metadata informer per resource the API server can list, watch and delete,
//! started and stopped as discovery changes (upstream `GraphBuilder.syncMonitors` and
//! `GarbageCollector.Sync`). Every event becomes a [`Change`] on one channel, which the graph task
//! applies in the order received.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use controller::discovery::{Discovered, DiscoveredResource};
use futures::{StreamExt as _, future::BoxFuture};
use informer::{
    DeletedObject, EventHandler, HandlerRegistration, ListerWatcher, ReflectorConfig, SharedInformer,
    SharedInformerFactory, Transform, WatchStream, informer::Scope,
};
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, ObjectList, WatchParams},
};
use parking_lot::Mutex;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::{
    graph::{Change, Observed},
    identity::Identity,
    operations::Metadata,
};

/// Resources never monitored (upstream `DefaultIgnoredResources`, KCM's `GCIgnoredResources`):
/// events, by group and resource.
pub const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// A monitored resource, by group, version and resource name.
type Gvr = (String, String, String);

/// The resources discovery found that the collector monitors.
pub fn deletable(found: &Discovered) -> BTreeMap<Gvr, DiscoveredResource> {
    found
        .resources
        .iter()
        .filter(|r| ["delete", "list", "watch"].iter().all(|v| r.supports(v)))
        .filter(|r| !IGNORED.contains(&(r.group.as_str(), r.resource.as_str())))
        .map(|r| {
            (
                (r.group.clone(), r.version.clone(), r.resource.clone()),
                r.clone(),
            )
        })
        .collect()
}

/// Lists and watches one resource's objects as `PartialObjectMetadata`: the collector reads nothing
/// else, and the API server sends nothing else.
struct MetadataListWatch(Api<DynamicObject>);

impl ListerWatcher<Metadata> for MetadataListWatch {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<Metadata>>> {
        Box::pin(self.0.list_metadata(params))
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<Metadata>>> {
        Box::pin(async move { Ok(self.0.watch_metadata(params, version).await?.boxed()) })
    }
}

/// Keeps of an object's metadata what the graph reads.
fn slim(m: &mut Metadata) {
    let meta = &mut m.metadata;
    meta.managed_fields = None;
    meta.annotations = None;
    meta.labels = None;
}

/// Turns one resource's events into changes of the graph.
struct Handler {
    kind: String,
    api_version: String,
    tx: UnboundedSender<Change>,
}

impl Handler {
    fn observed(&self, m: &Metadata) -> Observed {
        let meta = &m.metadata;
        Observed {
            identity: Identity {
                kind: self.kind.clone(),
                api_version: self.api_version.clone(),
                namespace: meta.namespace.clone().unwrap_or_default(),
                name: meta.name.clone().unwrap_or_default(),
                uid: meta.uid.clone().unwrap_or_default(),
            },
            owners: meta.owner_references.clone().unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
        }
    }

    fn send(&self, change: Change) {
        // The graph task is gone only when the collector stops.
        let _ = self.tx.send(change);
    }
}

impl EventHandler<Metadata> for Handler {
    fn on_add(&self, obj: &Arc<Metadata>, _: bool) {
        self.send(Change::Added(self.observed(obj)));
    }

    fn on_update(&self, old: &Arc<Metadata>, new: &Arc<Metadata>) {
        self.send(Change::Updated {
            old: self.observed(old),
            new: self.observed(new),
        });
    }

    fn on_delete(&self, obj: &DeletedObject<Metadata>) {
        self.send(Change::Deleted(self.observed(obj.object())));
    }
}

struct Monitor {
    registration: HandlerRegistration,
    stop: CancellationToken,
}

/// Makes a resource's reflector settings.
type ConfigFor = dyn Fn(&str, Transform<Metadata>) -> ReflectorConfig<Metadata> + Send + Sync;

/// The running monitors.
pub struct Monitors {
    /// The shared informers' client: the monitors list and watch at its rate limits, not the
    /// collector's, whose requests are its deletions and patches (KCM's monitors are shared
    /// informers).
    client: Client,
    /// The shared informers' reflector settings (watch-list, metrics) for a resource.
    config: Box<ConfigFor>,
    tx: UnboundedSender<Change>,
    running: Mutex<BTreeMap<Gvr, Monitor>>,
    /// Monitors of a resource discovery now serves in another version, kept until the new
    /// version's monitor has synced: stopped at once, the deletions between the two would never
    /// reach the graph, and their dependents would never be looked at.
    retiring: Mutex<Vec<(Gvr, Monitor)>>,
}

impl std::fmt::Debug for Monitors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitors")
            .field("running", &self.running.lock().len())
            .finish_non_exhaustive()
    }
}

impl Monitors {
    pub fn new(factory: &SharedInformerFactory, tx: UnboundedSender<Change>) -> Self {
        Self {
            client: factory.client().clone(),
            config: Box::new(factory.reflector_configs()),
            tx,
            running: Mutex::new(BTreeMap::new()),
            retiring: Mutex::new(Vec::new()),
        }
    }

    /// Whether there are monitors and every one has delivered its initial list (none is not
    /// synced, as upstream's `IsSynced` says before the first discovery).
    pub fn has_synced(&self) -> bool {
        let running = self.running.lock();
        !running.is_empty() && running.values().all(|m| m.registration.has_synced())
    }

    /// Monitors exactly `wanted`, keeping those of group versions discovery failed on (`failed`)
    /// that have synced, as upstream does rather than drop a resource for one bad discovery.
    /// Returns whether anything changed.
    pub fn sync(
        &self,
        mut wanted: BTreeMap<Gvr, DiscoveredResource>,
        failed: &BTreeSet<String>,
        parent: &CancellationToken,
    ) -> bool {
        let mut running = self.running.lock();
        self.retire_replaced(&running);
        let group_version = |(g, v, _): &Gvr| controller::discovery::group_version(g, v);
        let kept: Vec<Gvr> = running
            .iter()
            .filter(|(k, m)| failed.contains(&group_version(k)) && m.registration.has_synced())
            .map(|(k, _)| k.clone())
            .collect();
        let stale: Vec<Gvr> = running
            .keys()
            .filter(|k| !wanted.contains_key(*k) && !kept.contains(k))
            .cloned()
            .collect();
        let same_resource = |(g, _, r): &Gvr, (wg, _, wr): &Gvr| g == wg && r == wr;
        for k in &stale {
            if let Some(m) = running.remove(k) {
                if wanted.keys().any(|w| same_resource(k, w)) {
                    self.retiring.lock().push((k.clone(), m));
                } else {
                    m.stop.cancel();
                }
            }
        }
        wanted.retain(|k, _| !running.contains_key(k));
        let changed = !stale.is_empty() || !wanted.is_empty();
        if changed {
            tracing::info!(
                added = ?wanted.keys().collect::<Vec<_>>(),
                removed = ?stale,
                "syncing garbage collector with updated resources from discovery"
            );
        }
        for (k, r) in wanted {
            let stop = parent.child_token();
            let registration = self.start(&r, &stop);
            running.insert(k, Monitor { registration, stop });
        }
        changed
    }

    /// Stops the retiring monitors whose resource's new monitor has synced, or that no running
    /// monitor replaces any more.
    fn retire_replaced(&self, running: &BTreeMap<Gvr, Monitor>) {
        self.retiring.lock().retain(|((g, _, r), old)| {
            let replacement = running.iter().find(|((rg, _, rr), _)| rg == g && rr == r);
            let keep = replacement.is_some_and(|(_, m)| !m.registration.has_synced());
            if !keep {
                old.stop.cancel();
            }
            keep
        });
    }

    fn start(&self, r: &DiscoveredResource, stop: &CancellationToken) -> HandlerRegistration {
        let api = Api::<DynamicObject>::all_with(self.client.clone(), &r.api_resource());
        let name = if r.group.is_empty() {
            r.resource.clone()
        } else {
            format!("{}.{}", r.resource, r.group)
        };
        let config = (self.config)(&name, Arc::new(slim));
        let informer = SharedInformer::new(name, vec![Scope::new(MetadataListWatch(api), None)], config);
        let registration = informer.add_event_handler(
            Handler {
                kind: r.kind.clone(),
                api_version: r.api_resource().api_version,
                tx: self.tx.clone(),
            },
            None,
        );
        informer.run(stop.clone());
        registration
    }
}
