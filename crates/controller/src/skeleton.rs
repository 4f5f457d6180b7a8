//! The one way a workload controller runs, written once for the three (controller-runtime's
//! `Controller.Start` is likewise one function for every reconciler): wait until every event handler
//! has seen its informer's initial list, start the workers over the queue, and on cancellation let the
//! syncs in flight drain ([`crate::worker`]).
//!
//! A controller crate supplies what differs: its informers and handlers (registered into a
//! [`Wiring`] when it is built) and its sync ([`Reconciler`]). The binary starts any of them with
//! [`spawn`], whose [`Started`] carries what the health checks and the shutdown need, or with
//! [`spawn_gated`], whose workers also wait for a condition of the binary's (a shard's write fence).

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::{FutureExt as _, future::BoxFuture};
use informer::{
    EventHandler, HandlerRegistration, HasSynced, ObjectKey, SharedInformer, WorkQueue, wait_for_cache_sync,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{
    EventRecorder,
    consistency::{ConsistencyStore, StaleCache},
    metrics::SyncMetrics,
    worker::{DEFAULT_DRAIN_TIMEOUT, Reconciler, WorkerOptions, panic_message, run_workers},
};

/// A workload controller as the skeleton runs it.
pub trait Controller: Reconciler + Sized {
    /// KCM's name for it (`replicaset-controller`): its events' source, its health check, its logs.
    const NAME: &'static str;

    /// The registrations, queue and workers built with the controller.
    fn wiring(&self) -> &Wiring;

    /// Worker pools over queues of other keys, run beside the main queue's with the same options
    /// (the Job controller's orphan-pod queue). Default: none.
    fn run_beside(
        self: &Arc<Self>,
        options: WorkerOptions,
        cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        let _ = (options, cancel);
        None
    }

    /// Whether every handler has seen its informer's initial contents.
    fn has_synced(&self) -> bool {
        self.wiring().has_synced()
    }

    /// The queue of object keys the workers take from.
    fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.wiring().queue
    }
}

/// What every controller holds the same way.
pub struct Wiring {
    /// Invariant: the workers start only once every registration here has synced; a registration
    /// added after [`run`] has begun waiting is not waited for.
    registrations: Vec<HandlerRegistration>,
    queue: WorkQueue<ObjectKey>,
    /// Concurrent syncs (`--concurrent-*-syncs`).
    workers: usize,
    metrics: Arc<dyn SyncMetrics>,
    /// Flushed once the workers have drained, before the controller's task ends.
    events: Option<EventRecorder>,
    /// The handlers' resync period ([`crate::CommonOptions::resync_period`]).
    resync: Option<Duration>,
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring")
            .field("registrations", &self.registrations.len())
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl Wiring {
    pub fn new(queue: WorkQueue<ObjectKey>, workers: usize, metrics: Arc<dyn SyncMetrics>) -> Self {
        Self {
            registrations: Vec::new(),
            queue,
            workers,
            metrics,
            events: None,
            resync: None,
        }
    }

    /// Handlers registered with [`Self::watch`] are replayed every cached object every `period`.
    #[must_use]
    pub fn with_resync(mut self, period: Option<Duration>) -> Self {
        self.resync = period;
        self
    }

    /// The recorder whose queued events are written before the controller's task ends on shutdown.
    #[must_use]
    pub fn with_events(mut self, recorder: EventRecorder) -> Self {
        self.events = Some(recorder);
        self
    }

    /// Adds a handler registration whose initial sync gates the workers.
    pub fn register(&mut self, registration: HandlerRegistration) {
        self.registrations.push(registration);
    }

    /// Registers `handler` on `informer` with the resync period, its initial sync gating the workers.
    pub fn watch<K>(&mut self, informer: &SharedInformer<K>, handler: impl EventHandler<K>)
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        let registration = informer.add_event_handler(handler, self.resync);
        self.register(registration);
    }

    pub fn has_synced(&self) -> bool {
        self.registrations.iter().all(HandlerRegistration::has_synced)
    }

    pub fn metrics(&self) -> &Arc<dyn SyncMetrics> {
        &self.metrics
    }

    /// Reading one's own writes: `Err` while a cache is older than what this controller wrote for
    /// `key`, counted as a stale skip (`read` gives each group-resource's newest applied version).
    pub fn ensure_fresh(
        &self,
        consistency: &ConsistencyStore,
        key: &ObjectKey,
        read: impl Fn(&'static str) -> u64,
    ) -> Result<(), StaleCache> {
        consistency.ensure_ready(key.as_str(), read).inspect_err(|stale| {
            let (resource, group) = stale
                .group_resource
                .split_once('.')
                .unwrap_or((stale.group_resource, ""));
            self.metrics.stale_sync_skip(group, resource);
        })
    }
}

/// A condition polled from elsewhere: whether a controller's caches have synced, whether it
/// stopped, whether its workers may start. One type, so that the health checks and a shard's write
/// fence take what [`Started`] gives them as it is.
pub type Probe = Arc<dyn Fn() -> bool + Send + Sync>;

/// A condition besides the controller's own caches that must hold before its workers start. On a
/// replica sharing the work, the shard's write fence opens only once every controller of the shard
/// has synced; a controller that started before that could only fail its first syncs.
pub type StartGate = Probe;

struct Gate(StartGate);

impl HasSynced for Gate {
    fn has_synced(&self) -> bool {
        (self.0)()
    }
}

/// Runs `controller` until `cancel` fires: waits for its caches, starts its workers (and any run
/// beside them), then lets in-flight syncs finish, bounded by [`DEFAULT_DRAIN_TIMEOUT`], and writes
/// the events they recorded.
pub async fn run<C: Controller>(controller: Arc<C>, cancel: CancellationToken) {
    run_gated(controller, cancel, None).await;
}

/// [`run`], the workers starting only once `gate` (if any) holds as well.
pub async fn run_gated<C: Controller>(
    controller: Arc<C>,
    cancel: CancellationToken,
    gate: Option<StartGate>,
) {
    let wiring = controller.wiring();
    let gate = gate.map(Gate);
    let synced: Vec<&dyn HasSynced> = wiring
        .registrations
        .iter()
        .map(|r| r as &dyn HasSynced)
        .chain(gate.as_ref().map(|g| g as &dyn HasSynced))
        .collect();
    if !wait_for_cache_sync(&cancel, &synced).await {
        // Handlers may have recorded events already (a CronJob's unparseable schedule).
        if let Some(events) = &wiring.events {
            events.flush().await;
        }
        return;
    }
    tracing::info!(
        controller = C::NAME,
        workers = wiring.workers,
        "caches synced; starting workers"
    );
    let options = WorkerOptions {
        workers: wiring.workers,
        drain_timeout: DEFAULT_DRAIN_TIMEOUT,
    };
    let queue = wiring.queue.clone();
    let metrics = wiring.metrics.clone();
    let events = wiring.events.clone();
    let beside = controller.run_beside(options, cancel.clone());
    let main = run_workers(C::NAME, controller, queue, metrics, options, cancel);
    match beside {
        Some(beside) => {
            tokio::join!(main, beside);
        }
        None => main.await,
    }
    if let Some(events) = events {
        events.flush().await;
    }
    tracing::info!(controller = C::NAME, "stopped");
}

/// A controller started by [`spawn`].
pub struct Started {
    pub name: &'static str,
    /// Whether its caches have synced: its readiness, and what a shard's write fence waits for.
    /// It says nothing of [`Started::stopped`]: a fence closed by one stopped controller would hold
    /// every other controller of the shard back while the shard stays held.
    pub synced: Probe,
    /// Whether it ended on a panic outside its syncs (a loop of its own beside the workers, the
    /// wait for its caches), which ends the whole controller. The binary then exits, as KCM's
    /// process crashes on such a panic, and until it does the controller's health check fails,
    /// rather than a dead controller reporting healthy.
    pub stopped: Probe,
    /// Ends once its workers have drained after cancellation, or at once after such a panic.
    pub task: JoinHandle<()>,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Starts `controller` on the runtime: [`run`] in a task of its own.
pub fn spawn<C: Controller>(controller: C, cancel: &CancellationToken) -> Started {
    spawn_gated(controller, cancel, None)
}

/// [`spawn`], the workers waiting for `gate` too ([`run_gated`]). `synced`, the health check and
/// what the gate itself is usually made of, stays the controller's own caches.
pub fn spawn_gated<C: Controller>(
    controller: C,
    cancel: &CancellationToken,
    gate: Option<StartGate>,
) -> Started {
    let controller = Arc::new(controller);
    let probe = controller.clone();
    let stopped = Arc::new(AtomicBool::new(false));
    let metrics = controller.wiring().metrics().clone();
    let run = AssertUnwindSafe(run_gated(controller, cancel.clone(), gate)).catch_unwind();
    let task = {
        let stopped = stopped.clone();
        tokio::spawn(async move {
            if let Err(payload) = run.await {
                stopped.store(true, Ordering::SeqCst);
                metrics.panic();
                tracing::error!(
                    controller = C::NAME,
                    panic = panic_message(payload.as_ref()),
                    "the controller stopped on a panic outside its syncs"
                );
            }
        })
    };
    Started {
        name: C::NAME,
        synced: Arc::new(move || probe.has_synced()),
        stopped: Arc::new(move || stopped.load(Ordering::SeqCst)),
        task,
    }
}

#[cfg(test)]
#[path = "skeleton_tests.rs"]
mod tests;
