//! The shared informer (client-go `sharedIndexInformer`): one store fed by one reflector per scope,
//! and any number of handlers.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use kube::Resource;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::{
    sync::{mpsc, watch},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{
    handler::EventHandler,
    listener::{HandlerRegistration, Listener, Notification},
};
use crate::{
    key::ObjectKey,
    listwatch::ListerWatcher,
    reflector::{Reflector, ReflectorConfig, ReflectorEvent},
    store::{Lister, NAMESPACE_INDEX, Store, namespace_index},
};

/// Per-handler resync periods are never shorter than this (client-go `minimumResyncPeriod`).
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// One watched scope: how it is listed and watched, and the namespace it is limited to (`None`: all
/// namespaces).
pub struct Scope<K> {
    pub api: Arc<dyn ListerWatcher<K>>,
    pub namespace: Option<String>,
}

impl<K: Clone> Scope<K> {
    pub fn new(api: impl ListerWatcher<K>, namespace: Option<String>) -> Self {
        Scope {
            api: Arc::new(api),
            namespace,
        }
    }
}

impl<K> std::fmt::Debug for Scope<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// A cache of one resource kept in step with the API server, with handlers. Cloning shares it.
pub struct SharedInformer<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    /// Name for logs, e.g. `pods`.
    resource: String,
    store: Store<K>,
    /// The handlers. Held while an event is applied and fanned out, so a handler added meanwhile sees
    /// either the state before the event plus the event, or the state after it: never a gap.
    listeners: Mutex<Vec<Arc<Listener<K>>>>,
    synced_tx: watch::Sender<bool>,
    scopes: Mutex<Vec<Scope<K>>>,
    config: ReflectorConfig<K>,
    started: AtomicBool,
    /// The highest numeric resourceVersion applied to the store (events and lists). Raised only
    /// once the store holds what carried it, and before the handlers hear of it ([`Inner::process`]):
    /// the controllers' read-your-writes gates trust both.
    last_rv: AtomicU64,
    /// The same, per scope (its namespace, in the scopes' order), with the same ordering. Scopes
    /// are separate watches, each in resourceVersion order only within itself: one namespace's
    /// stream may be past a version another's has not reached.
    scope_rv: Vec<(Option<String>, AtomicU64)>,
}

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        SharedInformer {
            inner: self.inner.clone(),
        }
    }
}

impl<K> std::fmt::Debug for SharedInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformer")
            .field("resource", &self.inner.resource)
            .field("store", &self.inner.store)
            .field("synced", &*self.inner.synced_tx.borrow())
            .finish()
    }
}

impl<K> SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// An informer over `scopes` (one reflector each). The store always has the namespace index.
    pub fn new(resource: impl Into<String>, scopes: Vec<Scope<K>>, config: ReflectorConfig<K>) -> Self {
        let store = Store::new();
        store.add_index(NAMESPACE_INDEX, namespace_index());
        let (synced_tx, _) = watch::channel(false);
        let scope_rv = scopes
            .iter()
            .map(|s| (s.namespace.clone(), AtomicU64::new(0)))
            .collect();
        SharedInformer {
            inner: Arc::new(Inner {
                resource: resource.into(),
                store,
                listeners: Mutex::new(Vec::new()),
                synced_tx,
                scopes: Mutex::new(scopes),
                config,
                started: AtomicBool::new(false),
                last_rv: AtomicU64::new(0),
                scope_rv,
            }),
        }
    }

    pub fn store(&self) -> &Store<K> {
        &self.inner.store
    }

    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.store.clone())
    }

    /// The newest resourceVersion this informer has applied, for "read your own writes" checks
    /// (0 before anything was applied, or when versions are not numeric).
    pub fn last_synced_resource_version(&self) -> u64 {
        self.inner.last_rv.load(Ordering::Acquire)
    }

    /// [`Self::last_synced_resource_version`] for objects in `namespace`: the version its own watch
    /// has applied when the informer watches namespaces one by one (`with_namespaces`), where the
    /// newest of all would let a gate open before that namespace's stream delivered the write.
    pub fn last_synced_resource_version_in(&self, namespace: Option<&str>) -> u64 {
        let own = self
            .inner
            .scope_rv
            .iter()
            .find(|(ns, _)| ns.as_deref() == namespace);
        match own {
            Some((_, rv)) => rv.load(Ordering::Acquire),
            None => self.last_synced_resource_version(),
        }
    }

    /// True once every scope's first list has been applied to the store.
    pub fn has_synced(&self) -> bool {
        *self.inner.synced_tx.borrow()
    }

    /// Adds a handler. Added after start, it first receives the cache's contents as initial adds.
    /// `resync` asks for every cached object again (as an update with old == new) at that period,
    /// clamped to at least [`MIN_RESYNC_PERIOD`].
    pub fn add_event_handler(
        &self,
        handler: impl EventHandler<K>,
        resync: Option<Duration>,
    ) -> HandlerRegistration {
        let period = resync.map(|p| p.max(MIN_RESYNC_PERIOD));
        let (listener, pending_initial) = Listener::spawn(Arc::new(handler), period);
        let mut listeners = self.inner.listeners.lock();
        if self.inner.started.load(Ordering::Acquire) {
            for obj in self.inner.store.list() {
                listener.send(Notification::Add { obj, initial: true });
            }
        }
        listeners.push(listener);
        HandlerRegistration {
            pending_initial,
            informer_synced: self.inner.synced_tx.subscribe(),
        }
    }

    /// Starts the reflectors and the delivery task; they stop when `cancel` fires. Only the first call
    /// starts anything.
    pub fn run(&self, cancel: CancellationToken) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let scopes = std::mem::take(&mut *self.inner.scopes.lock());
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, ReflectorEvent<K>)>();
        for (i, scope) in scopes.into_iter().enumerate() {
            let name = match &scope.namespace {
                Some(ns) => format!("{} in {ns}", self.inner.resource),
                None => self.inner.resource.clone(),
            };
            let reflector = Reflector::new(scope.api, name, self.inner.config.clone());
            let (rtx, mut rrx) = mpsc::unbounded_channel();
            tokio::spawn(reflector.run(rtx, cancel.clone()));
            let tx = tx.clone();
            // Tag each scope's events so a relist only replaces its own namespace.
            tokio::spawn(async move {
                while let Some(ev) = rrx.recv().await {
                    if tx.send((i, ev)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let inner = self.inner.clone();
        let resync_cancel = cancel.clone();
        tokio::spawn(async move {
            let mut replaced = vec![false; inner.scope_rv.len()];
            while let Some((i, ev)) = rx.recv().await {
                let first = !replaced[i];
                if matches!(ev, ReflectorEvent::Replace { .. }) {
                    replaced[i] = true;
                }
                inner.process(ev, i, first);
                if first && replaced.iter().all(|r| *r) && !*inner.synced_tx.borrow() {
                    inner.synced_tx.send_replace(true);
                }
            }
        });
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.resync_loop(resync_cancel).await });
    }
}

impl<K> Inner<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// Applies one reflector event to the store, then raises the applied resourceVersion, then
    /// tells the handlers: in that order, so that a sync that sees the version also sees the store
    /// holding what carried it (client-go sets the store's version under the store's own lock), and a
    /// handler woken by the event finds the version already raised.
    fn process(&self, event: ReflectorEvent<K>, scope: usize, first_list: bool) {
        let rv = match &event {
            ReflectorEvent::Replace { resource_version, .. }
            | ReflectorEvent::Bookmark { resource_version } => Some(resource_version.as_str()),
            ReflectorEvent::Added(o) | ReflectorEvent::Modified(o) | ReflectorEvent::Deleted(o) => {
                o.meta().resource_version.as_deref()
            }
        };
        let rv = rv.and_then(|v| v.parse::<u64>().ok());
        let (namespace, scope_rv) = &self.scope_rv[scope];
        let applied = || {
            if let Some(rv) = rv {
                scope_rv.fetch_max(rv, Ordering::AcqRel);
                self.last_rv.fetch_max(rv, Ordering::AcqRel);
            }
        };
        let listeners = self.listeners.lock();
        let fan_out = |n: &dyn Fn() -> Notification<K>| listeners.iter().for_each(|l| l.send(n()));
        match event {
            ReflectorEvent::Added(o) | ReflectorEvent::Modified(o) => {
                let new = Arc::new(o);
                let key = ObjectKey::of(&*new);
                let old = self.store.upsert(key, new.clone());
                applied();
                match old {
                    Some(old) => self.notify_update(&listeners, old, new),
                    None => fan_out(&|| Notification::Add {
                        obj: new.clone(),
                        initial: false,
                    }),
                }
            }
            ReflectorEvent::Deleted(o) => {
                let obj = Arc::new(o);
                self.store.delete(&ObjectKey::of(&*obj));
                applied();
                fan_out(&|| Notification::Delete(super::DeletedObject::Final(obj.clone())));
            }
            ReflectorEvent::Bookmark { .. } => applied(),
            ReflectorEvent::Replace { objects: listed, .. } => {
                let cached = match namespace {
                    Some(ns) => self.store.index_keys(NAMESPACE_INDEX, ns).unwrap_or_default(),
                    None => self.store.list_keys(),
                };
                let gone: Vec<_> = cached
                    .into_iter()
                    .filter(|key| !listed.contains_key(key))
                    .filter_map(|key| self.store.delete(&key).map(|last_known| (key, last_known)))
                    .collect();
                let kept: Vec<_> = listed
                    .into_iter()
                    .map(|(key, new)| (self.store.upsert(key, new.clone()), new))
                    .collect();
                applied();
                for (key, last_known) in gone {
                    let d = super::DeletedObject::Unknown { key, last_known };
                    fan_out(&|| Notification::Delete(d.clone()));
                }
                for (old, new) in kept {
                    match old {
                        Some(old) => self.notify_update(&listeners, old, new),
                        None => fan_out(&|| Notification::Add {
                            obj: new.clone(),
                            initial: first_list,
                        }),
                    }
                }
            }
        }
    }

    /// An update whose resourceVersion did not change (a relist's unchanged objects) is a resync,
    /// not a change: only syncing handlers get it (client-go `sharedIndexInformer.OnUpdate` and
    /// `sharedProcessor.distribute`), which under KCM's one resync period is all of them, so every
    /// controller looks at every object again after a relist.
    fn notify_update(&self, listeners: &[Arc<Listener<K>>], old: Arc<K>, new: Arc<K>) {
        let same = old.meta().resource_version.is_some()
            && old.meta().resource_version == new.meta().resource_version;
        for l in listeners {
            if same && !l.syncing.load(Ordering::Acquire) {
                continue;
            }
            l.send(Notification::Update {
                old: old.clone(),
                new: new.clone(),
            });
        }
    }

    /// The informer's resync checks (client-go's reflector resync timer and
    /// `sharedProcessor.shouldResync`): every shortest period of its handlers, each handler whose
    /// resync is due gets the cache again, and every handler is marked syncing or not by whether it
    /// was due ([`Listener::syncing`]). Polled every [`MIN_RESYNC_PERIOD`]; no handler with a period,
    /// no check.
    async fn resync_loop(&self, cancel: CancellationToken) {
        let mut next_check: Option<Instant> = None;
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(MIN_RESYNC_PERIOD) => {}
            }
            let now = Instant::now();
            let listeners = self.listeners.lock();
            let Some(check_period) = listeners.iter().filter_map(|l| l.resync_period).min() else {
                continue;
            };
            if now < *next_check.get_or_insert(now + check_period) {
                continue;
            }
            next_check = Some(now + check_period);
            for l in listeners.iter() {
                let due = l.take_resync_due(now);
                l.syncing.store(due, Ordering::Release);
                if !due {
                    continue;
                }
                for obj in self.store.list() {
                    l.send(Notification::Update {
                        old: obj.clone(),
                        new: obj,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube::Api;

    use super::*;
    use crate::testing::fake_api::{FakeApi, pod};
    /// Namespaces watched one by one keep their applied versions apart: a gate asking about one
    /// namespace waits for that namespace's stream, whatever another has reached.
    #[tokio::test]
    async fn each_scope_keeps_its_own_applied_version() {
        let api = FakeApi::default();
        let scope = |ns: &str| Scope::new(Api::<Pod>::namespaced(api.client(), ns), Some(ns.to_owned()));
        let inf = SharedInformer::new("pods", vec![scope("a"), scope("b")], ReflectorConfig::default());
        let added: Pod = serde_json::from_value(pod("a", "p", "20")).unwrap();
        inf.inner.process(ReflectorEvent::Added(added), 0, false);
        assert_eq!(inf.last_synced_resource_version_in(Some("a")), 20);
        assert_eq!(
            inf.last_synced_resource_version_in(Some("b")),
            0,
            "b's stream is not there yet"
        );
        assert_eq!(inf.last_synced_resource_version(), 20);
        let bookmark = ReflectorEvent::Bookmark {
            resource_version: "30".into(),
        };
        inf.inner.process(bookmark, 1, false);
        assert_eq!(inf.last_synced_resource_version_in(Some("b")), 30);
        assert_eq!(inf.last_synced_resource_version_in(Some("a")), 20);
        assert_eq!(
            inf.last_synced_resource_version_in(Some("elsewhere")),
            30,
            "a namespace no scope watches gets the newest of all"
        );
        assert!(
            inf.lister().get(Some("a"), "p").is_some(),
            "in the store once the version says so"
        );
    }
}
