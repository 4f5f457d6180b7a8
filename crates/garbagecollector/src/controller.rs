//! Wiring: the two work queues (attempt to delete, attempt to orphan), the graph task that applies
//! the monitors' changes in order, and the discovery loop that keeps the monitors in step with the
//! API server (upstream `GarbageCollector.Run` and `Sync`, KCM's `newGarbageCollectorController`).

use std::{sync::Arc, time::Duration};

use controller::{
    Build, Context, Controller, EventRecorder, Reconciler, Wiring, WorkerOptions, discovery::discover,
    events::TYPE_WARNING, run_workers, shadow::ShadowState,
};
use futures::{FutureExt as _, future::BoxFuture};
use informer::{ObjectKey, WorkQueue};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::{
    error::GcError,
    graph::{Change, Effects, Graph, Observed},
    identity::Identity,
    monitors::{Monitors, deletable},
    operations::{Mapper, Operations},
    shadow::{Filings, Path},
};

/// KCM's name for the controller (`names.GarbageCollectorController`).
pub const COMPONENT: &str = "garbage-collector-controller";
/// The bootstrap role whose rules it needs and its client's name (`generic-garbage-collector`);
/// its events come from `garbage-collector-controller`.
pub const ROLE: &str = "generic-garbage-collector";
/// The work queues' names (the `name` label of the workqueue metrics).
pub const DELETE_QUEUE: &str = "garbage_collector_attempt_to_delete";
pub const ORPHAN_QUEUE: &str = "garbage_collector_attempt_to_orphan";
/// KCM's `--concurrent-gc-syncs` default: workers of each queue.
pub const DEFAULT_WORKERS: usize = 20;
/// How often discovery is asked again for new or removed resources, and how long the workers
/// wait for the first monitors to sync before they start anyway (KCM's `syncPeriod` for both).
pub const SYNC_PERIOD: Duration = Duration::from_secs(30);
/// The reason of the warning on a dependent whose namespaced owner is in another namespace.
pub const INVALID_NAMESPACE: &str = "OwnerRefInvalidNamespace";

/// The garbage collector. Its queues hold object UIDs (as [`ObjectKey`]s with no namespace): the
/// graph is keyed by them, and an owner may be known by nothing else yet.
pub struct GarbageCollector {
    wiring: Wiring,
    pub(crate) delete_queue: WorkQueue<ObjectKey>,
    pub(crate) orphan_queue: WorkQueue<ObjectKey>,
    pub(crate) graph: Arc<Mutex<Graph>>,
    monitors: Arc<Monitors>,
    /// The sending side, for the workers' "found gone" changes.
    changes: mpsc::UnboundedSender<Change>,
    /// Taken by the graph task when the controller starts.
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
    pub(crate) ops: Operations,
    pub(crate) mapper: Mapper,
    pub(crate) client: Client,
    recorder: EventRecorder,
    /// Set once the first monitors have synced, or [`SYNC_PERIOD`] after start (`initial_sync`).
    ready: watch::Sender<bool>,
    /// Set in shadow mode: the graph is built and every decision made, nothing written; what would
    /// be is filed with shadow mode's state.
    pub(crate) shadow: Option<Filings>,
}

impl std::fmt::Debug for GarbageCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GarbageCollector")
            .field("monitors", &self.monitors)
            .finish_non_exhaustive()
    }
}

impl Build for GarbageCollector {
    type Options = ();
    type Shadow = Self;

    fn build(cx: Context<'_>, (): ()) -> Self {
        let delete_queue = WorkQueue::named(DELETE_QUEUE, cx.metrics);
        let orphan_queue = WorkQueue::named(ORPHAN_QUEUE, cx.metrics);
        let recorder = cx.recorder(COMPONENT);
        let wiring = cx
            .wiring_of(DELETE_QUEUE, delete_queue.clone())
            .with_events(recorder.clone());
        let (changes, receiver) = mpsc::unbounded_channel();
        let mapper = Mapper::default();
        Self {
            wiring,
            delete_queue,
            orphan_queue,
            graph: Arc::new(Mutex::new(Graph::default())),
            monitors: Arc::new(Monitors::new(cx.factory, changes.clone())),
            changes,
            receiver: Mutex::new(Some(receiver)),
            ops: Operations::new(cx.client.clone(), mapper.clone()),
            mapper,
            client: cx.client,
            recorder,
            ready: watch::Sender::new(false),
            shadow: None,
        }
    }

    /// Builds the graph and decides as the live collector does, writing nothing: what it would
    /// delete or patch is logged and filed ([`Filings`]).
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, (): ()) -> Self {
        let mut c = Self::build(cx, ());
        c.shadow = Some(Filings::new(state));
        c
    }
}

impl GarbageCollector {
    /// Waits until the workers may start (upstream's workers start after the first sync).
    pub(crate) async fn wait_ready(&self) {
        let mut ready = self.ready.subscribe();
        let _ = ready.wait_for(|r| *r).await;
    }

    /// Hands a change the workers found (an object gone) to the graph task, behind the monitors'.
    pub(crate) fn found_gone(&self, identity: Identity) {
        let _ = self.changes.send(Change::FoundGone(identity));
    }

    /// The graph task: applies each change in the order received, then its effects.
    async fn apply_changes(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<Change>,
        cancel: CancellationToken,
    ) {
        loop {
            let change = tokio::select! {
                () = cancel.cancelled() => return,
                c = rx.recv() => match c { Some(c) => c, None => return },
            };
            self.review_filing(&change);
            let effects = self.graph.lock().apply(change);
            self.enqueue(effects);
        }
    }

    /// Shadow mode: a filing goes with its object (upstream's collector did what kcm-rs would), and
    /// its worker looks again at any change of it (upstream dropped the references, or removed the
    /// finalizer), which nothing else would have it do once the filing is reported.
    pub(crate) fn review_filing(&self, change: &Change) {
        let Some(filings) = &self.shadow else {
            return;
        };
        match change {
            Change::Deleted(Observed { identity, .. }) | Change::FoundGone(identity) => {
                filings.forget(&identity.uid);
            }
            Change::Updated { new, .. } => {
                let key = ObjectKey::new(None, &new.identity.uid);
                match filings.filed_by(&new.identity.uid) {
                    Some(Path::Delete) => self.delete_queue.add(key),
                    Some(Path::Orphan) => self.orphan_queue.add(key),
                    None => {}
                }
            }
            Change::Added(_) => {}
        }
    }

    fn enqueue(&self, fx: Effects) {
        let key = |uid: String| ObjectKey::new(None, &uid);
        for uid in fx.attempt_to_delete {
            self.delete_queue.add(key(uid));
        }
        // A virtual node under another identity is, to upstream, a new item: its backoff starts
        // afresh rather than from the old identity's retries.
        for uid in fx.attempt_to_delete_later {
            let uid = key(uid);
            self.delete_queue.forget(&uid);
            self.delete_queue.add_rate_limited(uid);
        }
        for uid in fx.attempt_to_orphan {
            self.orphan_queue.add(key(uid));
        }
        for (dependent, owner) in fx.invalid_namespace {
            let at = ObjectReference {
                api_version: Some(dependent.api_version.clone()),
                kind: Some(dependent.kind.clone()),
                namespace: Some(dependent.namespace.clone()).filter(|ns| !ns.is_empty()),
                name: Some(dependent.name.clone()),
                uid: Some(dependent.uid.clone()),
                ..ObjectReference::default()
            };
            let message = format!(
                "ownerRef {} does not exist in namespace {:?}",
                Identity::of_owner(&owner, &dependent.namespace),
                dependent.namespace
            );
            if self.shadow.is_none() {
                self.recorder
                    .record(&at, TYPE_WARNING, INVALID_NAMESPACE, message);
            }
        }
    }

    /// Opens the workers once the first monitors have synced, or after [`SYNC_PERIOD`] whatever
    /// discovery has done by then (upstream `Run`).
    async fn initial_sync(self: Arc<Self>, cancel: CancellationToken) {
        let synced = self.wait_synced(&cancel).await;
        if cancel.is_cancelled() {
            return;
        }
        if !synced {
            tracing::info!(
                "garbage collector: not all resource monitors could be synced, proceeding anyways"
            );
        }
        tracing::info!("proceeding to collect garbage");
        self.ready.send_replace(true);
    }

    /// The discovery loop: monitors every deletable resource, asking again every [`SYNC_PERIOD`].
    async fn sync_monitors(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            let found = tokio::select! {
                () = cancel.cancelled() => return,
                found = discover(&self.client) => found,
            };
            match found {
                Ok(found) => {
                    if let Some(failure) = found.failure() {
                        tracing::info!("failed to discover some groups: {failure}");
                    }
                    let wanted = deletable(&found);
                    if wanted.is_empty() {
                        tracing::info!("no resources reported by discovery, skipping garbage collector sync");
                    } else {
                        let failed = found.failed.keys().cloned().collect();
                        *self.mapper.write() = Arc::new(found);
                        if self.monitors.sync(wanted, &failed, &cancel)
                            && !self.wait_synced(&cancel).await
                            && !cancel.is_cancelled()
                        {
                            tracing::error!(
                                "timed out waiting for dependency graph builder sync during GC sync"
                            );
                        }
                    }
                }
                Err(e) => tracing::info!("failed to discover preferred resources: {e}"),
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(SYNC_PERIOD) => {}
            }
        }
    }

    /// Whether the monitors synced within [`SYNC_PERIOD`].
    async fn wait_synced(&self, cancel: &CancellationToken) -> bool {
        let poll = async {
            while !self.monitors.has_synced() {
                tokio::time::sleep(informer::informer::CACHE_SYNC_POLL_PERIOD).await;
            }
        };
        tokio::select! {
            () = cancel.cancelled() => false,
            r = tokio::time::timeout(SYNC_PERIOD, poll) => r.is_ok(),
        }
    }
}

impl Reconciler for GarbageCollector {
    type Error = GcError;

    fn is_quiet(error: &GcError) -> bool {
        error.is_quiet()
    }

    async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, GcError> {
        self.wait_ready().await;
        self.attempt_to_delete(key.as_str()).await
    }
}

/// The orphaning worker's view of the collector.
struct Orphaner(Arc<GarbageCollector>);

impl Reconciler for Orphaner {
    type Error = GcError;

    async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, GcError> {
        self.0.wait_ready().await;
        self.0.attempt_to_orphan(key.as_str()).await
    }
}

impl Controller for GarbageCollector {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }

    /// Ready once its first monitors have synced (or it gave up waiting on them).
    fn has_synced(&self) -> bool {
        *self.ready.borrow()
    }

    /// The orphaning workers, the graph task and the discovery loop.
    fn run_beside(
        self: &Arc<Self>,
        options: WorkerOptions,
        cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        let rx = self.receiver.lock().take()?;
        let orphans = run_workers(
            COMPONENT,
            Arc::new(Orphaner(self.clone())),
            self.orphan_queue.clone(),
            self.wiring.metrics().clone(),
            options,
            cancel.clone(),
        );
        let graph = self.clone().apply_changes(rx, cancel.clone());
        let start = self.clone().initial_sync(cancel.clone());
        let discovery = self.clone().sync_monitors(cancel);
        Some(
            async move {
                tokio::join!(orphans, graph, start, discovery);
            }
            .boxed(),
        )
    }
}
