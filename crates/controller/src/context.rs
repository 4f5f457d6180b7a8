//! What every controller is built from, the same way for each, as KCM hands every controller one
//! `ControllerContext` (the shared informers, a client under the controller's own name, the
//! component config): the [`Context`] carries the shared informers, the client, the metric sinks and
//! the [`CommonOptions`]; a controller's own options hold only what is its alone. [`Build`] is the
//! one constructor the binary's table calls, live or read-only (shadow mode).

use std::{sync::Arc, time::Duration};

use informer::{InformerOptions, Namespaced, ObjectKey, SharedInformer, SharedInformerFactory, WorkQueue};
use kube::Client;

use crate::{
    ControllerMetrics, EventRecorder, FeatureGates, OWNER_INDEX, Wiring, owner_index, shadow::ShadowState,
    skeleton::Controller,
};

/// Concurrent syncs of each workload controller: KCM's default for `--concurrent-deployment-syncs`,
/// `--concurrent-replicaset-syncs`, `--concurrent-rc-syncs`, `--concurrent-job-syncs`,
/// `--concurrent-cron-job-syncs` and `--concurrent-ttl-after-finished-syncs`.
pub const DEFAULT_WORKERS: usize = 5;

/// The options every controller takes alike.
#[derive(Debug, Clone)]
pub struct CommonOptions {
    /// Concurrent syncs (`--concurrent-*-syncs`).
    pub workers: usize,
    /// This process's identity, written as the reportingInstance of its events.
    pub instance: String,
    /// The feature gates (`--feature-gates`; default: Kubernetes 1.36's).
    pub features: FeatureGates,
    /// How often the informers replay every cached object to the handlers, so that an object
    /// waiting on something no event reports is synced again (KCM: `--min-resync-period` × [1, 2),
    /// drawn once for the process). `None`: no resync.
    pub resync_period: Option<Duration>,
}

impl CommonOptions {
    /// The defaults, events reported from `instance`.
    pub fn new(instance: impl Into<String>) -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            instance: instance.into(),
            features: FeatureGates::default(),
            resync_period: None,
        }
    }
}

/// What a controller is built from.
pub struct Context<'a> {
    /// The shared informers: a kind two controllers read is watched and cached once.
    pub factory: &'a SharedInformerFactory,
    /// The controller's own client (KCM: its ServiceAccount's, with `--use-service-account-credentials`).
    pub client: Client,
    /// The informers' and the syncs' metric sinks.
    pub metrics: &'a dyn ControllerMetrics,
    pub options: CommonOptions,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'a> Context<'a> {
    /// A context with the default options, events reported from `instance`.
    pub fn new(
        factory: &'a SharedInformerFactory,
        client: Client,
        metrics: &'a dyn ControllerMetrics,
        instance: &str,
    ) -> Self {
        Self {
            factory,
            client,
            metrics,
            options: CommonOptions::new(instance),
        }
    }

    /// The controller's work queue, named as upstream names it (the `name` label of the workqueue
    /// metrics), and the wiring its handlers register into, with the workers and sync metrics of
    /// these options.
    pub fn wiring(&self, queue_name: &'static str) -> (WorkQueue<ObjectKey>, Wiring) {
        let queue = WorkQueue::named(queue_name, self.metrics);
        (queue.clone(), self.wiring_of(queue_name, queue))
    }

    /// [`Self::wiring`] over a queue the controller made itself (with a rate limiter of its own).
    pub fn wiring_of(&self, queue_name: &'static str, queue: WorkQueue<ObjectKey>) -> Wiring {
        Wiring::new(queue, self.options.workers, self.metrics.sync_metrics(queue_name))
            .with_resync(self.options.resync_period)
    }

    /// The shared informer of a namespaced kind, over the namespaces this process serves.
    pub fn informer<K: Namespaced>(&self) -> SharedInformer<K> {
        self.factory.namespaced(InformerOptions::default())
    }

    /// [`Self::informer`] of a kind a controller finds its own objects of (pods, ReplicaSets): its
    /// store also indexes each object by its controller's UID ([`OWNER_INDEX`]).
    pub fn owned_informer<K: Namespaced>(&self) -> SharedInformer<K> {
        let informer = self.informer::<K>();
        informer.store().add_index(OWNER_INDEX, owner_index());
        informer
    }

    /// A recorder writing events from `component` through this context's client.
    pub fn recorder(&self, component: &str) -> EventRecorder {
        EventRecorder::new(self.client.clone(), component, &self.options.instance)
    }
}

/// How a controller is built, live or read-only: what the binary's table calls for each.
pub trait Build: Controller {
    /// What is this controller's alone (its own metric sink, shadow mode's self-checks, ...).
    type Options: Default;
    /// The read-only controller of shadow mode, which compares instead of writing.
    type Shadow: Controller;

    /// A controller writing through the context's client.
    fn build(cx: Context<'_>, options: Self::Options) -> Self;

    /// A controller that writes nothing: where it disagrees with what upstream did, it records it
    /// in `state`.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: Self::Options) -> Self::Shadow;
}
